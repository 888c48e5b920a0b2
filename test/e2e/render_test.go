//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
)

// demoPlacement is where the demo's resources must go: reviewed by hand
// against demo/shards.yaml and the routing rules.
var demoPlacement = map[string][2]string{ // kind/namespace/name -> context, datastore
	"Namespace//music":                                        {"eu-shard-00", "default"},
	"Namespace//podcasts":                                     {"eu-shard-01", "default"},
	"Namespace//platform":                                     {"eu-shard-00,eu-shard-01", "default"},
	"Deployment/music/catalog":                                {"eu-shard-00", "default"},
	"Service/music/catalog":                                   {"eu-shard-00", "default"},
	"Event/music/catalog.17a8f3c2b1":                          {"eu-shard-00", "events"},
	"Deployment/podcasts/feeds":                               {"eu-shard-01", "default"},
	"Event/podcasts/feeds.17a8f3c2b2":                         {"eu-shard-01", "default"},
	"CustomResourceDefinition//releases.platform.example.com": {"eu-shard-00,eu-shard-01", "default"},
	"ClusterRole//release-manager":                            {"eu-shard-00,eu-shard-01", "default"},
	"Lease/platform/release-controller":                       {"eu-shard-00,eu-shard-01", "eu-shard-00=leases,eu-shard-01=default"},
}

// TestRenderDemo renders the repository's demo package through the
// top-level Kptfile, as its README says (`kpt fn render --allow-exec` at
// the root, with bin/shard-router), on a copy of every file a clone has.
// Only demo/ may change, every demo resource must be placed as
// demoPlacement says, and a second render must change nothing.
func TestRenderDemo(t *testing.T) {
	kpt := toolPath(t, "kpt")
	bin := shardRouter(t)
	root := repoRoot(t)
	files := strings.Split(strings.TrimRight(git(t, root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00"), "\x00")
	copyDir := filepath.Join(t.TempDir(), "repo")
	copyFiles(t, root, copyDir, files)
	// What `make build` makes, where the Kptfile's exec points.
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(copyDir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "bin", "shard-router"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	// A developer's tree also has ignored directories: kpt must not read
	// them (this is not even YAML).
	writeFile(t, filepath.Join(copyDir, ".tools", "e2e-decoy.yaml"), "not: [yaml\n")
	before := snapshot(t, copyDir)

	res := runCmd(t, cmdSpec{Dir: copyDir}, kpt, "fn", "render", "--allow-exec")
	if res.ExitCode != 0 {
		t.Fatalf("kpt fn render failed:\n%s", res)
	}
	after := snapshot(t, copyDir)
	added, removed, modified := changedFiles(before, after)
	if len(added)+len(removed) > 0 {
		t.Errorf("render added %q and removed %q", added, removed)
	}
	for _, f := range modified {
		if !strings.HasPrefix(f, "demo/") {
			t.Errorf("render changed %s, outside demo/:\n%s", f, after[f])
		}
	}
	checkDemo(t, filepath.Join(copyDir, "demo"))

	res = runCmd(t, cmdSpec{Dir: copyDir}, kpt, "fn", "render", "--allow-exec")
	if res.ExitCode != 0 {
		t.Fatalf("second kpt fn render failed:\n%s", res)
	}
	_, _, modified = changedFiles(after, snapshot(t, copyDir))
	if len(modified) > 0 {
		t.Errorf("second render changed %q (not idempotent)", modified)
	}
}

// checkDemo reads the rendered demo/ and checks every resource against
// demoPlacement; local-config resources (the ShardConfig) must carry no
// annotation of shard-router.
func checkDemo(t *testing.T, dir string) {
	t.Helper()
	nodes, err := (&kio.LocalPackageReader{PackagePath: dir, OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		key := n.GetKind() + "/" + n.GetNamespace() + "/" + n.GetName()
		annos := n.GetAnnotations()
		ctx, hasCtx := annos["shardrouter.dev/context"]
		ds, hasDS := annos["shardrouter.dev/datastore"]
		if annos["config.kubernetes.io/local-config"] == "true" {
			if hasCtx || hasDS {
				t.Errorf("%s is local config but was annotated: %v", key, annos)
			}
			continue
		}
		want, ok := demoPlacement[key]
		if !ok {
			t.Errorf("%s: not in demoPlacement (a new demo resource? add where it must go)", key)
			continue
		}
		seen[key] = true
		if !hasCtx || !hasDS || ctx != want[0] || ds != want[1] {
			t.Errorf("%s: context %q, datastore %q; want %q, %q", key, ctx, ds, want[0], want[1])
		}
	}
	for key := range demoPlacement {
		if !seen[key] {
			t.Errorf("%s: missing from demo/", key)
		}
	}
}
