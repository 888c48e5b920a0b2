package status

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
