package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/pkg/kinds"
)

// discoveryDir returns api/discovery of the k8s.io/kubernetes module in the
// module cache, or skips: the test never downloads it (gen.sh does).
func discoveryDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("cannot ask go for GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubernetes@"+kinds.KubernetesVersion, "api", "discovery")
	if _, err := os.Stat(filepath.Join(dir, "aggregated_v2.json")); err != nil {
		testenv.Missing(t, "k8s.io/kubernetes@"+kinds.KubernetesVersion+" in the module cache",
			"go generate ./pkg/kinds fetches it; so does make tools-cluster")
	}
	return dir
}

// TestTableIsUpToDate regenerates the table and compares it byte for byte.
func TestTableIsUpToDate(t *testing.T) {
	dir := discoveryDir(t)
	got, err := Generate(kinds.KubernetesVersion, []string{
		filepath.Join(dir, "aggregated_v2.json"),
		filepath.Join(dir, "api__v1.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../zz_generated_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("zz_generated_table.go is stale: run go generate ./pkg/kinds")
	}
}

// TestAggregatedMatchesPerGroupVersion checks the aggregated document against
// the per-group-version documents checked in beside it: both must give the
// same table.
func TestAggregatedMatchesPerGroupVersion(t *testing.T) {
	dir := discoveryDir(t)
	perGV, err := filepath.Glob(filepath.Join(dir, "apis__*__*.json"))
	if err != nil || len(perGV) == 0 {
		t.Fatalf("no per-group-version documents in %s: %v", dir, err)
	}
	core := filepath.Join(dir, "api__v1.json")
	fromAggregated, err := Generate("test", []string{filepath.Join(dir, "aggregated_v2.json"), core})
	if err != nil {
		t.Fatal(err)
	}
	fromPerGV, err := Generate("test", append(perGV, core))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := tableBody(fromAggregated), tableBody(fromPerGV); a != b {
		t.Errorf("aggregated_v2.json and the per-group-version documents disagree:\naggregated:\n%s\nper group-version:\n%s", a, b)
	}
	// Both together agree with each other, so give no conflict.
	if _, err := Generate("test", append(perGV, core, filepath.Join(dir, "aggregated_v2.json"))); err != nil {
		t.Error(err)
	}
}

func tableBody(src []byte) string {
	_, body, _ := strings.Cut(string(src), "var servedKinds")
	return body
}

const aggregatedFixture = `{
  "apiVersion": "apidiscovery.k8s.io/v2",
  "kind": "APIGroupDiscoveryList",
  "items": [
    {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "resources": [
      {"resource": "deployments", "responseKind": {"group": "", "version": "", "kind": "Deployment"}, "scope": "Namespaced",
       "verbs": ["create", "get", "list", "watch"],
       "subresources": [{"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get"]}]}
    ]}]},
    {"metadata": {"name": "example.io"}, "versions": [
      {"version": "v1alpha1", "resources": [{"resource": "things", "responseKind": {"kind": "Thing"}, "scope": "Cluster", "verbs": ["list", "watch"]}]},
      {"version": "v1", "resources": [{"resource": "things", "responseKind": {"kind": "Thing"}, "scope": "Cluster", "verbs": ["list", "watch"]}]},
      {"version": "v1beta2", "resources": [{"resource": "things", "responseKind": {"kind": "Thing"}, "scope": "Cluster", "verbs": ["list", "watch"]}]}
    ]}
  ]
}`

const coreFixture = `{
  "kind": "APIResourceList",
  "groupVersion": "v1",
  "resources": [
    {"name": "componentstatuses", "kind": "ComponentStatus", "namespaced": false, "verbs": ["get", "list"]},
    {"name": "bindings", "kind": "Binding", "namespaced": true, "verbs": ["create"]},
    {"name": "pods", "kind": "Pod", "namespaced": true, "verbs": ["get", "list", "watch"]},
    {"name": "pods/eviction", "group": "policy", "version": "v1", "kind": "Eviction", "namespaced": true, "verbs": ["create"]}
  ]
}`

func writeFixture(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGenerateFromFixtures(t *testing.T) {
	agg := writeFixture(t, "aggregated_v2.json", aggregatedFixture)
	core := writeFixture(t, "api__v1.json", coreFixture)
	src, err := Generate("v0.0.0-test", []string{agg, core})
	if err != nil {
		t.Fatal(err)
	}
	got := string(src)
	// Sorted by group, kind, then preferred version first; subresources
	// skipped; Stored only with list and watch.
	want := `var servedKinds = []Kind{
	{Group: "", Version: "v1", Kind: "Binding", Resource: "bindings", Namespaced: true, Stored: false},
	{Group: "", Version: "v1", Kind: "ComponentStatus", Resource: "componentstatuses", Namespaced: false, Stored: false},
	{Group: "", Version: "v1", Kind: "Pod", Resource: "pods", Namespaced: true, Stored: true},
	{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespaced: true, Stored: true},
	{Group: "example.io", Version: "v1", Kind: "Thing", Resource: "things", Namespaced: false, Stored: true},
	{Group: "example.io", Version: "v1beta2", Kind: "Thing", Resource: "things", Namespaced: false, Stored: true},
	{Group: "example.io", Version: "v1alpha1", Kind: "Thing", Resource: "things", Namespaced: false, Stored: true},
}
`
	if !strings.HasSuffix(got, want) {
		t.Errorf("generated table:\n%s\nwant it to end with:\n%s", got, want)
	}
	for _, line := range []string{
		"// Code generated by gen/main.go from the discovery documents of k8s.io/kubernetes@v0.0.0-test; DO NOT EDIT.\n",
		"const KubernetesVersion = \"v0.0.0-test\"\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("generated source lacks %q", line)
		}
	}
	again, err := Generate("v0.0.0-test", []string{core, agg})
	if err != nil || !bytes.Equal(again, src) {
		t.Errorf("the output depends on the order of the inputs (err %v)", err)
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name, content, wantErr string
	}{
		{name: "unknown document", content: `{"kind": "APIGroupList", "apiVersion": "v1"}`, wantErr: "unsupported document kind"},
		{name: "not JSON", content: `<html>`, wantErr: "parsing"},
		{name: "bad scope", content: `{"apiVersion": "apidiscovery.k8s.io/v2", "kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": "a"}, "versions": [{"version": "v1", "resources": [{"resource": "xs", "responseKind": {"kind": "X"}, "scope": "Galaxy"}]}]}]}`, wantErr: "unknown scope"},
		{name: "foreign kind", content: `{"kind": "APIResourceList", "groupVersion": "a/v1", "resources": [{"name": "xs", "group": "b", "version": "v1", "kind": "X"}]}`, wantErr: "answers with a kind of b/v1"},
		{name: "empty", content: `{"kind": "APIResourceList", "groupVersion": "a/v1", "resources": []}`, wantErr: "no resources"},
		{name: "conflict", content: `{"kind": "APIResourceList", "groupVersion": "a/v1", "resources": [{"name": "xs", "kind": "X", "verbs": ["list", "watch"]}, {"name": "ys", "kind": "X"}]}`, wantErr: "described twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFixture(t, "doc.json", tc.content)
			_, err := Generate("v0", []string{p})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Generate: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if err := run([]string{"x.json"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-kubernetes-version is required") {
		t.Errorf("run without -kubernetes-version: %v", err)
	}
}
