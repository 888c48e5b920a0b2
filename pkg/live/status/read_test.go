package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// testMapper serves ConfigMaps, Deployments and Namespaces, as discovery
// would tell a RESTMapper.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	return m
}

func TestGroupReads(t *testing.T) {
	cm := func(ns, name string) v1alpha1.ObjectRef {
		return v1alpha1.ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	refs := []v1alpha1.ObjectRef{
		cm("a", "one"), cm("b", "two"), cm("a", "three"),
		{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "web"},
		{Kind: "Namespace", Name: "a"}, {Kind: "Namespace", Name: "b"},
		{Group: "example.com", Kind: "Widget", Namespace: "a", Name: "w"},
	}
	batches, unserved, err := groupReads(testMapper(), refs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range batches {
		var names []string
		for _, r := range b.refs {
			names = append(names, r.Name)
		}
		got = append(got, b.resource.Resource+"@"+b.namespace+": "+strings.Join(names, ","))
	}
	want := []string{"configmaps@a: one,three", "configmaps@b: two", "deployments@a: web", "namespaces@: a,b"}
	if !slices.Equal(got, want) {
		t.Errorf("batches:\n  %q\nwant\n  %q", got, want)
	}
	if len(unserved) != 1 || unserved[0].Kind != "Widget" {
		t.Errorf("unserved = %v, want the Widget", unserved)
	}
	var sizes []int
	for _, b := range splitSmall(batches, 2) {
		sizes = append(sizes, len(b.refs))
	}
	if want := []int{2, 1, 1, 2}; !slices.Equal(sizes, want) {
		t.Errorf("splitSmall(2): batch sizes %v, want %v (the batches of one object stay, the others are kept whole)", sizes, want)
	}
	if n := len(splitSmall(batches, 3)); n != 6 {
		t.Errorf("splitSmall(3): %d batches, want 6 gets", n)
	}
}

func TestAsApplied(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x", "annotations": map[string]any{
		"config.kubernetes.io/path": "a.yaml", "internal.config.kubernetes.io/path": "a.yaml",
		"config.kubernetes.io/index": "0", "internal.config.kubernetes.io/index": "0", "team": "a"}}}}
	got := asApplied(u, "id-1").GetAnnotations()
	if len(got) != 2 || got[owningInventoryAnnotation] != "id-1" || got["team"] != "a" {
		t.Errorf("annotations %v, want team and the owning inventory only", got)
	}
	if len(u.GetAnnotations()) != 5 {
		t.Error("asApplied changed the package's object")
	}
}

// pagedLister serves the lists of a namespace's ConfigMaps page by page,
// as kube-apiserver does with limit and continue (the dynamic fake ignores
// both), and counts what the lists returned and how many gets were in
// flight at once; gets go to the fake.
type pagedLister struct {
	dynamic.Interface
	items  []unstructured.Unstructured // sorted by name, as the apiserver's
	listed int                         // objects returned by lists
	lists  int

	mu             sync.Mutex
	inFlight, most int // gets in flight now, and at most
}

type pagedResource struct {
	dynamic.NamespaceableResourceInterface
	p *pagedLister
}

type pagedNamespace struct {
	dynamic.ResourceInterface
	p *pagedLister
}

func (p *pagedLister) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return pagedResource{p.Interface.Resource(r), p}
}

func (r pagedResource) Namespace(ns string) dynamic.ResourceInterface {
	return pagedNamespace{r.NamespaceableResourceInterface.Namespace(ns), r.p}
}

func (n pagedNamespace) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	p := n.p
	p.mu.Lock()
	p.inFlight++
	p.most = max(p.most, p.inFlight)
	p.mu.Unlock()
	time.Sleep(time.Millisecond) // long enough for unbounded gets to pile up
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	return n.ResourceInterface.Get(ctx, name, opts, sub...)
}

func (n pagedNamespace) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	p := n.p
	start := 0
	if opts.Continue != "" {
		start, _ = strconv.Atoi(opts.Continue)
	}
	end := len(p.items)
	if opts.Limit > 0 {
		end = min(end, start+int(opts.Limit))
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
	list.Items = slices.Clone(p.items[start:end])
	if end < len(p.items) {
		list.SetContinue(strconv.Itoa(end))
	}
	p.lists++
	p.listed += end - start
	return list, nil
}

// TestReadCostsWhatThePackageHolds checks that a read of a namespace's
// objects costs what the package holds, not what the namespace holds: with
// 21 ConfigMaps wanted among 2,020, a list reads one page, and the ones it
// did not find are read with a get each; with 211 wanted, a list reads 4
// for each. A namespace of one page is still one list, and an identity
// that may list but not get still reads what it may.
func TestReadCostsWhatThePackageHolds(t *testing.T) {
	cm := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "a"}}}
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, tc := range []struct {
		name         string
		wanted       int  // ConfigMaps the package holds, the last not in the namespace
		others       int  // ConfigMaps of the namespace the package does not hold
		getForbidden bool // RBAC lets the identity list them, not get them
		lists, gets  int  // gets -1: not counted (the first refused stops the others)
		listed       int  // objects the lists return
	}{
		// One page; then the 20 the page did not hold (the last one absent).
		{"a crowded namespace", 21, 2000, false, 1, 20, 500},
		// 844 (4 for each), in pages of 500 and 344; then the other 210.
		{"a crowded namespace, many wanted", 211, 2000, false, 2, 210, 844},
		{"a namespace of the package's own", 21, 3, false, 1, 0, 23},
		// One page, then the whole namespace's 2,020 in pages of 500.
		{"a crowded namespace that may be listed, not got", 21, 2000, true, 1 + 5, -1, 500 + 2020},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The package's ConfigMaps sort after the others but one,
			// which the first page holds.
			want := append([]string{"aa-wanted"}, wantNames(tc.wanted-1)...)
			p := &pagedLister{}
			p.items = append(p.items, *cm(want[0]))
			for i := range tc.others {
				p.items = append(p.items, *cm(fmt.Sprintf("other-%04d", i)))
			}
			for _, n := range want[1 : len(want)-1] {
				p.items = append(p.items, *cm(n))
			}
			var objs []runtime.Object
			for i := range p.items {
				objs = append(objs, &p.items[i])
			}
			b := &batch{resource: gvr, namespace: "a"}
			for _, n := range want {
				b.refs = append(b.refs, v1alpha1.ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: n})
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, objs...)
			p.Interface = client
			if tc.getForbidden {
				client.PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(gvr.GroupResource(), a.(clienttesting.GetAction).GetName(), errors.New("RBAC: list only"))
				})
			}
			const slots = 3
			got, err := b.read(context.Background(), p, newRequests(slots))
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, u := range got {
				found = append(found, u.GetName())
			}
			slices.Sort(found)
			if !slices.Equal(found, want[:len(want)-1]) {
				t.Errorf("found %d objects %q..., want the %d in the namespace", len(found), found[:min(3, len(found))], len(want)-1)
			}
			gets := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "get" {
					gets++
				}
			}
			if p.lists != tc.lists || (tc.gets >= 0 && gets != tc.gets) || p.listed != tc.listed {
				t.Errorf("%d lists of %d objects and %d gets, want %d of %d and %d", p.lists, p.listed, gets, tc.lists, tc.listed, tc.gets)
			}
			if p.most > slots {
				t.Errorf("%d gets in flight at once, more than the read's %d", p.most, slots)
			}
		})
	}
}

// wantNames are want-000, want-001, ... n of them.
func wantNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("want-%03d", i))
	}
	return out
}
