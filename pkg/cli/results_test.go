package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
)

func TestFormatResultIndexesFilesOnly(t *testing.T) {
	for _, tc := range []struct {
		file *framework.File
		want string
	}{
		{&framework.File{Path: "apps/web.yaml", Index: 2}, "apps/web.yaml[2]: m"},
		{&framework.File{Path: "Kptfile"}, "Kptfile[0]: m"},
		{&framework.File{Path: "out/ctx-01"}, "out/ctx-01: m"}, // a context directory
		{nil, "m"},
	} {
		if got := FormatResult(&framework.Result{Message: "m", File: tc.file}); got != tc.want {
			t.Errorf("FormatResult(%+v) = %q, want %q", tc.file, got, tc.want)
		}
	}
}

// A context dropped from the config is refused naming its directory (no
// resource index) and a resource it holds with that resource's file.
func TestDroppedContextNamesDirAndFile(t *testing.T) {
	pkg := copySplitPackage(t)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("first split: exit %d: %s", code, stderr)
	}
	cfg := filepath.Join(pkg, "shards.yaml")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kept, _, found := strings.Cut(string(data), "  - name: ctx-01\n")
	if !found {
		t.Fatalf("%s declares no ctx-01", cfg)
	}
	if err := os.WriteFile(cfg, []byte(kept), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := execCLI(t, "", "split", pkg, "-o", out)
	dir := filepath.Join(out, "ctx-01")
	if code != 1 || !strings.Contains(stderr, "error: "+dir+`: context "ctx-01" is no longer in the config`) ||
		!strings.Contains(stderr, "(such as ConfigMap team-b/web in apps/web.yaml)") || strings.Contains(stderr, dir+"[") {
		t.Errorf("exit %d, stderr:\n%s\nwant 1, the directory %s without an index, and the resource's file", code, stderr, dir)
	}
}
