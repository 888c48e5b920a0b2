package v1alpha1

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const placementBase = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: ctx-00
    namespaceSelector: {matchLabels: {example.com/shard: "00"}}
`

func loadPlacement(t *testing.T, doc string) []string {
	t.Helper()
	_, errs := Load(yaml.MustParse(doc))
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestValidatePlacementAndBudgets(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []string // substrings, one per expected error, in order
	}{
		{name: "valid", doc: placementBase + `    weight: 2
    budget: {maxObjects: 10000, maxBytes: 2Gi, enforce: true}
    defaultDataStoreBudget: {maxBytes: 1Gi}
    dataStores:
    - name: events
      endpoints: ["https://etcd-events-0:2379"]
      budget: {maxObjects: 500}
  - name: ctx-01
    weight: 0
  placement:
    strategy: Rendezvous
    label:
      key: example.com/shard
      values: {ctx-00: "00", ctx-01: "01"}
`},
		{name: "weight without placement", doc: placementBase + "    weight: 1\n",
			want: []string{"spec.contexts[0].weight: Forbidden: weight is only used by spec.placement"}},
		{name: "negative weight", doc: placementBase + "    weight: -1\n  placement: {strategy: Rendezvous}\n",
			want: []string{"spec.contexts[0].weight: Invalid value: -1", "spec.contexts: Required value: spec.placement needs at least one context with a weight above 0"}},
		{name: "all weights 0", doc: placementBase + "    weight: 0\n  placement: {strategy: Rendezvous}\n",
			want: []string{"at least one context with a weight above 0"}},
		{name: "strategy", doc: placementBase + "  placement: {strategy: Modulo}\n",
			want: []string{`spec.placement.strategy: Unsupported value: "Modulo": supported values: "Rendezvous"`}},
		{name: "strategy missing", doc: placementBase + "  placement: {}\n",
			want: []string{"spec.placement.strategy: Required value"}},
		{name: "label: missing, unknown, invalid and duplicate values", doc: placementBase + `  - name: ctx-01
  - name: ctx-02
  - name: ctx-03
  placement:
    strategy: Rendezvous
    label:
      key: example.com/shard
      values: {ctx-00: "00", ctx-02: "not valid!", ctx-03: "00", ctx-09: "09"}
`, want: []string{
			"spec.placement.label.values[ctx-01]: Required value: every context needs a label value (spec.contexts[1])",
			`spec.placement.label.values[ctx-02]: Invalid value: "not valid!"`,
			`spec.placement.label.values[ctx-03]: Duplicate value: "00 (also the value of context \"ctx-00\")"`,
			`spec.placement.label.values[ctx-09]: Not found: "ctx-09"`,
		}},
		{name: "label key", doc: placementBase + "  placement: {strategy: Rendezvous, label: {key: 'bad key', values: {ctx-00: '00'}}}\n",
			want: []string{`spec.placement.label.key: Invalid value: "bad key"`}},
		{name: "label value another context selects", doc: placementBase + `  - name: ctx-01
  placement:
    strategy: Rendezvous
    label: {key: example.com/shard, values: {ctx-00: "01", ctx-01: "00"}}
`, want: []string{`spec.placement.label.values[ctx-01]: Invalid value: "00": spec.contexts[0].namespaceSelector (context "ctx-00") matches example.com/shard=00, so a Namespace placed on "ctx-01" would be routed to "ctx-00" on the next run`}},
		{name: "budgets", doc: placementBase + `    budget: {enforce: true}
    defaultDataStoreBudget: {maxObjects: -1, maxBytes: -5}
    dataStores:
    - name: events
      endpoints: ["https://etcd-events-0:2379"]
      budget: {maxBytes: 1500m}
`, want: []string{
			"spec.contexts[0].budget: Required value: a budget needs maxObjects, maxBytes or both",
			"spec.contexts[0].defaultDataStoreBudget.maxObjects: Invalid value: -1",
			`spec.contexts[0].defaultDataStoreBudget.maxBytes: Invalid value: "-5"`,
			`spec.contexts[0].dataStores[0].budget.maxBytes: Invalid value: "1500m": must be a whole number of bytes`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadPlacement(t, tc.doc)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestPlacementLabelValuesMustBeStrings: an unquoted 00 is the number 0 in
// YAML, and the strict decoder says so instead of storing "0".
func TestPlacementLabelValuesMustBeStrings(t *testing.T) {
	got := loadPlacement(t, placementBase+"  placement: {strategy: Rendezvous, label: {key: k, values: {ctx-00: 00}}}\n")
	if len(got) != 1 || !strings.Contains(got[0], "cannot decode") {
		t.Fatalf("want a decode error, got %v", got)
	}
}
