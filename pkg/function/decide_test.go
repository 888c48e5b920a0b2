package function

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// runProcessor executes the Processor as the function binary does and returns the
// output items and the results.
func runProcessor(t *testing.T, input string) (items []*yaml.RNode, results framework.Results, err error) {
	t.Helper()
	var out bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: strings.NewReader(input), Writer: &out, KeepReaderAnnotations: true}
	capture := framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
		err := Processor{}.Process(rl)
		results = rl.Results
		return err
	})
	err = framework.Execute(capture, rw)
	items, rerr := (&kio.ByteReader{Reader: &out, OmitReaderAnnotations: true}).Read()
	if rerr != nil {
		t.Fatalf("output is not a ResourceList: %v\n%s", rerr, out.String())
	}
	return items, results, err
}

// testResourceList wraps items (a YAML sequence, "- ..." lines) and a function config.
func testResourceList(items, config string) string {
	return "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + items +
		"functionConfig:\n" + indentYAML(config, "  ")
}

func indentYAML(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// routingAnnotations returns "context | datastore" for an item, or "-" when it
// carries neither annotation.
func routingAnnotations(rn *yaml.RNode) string {
	a := rn.GetAnnotations()
	c, okC := a["shardrouter.dev/context"]
	d, okD := a["shardrouter.dev/datastore"]
	if !okC && !okD {
		return "-"
	}
	return c + " | " + d
}

// wantResult is an expected error or warning result; info results are not
// checked here. text fragments must all be in the message.
type wantResult struct {
	severity framework.Severity
	// resource is "Kind name" or "Kind namespace/name" of ResourceRef, "" for none.
	resource string
	field    string
	file     string // "path[index]", "" to skip
	text     []string
}

const testShardConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
spec:
  contexts:
  - name: c00
    namespaceSelector: {matchLabels: {shard: "00"}}
    dataStores:
    - {name: events, endpoints: ["https://etcd-events-00:2379"]}
    - {name: leases, endpoints: ["https://etcd-leases-00:2379"]}
    - {name: apps, endpoints: ["https://etcd-apps-00:2379"]}
  - name: c01
    namespaceSelector: {matchLabels: {shard: "01"}}
    dataStores:
    - {name: events, endpoints: ["https://etcd-events-01:2379"]}
  - name: c02
    namespaceSelector: {matchLabels: {shard: "02"}}
  dataStoreOverrides:
  - {resource: /events, dataStore: events}
  - {resource: coordination.k8s.io/leases, dataStore: leases}
  - {resource: apps/deployments, dataStore: apps}
`

// Namespaces of the tests: a in c00, b in c01, c in c02, all in every context.
const testNamespaces = `- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: {shard: "00"}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: b, labels: {shard: "01"}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: c, labels: {shard: "02"}}}
`

// testAllConfig: every context's selector also matches a Namespace labelled
// shard: all; c00 and c02 declare an events datastore for /events.
const testAllConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
spec:
  contexts:
  - name: c00
    namespaceSelector: {matchExpressions: [{key: shard, operator: In, values: ["00", all]}]}
    dataStores:
    - {name: events, endpoints: ["https://etcd-events-00:2379"]}
  - name: c01
    namespaceSelector: {matchExpressions: [{key: shard, operator: In, values: ["01", all]}]}
  - name: c02
    namespaceSelector: {matchExpressions: [{key: shard, operator: In, values: ["02", all]}]}
    dataStores:
    - {name: events, endpoints: ["https://etcd-events-02:2379"]}
  dataStoreOverrides:
  - {resource: /events, dataStore: events}
`

func TestProcess(t *testing.T) {
	cases := []struct {
		name   string
		config string
		items  string
		// want is routingAnnotations() of each output item.
		want    []string
		results []wantResult
		wantErr bool
	}{
		{
			name:   "local config: any value but false is never routed",
			config: testShardConfig,
			items: testNamespaces + `- apiVersion: v1
  kind: ConfigMap
  metadata: {name: lc-true, namespace: a, annotations: {config.kubernetes.io/local-config: "true"}}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: lc-empty, namespace: a, annotations: {config.kubernetes.io/local-config: ""}}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: lc-yes, namespace: a, annotations: {config.kubernetes.io/local-config: "yes"}}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: lc-false, namespace: a, annotations: {config.kubernetes.io/local-config: "false"}}
`,
			want: []string{"c00 | default", "c01 | default", "c02 | default", "-", "-", "-", "c00 | default"},
		},
		{
			name:   "Kptfile, inventory ResourceGroup and a ShardConfig among the items are left alone",
			config: testShardConfig,
			items: testNamespaces + `- apiVersion: kpt.dev/v1
  kind: Kptfile
  metadata: {name: pkg}
- apiVersion: kpt.dev/v1alpha1
  kind: ResourceGroup
  metadata: {name: inventory-123, namespace: a, labels: {cli-utils.sigs.k8s.io/inventory-id: "123"}}
- apiVersion: shardrouter.dev/v1alpha1
  kind: ShardConfig
  metadata: {name: shards}
  spec: {contexts: [{name: c00}]}
`,
			want: []string{"c00 | default", "c01 | default", "c02 | default", "-", "-", "-"},
		},
		{
			name: "the function config's own copy (a ConfigMap) is left alone, other ConfigMaps are routed",
			config: `apiVersion: v1
kind: ConfigMap
metadata: {name: shards}
data:
  c00: shard=00
  c01: shard in (01,02)
`,
			items: `- apiVersion: v1
  kind: ConfigMap
  metadata: {name: shards, labels: {shard: "00"}}
  data: {c00: shard=00, c01: "shard in (01,02)"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: other, namespace: elsewhere, labels: {shard: "02"}}
`,
			want: []string{"-", "c01 | default"},
		},
		{
			name: "ConfigMap form: selectors apply to the resource and to its Namespace",
			config: `apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  zz: shard=00
  aa: shard in (01,02)
`,
			items: testNamespaces + `- {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: c}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: z, namespace: elsewhere, labels: {shard: "00"}}}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r}}
`,
			// The annotation lists contexts in data order: zz before aa.
			want: []string{"zz | default", "aa | default", "aa | default", "aa | default", "zz | default", "zz,aa | default"},
		},
		{
			name: "ConfigMap form: '!a' also matches the resource's own labels",
			config: `apiVersion: v1
kind: ConfigMap
metadata: {name: function-input}
data:
  labelled: shard
  unlabelled: '!shard'
`,
			items: `- {apiVersion: v1, kind: Namespace, metadata: {name: d}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: y, namespace: d}}
- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: {shard: "00"}}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: labelled, namespace: a, labels: {shard: "00"}}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: a}}
`,
			// x has no shard label, so '!shard' selects it for "unlabelled",
			// where its Namespace does not go (the namespaceConsistency check).
			want:    []string{"-", "-", "-", "-", "-"},
			wantErr: true,
			results: []wantResult{{severity: framework.Error, resource: "ConfigMap a/x", field: "metadata.labels",
				text: []string{`"unlabelled"`, `Namespace "a" goes only to "labelled"`}}},
		},
		{
			name:   "Events of both groups go to the events datastore where the context declares it",
			config: testShardConfig,
			items: testNamespaces + `- {apiVersion: v1, kind: Event, metadata: {name: e1, namespace: a}}
- {apiVersion: events.k8s.io/v1, kind: Event, metadata: {name: e2, namespace: a}}
- {apiVersion: events.k8s.io/v1, kind: Event, metadata: {name: e3, namespace: b}}
- {apiVersion: v1, kind: Event, metadata: {name: e4, namespace: c}}
- {apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: l1, namespace: a}}
- {apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: l2, namespace: b}}
- {apiVersion: v1, kind: Pod, metadata: {name: p1, namespace: a}}
`,
			want: []string{"c00 | default", "c01 | default", "c02 | default",
				"c00 | events", "c00 | events", "c01 | events", "c02 | default",
				"c00 | leases", "c01 | default", "c00 | default"},
		},
		{
			name:   "extensions/v1beta1 Deployments are stored as apps/deployments",
			config: testShardConfig,
			items: testNamespaces + `- {apiVersion: extensions/v1beta1, kind: Deployment, metadata: {name: old, namespace: a}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: new, namespace: a}}
- {apiVersion: extensions/v1beta1, kind: DaemonSet, metadata: {name: ds, namespace: a}}
`,
			want: []string{"c00 | default", "c01 | default", "c02 | default", "c00 | apps", "c00 | apps", "c00 | default"},
			results: []wantResult{
				{severity: framework.Warning, resource: "Deployment a/old", field: "apiVersion", text: []string{"write apiVersion: apps/v1"}},
				{severity: framework.Warning, resource: "DaemonSet a/ds", field: "apiVersion", text: []string{"write apiVersion: apps/v1"}},
			},
		},
		{
			name:   "contexts that disagree on the datastore give ctx=ds pairs in config order",
			config: testAllConfig,
			items: `- {apiVersion: v1, kind: Namespace, metadata: {name: all, labels: {shard: all}}}
- {apiVersion: v1, kind: Event, metadata: {name: e, namespace: all}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: all}}
`,
			want: []string{"c00,c01,c02 | default", "c00,c01,c02 | c00=events,c01=default,c02=events", "c00,c01,c02 | default"},
		},
		{
			name:   "an unchanged datastore annotation is fine",
			config: testAllConfig,
			items: `- {apiVersion: v1, kind: Namespace, metadata: {name: all, labels: {shard: all}}}
- apiVersion: v1
  kind: Event
  metadata:
    name: e
    namespace: all
    annotations: {shardrouter.dev/context: "c00,c01,c02", shardrouter.dev/datastore: "c00=events,c01=default,c02=events"}
`,
			want: []string{"c00,c01,c02 | default", "c00,c01,c02 | c00=events,c01=default,c02=events"},
		},
		{
			name: "a datastore change is refused, naming resource, context, old and new",
			config: strings.Replace(testShardConfig, "  - {resource: /events, dataStore: events}\n",
				"  - {resource: /events, dataStore: events}\n  - {resource: /pods, dataStore: events}\n", 1),
			items: testNamespaces + `- apiVersion: v1
  kind: Event
  metadata:
    name: e1
    namespace: a
    annotations:
      shardrouter.dev/context: c00
      shardrouter.dev/datastore: default
      internal.config.kubernetes.io/path: a/events.yaml
      internal.config.kubernetes.io/index: '2'
- apiVersion: v1
  kind: Pod
  metadata:
    name: p1
    namespace: b
    annotations: {shardrouter.dev/context: c01, shardrouter.dev/datastore: default}
`,
			want:    []string{"-", "-", "-", "c00 | default", "c01 | default"},
			wantErr: true,
			results: []wantResult{
				{severity: framework.Error, resource: "Event a/e1", field: "metadata.annotations[shardrouter.dev/datastore]",
					file: "a/events.yaml[2]", text: []string{"Event a/e1", `context "c00"`, `from "default" to "events"`, "allowDataStoreChanges"}},
				{severity: framework.Error, resource: "Pod b/p1",
					text: []string{"Pod b/p1", `context "c01"`, `from "default" to "events"`}},
			},
		},
		{
			name: "a datastore change in one context of several is named",
			config: strings.Replace(testAllConfig, "    namespaceSelector: {matchExpressions: [{key: shard, operator: In, values: [\"01\", all]}]}\n",
				"    namespaceSelector: {matchExpressions: [{key: shard, operator: In, values: [\"01\", all]}]}\n    dataStores: [{name: events, endpoints: [\"https://e01:2379\"]}]\n", 1),
			items: `- {apiVersion: v1, kind: Namespace, metadata: {name: all, labels: {shard: all}}}
- apiVersion: v1
  kind: Event
  metadata:
    name: e
    namespace: all
    annotations: {shardrouter.dev/context: "c00,c01,c02", shardrouter.dev/datastore: "c00=events,c01=default,c02=events"}
`,
			want:    []string{"-", "c00,c01,c02 | c00=events,c01=default,c02=events"},
			wantErr: true,
			results: []wantResult{{severity: framework.Error, resource: "Event all/e",
				text: []string{`context "c01"`, `from "default" to "events"`}}},
		},
		{
			name:   "allowDataStoreChanges turns the refusal into a warning",
			config: testShardConfig + "  allowDataStoreChanges: true\n",
			items: testNamespaces + `- apiVersion: v1
  kind: Event
  metadata:
    name: e1
    namespace: a
    annotations: {shardrouter.dev/context: c00, shardrouter.dev/datastore: default}
`,
			want: []string{"c00 | default", "c01 | default", "c02 | default", "c00 | events"},
			results: []wantResult{{severity: framework.Warning, resource: "Event a/e1",
				text: []string{`context "c00"`, `from "default" to "events"`, "allowDataStoreChanges"}}},
		},
		{
			name: "an ephemeral override only warns",
			config: strings.Replace(testShardConfig, "{resource: /events, dataStore: events}",
				"{resource: /events, dataStore: events, ephemeral: true}", 1),
			items: testNamespaces + `- apiVersion: v1
  kind: Event
  metadata:
    name: e1
    namespace: a
    annotations: {shardrouter.dev/context: c00, shardrouter.dev/datastore: default}
`,
			want: []string{"c00 | default", "c01 | default", "c02 | default", "c00 | events"},
			results: []wantResult{{severity: framework.Warning, resource: "Event a/e1",
				text: []string{`from "default" to "events"`, "ephemeral"}}},
		},
		{
			name: "events.k8s.io/events is normalised to /events with a warning on the config",
			config: strings.Replace(testShardConfig, "{resource: /events, dataStore: events}",
				"{resource: events.k8s.io/events, dataStore: events}", 1),
			items: testNamespaces + `- {apiVersion: v1, kind: Event, metadata: {name: e1, namespace: a}}
`,
			want: []string{"c00 | default", "c01 | default", "c02 | default", "c00 | events"},
			results: []wantResult{{severity: framework.Warning, resource: "ShardConfig shards",
				field: "spec.dataStoreOverrides[0].resource", text: []string{`"events.k8s.io/events"`, `"/events"`}}},
		},
		{
			name:    "an invalid override is a config error; items unchanged",
			config:  strings.Replace(testShardConfig, "{resource: /events, dataStore: events}", "{resource: /registry/events, dataStore: events}", 1),
			items:   testNamespaces,
			want:    []string{"-", "-", "-"},
			wantErr: true,
			results: []wantResult{{severity: framework.Error, resource: "ShardConfig shards",
				field: "spec.dataStoreOverrides[0].resource", text: []string{"function config", "etcd key path"}}},
		},
		{
			name: "an override naming a datastore nobody declares is a config error",
			config: strings.Replace(testShardConfig, "{resource: apps/deployments, dataStore: apps}",
				"{resource: apps/deployments, dataStore: default}", 1),
			items:   testNamespaces,
			want:    []string{"-", "-", "-"},
			wantErr: true,
			results: []wantResult{{severity: framework.Error, resource: "ShardConfig shards",
				field: "spec.dataStoreOverrides[2].dataStore", text: []string{`"default"`}}},
		},
		{
			name:   "no context: an error naming resource and file; every item unchanged",
			config: testShardConfig,
			items: testNamespaces + `- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: lost
    namespace: elsewhere
    annotations:
      internal.config.kubernetes.io/path: elsewhere/cm.yaml
      internal.config.kubernetes.io/index: '1'
`,
			want:    []string{"-", "-", "-", "-"},
			wantErr: true,
			results: []wantResult{{severity: framework.Error, resource: "ConfigMap elsewhere/lost", field: "metadata.namespace",
				file: "elsewhere/cm.yaml[1]", text: []string{"ConfigMap elsewhere/lost", `Namespace "elsewhere" is not in the package`}}},
		},
		{
			name:   "kpt's legacy path annotation names the file too",
			config: testShardConfig,
			items: `- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: lost
    namespace: elsewhere
    annotations: {config.kubernetes.io/path: legacy.yaml, config.kubernetes.io/index: '3'}
`,
			want:    []string{"-"},
			wantErr: true,
			results: []wantResult{{severity: framework.Error, resource: "ConfigMap elsewhere/lost", file: "legacy.yaml[3]"}},
		},
		{
			name:   "unknown function config kind",
			config: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shards}\n",
			items:  testNamespaces,
			want:   []string{"-", "-", "-"},
			results: []wantResult{{severity: framework.Error, resource: "Deployment shards", field: "kind",
				text: []string{"shardrouter.dev/v1alpha1 ShardConfig", "v1 ConfigMap"}}},
			wantErr: true,
		},
		{
			name:   "ShardConfig with a misspelt field",
			config: strings.Replace(testShardConfig, "  - name: c02\n    namespaceSelector", "  - name: c02\n    namspaceSelector", 1),
			items:  testNamespaces,
			want:   []string{"-", "-", "-"},
			results: []wantResult{{severity: framework.Error, resource: "ShardConfig shards", field: "spec.contexts[2].namspaceSelector",
				text: []string{"unknown field"}}},
			wantErr: true,
		},
		{
			name:   "a refused move leaves every item unchanged",
			config: testShardConfig,
			items: `- apiVersion: v1
  kind: Namespace
  metadata: {name: a, labels: {shard: "00"}, annotations: {shardrouter.dev/context: c01}}
- {apiVersion: v1, kind: Namespace, metadata: {name: b, labels: {shard: "01"}}}
`,
			want:    []string{"c01 | ", "-"},
			wantErr: true,
			results: []wantResult{{severity: framework.Error, resource: "Namespace a", field: "metadata.annotations[shardrouter.dev/context]",
				text: []string{`from "c01" to "c00"`}}},
		},
		{
			name:   "an allowed move is annotated with a warning",
			config: testShardConfig + "  allowMoves: true\n",
			items: `- apiVersion: v1
  kind: Namespace
  metadata: {name: a, labels: {shard: "00"}, annotations: {shardrouter.dev/context: c01}}
`,
			want: []string{"c00 | default"},
			results: []wantResult{{severity: framework.Warning, resource: "Namespace a", field: "metadata.annotations[shardrouter.dev/context]",
				text: []string{`from "c01" to "c00"`}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			input := testResourceList(tc.items, tc.config)
			items, results, err := runProcessor(t, input)
			if (err != nil) != tc.wantErr {
				t.Errorf("error = %v, want error: %v", err, tc.wantErr)
			}
			var got []string
			for _, it := range items {
				got = append(got, routingAnnotations(it))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("annotations:\n got %q\nwant %q", got, tc.want)
			}
			if tc.wantErr {
				requireItemsUnchanged(t, input, items)
			}
			checkWantResults(t, results, tc.results)
		})
	}
}

// requireItemsUnchanged compares the output items with the input items.
func requireItemsUnchanged(t *testing.T, input string, out []*yaml.RNode) {
	t.Helper()
	in, err := (&kio.ByteReader{Reader: strings.NewReader(input), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != len(out) {
		t.Fatalf("%d items in, %d out", len(in), len(out))
	}
	for i := range in {
		a, b := in[i].MustString(), out[i].MustString()
		if a != b {
			t.Errorf("item %d changed on error:\n--- in\n%s--- out\n%s", i, a, b)
		}
	}
}

// checkWantResults requires exactly the wanted error and warning results, in order.
func checkWantResults(t *testing.T, results framework.Results, want []wantResult) {
	t.Helper()
	var got framework.Results
	for _, r := range results {
		if r.Severity == framework.Error || r.Severity == framework.Warning {
			got = append(got, r)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d error/warning results, want %d:\n%v", len(got), len(want), got)
		return
	}
	for i, w := range want {
		r := got[i]
		if r.Severity != w.severity {
			t.Errorf("result %d: severity %q, want %q: %s", i, r.Severity, w.severity, r.Message)
		}
		if res := resultResource(r); res != w.resource {
			t.Errorf("result %d: resource %q, want %q", i, res, w.resource)
		}
		if w.field != "" && (r.Field == nil || r.Field.Path != w.field) {
			t.Errorf("result %d: field %+v, want %q", i, r.Field, w.field)
		}
		if w.file != "" {
			if r.File == nil {
				t.Errorf("result %d: no file, want %s", i, w.file)
			} else if f := r.File.Path + "[" + strconv.Itoa(r.File.Index) + "]"; f != w.file {
				t.Errorf("result %d: file %s, want %s", i, f, w.file)
			}
		}
		for _, frag := range w.text {
			if !strings.Contains(r.Message, frag) {
				t.Errorf("result %d: %q does not mention %s", i, r.Message, frag)
			}
		}
	}
}

func resultResource(r *framework.Result) string {
	if r.ResourceRef == nil {
		return ""
	}
	if r.ResourceRef.Namespace != "" {
		return r.ResourceRef.Kind + " " + r.ResourceRef.Namespace + "/" + r.ResourceRef.Name
	}
	return r.ResourceRef.Kind + " " + r.ResourceRef.Name
}

// TestProcessSummary checks the info results: exactly one per context and
// one per datastore of it, with the objects each receives.
func TestProcessSummary(t *testing.T) {
	_, results, err := runProcessor(t, testResourceList(testNamespaces+`- {apiVersion: v1, kind: Event, metadata: {name: e1, namespace: a}}
- {apiVersion: v1, kind: Event, metadata: {name: e2, namespace: a}}
- {apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: l1, namespace: a}}
- {apiVersion: v1, kind: Event, metadata: {name: e3, namespace: b}}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r}}
`, testShardConfig))
	if err != nil {
		t.Fatal(err)
	}
	// Namespace a, ClusterRole r; Events e1, e2; Lease l1. Key: context/datastore.
	want := map[string]string{
		"c00/": "5", "c00/default": "2", "c00/events": "2", "c00/leases": "1",
		"c01/": "3", "c01/default": "2", "c01/events": "1",
		"c02/": "2", "c02/default": "2",
	}
	got := map[string]string{}
	for _, r := range results {
		if r.Severity != framework.Info || r.Tags["objects"] == "" {
			continue
		}
		key := r.Tags["context"] + "/" + r.Tags["datastore"]
		if _, dup := got[key]; dup {
			t.Errorf("two info results for %s", key)
		}
		got[key] = r.Tags["objects"]
	}
	for key, n := range want {
		if got[key] != n {
			t.Errorf("%s: %q objects, want %s (results %v)", key, got[key], n, results)
		}
	}
	for key, n := range got {
		if _, ok := want[key]; !ok && n != "0" {
			t.Errorf("%s: %s objects, want none", key, n)
		}
	}
}
