package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad engine input: exit non-zero with an error that names the flag or
// field, and nothing written.
func TestSplitEngineErrors(t *testing.T) {
	pkg := copySplitPackage(t)
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	writeTestFile(t, spec, "apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata:\n  name: x\nspec:\n  contexts:\n  - name: ctx-00\n    namespaceSelector: {}\n  gitops:\n    url: git.example.com/fleet\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--engine", "fluxcd"}, `unknown engine "fluxcd": --engine takes kpt, flux, argocd, configsync`},
		{[]string{"--gitops-url", "https://git.example.com/fleet.git"}, "add --engine flux, argocd or configsync"},
		{[]string{"--engine", "kpt", "--gitops-branch", "main"}, "add --engine flux, argocd or configsync"},
		{[]string{"--engine", "flux"}, "give --gitops-url or spec.gitops.url"},
		{[]string{"--engine", "flux", "--gitops-url", "git.example.com/fleet"}, `"git.example.com/fleet": must be an http://, https:// or ssh:// URL`},
		{[]string{"--engine", "argocd", "--gitops-url", "https://git.example.com/f.git", "--gitops-path", "../x"}, "must be inside the repository"},
		{[]string{"--engine", "flux", "--config", spec}, "spec.gitops.url"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := execCLI(t, "", append([]string{"split", pkg, "-o", out}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("split %v: exit %d, stderr lacks %q:\n%s", c.args, code, c.want, stderr)
		}
		if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("split %v created the output directory", c.args)
		}
	}
	prev := t.TempDir()
	code, stdout, stderr := execCLI(t, "", "split", pkg, "--context", "ctx-00", "--previous", prev, "--engine", "flux", "--gitops-url", "https://git.example.com/f.git")
	if code == 0 || stdout != "" || !strings.Contains(stderr, "directory form") {
		t.Errorf("the pipe form with an engine: exit %d, stdout %q:\n%s", code, stdout, stderr)
	}
}

// split --engine flux in a git work tree finds OUT_DIR's path in the
// repository, writes no kpt files, and the engine's objects.
func TestSplitEngineCommand(t *testing.T) {
	pkg := copySplitPackage(t)
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(repo, "clusters")
	code, _, stderr := execCLI(t, "", "split", pkg, "-o", out, "--engine", "flux", "--gitops-url", "https://git.example.com/f.git")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "branch main, path clusters") {
		t.Errorf("stderr:\n%s", stderr)
	}
	for _, f := range []string{"ctx-00/Kptfile", "ctx-00/resourcegroup.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want no such file", f, err)
		}
	}
	data := readTestFile(t, filepath.Join(out, "_gitops", "flux", "management.yaml"))
	if !strings.Contains(data, "path: ./clusters/ctx-00\n") || !strings.Contains(data, "url: https://git.example.com/f.git\n") {
		t.Errorf("management.yaml:\n%s", data)
	}
}

// During a hand-off, plan --engine counts the old copies as kept (no
// prune in the old context), and plan without it would prune them; with
// the new copies shown Current the hand-off split and plan agree again.
func TestPlanDuringHandoff(t *testing.T) {
	pkg := copySplitPackage(t)
	cfg := filepath.Join(pkg, "shards.yaml")
	writeTestFile(t, cfg, strings.Replace(readTestFile(t, cfg), "spec:\n", "spec:\n  allowMoves: true\n", 1))
	out := filepath.Join(t.TempDir(), "out")
	flux := []string{"--engine", "flux", "--gitops-url", "https://git.example.com/f.git", "--gitops-path", "out"}
	if code, _, stderr := execCLI(t, "", append([]string{"split", pkg, "-o", out}, flux...)...); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	ns := filepath.Join(pkg, "namespaces.yaml")
	writeTestFile(t, ns, strings.Replace(readTestFile(t, ns), `shard: "00"`, `shard: "01"`, 1))
	code, _, stderr := execCLI(t, "", append([]string{"split", pkg, "-o", out}, flux...)...)
	if code != 0 || !strings.Contains(stderr, "ctx-00 keeps them until they are Current in ctx-01") {
		t.Fatalf("the hand-off split: exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "ctx-00", "apps", "web.yaml")); err != nil {
		t.Fatalf("the old copy is gone during the hand-off: %v", err)
	}
	_, kptPlan, _ := execCLI(t, "", "plan", pkg, "--previous", out)
	_, fluxPlan, _ := execCLI(t, "", "plan", pkg, "--previous", out, "--engine", "flux")
	if !strings.Contains(fluxPlan, "No changes.") || strings.Contains(kptPlan, "No changes.") {
		t.Errorf("plan --engine flux during a hand-off:\n%s\nplan (kpt), which would prune the old copies:\n%s", fluxPlan, kptPlan)
	}
}

// A move's warning (allowMoves) and refusal say who deletes the old copy:
// kpt live apply for kpt's split; under a pulling engine, the engine once
// it syncs, and the two-commit hand-off that keeps the old copy meanwhile.
func TestMoveMessagesNameTheEngine(t *testing.T) {
	flux := []string{"--engine", "flux", "--gitops-url", "https://git.example.com/f.git", "--gitops-path", "out"}
	for _, tc := range []struct {
		name          string
		allowMoves    bool
		engine        []string
		want, notWant string
	}{
		{"kpt allowed", true, nil, "(allowMoves): kpt live apply --context ctx-00 will prune it unless", "handed off"},
		{"flux allowed", true, flux, "(allowMoves): with --engine flux the move is handed off in two commits: split keeps it in ctx-00 as well (a pending hand-off recorded in OUT_DIR/_gitops) until --handoff-status shows it Current in ctx-01, and only then drops it from ctx-00", "kpt live apply"},
		{"kpt refused", false, nil, "kpt live apply --context ctx-00 would delete", "once it syncs"},
		{"flux refused", false, flux, "ctx-00's flux would prune them there once it syncs; set spec.allowMoves: true to move them on purpose (split then hands the move off in two commits", "kpt live apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkg := copySplitPackage(t)
			if tc.allowMoves {
				cfg := filepath.Join(pkg, "shards.yaml")
				writeTestFile(t, cfg, strings.Replace(readTestFile(t, cfg), "spec:\n", "spec:\n  allowMoves: true\n", 1))
			}
			out := filepath.Join(t.TempDir(), "out")
			if code, _, stderr := execCLI(t, "", append([]string{"split", pkg, "-o", out}, tc.engine...)...); code != 0 {
				t.Fatalf("split: %s", stderr)
			}
			ns := filepath.Join(pkg, "namespaces.yaml")
			writeTestFile(t, ns, strings.Replace(readTestFile(t, ns), `shard: "00"`, `shard: "01"`, 1))
			_, _, stderr := execCLI(t, "", append([]string{"split", pkg, "-o", out}, tc.engine...)...)
			if !strings.Contains(stderr, tc.want) || strings.Contains(stderr, tc.notWant) {
				t.Errorf("the move's split says:\n%s\nwant %q, and no %q", stderr, tc.want, tc.notWant)
			}
		})
	}
}
