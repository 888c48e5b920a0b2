package v1alpha1

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// errorText joins every error, one a line, for substring checks.
func errorText(errs field.ErrorList) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name string
		yaml string // "" means no function config at all
		// On success: the context names in order.
		wantContexts []string
		// On failure: the fields at fault, in order, and fragments the errors must contain.
		wantFields []string
		wantText   []string
	}{
		{
			name: "ShardConfig from the issue",
			yaml: `
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations: {config.kubernetes.io/local-config: "true"}
spec:
  contexts:
  - name: foo_bar_baz_00
    namespaceSelector:
      matchLabels: {spotify.com/cluster-shard: "00"}
    dataStores:
    - name: events
      endpoints: ["https://etcd-events-00-0:2379", "https://etcd-events-00-1:2379"]
  - name: foo_bar_baz_01
    namespaceSelector: {matchLabels: {spotify.com/cluster-shard: "01"}}
  dataStoreOverrides:
  - resource: /events
    dataStore: events
  defaultContext: foo_bar_baz_00
  allowMoves: false
`,
			wantContexts: []string{"foo_bar_baz_00", "foo_bar_baz_01"},
		},
		{
			name:       "no function config",
			wantFields: []string{"<nil>"},
			wantText:   []string{"ShardConfig", "ConfigMap"},
		},
		{
			name:       "function config is not a mapping",
			yaml:       `[a, b]`,
			wantFields: []string{"<nil>"},
			wantText:   []string{"ShardConfig", "ConfigMap"},
		},
		{
			// kyaml's GetName panicked on it (a fuzzer's find).
			name:         "ConfigMap whose metadata is a one-entry sequence",
			yaml:         "apiVersion: v1\nkind: ConfigMap\nmetadata: [a]\ndata: {c: s=x}\n",
			wantContexts: []string{"c"},
		},
		{
			name: "unknown kind names the accepted kinds",
			yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: shards}
`,
			wantFields: []string{"kind"},
			wantText:   []string{"apps/v1 Deployment", "shardrouter.dev/v1alpha1 ShardConfig", "v1 ConfigMap"},
		},
		{
			name: "ShardConfig of an unknown version",
			yaml: `
apiVersion: shardrouter.dev/v1beta1
kind: ShardConfig
metadata: {name: shards}
spec: {contexts: [{name: a}]}
`,
			wantFields: []string{"kind"},
			wantText:   []string{"shardrouter.dev/v1beta1 ShardConfig", "v1 ConfigMap"},
		},
		{
			name: "ConfigMap of another group is not the ConfigMap form",
			yaml: `
apiVersion: example.com/v1
kind: ConfigMap
metadata: {name: shards}
data: {a: "x=y"}
`,
			wantFields: []string{"kind"},
			wantText:   []string{"v1 ConfigMap"},
		},
		{
			name: "ShardConfig without contexts names the accepted kinds",
			yaml: `
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec: {contexts: []}
`,
			wantFields: []string{"spec.contexts"},
			wantText:   []string{"at least one context", "ShardConfig", "v1 ConfigMap"},
		},
		{
			name: "ShardConfig is strict: misspelt field named with its path",
			yaml: `
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: a
    namspaceSelector: {matchLabels: {shard: "00"}}
`,
			wantFields: []string{"spec.contexts[0].namspaceSelector"},
			wantText:   []string{"unknown field"},
		},
		{
			name: "ShardConfig is strict: every unknown field reported",
			yaml: `
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: a
    dataStores: [{name: events, endpoints: ["https://e:2379"], endpoint: "https://e:2379"}]
  allowMove: true
`,
			wantFields: []string{"spec.allowMove", "spec.contexts[0].dataStores[0].endpoint"},
		},
		{
			name: "ShardConfig field of the wrong type",
			yaml: `
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec: {contexts: {name: a}}
`,
			wantFields: []string{"<nil>"},
			wantText:   []string{"cannot decode the ShardConfig"},
		},
		{
			name: "ShardConfig that decodes but does not validate",
			yaml: `
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts: [{name: "a,b"}]
  defaultContext: c
`,
			wantFields: []string{"spec.contexts[0].name", "spec.defaultContext"},
		},
		{
			name: "ConfigMap: data order is context order",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  zz-ctx: shard=00
  aa-ctx: shard in (01,02)
  mm-ctx: '!shard'
`,
			wantContexts: []string{"zz-ctx", "aa-ctx", "mm-ctx"},
		},
		{
			name: "ConfigMap without data names the accepted kinds",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
`,
			wantFields: []string{"data"},
			wantText:   []string{"no contexts", "ShardConfig", "v1 ConfigMap"},
		},
		{
			name: "ConfigMap with empty data",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data: {}
`,
			wantFields: []string{"data"},
			wantText:   []string{"no contexts", "ShardConfig", "v1 ConfigMap"},
		},
		{
			name: "ConfigMap: an invalid selector names its key",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  good: shard=00
  broken-ctx: shard in (01
`,
			wantFields: []string{"data[broken-ctx]"},
			wantText:   []string{"broken-ctx", "shard in (01", "not a label selector"},
		},
		{
			name: "ConfigMap: every invalid selector reported",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  a: =00
  b: ""
  c: "   "
`,
			wantFields: []string{"data[a]", "data[b]", "data[c]"},
		},
		{
			name: "ConfigMap: a selector of nothing but separators",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  a: ","
`,
			wantFields: []string{"data[a]"},
		},
		{
			name: "ConfigMap: a bad context name names its key",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  "a/b": shard=00
`,
			wantFields: []string{"data[a/b]"},
			wantText:   []string{"a/b"},
		},
		{
			name: "ConfigMap: a selector value that is not a string",
			yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  a: {shard: "00"}
`,
			wantFields: []string{"data[a]"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var node *yaml.RNode
			if tc.yaml != "" {
				node = yaml.MustParse(tc.yaml)
			}
			cfg, errs := Load(node)
			if tc.wantContexts != nil {
				if len(errs) > 0 {
					t.Fatalf("Load: %v", errs)
				}
				if got := contextNames(cfg); !reflect.DeepEqual(got, tc.wantContexts) {
					t.Errorf("contexts = %q, want %q", got, tc.wantContexts)
				}
				return
			}
			if cfg != nil {
				t.Errorf("Load returned a config along with errors")
			}
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			slices.Sort(fields)
			if !reflect.DeepEqual(fields, tc.wantFields) {
				t.Errorf("error fields = %q, want %q\n%s", fields, tc.wantFields, errorText(errs))
			}
			text := errorText(errs)
			for _, w := range tc.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("errors do not mention %q:\n%s", w, text)
				}
			}
		})
	}
}

// TestLoadConfigMapSelectors checks that kubectl -l syntax becomes the same
// selector, used for both the resource and its Namespace.
func TestLoadConfigMapSelectors(t *testing.T) {
	cfg, errs := Load(yaml.MustParse(`
apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  eq: shard=00
  in: shard in (x,y)
  notexists: '!shard'
  and: shard=01,tier!=edge
  dbl: shard==00
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// The canonical string form of each selector (labels.Selector.String).
	want := map[string]string{
		"eq":        "shard=00",
		"in":        "shard in (x,y)",
		"notexists": "!shard",
		"and":       "shard=01,tier notin (edge)",
		"dbl":       "shard=00",
	}
	if len(cfg.Spec.Contexts) != len(want) {
		t.Fatalf("got %d contexts, want %d", len(cfg.Spec.Contexts), len(want))
	}
	for _, c := range cfg.Spec.Contexts {
		t.Run(c.Name, func(t *testing.T) {
			for what, sel := range map[string]*metav1.LabelSelector{"namespaceSelector": c.NamespaceSelector, "resourceSelector": c.ResourceSelector} {
				s, err := metav1.LabelSelectorAsSelector(sel)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if s.String() != want[c.Name] {
					t.Errorf("%s = %q, want %q", what, s.String(), want[c.Name])
				}
			}
		})
	}
	if cfg.APIVersion != APIVersion || cfg.Kind != Kind || cfg.Name != "function-input" {
		t.Errorf("typed config identity = %s %s %s", cfg.APIVersion, cfg.Kind, cfg.Name)
	}
}

// TestLoadShardConfigFields checks that every documented field is decoded.
func TestLoadShardConfigFields(t *testing.T) {
	cfg, errs := Load(yaml.MustParse(`
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: c00
    namespaceSelector: {matchLabels: {shard: "00"}}
    resourceSelector: {matchExpressions: [{key: tier, operator: In, values: [edge]}]}
    dataStores:
    - {name: events, endpoints: ["https://e0:2379", "https://e1:2379"], kamajiDataStore: events-00}
  - name: c01
    resourceSelector: {}
  dataStoreOverrides:
  - {resource: /events, dataStore: events, ephemeral: true}
  defaultContext: c01
  allowMoves: true
  allowDataStoreChanges: true
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := ShardConfigSpec{
		Contexts: []Context{
			{
				Name:              "c00",
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"shard": "00"}},
				ResourceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"edge"}}}},
				DataStores: []DataStore{{Name: "events", Endpoints: []string{"https://e0:2379", "https://e1:2379"}, KamajiDataStore: "events-00"}},
			},
			// {} is kept apart from absent: it matches everything.
			{Name: "c01", ResourceSelector: &metav1.LabelSelector{}},
		},
		DataStoreOverrides:    []DataStoreOverride{{Resource: "/events", DataStore: "events", Ephemeral: true}},
		DefaultContext:        "c01",
		AllowMoves:            true,
		AllowDataStoreChanges: true,
	}
	if !reflect.DeepEqual(cfg.Spec, want) {
		t.Errorf("spec =\n%+v\nwant\n%+v", cfg.Spec, want)
	}
}

// TestLoadFixtures loads testdata/valid-*.yaml, which must load, and
// testdata/invalid-*.yaml, which must not; each "# error: <regexp>" line of
// an invalid fixture must match the errors.
func TestLoadFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			node, err := yaml.Parse(string(data))
			if err != nil {
				t.Fatal(err)
			}
			_, errs := Load(node)
			switch {
			case strings.HasPrefix(name, "valid-"):
				if len(errs) > 0 {
					t.Errorf("Load: %v", errs)
				}
			case strings.HasPrefix(name, "invalid-"):
				if len(errs) == 0 {
					t.Fatal("Load accepted an invalid config")
				}
				text := errorText(errs)
				n := 0
				for _, line := range strings.Split(string(data), "\n") {
					if re, ok := strings.CutPrefix(line, "# error: "); ok {
						n++
						if !regexp.MustCompile(re).MatchString(text) {
							t.Errorf("errors do not match %q:\n%s", re, text)
						}
					}
				}
				if n == 0 {
					t.Errorf("an invalid fixture needs at least one '# error: <regexp>' line")
				}
			default:
				t.Errorf("fixture names start with valid- or invalid-")
			}
		})
	}
}

func contextNames(cfg *ShardConfig) []string {
	names := make([]string, len(cfg.Spec.Contexts))
	for i, c := range cfg.Spec.Contexts {
		names[i] = c.Name
	}
	return names
}
