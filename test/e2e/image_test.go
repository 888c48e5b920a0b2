//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// testImage is the image TestImage builds from the binary under test, so
// that the image and --exec runs compare the same code.
const testImage = "localhost/shard-router:e2e"

// TestImage builds the container image with hack/image.sh and runs it the
// way users do: kpt fn eval --image with podman, whose output must be
// byte-identical to kpt fn eval --exec. It also checks least privilege: the
// image runs as non-root, and works with a read-only root filesystem and no
// network. Without podman it fails in CI (which installs it with
// hack/install-packages.sh) and is skipped elsewhere.
func TestImage(t *testing.T) {
	podman := requireProgram(t, "podman", "hack/install-packages.sh installs podman and runc")
	requireProgram(t, "runc", "hack/install-packages.sh installs podman and runc")
	kpt := toolPath(t, "kpt")
	bin := shardRouter(t)
	root := repoRoot(t)
	podmanEnv := []string{"CONTAINERS_CONF=" + filepath.Join(root, "hack", "containers.conf")}

	// prebuilt: the function's binary under test (without the live
	// commands, as make image builds it), whether or not a Go image is
	// around.
	fn := shardRouterFn(t)
	if res := runCmd(t, cmdSpec{Stdin: strings.NewReader("")}, fn, "apply"); res.ExitCode == 0 || !strings.Contains(res.Stderr, "unknown command") {
		t.Errorf("the function's binary has the live commands:\n%s", res)
	}
	mustRun(t, cmdSpec{Dir: root, Timeout: buildTimeout,
		Env: append([]string{"IMAGE_BUILD=prebuilt", "BINARY=" + fn, "VERSION=e2e"}, podmanEnv...)},
		filepath.Join(root, "hack", "image.sh"), testImage)
	t.Cleanup(func() { run(context.Background(), cmdSpec{Env: podmanEnv}, podman, "rmi", "--force", testImage) })

	t.Run("non-root", func(t *testing.T) {
		out := mustRun(t, cmdSpec{Env: podmanEnv}, podman, "image", "inspect", "--format", "{{json .Config}}", testImage).Stdout
		var cfg struct {
			User       string
			Entrypoint []string
		}
		if err := json.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatalf("podman image inspect: %v\n%s", err, out)
		}
		if cfg.User != "65534:65534" {
			t.Errorf("image user is %q, want 65534:65534 (nobody)", cfg.User)
		}
		if len(cfg.Entrypoint) != 1 || cfg.Entrypoint[0] != "/shard-router" {
			t.Errorf("image entrypoint is %q, want [/shard-router]", cfg.Entrypoint)
		}
	})

	// kpt runs the image with podman run --network none --user nobody
	// --security-opt=no-new-privileges, and never pulls it here.
	t.Run("kpt fn eval --image", func(t *testing.T) {
		for _, dir := range examples(t) {
			t.Run(filepath.Base(dir), func(t *testing.T) {
				cfg := readExampleConfig(t, dir)
				tmp := t.TempDir()
				byExec, byImage := filepath.Join(tmp, "exec", filepath.Base(dir)), filepath.Join(tmp, "image", filepath.Base(dir))
				copyTree(t, dir, byExec)
				copyTree(t, dir, byImage)
				evalArgs := func(pkg, results string, fn ...string) []string {
					argv := append([]string{"fn", "eval", pkg, "--results-dir", results}, fn...)
					if cfg.FnConfig != "" {
						argv = append(argv, "--fn-config", filepath.Join(pkg, cfg.FnConfig))
					}
					args, err := cfg.args()
					if err != nil {
						t.Fatal(err)
					}
					if len(args) > 0 {
						argv = append(argv, "--")
						for _, kv := range args {
							argv = append(argv, kv[0]+"="+kv[1])
						}
					}
					return argv
				}
				execRes := runCmd(t, cmdSpec{Dir: tmp}, kpt, evalArgs(byExec, filepath.Join(tmp, "exec-results"), "--exec", bin)...)
				imageRes := runCmd(t, cmdSpec{Dir: tmp, Env: append([]string{"KRM_FN_RUNTIME=podman"}, podmanEnv...)},
					kpt, evalArgs(byImage, filepath.Join(tmp, "image-results"), "--image", testImage, "--image-pull-policy", "never")...)
				if execRes.ExitCode != cfg.ExitCode || imageRes.ExitCode != cfg.ExitCode {
					t.Fatalf("exit codes: --exec %d, --image %d, want %d\n%s\n%s", execRes.ExitCode, imageRes.ExitCode, cfg.ExitCode, execRes, imageRes)
				}
				execFiles, imageFiles := snapshot(t, byExec), snapshot(t, byImage)
				added, removed, modified := changedFiles(execFiles, imageFiles)
				for _, f := range modified {
					t.Errorf("%s differs:\n--- --exec\n%s\n--- --image\n%s", f, execFiles[f], imageFiles[f])
				}
				if len(added)+len(removed) > 0 {
					t.Errorf("--image wrote %q and not %q, unlike --exec", added, removed)
				}
				if e, i := resultsOnly(t, filepath.Join(tmp, "exec-results")), resultsOnly(t, filepath.Join(tmp, "image-results")); e != i {
					t.Errorf("results differ:\n--- --exec\n%s\n--- --image\n%s", e, i)
				}
			})
		}
	})

	// Least privilege (issue 7): podman run with a read-only root
	// filesystem, no network, no capabilities and the image's own user
	// gives byte for byte the binary's stdout and exit code.
	t.Run("read-only, no network", func(t *testing.T) {
		for _, name := range []string{"per-namespace", "refused-move"} {
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(root, "examples", name)
				cfg := readExampleConfig(t, dir)
				rl := mustRun(t, cmdSpec{}, kpt, "fn", "source", dir, "--fn-config", filepath.Join(dir, cfg.FnConfig)).Stdout
				want := runCmd(t, cmdSpec{Stdin: bytes.NewBufferString(rl)}, bin)
				got := runCmd(t, cmdSpec{Stdin: bytes.NewBufferString(rl), Env: podmanEnv}, podman, "run", "--rm", "-i",
					"--read-only", "--network", "none", "--cap-drop", "all", "--security-opt", "no-new-privileges",
					"--pull", "never", testImage)
				if got.ExitCode != want.ExitCode || got.ExitCode != cfg.ExitCode {
					t.Fatalf("exit %d in the container, %d outside, want %d\n%s", got.ExitCode, want.ExitCode, cfg.ExitCode, got)
				}
				if got.Stdout != want.Stdout {
					t.Errorf("stdout differs:\n--- binary\n%s\n--- container\n%s", want.Stdout, got.Stdout)
				}
				if got.Stdout == "" {
					t.Error("no ResourceList on stdout")
				}
			})
		}
	})
}

// resultsOnly returns the results of the FunctionResultList kpt wrote in
// dir, without what names the function (exec or image) or captures its
// stderr.
func resultsOnly(t testing.TB, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "results.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rl, err := yaml.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	items, err := rl.Pipe(yaml.Lookup("items"))
	if err != nil || items == nil {
		t.Fatalf("%s: no items (%v)", dir, err)
	}
	err = items.VisitElements(func(item *yaml.RNode) error {
		for _, f := range []string{"exec", "image", "stderr"} {
			if _, err := item.Pipe(yaml.Clear(f)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return items.MustString()
}
