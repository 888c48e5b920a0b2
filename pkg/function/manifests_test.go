package function

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/internal/yamlio/yamliotest"
)

// manifestConfig routes Namespaces by shard label, tier=edge resources to
// edge, and keeps CronJobs and Events in datastores of their own in c00.
const manifestConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
spec:
  contexts:
  - name: c00
    namespaceSelector: {matchLabels: {shard: "00"}}
    dataStores:
    - {name: jobs, endpoints: ["https://etcd-jobs-00:2379"]}
    - {name: events, endpoints: ["https://etcd-events-00:2379"]}
  - name: c01
    namespaceSelector: {matchLabels: {shard: "01"}}
  - name: edge
    resourceSelector: {matchLabels: {tier: edge}}
  dataStoreOverrides:
  - {resource: batch/cronjobs, dataStore: jobs}
  - {resource: /events, dataStore: events}
`

const manifestNamespaces = `- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: {shard: "00"}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: b, labels: {shard: "01"}}}
`

// manifestCase is an input shaped like real third-party manifests: one
// class of issue 14 through function mode.
type manifestCase struct {
	name  string
	items string
	// streamed: the streaming path takes the input (no anchors).
	streamed bool
	want     []string // routingAnnotations of each output item
	results  []wantResult
	wantErr  bool
	// check inspects the output items, decoded as a YAML 1.1 loader
	// (kubectl, kpt) sees them.
	check func(t *testing.T, objs []map[string]any)
}

func manifestInput(tc manifestCase) []byte {
	return []byte(testResourceList(tc.items, manifestConfig))
}

var manifestCases = []manifestCase{
	{
		name: "merge keys in labels, in YAML 1.1 order: explicit keys, then merged maps in order",
		items: manifestNamespaces + `- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: merged
    labels: {<<: {tier: edge}}
- apiVersion: v1
  kind: Namespace
  metadata:
    name: seq
    labels: {<<: [{shard: "01"}, {shard: "00"}]}
- apiVersion: v1
  kind: Namespace
  metadata:
    name: explicit
    labels: {<<: {shard: "00"}, shard: "01"}
`,
		streamed: true,
		want:     []string{"c00 | default", "c01 | default", "edge | default", "c01 | default", "c01 | default"},
	},
	{
		name: "merge key in metadata: its namespace is the merged one, and the written metadata is expanded",
		items: manifestNamespaces + `- apiVersion: v1
  kind: ConfigMap
  metadata:
    <<: {namespace: b}
    name: from-merge
`,
		streamed: true,
		want:     []string{"c00 | default", "c01 | default", "c01 | default"},
		check: func(t *testing.T, objs []map[string]any) {
			if ns := dig(objs[2], "metadata", "namespace"); ns != "b" {
				t.Errorf("metadata.namespace = %v after writing, want b", ns)
			}
		},
	},
	{
		name: "an anchored annotations map aliased as labels routes by it, and the written annotations do not leak into the labels",
		items: manifestNamespaces + `- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: aliased
    annotations: &tier {tier: edge}
    labels: *tier
`,
		want: []string{"c00 | default", "c01 | default", "edge | default"},
		check: func(t *testing.T, objs []map[string]any) {
			labels, _ := dig(objs[2], "metadata", "labels").(map[string]any)
			if len(labels) != 1 || labels["tier"] != "edge" {
				t.Errorf("labels = %v after writing the annotations, want only tier: edge", labels)
			}
		},
	},
	{
		name: "aliases in metadata.name and metadata.namespace",
		items: manifestNamespaces + `- apiVersion: v1
  kind: ConfigMap
  metadata:
    labels: {ns: &ns b, n: &n aliased-name}
    name: *n
    namespace: *ns
`,
		want: []string{"c00 | default", "c01 | default", "c01 | default"},
		check: func(t *testing.T, objs []map[string]any) {
			if n, ns := dig(objs[2], "metadata", "name"), dig(objs[2], "metadata", "namespace"); n != "aliased-name" || ns != "b" {
				t.Errorf("name %v, namespace %v after writing; want aliased-name in b", n, ns)
			}
		},
	},
	{
		name: "kpt's path and index annotations in an anchored map never end up in the labels that alias it",
		items: manifestNamespaces + `- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: from-kpt
    annotations: &t {tier: edge, config.kubernetes.io/path: role.yaml, internal.config.kubernetes.io/path: role.yaml, config.kubernetes.io/index: '0', internal.config.kubernetes.io/index: '0'}
    labels: *t
`,
		want:    []string{"c00 | default", "c01 | default", "edge | default"},
		results: nil,
		check: func(t *testing.T, objs []map[string]any) {
			labels, _ := dig(objs[2], "metadata", "labels").(map[string]any)
			if len(labels) != 1 || labels["tier"] != "edge" {
				t.Errorf("labels = %v, want only tier: edge", labels)
			}
		},
	},
	{
		name: "annotations shared with the pod template: writing them changes only metadata.annotations",
		items: manifestNamespaces + `- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    namespace: &ns b
    labels: &labels {app: web}
    annotations: &annos {team: web}
  spec:
    selector: {matchLabels: *labels}
    template:
      metadata: {labels: {<<: *labels, version: v2}, annotations: *annos, namespace: *ns}
`,
		want: []string{"c00 | default", "c01 | default", "c01 | default"},
		check: func(t *testing.T, objs []map[string]any) {
			tmpl, _ := dig(objs[2], "spec", "template", "metadata", "annotations").(map[string]any)
			if len(tmpl) != 1 || tmpl["team"] != "web" {
				t.Errorf("spec.template.metadata.annotations = %v, want only team: web", tmpl)
			}
			sel, _ := dig(objs[2], "spec", "selector", "matchLabels").(map[string]any)
			if len(sel) != 1 || sel["app"] != "web" {
				t.Errorf("spec.selector.matchLabels = %v, want only app: web", sel)
			}
			if l, _ := dig(objs[2], "spec", "template", "metadata", "labels").(map[string]any); len(l) != 2 {
				t.Errorf("spec.template.metadata.labels = %v, want app and version", l)
			}
		},
	},
	{
		name: "an old apiVersion has its kind's scope and datastore, with a warning naming the served version",
		items: manifestNamespaces + `- {apiVersion: batch/v1beta1, kind: CronJob, metadata: {name: nightly, namespace: a}}
- {apiVersion: batch/v1beta1, kind: CronJob, metadata: {name: unplaced}}
- {apiVersion: policy/v1beta1, kind: PodDisruptionBudget, metadata: {name: pdb, namespace: b}}
`,
		streamed: true,
		want:     []string{"-", "-", "-", "-", "-"},
		wantErr:  true,
		results: []wantResult{
			// one warning per apiVersion and kind, on its first object, naming them all
			{severity: framework.Warning, resource: "CronJob a/nightly", field: "apiVersion", text: []string{"2 objects (CronJob a/nightly, CronJob unplaced)", "does not serve batch/v1beta1 CronJob", "write apiVersion: batch/v1"}},
			{severity: framework.Warning, resource: "PodDisruptionBudget b/pdb", field: "apiVersion", text: []string{"policy/v1"}},
			{severity: framework.Error, resource: "CronJob unplaced", field: "metadata.namespace", text: []string{"namespaced but has no metadata.namespace"}},
		},
	},
	{
		name: "an old apiVersion with its namespace is routed and gets its override's datastore",
		items: manifestNamespaces + `- {apiVersion: batch/v1beta1, kind: CronJob, metadata: {name: nightly, namespace: a}}
- {apiVersion: events.k8s.io/v1beta1, kind: Event, metadata: {name: e, namespace: a}}
`,
		streamed: true,
		want:     []string{"c00 | default", "c01 | default", "c00 | jobs", "c00 | events"},
		results: []wantResult{
			{severity: framework.Warning, resource: "CronJob a/nightly", field: "apiVersion", text: []string{"batch/v1"}},
			{severity: framework.Warning, resource: "Event a/e", field: "apiVersion", text: []string{"events.k8s.io/v1"}},
		},
	},
	{
		name: "a List is refused as a List in function mode",
		items: manifestNamespaces + `- apiVersion: v1
  kind: List
  items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: a}}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBindingList
  items: []
`,
		streamed: true,
		want:     []string{"-", "-", "-", "-"},
		wantErr:  true,
		results: []wantResult{
			{severity: framework.Error, resource: "List ", field: "kind", text: []string{"v1 List is a list of resources", "kpt does not unwrap Lists"}},
			{severity: framework.Error, resource: "RoleBindingList ", field: "kind", text: []string{"RoleBindingList"}},
		},
	},
	{
		name: "one Event through two API groups is a duplicate naming both files",
		items: manifestNamespaces + `- apiVersion: v1
  kind: Event
  metadata: {name: e, namespace: a, annotations: {config.kubernetes.io/path: core.yaml, config.kubernetes.io/index: "0"}}
- apiVersion: events.k8s.io/v1
  kind: Event
  metadata: {name: e, namespace: a, annotations: {config.kubernetes.io/path: events.yaml, config.kubernetes.io/index: "2"}}
`,
		streamed: true,
		want:     []string{"-", "-", "-", "-"},
		wantErr:  true,
		results: []wantResult{{severity: framework.Error, resource: "Event a/e", field: "apiVersion", file: "events.yaml[2]",
			text: []string{"events.k8s.io/v1 Event a/e and v1 Event a/e (item 2) are one object", "events.yaml[2] and core.yaml[0]"}}},
	},
	{
		name: "a custom resource without CRD nor namespace is broadcast with a warning",
		items: manifestNamespaces + `- {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}
`,
		streamed: true,
		want:     []string{"c00 | default", "c01 | default", "c00,c01,edge | default"},
		results: []wantResult{{severity: framework.Warning, resource: "Widget w", field: "metadata.namespace",
			text: []string{"example.com/v1 Widget", "a guess", "CustomResourceDefinition", "metadata.namespace", "resourceSelector"}}},
	},
}

// TestManifestClasses runs inputs shaped like real third-party manifests
// through both function-mode paths (they must agree byte for byte) and
// checks each item's route and datastore, and the diagnostics.
func TestManifestClasses(t *testing.T) {
	for _, tc := range manifestCases {
		t.Run(tc.name, func(t *testing.T) {
			input := manifestInput(tc)
			fast, ref, streamed, reason := yamliotest.RunBoth(t, Processor{}, input)
			if streamed {
				yamliotest.RequireSame(t, tc.name, fast, ref)
			}
			if streamed != tc.streamed {
				t.Errorf("streamed = %v (%s), want %v", streamed, reason, tc.streamed)
			}
			if (ref.Err != "") != tc.wantErr {
				t.Errorf("error = %q, want error: %v", ref.Err, tc.wantErr)
			}
			rr := &kio.ByteReader{Reader: strings.NewReader(ref.Out), OmitReaderAnnotations: true}
			items, err := rr.Read()
			if err != nil {
				t.Fatalf("output is not a ResourceList: %v\n%s", err, ref.Out)
			}
			var got []string
			var objs []map[string]any
			for _, it := range items {
				got = append(got, routingAnnotations(it))
				var m map[string]any
				if err := yaml.Unmarshal([]byte(it.MustString()), &m); err != nil {
					t.Fatalf("output item does not decode: %v", err)
				}
				objs = append(objs, m)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("annotations:\n got %q\nwant %q", got, tc.want)
			}
			var results framework.Results
			if rr.Results != nil {
				if err := yaml.Unmarshal([]byte(rr.Results.MustString()), &results); err != nil {
					t.Fatal(err)
				}
			}
			checkWantResults(t, results, tc.results)
			if tc.check != nil {
				tc.check(t, objs)
			}
			// A second run changes nothing.
			var again bytes.Buffer
			_ = Run(strings.NewReader(ref.Out), &again, yamlio.Options{})
			if !tc.wantErr && again.String() != ref.Out {
				t.Errorf("a second run changes the output:\n%s", yamliotest.FirstDiff(again.String(), ref.Out))
			}
		})
	}
}

// dig returns the value at path in a decoded object, nil when absent.
func dig(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// TestPlacementLabelDoesNotLeak: the label spec.placement stamps on a new
// Namespace whose labels alias its annotations is written into its labels
// alone, and the annotations written do not show in the labels. (The other
// way round, annotations written as an alias, kyaml's readers and kpt
// replace by a new map before the function runs.)
func TestPlacementLabelDoesNotLeak(t *testing.T) {
	config := `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: c00
  - name: c01
  placement:
    strategy: Rendezvous
    label: {key: example.com/shard, values: {c00: "00", c01: "01"}}
`
	items := `- apiVersion: v1
  kind: Namespace
  metadata:
    name: fresh
    annotations: &l {team: x}
    labels: *l
`
	fast, ref, streamed, _ := yamliotest.RunBoth(t, Processor{}, []byte(testResourceList(items, config)))
	if streamed {
		yamliotest.RequireSame(t, "placement", fast, ref)
	}
	if ref.Err != "" {
		t.Fatal(ref.Err)
	}
	out, err := (&kio.ByteReader{Reader: strings.NewReader(ref.Out), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metadata struct{ Labels, Annotations map[string]string } `yaml:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(out[0].MustString()), &m); err != nil {
		t.Fatal(err)
	}
	if v := m.Metadata.Labels["example.com/shard"]; v != "00" && v != "01" {
		t.Errorf("labels %v: no placement label", m.Metadata.Labels)
	}
	if _, leak := m.Metadata.Annotations["example.com/shard"]; leak || m.Metadata.Annotations["team"] != "x" {
		t.Errorf("annotations %v: the placement label leaked, or team: x is lost", m.Metadata.Annotations)
	}
	if _, leak := m.Metadata.Labels["shardrouter.dev/context"]; leak || m.Metadata.Labels["team"] != "x" || len(m.Metadata.Labels) != 2 {
		t.Errorf("labels %v: want team: x and the placement label only", m.Metadata.Labels)
	}
}

// TestDeAnchorTouchesOnlyWhatItMust: de-anchoring an item to annotate it
// leaves other items with anchors as written (local config is never
// changed), and an item aliasing an anchor of the de-anchored one across
// the ResourceList still reads the same.
func TestDeAnchorTouchesOnlyWhatItMust(t *testing.T) {
	items := `- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: local
    namespace: a
    annotations: {config.kubernetes.io/local-config: "true"}
  data: {x: &x "1", y: *x}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: shared
    annotations: &t {tier: edge}
    labels: *t
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: borrower
    labels: *t
`
	_, ref, streamed, _ := yamliotest.RunBoth(t, Processor{}, []byte(testResourceList(manifestNamespaces+items, manifestConfig)))
	if streamed {
		t.Fatal("the streaming path took an input with an alias across items")
	}
	if ref.Err != "" {
		t.Fatal(ref.Err)
	}
	if !strings.Contains(ref.Out, `  data: {x: &x "1", y: *x}`) {
		t.Errorf("the local-config item changed:\n%s", ref.Out)
	}
	out, err := (&kio.ByteReader{Reader: strings.NewReader(ref.Out), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, ref.Out)
	}
	for _, n := range out[3:] {
		var m struct {
			Metadata struct{ Labels map[string]string } `yaml:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(n.MustString()), &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Metadata.Labels) != 1 || m.Metadata.Labels["tier"] != "edge" {
			t.Errorf("%s: labels %v, want only tier: edge", n.GetName(), m.Metadata.Labels)
		}
		if got := routingAnnotations(n); got != "edge | default" {
			t.Errorf("%s: routed %q, want edge", n.GetName(), got)
		}
	}
}
