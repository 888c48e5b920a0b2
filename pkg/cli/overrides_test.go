package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

var overridesConfig = filepath.Join("testdata", "overrides", "shards.yaml")

func TestOverridesFlag(t *testing.T) {
	code, stdout, stderr := execCLI(t, "", "overrides", "--config", overridesConfig)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "ctx-00\t/events#https://etcd-events-0:2379;https://etcd-events-1:2379,coordination.k8s.io/leases#https://etcd-leases-0:2379\n" +
		"ctx-01\tcoordination.k8s.io/leases#https://10.1.0.5:2379\n" +
		"ctx-02\t\n"
	if stdout != want {
		t.Errorf("stdout:\n%q\nwant:\n%q", stdout, want)
	}

	code, stdout, _ = execCLI(t, "", "overrides", "--config", overridesConfig, "--context", "ctx-01")
	if code != 0 || stdout != "coordination.k8s.io/leases#https://10.1.0.5:2379\n" {
		t.Errorf("ctx-01: exit %d, %q", code, stdout)
	}
	// A context without overrides: an empty line.
	if code, stdout, _ = execCLI(t, "", "overrides", "--config", overridesConfig, "--context", "ctx-02"); code != 0 || stdout != "\n" {
		t.Errorf("ctx-02: exit %d, %q", code, stdout)
	}
	code, stdout, stderr = execCLI(t, "", "overrides", "--config", overridesConfig, "--context", "nope")
	if code == 0 || stdout != "" || !strings.Contains(stderr, `unknown context "nope": the config declares "ctx-00", "ctx-01", "ctx-02"`) {
		t.Errorf("unknown context: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
}

func TestOverridesFromPackage(t *testing.T) {
	pkg := copySplitPackage(t)
	code, stdout, stderr := execCLI(t, "", "overrides", pkg)
	if code != 0 || stdout != "ctx-00\t\nctx-01\t\n" {
		t.Errorf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if code, _, stderr := execCLI(t, "", "overrides", pkg, "--config", overridesConfig); code == 0 || !strings.Contains(stderr, "not both") {
		t.Errorf("both PKG_DIR and --config: exit %d: %s", code, stderr)
	}
}

func TestOverridesJSONAndKamaji(t *testing.T) {
	code, stdout, stderr := execCLI(t, "", "overrides", "--config", overridesConfig, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if len(m) != 3 || m["ctx-01"] != "coordination.k8s.io/leases#https://10.1.0.5:2379" || m["ctx-02"] != "" {
		t.Errorf("json: %v", m)
	}
	if strings.Index(stdout, "ctx-00") > strings.Index(stdout, "ctx-01") {
		t.Errorf("json keys are not in config order:\n%s", stdout)
	}

	code, stdout, _ = execCLI(t, "", "overrides", "--config", overridesConfig, "-o", "kamaji", "--context", "ctx-00")
	want := `dataStoreOverrides:
- resource: /events
  dataStore: tenant-events
- resource: coordination.k8s.io/leases
  dataStore: leases
`
	if code != 0 || stdout != want {
		t.Errorf("kamaji ctx-00: exit %d:\n%s\nwant:\n%s", code, stdout, want)
	}
	code, stdout, _ = execCLI(t, "", "overrides", "--config", overridesConfig, "-o", "kamaji")
	if code != 0 || !strings.HasPrefix(stdout, "ctx-00:\n  dataStoreOverrides:\n") || !strings.HasSuffix(stdout, "ctx-02:\n  dataStoreOverrides: []\n") {
		t.Errorf("kamaji all: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := execCLI(t, "", "overrides", "--config", overridesConfig, "-o", "yaml"); code == 0 || !strings.Contains(stderr, `unknown output format "yaml"`) {
		t.Errorf("-o yaml: exit %d: %s", code, stderr)
	}
}

func TestOverridesPrevious(t *testing.T) {
	prevCfg := filepath.Join("testdata", "overrides", "previous-shards.yaml")
	code, stdout, stderr := execCLI(t, "", "overrides", "--config", overridesConfig, "--previous", prevCfg)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := `context "ctx-00": coordination.k8s.io/leases moves from the main etcd (--etcd-servers) to datastore "leases" (https://etcd-leases-0:2379): refused
context "ctx-01": coordination.k8s.io/leases moves from datastore "leases" (https://10.1.0.4:2379) to datastore "leases" (https://10.1.0.5:2379): refused
`
	// ctx-00's events servers only changed order: no change.
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if !strings.Contains(stderr, "2 datastore change(s) refused") || !strings.Contains(stderr, "allowDataStoreChanges") {
		t.Errorf("stderr: %s", stderr)
	}

	// Only one context.
	code, stdout, _ = execCLI(t, "", "overrides", "--config", overridesConfig, "--previous", prevCfg, "--context", "ctx-02")
	if code != 0 || stdout != "" {
		t.Errorf("ctx-02: exit %d, %q", code, stdout)
	}

	// The same overrides, as printed before: nothing changes.
	code, stdout, stderr = execCLI(t, "", "overrides", "--config", overridesConfig, "--previous", filepath.Join("testdata", "overrides", "previous-same.txt"))
	if code != 0 || stdout != "" || !strings.Contains(stderr, "no datastore changes") {
		t.Errorf("same: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}

	// Events gain an override, which is ephemeral: a warning, exit 0.
	code, stdout, stderr = execCLI(t, "", "overrides", "--config", overridesConfig, "--previous", filepath.Join("testdata", "overrides", "previous-events-added.txt"), "-o", "json")
	if code != 0 {
		t.Errorf("ephemeral: exit %d: %s", code, stderr)
	}
	var doc v1alpha1.OverridesChangeReport
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if doc.APIVersion != "shardrouter.dev/v1alpha1" || doc.Kind != "OverridesChangeReport" {
		t.Errorf("apiVersion/kind: %+v", doc.TypeMeta)
	}
	reports := doc.Changes
	if len(reports) != 1 || reports[0].Context != "ctx-00" || reports[0].Resource != "/events" || !reports[0].Allowed || !reports[0].Ephemeral || reports[0].From.Servers != nil {
		t.Errorf("reports: %+v", reports)
	}

	// A bare value needs a context.
	bare := filepath.Join(t.TempDir(), "bare.txt")
	writeTestFile(t, bare, "coordination.k8s.io/leases#https://10.1.0.4:2379\n")
	if code, _, stderr := execCLI(t, "", "overrides", "--config", overridesConfig, "--previous", bare); code == 0 || !strings.Contains(stderr, "--context") {
		t.Errorf("bare without context: exit %d: %s", code, stderr)
	}
	code, stdout, _ = execCLI(t, "", "overrides", "--config", overridesConfig, "--previous", bare, "--context", "ctx-01")
	if code != 1 || !strings.Contains(stdout, "from https://10.1.0.4:2379 to datastore \"leases\" (https://10.1.0.5:2379): refused") {
		t.Errorf("bare: exit %d, %s", code, stdout)
	}

	// allowDataStoreChanges turns refusals into warnings.
	allowed := filepath.Join(t.TempDir(), "allowed.yaml")
	writeTestFile(t, allowed, strings.Replace(readTestFile(t, overridesConfig), "spec:\n", "spec:\n  allowDataStoreChanges: true\n", 1))
	code, stdout, _ = execCLI(t, "", "overrides", "--config", allowed, "--previous", prevCfg)
	if code != 0 || strings.Count(stdout, "allowed by allowDataStoreChanges") != 2 {
		t.Errorf("allowed: exit %d:\n%s", code, stdout)
	}
}
