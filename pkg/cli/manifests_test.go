package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportManifestClasses: `report` reads a package as split does, so an
// old apiVersion, merge-key labels and a custom kind of guessed scope count
// where function mode routes them, and a List is refused as a List.
func TestReportManifestClasses(t *testing.T) {
	pkg := t.TempDir()
	files := map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n  annotations: {config.kubernetes.io/local-config: \"true\"}\n",
		"shards.yaml": `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations: {config.kubernetes.io/local-config: "true"}
spec:
  contexts:
  - name: ctx-a
    namespaceSelector: {matchLabels: {shard: a}}
    dataStores:
    - {name: jobs, endpoints: ["https://etcd-jobs:2379"]}
  - name: edge
    resourceSelector: {matchLabels: {tier: edge}}
  dataStoreOverrides:
  - {resource: batch/cronjobs, dataStore: jobs}
`,
		"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {shard: a}}\n",
		"cron.yaml":   "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: nightly, namespace: a}\n",
		"role.yaml":   "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n  annotations: &t {tier: edge}\n  labels: {<<: *t}\n",
		"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
	}
	for name, content := range files {
		writeTestFile(t, filepath.Join(pkg, name), content)
	}
	code, stdout, stderr := runReportCLI(t, "", pkg, "-o", "json")
	if code != 0 {
		t.Fatalf("report exits %d:\n%s", code, stderr)
	}
	var rep reportJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	objects := map[string]int64{}
	for _, c := range rep.Contexts {
		for _, ds := range c.DataStores {
			objects[c.Name+"/"+ds.Name] = ds.Objects
		}
	}
	// ctx-a: the Namespace and the Widget (default), the CronJob (jobs);
	// edge: the ClusterRole and the Widget.
	want := map[string]int64{"ctx-a/default": 2, "ctx-a/jobs": 1, "edge/default": 2}
	for k, n := range want {
		if objects[k] != n {
			t.Errorf("%s holds %d objects, want %d (all: %v)", k, objects[k], n, objects)
		}
	}
	var msgs []string
	for _, r := range rep.Results {
		msgs = append(msgs, r.Severity+": "+r.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, frag := range []string{"warning: CronJob a/nightly: Kubernetes 1.34 does not serve batch/v1beta1 CronJob; write apiVersion: batch/v1",
		"warning: Widget w is sent to every context as cluster-scoped, a guess"} {
		if !strings.Contains(all, frag) {
			t.Errorf("results do not hold %q:\n%s", frag, all)
		}
	}
	if len(msgs) != 2 {
		t.Errorf("%d results, want the 2 warnings:\n%s", len(msgs), all)
	}

	writeTestFile(t, filepath.Join(pkg, "list.yaml"), "apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: a}}\n")
	code, _, stderr = runReportCLI(t, "", pkg)
	if code == 0 || !strings.Contains(stderr, "list.yaml") || !strings.Contains(stderr, "v1 ConfigMapList is a list of resources") {
		t.Errorf("report of a package with a List exits %d:\n%s", code, stderr)
	}
}
