package split

import (
	"maps"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/input"
)

// Inputs shaped like real third-party manifests, one class of issue 14 each,
// split from a directory, from a ResourceList on stdin and from a plain YAML
// stream: every entry point must give the same routes, datastores and
// diagnostics.

const manifestShardConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  contexts:
  - name: ctx-a
    namespaceSelector: {matchLabels: {shard: a}}
    dataStores:
    - {name: jobs, endpoints: ["https://etcd-jobs:2379"]}
  - name: ctx-b
    namespaceSelector: {matchLabels: {shard: b}}
  - name: edge
    resourceSelector: {matchLabels: {tier: edge}}
  dataStoreOverrides:
  - {resource: batch/cronjobs, dataStore: jobs}
`

const manifestKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
  annotations:
    config.kubernetes.io/local-config: "true"
`

const manifestNamespaces = `apiVersion: v1
kind: Namespace
metadata: {name: a, labels: {shard: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: b, labels: {shard: b}}
`

type manifestSplitCase struct {
	name  string
	files map[string]string // besides Kptfile, shards.yaml and namespaces.yaml
	// want maps "Kind namespace/name" to "contexts | datastore annotation"
	// for every routed resource; nil when the split must fail.
	want map[string]string
	// results are fragments, each of a distinct error or warning result.
	results []string
	// check inspects the written resources of a successful split.
	check func(t *testing.T, nodes []*yaml.RNode)
}

var manifestSplitCases = []manifestSplitCase{
	{
		name: "merge keys and aliases in labels",
		files: map[string]string{"roles.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: merged
  annotations: &base {tier: edge}
  labels: {<<: *base, app: x}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: aliased
  annotations: &t {tier: edge}
  labels: *t
`},
		want: map[string]string{"Namespace a": "ctx-a | default", "Namespace b": "ctx-b | default",
			"ClusterRole merged": "edge | default", "ClusterRole aliased": "edge | default"},
		check: func(t *testing.T, nodes []*yaml.RNode) {
			for _, n := range nodes {
				var m struct {
					Metadata struct{ Labels map[string]string } `yaml:"metadata"`
				}
				if err := yaml.Unmarshal([]byte(n.MustString()), &m); err != nil {
					t.Fatal(err)
				}
				if _, leak := m.Metadata.Labels["shardrouter.dev/context"]; leak {
					t.Errorf("%s %s: the context annotation leaked into its labels: %v", n.GetKind(), n.GetName(), m.Metadata.Labels)
				}
			}
		},
	},
	{
		name: "an anchored resource broadcast to every context: each copy is whole, none leaks",
		files: map[string]string{"role.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: shared
  annotations: &a {team: x}
  labels: *a
rules:
- apiGroups: [""]
  resources: &r [pods]
  verbs: [get]
- apiGroups: [""]
  resources: *r
  verbs: [list]
`},
		want: map[string]string{"Namespace a": "ctx-a | default", "Namespace b": "ctx-b | default",
			"ClusterRole shared": "ctx-a,ctx-b,edge | default"},
		check: func(t *testing.T, nodes []*yaml.RNode) {
			for _, n := range nodes {
				if n.GetName() != "shared" {
					continue
				}
				var m struct {
					Metadata struct{ Labels, Annotations map[string]string } `yaml:"metadata"`
					Rules    []struct{ Resources []string }                  `yaml:"rules"`
				}
				if err := yaml.Unmarshal([]byte(n.MustString()), &m); err != nil {
					t.Fatalf("a written copy does not decode: %v\n%s", err, n.MustString())
				}
				if len(m.Metadata.Labels) != 1 || m.Metadata.Labels["team"] != "x" {
					t.Errorf("labels %v, want only team: x", m.Metadata.Labels)
				}
				if c := m.Metadata.Annotations["shardrouter.dev/context"]; len(m.Metadata.Annotations) != 3 || (c != "ctx-a" && c != "ctx-b" && c != "edge") {
					t.Errorf("annotations %v", m.Metadata.Annotations)
				}
				if len(m.Rules) != 2 || len(m.Rules[1].Resources) != 1 || m.Rules[1].Resources[0] != "pods" {
					t.Errorf("rules %+v, want the aliased resources kept", m.Rules)
				}
			}
		},
	},
	{
		name: "an old apiVersion follows its Namespace and gets its datastore, with a warning",
		files: map[string]string{"cron.yaml": `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: nightly, namespace: a}
`},
		want:    map[string]string{"Namespace a": "ctx-a | default", "Namespace b": "ctx-b | default", "CronJob a/nightly": "ctx-a | jobs"},
		results: []string{"warning: apiVersion: CronJob a/nightly: Kubernetes 1.34 does not serve batch/v1beta1 CronJob; write apiVersion: batch/v1"},
	},
	{
		name: "an old apiVersion without metadata.namespace is namespaced, not broadcast",
		files: map[string]string{"cron.yaml": `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: nightly}
`},
		results: []string{"warning: apiVersion: CronJob nightly: Kubernetes 1.34 does not serve batch/v1beta1 CronJob",
			"error: metadata.namespace: CronJob nightly has no context: no resourceSelector matches its labels, it is namespaced but has no metadata.namespace"},
	},
	{
		name: "a List is refused as a List",
		files: map[string]string{"list.yaml": `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: a}}
`},
		results: []string{"error: kind: item v1 List is a list of resources, not a resource: kpt does not unwrap Lists (kubectl does)"},
	},
	{
		name: "one Event through two API groups is a duplicate naming both files",
		files: map[string]string{
			"core.yaml":   "apiVersion: v1\nkind: Event\nmetadata: {name: e, namespace: a}\n",
			"events.yaml": "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e, namespace: a}\n",
		},
		results: []string{"error: apiVersion: events.k8s.io/v1 Event a/e and v1 Event a/e", "are one object", "; in events.yaml[", "] and core.yaml["},
	},
	{
		name:  "a custom resource without CRD nor namespace is broadcast with a warning",
		files: map[string]string{"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"},
		want: map[string]string{"Namespace a": "ctx-a | default", "Namespace b": "ctx-b | default",
			"Widget w": "ctx-a,ctx-b,edge | default"},
		results: []string{"warning: metadata.namespace: Widget w is sent to every context as cluster-scoped, a guess"},
	},
}

// inputForms are the ways to read the package in dir: the directory, the
// ResourceList kpt fn source writes of it, and a plain stream of it; with
// reference, also the directory and the ResourceList through the
// reference (kyaml) reader.
func inputForms(t *testing.T, dir string, reference bool) map[string]func() (*input.Input, error) {
	t.Helper()
	dirIn, err := input.ReadPackage(dir, yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := dirIn.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	var rl, plain strings.Builder
	if err := (kio.ByteWriter{Writer: &rl, KeepReaderAnnotations: true, WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion}).Write(nodes); err != nil {
		t.Fatal(err)
	}
	if err := (kio.ByteWriter{Writer: &plain, KeepReaderAnnotations: true}).Write(nodes); err != nil {
		t.Fatal(err)
	}
	forms := map[string]func() (*input.Input, error){
		"directory": func() (*input.Input, error) { return input.ReadPackage(dir, yamlio.Options{}) },
		"ResourceList": func() (*input.Input, error) {
			return input.ReadStream(strings.NewReader(rl.String()), yamlio.Options{})
		},
		"plain stream": func() (*input.Input, error) {
			return input.ReadStream(strings.NewReader(plain.String()), yamlio.Options{})
		},
	}
	if reference {
		forms["directory, reference reader"] = func() (*input.Input, error) {
			return input.ReadPackage(dir, yamlio.Options{Reference: true})
		}
		forms["ResourceList, reference reader"] = func() (*input.Input, error) {
			return input.ReadStream(strings.NewReader(rl.String()), yamlio.Options{Reference: true})
		}
	}
	return forms
}

func TestManifestClassesSplit(t *testing.T) {
	for _, tc := range manifestSplitCases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"Kptfile": manifestKptfile, "shards.yaml": manifestShardConfig, "namespaces.yaml": manifestNamespaces}
			for f, c := range tc.files {
				files[f] = c
			}
			pkg := t.TempDir()
			writeTree(t, pkg, files)
			for name, read := range inputForms(t, pkg, true) {
				in, err := read()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				plan, err := runRoute(t, in, nil, nil)
				if plan == nil {
					t.Fatalf("%s: no plan: %v", name, err)
				}
				checkResultFragments(t, name, plan.Results, tc.results)
				if tc.want == nil {
					if err == nil {
						t.Errorf("%s: split succeeds; want it refused", name)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, written := routesOf(t, plan)
				if !equalMaps(got, tc.want) {
					t.Errorf("%s: routes\n got %v\nwant %v", name, got, tc.want)
				}
				if tc.check != nil {
					tc.check(t, written)
				}
			}
		})
	}
}

// TestLoneListOnStdinIsRefused: kyaml's reader unwraps a stream that is a
// single kind: List; split must not, or it would route what function mode
// and a package directory refuse.
func TestLoneListOnStdinIsRefused(t *testing.T) {
	list := "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: a}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: {shard: a}}}\n"
	in, err := input.ReadStream(strings.NewReader(list), yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Len() != 1 {
		t.Fatalf("the List was read as %d resources, want 1", in.Len())
	}
	in.FunctionConfig = mustParse(t, manifestShardConfig)
	plan, err := runRoute(t, in, nil, &Options{PackageName: "p"})
	if err == nil {
		t.Fatal("a List on stdin is split; want it refused")
	}
	checkResultFragments(t, "lone List", plan.Results, []string{"error: kind: item v1 List is a list of resources"})
}

// checkResultFragments checks that the error and warning results are
// exactly as many as want, each containing its fragment in order, written
// as "severity: field: message".
func checkResultFragments(t *testing.T, name string, results framework.Results, want []string) {
	t.Helper()
	var got []string
	for _, r := range results {
		if r.Severity != framework.Error && r.Severity != framework.Warning {
			continue
		}
		s := string(r.Severity) + ": "
		if r.Field != nil {
			s += r.Field.Path + ": "
		}
		got = append(got, s+r.Message)
	}
	if len(got) != countDistinct(want) {
		t.Errorf("%s: %d error/warning results, want %d:\n%s", name, len(got), countDistinct(want), strings.Join(got, "\n"))
		return
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: no result contains %q:\n%s", name, w, all)
		}
	}
}

// countDistinct counts the fragments that start a result ("error: " or
// "warning: "); the others add to the previous one.
func countDistinct(want []string) int {
	n := 0
	for _, w := range want {
		if strings.HasPrefix(w, "error: ") || strings.HasPrefix(w, "warning: ") {
			n++
		}
	}
	return n
}

// routesOf reads back every context package of a plan: each routed
// resource's contexts and datastore annotation, and the written resources.
func routesOf(t *testing.T, plan *Layout) (map[string]string, []*yaml.RNode) {
	t.Helper()
	where := map[string][]string{}
	ds := map[string]string{}
	var written []*yaml.RNode
	for _, pkg := range plan.Packages {
		var b strings.Builder
		if err := pkg.WriteStream(&b); err != nil {
			t.Fatal(err)
		}
		nodes, err := (&kio.ByteReader{Reader: strings.NewReader(b.String()), OmitReaderAnnotations: true}).Read()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.GetKind() == "ResourceGroup" || n.GetKind() == "Kptfile" || n.GetKind() == "ShardConfig" {
				continue
			}
			key := n.GetKind() + " " + n.GetName()
			if ns := n.GetNamespace(); ns != "" {
				key = n.GetKind() + " " + ns + "/" + n.GetName()
			}
			if got := n.GetAnnotations()["shardrouter.dev/context"]; got != pkg.Context {
				t.Errorf("%s in context %s: its context annotation is %q, want that context alone", key, pkg.Context, got)
			}
			where[key] = append(where[key], pkg.Context)
			ds[key] = n.GetAnnotations()["shardrouter.dev/datastore"]
			written = append(written, n)
		}
	}
	out := map[string]string{}
	for k, ctxs := range where {
		sort.Strings(ctxs)
		out[k] = strings.Join(ctxs, ",") + " | " + ds[k]
	}
	return out, written
}

// equalMaps is maps.Equal for the string maps of these tests.
var equalMaps = maps.Equal[map[string]string, map[string]string]
