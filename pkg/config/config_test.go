package config

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const placedConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
spec:
  defaultContext: c01
  placement:
    strategy: Rendezvous
    label:
      key: example.com/shard
      values: {c00: "00", c01: "01", c02: "02"}
  contexts:
  - name: c00
    namespaceSelector: {matchLabels: {example.com/shard: "00"}}
  - name: c01
    weight: 0
    resourceSelector: {matchLabels: {tier: edge}}
    dataStores:
    - name: events
      endpoints: [https://etcd-events:2379]
  - name: c02
    weight: 3
  dataStoreOverrides:
  - resource: /events
    dataStore: events
    ephemeral: true
`

func load(t *testing.T, text string) (*Config, []Notice) {
	t.Helper()
	c, notices, errs := Load(yaml.MustParse(text))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return c, notices
}

// TestCompile checks every part of the compiled config against the
// ShardConfig it came from.
func TestCompile(t *testing.T) {
	c, notices := load(t, placedConfig)
	if len(notices) > 0 {
		t.Errorf("notices: %v", notices)
	}
	if !slices.Equal(c.Names, []string{"c00", "c01", "c02"}) {
		t.Errorf("Names = %q", c.Names)
	}
	for name, want := range map[string]int{"c00": 0, "c01": 1, "c02": 2, "c03": -1, "": -1} {
		if got := c.Index(name); got != want {
			t.Errorf("Index(%q) = %d, want %d", name, got, want)
		}
	}
	if got := strings.Join(c.NamesOf([]int{2, 0}), ","); got != "c02,c00" {
		t.Errorf("NamesOf = %q", got)
	}
	if c.DefaultContext != 1 {
		t.Errorf("DefaultContext = %d, want 1", c.DefaultContext)
	}
	if c.NamespaceSelectors[1] != nil || c.ResourceSelectors[0] != nil || c.ResourceSelectors[2] != nil {
		t.Error("an absent selector must compile to nil (matches nothing)")
	}
	if got := c.NamespaceIndex.Match(map[string]string{"example.com/shard": "00"}); !slices.Equal(got, []int{0}) {
		t.Errorf("NamespaceIndex.Match = %v, want [0]", got)
	}
	if got := c.ResourceIndex.Match(map[string]string{"tier": "edge"}); !slices.Equal(got, []int{1}) {
		t.Errorf("ResourceIndex.Match = %v, want [1]", got)
	}
	if !slices.Equal(c.Placement.Weights, []uint32{1, 0, 3}) {
		t.Errorf("Weights = %v, want [1 0 3]", c.Placement.Weights)
	}
	l := c.Placement.Label
	if l.Key != "example.com/shard" || !slices.Equal(l.Values, []string{"00", "01", "02"}) {
		t.Errorf("Label = %+v", l)
	}
	if k, ok := l.Context("02"); !ok || k != 2 {
		t.Errorf(`Label.Context("02") = %d, %v`, k, ok)
	}
	if _, ok := l.Context("03"); ok {
		t.Error(`Label.Context("03") found a context`)
	}
	o, ok := c.Override("events.k8s.io/v1", "Event")
	if !ok || o.DataStore != "events" || !o.Ephemeral || o.Resource.String() != "/events" {
		t.Errorf("Override(events.k8s.io/v1 Event) = %+v, %v", o, ok)
	}
	if _, ok := c.Override("v1", "Pod"); ok {
		t.Error("Pods have no override")
	}
	if _, ok := c.DataStore(1, "events"); !ok {
		t.Error("c01 declares events")
	}
	if _, ok := c.DataStore(0, "events"); ok {
		t.Error("c00 does not declare events")
	}
}

func TestCompileWithoutPlacement(t *testing.T) {
	c, _ := load(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: shards}
data:
  c00: shard=00
  c01: shard in (01, 02)
`)
	if c.Placement != nil || c.DefaultContext != -1 {
		t.Errorf("Placement = %v, DefaultContext = %d; want nil, -1", c.Placement, c.DefaultContext)
	}
	// A ConfigMap's selector applies to both the resource and its Namespace.
	for _, x := range []*SelectorIndex{c.NamespaceIndex, c.ResourceIndex} {
		if got := x.Match(map[string]string{"shard": "02"}); !slices.Equal(got, []int{1}) {
			t.Errorf("Match(shard=02) = %v, want [1]", got)
		}
	}
}

// TestLoadConfigMapErrorPaths: the errors of a ConfigMap config name the
// data key the user wrote, not the typed form's spec.contexts[i].
func TestLoadConfigMapErrorPaths(t *testing.T) {
	_, _, errs := Load(yaml.MustParse(`apiVersion: v1
kind: ConfigMap
metadata: {name: shards}
data:
  "bad,name": shard=00
`))
	if len(errs) != 1 || errs[0].Field != "data[bad,name]" {
		t.Fatalf("errors = %v, want one at data[bad,name]", errs)
	}
}

// TestCompilePolicy: the allow* switches and the guard's limits are read
// once, defaults applied where the spec is silent.
func TestCompilePolicy(t *testing.T) {
	c, _ := load(t, `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  allowMoves: true
  allowMassPrune: true
  pruneGuard: {maxPercent: 20}
  contexts:
  - name: a
`)
	want := Policy{AllowMoves: true, AllowMassPrune: true, PruneMaxPercent: 20, PruneMinObjects: 10}
	if c.Policy != want {
		t.Errorf("Policy = %+v, want %+v", c.Policy, want)
	}
	c, _ = load(t, "apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata: {name: s}\nspec:\n  allowDataStoreChanges: true\n  contexts:\n  - name: a\n")
	want = Policy{AllowDataStoreChanges: true, PruneMaxPercent: 50, PruneMinObjects: 10}
	if c.Policy != want {
		t.Errorf("Policy = %+v, want %+v", c.Policy, want)
	}
	if got := c.Contexts(); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("Contexts() = %+v, want [a]", got)
	}
}
