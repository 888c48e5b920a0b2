package function

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/kinds"
	"github.com/shard-router/shard-router/pkg/route"
)

// propPackage is a random package and config, small enough to reason about
// and varied enough to hit every routing rule.
type propPackage struct {
	contexts   int
	nsShard    []int // shard label of each Namespace; == contexts: none matches
	items      []propItem
	defaultCtx int // -1: none
	allowMoves bool
	// pinSel[c]: context c also selects resources labelled pin=c<c>.
	pinSel []bool
}

type propItem struct {
	kind string // Namespace, ConfigMap, Secret, ClusterRole, Widget (CR, cluster-scoped or not)
	ns   int    // -1: none
	name string
	pin  int // -1: no pin label
}

func randomPackage(rnd *rand.Rand) *propPackage {
	p := &propPackage{contexts: 1 + rnd.IntN(4), defaultCtx: -1}
	if rnd.IntN(2) == 0 {
		p.defaultCtx = rnd.IntN(p.contexts)
	}
	p.allowMoves = rnd.IntN(3) == 0
	p.pinSel = make([]bool, p.contexts)
	for c := range p.pinSel {
		p.pinSel[c] = rnd.IntN(3) == 0
	}
	nsCount := 1 + rnd.IntN(4)
	for i := 0; i < nsCount; i++ {
		p.nsShard = append(p.nsShard, rnd.IntN(p.contexts+1))
		p.items = append(p.items, propItem{kind: "Namespace", ns: i, name: fmt.Sprintf("ns-%d", i), pin: -1})
	}
	n := rnd.IntN(20)
	kinds := []string{"ConfigMap", "Secret", "ClusterRole", "ConfigMap", "Widget"}
	for i := 0; i < n; i++ {
		it := propItem{kind: kinds[rnd.IntN(len(kinds))], ns: rnd.IntN(nsCount), name: fmt.Sprintf("item-%d", i), pin: -1}
		if it.kind == "ClusterRole" {
			it.ns = -1
		}
		if rnd.IntN(4) == 0 {
			it.pin = rnd.IntN(p.contexts)
		}
		p.items = append(p.items, it)
	}
	// Shuffle, Namespaces included: order must not matter to routing.
	rnd.Shuffle(len(p.items), func(a, b int) { p.items[a], p.items[b] = p.items[b], p.items[a] })
	return p
}

func (p *propPackage) config() string {
	var b strings.Builder
	b.WriteString("functionConfig:\n  apiVersion: shardrouter.dev/v1alpha1\n  kind: ShardConfig\n  metadata: {name: shards}\n  spec:\n    contexts:\n")
	for c := 0; c < p.contexts; c++ {
		fmt.Fprintf(&b, "    - name: c%d\n      namespaceSelector: {matchLabels: {shard: \"%d\"}}\n", c, c)
		if p.pinSel[c] {
			fmt.Fprintf(&b, "      resourceSelector: {matchLabels: {pin: c%d}}\n", c)
		}
	}
	if p.defaultCtx >= 0 {
		fmt.Fprintf(&b, "    defaultContext: c%d\n", p.defaultCtx)
	}
	if p.allowMoves {
		b.WriteString("    allowMoves: true\n")
	}
	return b.String()
}

func (p *propPackage) resourceList() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	// The Widget CRD, cluster-scoped, so Widgets are broadcast unless pinned.
	b.WriteString("- apiVersion: apiextensions.k8s.io/v1\n  kind: CustomResourceDefinition\n  metadata:\n    name: widgets.example.com\n    annotations: {config.kubernetes.io/path: crd.yaml, config.kubernetes.io/index: '0'}\n  spec: {group: example.com, scope: Cluster, names: {kind: Widget, plural: widgets}}\n")
	for i, it := range p.items {
		apiVersion := map[string]string{"Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "ClusterRole": "rbac.authorization.k8s.io/v1", "Widget": "example.com/v1"}[it.kind]
		fmt.Fprintf(&b, "- apiVersion: %s\n  kind: %s\n  metadata:\n    name: %s\n", apiVersion, it.kind, it.name)
		if it.kind != "Namespace" && it.kind != "ClusterRole" && it.kind != "Widget" {
			fmt.Fprintf(&b, "    namespace: ns-%d\n", it.ns)
		}
		var labels []string
		if it.kind == "Namespace" && p.nsShard[it.ns] < p.contexts {
			labels = append(labels, fmt.Sprintf("shard: \"%d\"", p.nsShard[it.ns]))
		}
		if it.pin >= 0 {
			labels = append(labels, fmt.Sprintf("pin: c%d", it.pin))
		}
		if len(labels) > 0 {
			fmt.Fprintf(&b, "    labels: {%s}\n", strings.Join(labels, ", "))
		}
		fmt.Fprintf(&b, "    annotations: {config.kubernetes.io/path: 'f%d.yaml', config.kubernetes.io/index: '0'}\n  data: {k: \"%d\"}\n", i, i)
	}
	b.WriteString(p.config())
	return []byte(b.String())
}

// propSeed runs f for n seeded iterations (a quarter of them in the fast
// tier), naming the seed on failure.
func propSeed(t *testing.T, n int, f func(t *testing.T, rnd *rand.Rand)) {
	for seed := uint64(1); seed <= uint64(testenv.Iterations(n)); seed++ {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			f(t, rand.New(rand.NewPCG(seed, 7)))
		})
		if !ok {
			t.Logf("reproduce with seed %d", seed)
			return
		}
	}
}

type identity struct{ kind, namespace, name string }

func identities(t *testing.T, data []byte) ([]identity, []*yaml.RNode) {
	t.Helper()
	items, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("not a ResourceList: %v", err)
	}
	ids := make([]identity, len(items))
	for i, it := range items {
		ids[i] = identity{it.GetKind(), it.GetNamespace(), it.GetName()}
	}
	return ids, items
}

// TestPropertyRouting: on random packages, the number and order of items
// is kept, a second run changes nothing, and a namespaced item never goes
// where its Namespace does not.
func TestPropertyRouting(t *testing.T) {
	var routed, refused int
	propSeed(t, 150, func(t *testing.T, rnd *rand.Rand) {
		p := randomPackage(rnd)
		input := p.resourceList()
		out, err := executeProcessor(input)
		var results framework.Results
		if err != nil && !errorsAs(err, &results) {
			t.Fatalf("the function did not run: %v\n%s", err, input)
		}
		inIDs, _ := identities(t, input)
		outIDs, outItems := identities(t, out)
		if !slices.Equal(inIDs, outIDs) {
			t.Fatalf("items changed number or order:\nin  %v\nout %v", inIDs, outIDs)
		}
		if err != nil {
			refused++
			for _, it := range outItems {
				if _, ok := it.GetAnnotations()[v1alpha1.ContextAnnotation]; ok {
					t.Fatalf("an error run annotated %s", it.GetName())
				}
			}
			return
		}
		routed++
		again, err := executeProcessor(out)
		if err != nil {
			t.Fatalf("a second run fails: %v", err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("a second run changed the output:\n--- first\n%s--- second\n%s", out, again)
		}
		nsContexts := map[string][]string{}
		for _, it := range outItems {
			if it.GetKind() == "Namespace" {
				nsContexts[it.GetName()] = route.ParseContexts(it.GetAnnotations()[v1alpha1.ContextAnnotation])
			}
		}
		for _, it := range outItems {
			got := it.GetAnnotations()[v1alpha1.ContextAnnotation]
			if it.GetKind() == "CustomResourceDefinition" {
				continue
			}
			if got == "" {
				t.Fatalf("%s %s was not routed on a successful run", it.GetKind(), it.GetName())
			}
			if ns := it.GetNamespace(); ns != "" {
				for _, c := range route.ParseContexts(got) {
					if !slices.Contains(nsContexts[ns], c) {
						t.Errorf("%s %s/%s goes to %s, its Namespace only to %v", it.GetKind(), ns, it.GetName(), got, nsContexts[ns])
					}
				}
			}
		}
	})
	t.Logf("%d packages routed, %d refused", routed, refused)
	if routed == 0 || refused == 0 {
		t.Errorf("the generator must give both outcomes: %d routed, %d refused", routed, refused)
	}
}

func errorsAs(err error, results *framework.Results) bool {
	r, ok := err.(framework.Results)
	if ok {
		*results = r
	}
	return ok
}

// TestPropertyNoSilentMove: route a random package, then change labels and
// the config at random and decide again. Every resource keeps all of its
// contexts, or a move error or warning names it (or its Namespace, whose
// failure it shares).
func TestPropertyNoSilentMove(t *testing.T) {
	var checked, moves int
	propSeed(t, 300, func(t *testing.T, rnd *rand.Rand) {
		p := randomPackage(rnd)
		p.allowMoves = rnd.IntN(2) == 0
		out, err := executeProcessor(p.resourceList())
		if err != nil {
			return // nothing routed to move from
		}
		// Mutate: relabel Namespaces, pins, selectors, default, contexts.
		for i := range p.nsShard {
			if rnd.IntN(3) == 0 {
				p.nsShard[i] = rnd.IntN(p.contexts + 1)
			}
		}
		for c := range p.pinSel {
			if rnd.IntN(4) == 0 {
				p.pinSel[c] = !p.pinSel[c]
			}
		}
		if rnd.IntN(4) == 0 {
			p.defaultCtx = rnd.IntN(p.contexts+1) - 1
		}
		if rnd.IntN(4) == 0 {
			p.contexts++ // a context added: a move for nothing
			p.pinSel = append(p.pinSel, rnd.IntN(2) == 0)
		}
		_, routedItems := identities(t, out)
		// The routed items' annotations, new labels, new config.
		next := p.resourceList()
		nextDoc, err := yaml.Parse(string(next))
		if err != nil {
			t.Fatal(err)
		}
		nextItems, _ := nextDoc.Pipe(yaml.Lookup("items"))
		for i, n := range nextItems.Content() {
			if ctx := routedItems[i].GetAnnotations()[v1alpha1.ContextAnnotation]; ctx != "" {
				if err := yaml.NewRNode(n).PipeE(yaml.SetAnnotation(v1alpha1.ContextAnnotation, ctx)); err != nil {
					t.Fatal(err)
				}
			}
		}
		fnCfg, _ := nextDoc.Pipe(yaml.Lookup("functionConfig"))
		cfg, res := LoadConfig(fnCfg)
		if len(res) > 0 {
			t.Fatalf("config: %v", res)
		}
		items := make([]Item, len(nextItems.Content()))
		for i, n := range nextItems.Content() {
			items[i] = ItemOf(yaml.NewRNode(n))
		}
		o := cfg.Decide(items)
		named := func(i int) bool {
			for _, r := range o.Results {
				if r.ResourceRef == nil || r.Severity == framework.Info {
					continue
				}
				if r.ResourceRef.Kind == items[i].Kind && r.ResourceRef.Name == items[i].Name && r.ResourceRef.Namespace == items[i].Namespace {
					return true
				}
				// A failed Namespace explains its resources.
				if items[i].Namespace != "" && r.ResourceRef.Kind == "Namespace" && r.ResourceRef.Name == items[i].Namespace && r.Severity == framework.Error {
					return true
				}
			}
			return false
		}
		for i, it := range items {
			if !it.HasPrevious {
				continue
			}
			checked++
			now := route.ParseContexts(o.Contexts[i])
			kept := true
			for _, c := range it.Previous {
				kept = kept && slices.Contains(now, c)
			}
			if kept {
				continue
			}
			moves++
			if !named(i) {
				t.Errorf("%s %s/%s lost a context silently: %v -> %v (decision %v)", it.Kind, it.Namespace, it.Name, it.Previous, now, o.Routing.Decisions[i])
			}
		}
	})
	t.Logf("%d previously routed resources checked, %d lost a context (all reported)", checked, moves)
	if moves == 0 {
		t.Errorf("the mutations never caused a move: the property was not exercised")
	}
}

// TestScopeAndDataStoreFromOneLookup: for every kind of the built-in table
// (served and legacy), written in its own apiVersion and in a version no
// release served, routing's scope and the datastore come from one answer.
// A namespaced kind in a Namespace follows it and gets its override's
// datastore there; without metadata.namespace it is never broadcast; a
// cluster-scoped kind goes everywhere, with its override's datastore where
// the context declares it.
func TestScopeAndDataStoreFromOneLookup(t *testing.T) {
	honoured := map[string]bool{}
	var overrides strings.Builder
	for _, k := range kinds.All() {
		if _, _, ok := kinds.StoredResource(k.Storage); ok && k.Stored && !honoured[k.Storage.String()] {
			honoured[k.Storage.String()] = true
			fmt.Fprintf(&overrides, "  - {resource: %q, dataStore: ds}\n", k.Storage.String())
		}
	}
	cfgNode := yaml.MustParse(`apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: c00
    namespaceSelector: {matchLabels: {shard: "00"}}
    dataStores: [{name: ds, endpoints: ["https://ds:2379"]}]
  - name: c01
  dataStoreOverrides:
` + overrides.String())
	cfg, errs := LoadConfig(cfgNode)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	items := []Item{{Object: route.Object{APIVersion: "v1", Kind: "Namespace", Name: "a", Labels: map[string]string{"shard": "00"}}}}
	type want struct {
		contexts, datastores string // "" when refused
	}
	wants := []want{{"c00", "ds"}} // /namespaces has an override too
	for i, k := range kinds.All() {
		versions := []string{k.APIVersion()}
		if k.Group != "" { // the core group has no other spelling
			versions = append(versions, k.Group+"/v9never")
		}
		for _, av := range versions {
			if k.Kind == "Namespace" {
				continue
			}
			ds := "default"
			if k.Stored && honoured[k.Storage.String()] {
				ds = "ds"
			}
			name := fmt.Sprintf("o%d-%d", i, len(items))
			if k.Namespaced {
				items = append(items, Item{Object: route.Object{APIVersion: av, Kind: k.Kind, Namespace: "a", Name: name}})
				wants = append(wants, want{"c00", ds})
				items = append(items, Item{Object: route.Object{APIVersion: av, Kind: k.Kind, Name: name + "-nons"}})
				wants = append(wants, want{"", ""})
				continue
			}
			items = append(items, Item{Object: route.Object{APIVersion: av, Kind: k.Kind, Name: name}})
			if ds == "ds" {
				wants = append(wants, want{"c00,c01", "c00=ds,c01=default"})
			} else {
				wants = append(wants, want{"c00,c01", "default"})
			}
		}
	}
	out := cfg.Decide(items)
	for i, w := range wants {
		it := &items[i]
		if got := (want{out.Contexts[i], out.DataStores[i]}); got != w {
			t.Errorf("%s %s (namespace %q): routed %q with datastores %q, want %q with %q", it.APIVersion, it.Kind, it.Namespace, got.contexts, got.datastores, w.contexts, w.datastores)
		}
	}
}
