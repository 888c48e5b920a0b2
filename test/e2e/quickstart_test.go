//go:build e2e

package e2e

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestQuickStart runs the README's quick start as written: every fenced
// sh block of its "Quick start" section, in order, as one bash script
// that stops at the first command that fails, in a fresh clone of the
// repository's HEAD. So the README cannot drift from what works. The
// clone gets the repository's tools instead of building them: kpt and
// kyaml-noop as copies (the script's make tools-kpt relinks them in
// place), the cluster tools as symlinks (make fleet only builds a missing
// one).
func TestQuickStart(t *testing.T) {
	root := repoRoot(t)
	requireProgram(t, "make", "apt-get install make")
	requireProgram(t, "git", "apt-get install git")
	clone := filepath.Join(t.TempDir(), "shard-router")
	git(t, root, "clone", "--quiet", "--no-local", root, clone)
	bin := filepath.Join(clone, ".tools", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"kpt", "kyaml-noop"} {
		copyExecutable(t, toolPath(t, tool), filepath.Join(bin, tool))
	}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if err := os.Symlink(toolPath(t, tool), filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}

	readme := clusterReadFile(t, filepath.Join(clone, "README.md"))
	if working := clusterReadFile(t, filepath.Join(root, "README.md")); working != readme {
		t.Log("README.md differs from HEAD's: this runs the committed quick start")
	}
	script := quickStartScript(t, readme)
	t.Cleanup(func() { // whatever a failed script left running
		if _, err := os.Stat(filepath.Join(clone, ".fleet")); err == nil {
			runCmd(t, cmdSpec{Dir: clone, Timeout: 2 * time.Minute}, "make", "--no-print-directory", "fleet-down")
		}
	})
	res := runCmd(t, cmdSpec{Dir: clone, Env: []string{"KUBECONFIG=", "SHARD_ROUTER_REFERENCE="}, Timeout: 15 * time.Minute},
		"bash", "-c", "set -euo pipefail -o xtrace\n"+script)
	if res.ExitCode != 0 {
		t.Fatalf("the README's quick start failed (bash -x trace in stderr):\n%s", res)
	}
	if _, err := os.Stat(filepath.Join(clone, ".fleet")); !os.IsNotExist(err) {
		t.Errorf("the quick start's make fleet-down left .fleet/ (%v)", err)
	}
}

// quickStartScript returns the sh blocks of the README's "## Quick start"
// section, joined. It fails when the section or its blocks are missing,
// or when they do not start and stop the local fleet, so that renaming
// the section cannot make the test pass vacuously.
func quickStartScript(t *testing.T, readme string) string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Quick start\n")
	if !ok {
		t.Fatal("README.md has no \"## Quick start\" section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var blocks []string
	var block []string
	in := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case !in && line == "```sh":
			in, block = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(block, "\n"))
		case in:
			block = append(block, line)
		}
	}
	if in {
		t.Fatal("README.md's quick start has an unclosed ```sh block")
	}
	script := strings.Join(blocks, "\n")
	for _, want := range []string{"make fleet", "shard-router apply", "shard-router status", "make fleet-down"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `(\s|$)`).MatchString(script) {
			t.Fatalf("README.md's quick start (%d sh blocks) has no line that starts with %q:\n%s", len(blocks), want, script)
		}
	}
	return script
}

// copyExecutable copies the program src to dst.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
