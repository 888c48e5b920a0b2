package split

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/route"
)

// comparable strips what differs between a routed item and its copy in a
// context package: kpt's path, index and id bookkeeping.
func comparable(t *testing.T, n *yaml.RNode) string {
	t.Helper()
	c := n.Copy()
	for k := range c.GetAnnotations() {
		if strings.HasPrefix(k, "internal.config.kubernetes.io/") || strings.HasPrefix(k, "config.kubernetes.io/") && k != filters.LocalConfigAnnotation || k == "config.k8s.io/id" {
			if err := c.PipeE(yaml.ClearAnnotation(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := yaml.ClearEmptyAnnotations(c); err != nil {
		t.Fatal(err)
	}
	return c.MustString()
}

// inContext is a routed item as context c's package holds it: its context
// annotation names c alone, its datastore annotation c's datastore (as
// the function's annotation gives it for c).
func inContext(t *testing.T, n *yaml.RNode, c string) *yaml.RNode {
	t.Helper()
	annos := n.GetAnnotations()
	stores, err := datastore.ParseAnnotation(annos[v1alpha1.DataStoreAnnotation], route.ParseContexts(annos[v1alpha1.ContextAnnotation]))
	if err != nil {
		t.Fatal(err)
	}
	out := n.Copy()
	for _, kv := range [][2]string{{v1alpha1.ContextAnnotation, c}, {v1alpha1.DataStoreAnnotation, stores[c]}} {
		if err := out.PipeE(yaml.SetAnnotation(kv[0], kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func idOf(n *yaml.RNode) string {
	return n.GetApiVersion() + " " + n.GetKind() + " " + n.GetNamespace() + "/" + n.GetName()
}

// TestPropertySplitUnion: for generated packages, the context packages of
// split hold exactly the routed input: each item in each context of its
// annotation (a broadcast item in every one), once, as the function
// annotates it but for naming that context alone; nothing else.
func TestPropertySplitUnion(t *testing.T) {
	var checked, broadcast int
	for seed := uint64(1); seed <= uint64(testenv.Iterations(120)); seed++ {
		rnd := rand.New(rand.NewPCG(seed, 11))
		o := gen.Options{Items: 1 + rnd.IntN(40), Contexts: 1 + rnd.IntN(5), Seed: seed, Routed: rnd.IntN(2) == 0}
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			data := gen.Bytes(o)
			var routedOut bytes.Buffer
			if err := function.Run(bytes.NewReader(data), &routedOut, yamlio.Options{Reference: true}); err != nil {
				t.Fatalf("the function refused a generated package %+v: %v", o, err)
			}
			routed, err := (&kio.ByteReader{Reader: &routedOut, OmitReaderAnnotations: true}).Read()
			if err != nil {
				t.Fatal(err)
			}
			in, err := input.ReadStream(bytes.NewReader(data), yamlio.Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := runRoute(t, in, nil, &Options{PackageName: "pkg"})
			if err != nil {
				t.Fatalf("split refused what the function routed: %v", err)
			}
			// want[context][id] = the item as routed.
			want := map[string]map[string]string{}
			for _, p := range plan.Packages {
				want[p.Context] = map[string]string{}
			}
			for _, it := range routed {
				ctxs := route.ParseContexts(it.GetAnnotations()[v1alpha1.ContextAnnotation])
				if len(ctxs) > 1 {
					broadcast++
				}
				for _, c := range ctxs {
					if _, ok := want[c]; !ok {
						t.Fatalf("%s goes to %q, for which split wrote no package", idOf(it), c)
					}
					want[c][idOf(it)] = comparable(t, inContext(t, it, c))
				}
			}
			for _, p := range plan.Packages {
				got := map[string]bool{}
				nodes, err := p.resources()
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range nodes {
					id := idOf(n)
					if got[id] {
						t.Errorf("context %s holds %s twice", p.Context, id)
					}
					got[id] = true
					w, ok := want[p.Context][id]
					if !ok {
						t.Errorf("context %s holds %s, which the function did not send there", p.Context, id)
						continue
					}
					if g := comparable(t, n); g != w {
						t.Errorf("context %s: %s differs from the routed item:\n--- routed\n%s--- split\n%s", p.Context, id, w, g)
					}
					checked++
				}
				for id := range want[p.Context] {
					if !got[id] {
						t.Errorf("context %s lacks %s", p.Context, id)
					}
				}
				if p.Resources != len(nodes) {
					t.Errorf("context %s: Resources %d, %d nodes", p.Context, p.Resources, len(nodes))
				}
			}
		})
		if !ok {
			t.Logf("reproduce with gen.Options%+v", o)
			return
		}
	}
	t.Logf("%d placed copies checked, %d items in several contexts", checked, broadcast)
	if broadcast == 0 {
		t.Errorf("no item went to several contexts: the property was not exercised")
	}
}
