package function

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const capacityConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: ctx-00
    namespaceSelector: {matchLabels: {shard: "00"}}
    budget: {maxObjects: 3}
    dataStores:
    - name: events
      endpoints: ["https://etcd-events-00:2379"]
      budget: {maxBytes: 100, enforce: true}
  - name: ctx-01
    namespaceSelector: {matchLabels: {shard: "01"}}
    defaultDataStoreBudget: {maxObjects: 1000, maxBytes: 1Mi}
  dataStoreOverrides:
  - {resource: /events, dataStore: events}
`

var capacityItems = []string{
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {shard: \"00\"}}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: a}\ndata: {k: v}\n",
	"apiVersion: v1\nkind: Event\nmetadata: {name: e1, namespace: a}\nreason: Started\nmessage: container started\n",
	"apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e2, namespace: a}\nnote: a longer note than the other event\n",
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: b, labels: {shard: \"01\"}}\n",
	"apiVersion: v1\nkind: Event\nmetadata: {name: e3, namespace: b}\n",
	// Cluster-scoped: one copy in each context.
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\nrules: []\n",
	// Never routed.
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local, annotations: {config.kubernetes.io/local-config: \"true\"}}\n",
}

func capDecide(t *testing.T, config string, docs []string) (*Outcome, []Item) {
	t.Helper()
	cfg, errs := LoadConfig(yaml.MustParse(config))
	if len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	items := make([]Item, len(docs))
	for i, d := range docs {
		items[i] = ItemOf(yaml.MustParse(d))
	}
	return cfg.Decide(items), items
}

func TestCapacityCountsPerContextAndDataStore(t *testing.T) {
	out, _ := capDecide(t, capacityConfig, capacityItems)
	size := func(i int) int64 { return sizeByEncodingJSON(t, capacityItems[i]) }
	c := out.Capacity
	type row struct {
		ctx, ds        string
		objects, bytes int64
	}
	var got []row
	for _, cc := range c.Contexts {
		got = append(got, row{cc.Name, "", cc.Objects, cc.Bytes})
		for _, ds := range cc.DataStores {
			got = append(got, row{cc.Name, ds.Name, ds.Objects, ds.Bytes})
		}
	}
	want := []row{
		{"ctx-00", "", 5, size(0) + size(1) + size(2) + size(3) + size(6)},
		{"ctx-00", "default", 3, size(0) + size(1) + size(6)},
		{"ctx-00", "events", 2, size(2) + size(3)},
		// ctx-01 declares no events datastore: its Event stays in default.
		{"ctx-01", "", 3, size(4) + size(5) + size(6)},
		{"ctx-01", "default", 3, size(4) + size(5) + size(6)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("capacity\n got %v\nwant %v", got, want)
	}
	if c.Total.Objects != 8 || c.Total.Bytes != want[0].bytes+want[3].bytes || c.NotRouted != 1 || c.Failed != 0 {
		t.Errorf("total %+v, notRouted %d, failed %d", c.Total, c.NotRouted, c.Failed)
	}
	if s := c.Contexts[0].ObjectShare; s != 0.625 {
		t.Errorf("ctx-00 object share %v, want 5/8", s)
	}
}

func TestCapacityBudgets(t *testing.T) {
	out, _ := capDecide(t, capacityConfig, capacityItems)
	var budget []string
	for _, r := range out.Results {
		if r.Tags["budget"] != "" {
			budget = append(budget, fmt.Sprintf("%s %s %s/%s limit=%s actual=%s field=%s", r.Severity, r.Tags["budget"],
				r.Tags["context"], r.Tags["datastore"], r.Tags["limit"], r.Tags["actual"], r.Field.Path))
		}
	}
	events := sizeByEncodingJSON(t, capacityItems[2]) + sizeByEncodingJSON(t, capacityItems[3])
	want := []string{
		"warning maxObjects ctx-00/ limit=3 actual=5 field=spec.contexts[0].budget.maxObjects",
		fmt.Sprintf("error maxBytes ctx-00/events limit=100 actual=%d field=spec.contexts[0].dataStores[0].budget.maxBytes", events),
	}
	if strings.Join(budget, "\n") != strings.Join(want, "\n") {
		t.Errorf("budget results\n got %s\nwant %s", strings.Join(budget, "\n"), strings.Join(want, "\n"))
	}
	if out.Results.ExitCode() == 0 {
		t.Error("an enforced budget must make the outcome fail")
	}
	ds := out.Capacity.Contexts[0].DataStores[1]
	if ds.Budget == nil || fmt.Sprint(ds.Budget.Exceeded) != "[maxBytes]" {
		t.Errorf("events budget status %+v", ds.Budget)
	}
	if b := out.Capacity.Contexts[1].DataStores[0].Budget; b == nil || len(b.Exceeded) != 0 || *b.MaxBytes != 1<<20 {
		t.Errorf("ctx-01 default budget status %+v", b)
	}
}

func TestCapacityInfoResults(t *testing.T) {
	out, _ := capDecide(t, capacityConfig, capacityItems[4:7])
	var got []string
	for _, r := range out.Results {
		if r.Severity == framework.Info && strings.HasPrefix(r.Message, "capacity:") {
			got = append(got, r.Message)
		}
	}
	b, cr := sizeByEncodingJSON(t, capacityItems[4])+sizeByEncodingJSON(t, capacityItems[5]), sizeByEncodingJSON(t, capacityItems[6])
	total := b + 2*cr
	pct := func(n int64) string { return fmt.Sprintf("%.1f%%", float64(n)*100/float64(total)) }
	want := []string{
		fmt.Sprintf(`capacity: context "ctx-00": 1 objects (25.0%%), %d bytes (%s)`, cr, pct(cr)),
		fmt.Sprintf(`capacity: context "ctx-00" datastore "default": 1 objects (25.0%%), %d bytes (%s)`, cr, pct(cr)),
		`capacity: context "ctx-00" datastore "events": 0 objects (0.0%), 0 bytes (0.0%)`,
		fmt.Sprintf(`capacity: context "ctx-01": 3 objects (75.0%%), %d bytes (%s)`, b+cr, pct(b+cr)),
		fmt.Sprintf(`capacity: context "ctx-01" datastore "default": 3 objects (75.0%%), %d bytes (%s)`, b+cr, pct(b+cr)),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("info results\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const capPlacementConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: ctx-00
  - name: ctx-01
  - name: ctx-02
  placement:
    strategy: Rendezvous
    label:
      key: example.com/shard
      values: {ctx-00: "00", ctx-01: "01", ctx-02: "02"}
`

// TestProcessorPlacementIsStickyAndIdempotent runs the function twice: the
// first run places the Namespaces (annotation and label) and its resources
// follow; the second run changes nothing, and reports the same capacity, so
// the label's bytes were counted before it existed.
func TestProcessorPlacementIsStickyAndIdempotent(t *testing.T) {
	input := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: team-a # placed by the hash
- apiVersion: v1
  kind: Namespace
  metadata:
    name: team-b
    labels: {app: b}
- apiVersion: v1
  kind: Namespace
  metadata:
    name: team-c
    labels: {}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm, namespace: team-a}
functionConfig:
` + capIndent(capPlacementConfig, "  ")
	// run returns the output without its results, the capacity messages,
	// and the bytes of all contexts together.
	run := func(in string) (string, []string, int64) {
		t.Helper()
		var out strings.Builder
		var results framework.Results
		p := framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
			err := Processor{}.Process(rl)
			results = rl.Results
			return err
		})
		if err := framework.Execute(p, &kio.ByteReadWriter{Reader: strings.NewReader(in), Writer: &out, KeepReaderAnnotations: true}); err != nil {
			t.Fatalf("process: %v", err)
		}
		var capa []string
		var total int64
		for _, r := range results {
			if strings.HasPrefix(r.Message, "capacity:") {
				capa = append(capa, r.Message)
				if r.Tags["datastore"] == "" {
					n, _ := strconv.ParseInt(r.Tags["bytes"], 10, 64)
					total += n
				}
			}
		}
		items, _, _ := strings.Cut(out.String(), "\nresults:\n")
		return items, capa, total
	}
	first, capa1, total := run(input)
	for _, want := range []string{
		"    name: team-a # placed by the hash\n    annotations:\n      shardrouter.dev/context: 'ctx-02'",
		"example.com/shard: '02'",
		"labels: {app: b, example.com/shard: ",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first run output lacks %q:\n%s", want, first)
		}
	}
	second, capa2, _ := run(first)
	if second != first {
		t.Errorf("second run changed the output:\n%s\n---\n%s", first, second)
	}
	if strings.Join(capa1, "\n") != strings.Join(capa2, "\n") {
		t.Errorf("capacity differs between runs:\n%s\n---\n%s", strings.Join(capa1, "\n"), strings.Join(capa2, "\n"))
	}
	// The bytes reported before the labels existed are the labelled
	// objects' size.
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(first)}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, n := range nodes {
		want += sizeByEncodingJSON(t, n.MustString())
	}
	if total != want {
		t.Errorf("capacity reports %d bytes in all, the labelled items hold %d", total, want)
	}
}

func capIndent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

func TestBytesText(t *testing.T) {
	if got, want := bytesText(3565158, "47.1%"), "3565158 bytes (3.4 MiB, 47.1%)"; got != want {
		t.Errorf("bytesText = %q, want %q", got, want)
	}
	if got, want := bytesText(562, ""), "562 bytes"; got != want {
		t.Errorf("bytesText = %q, want %q", got, want)
	}
}
