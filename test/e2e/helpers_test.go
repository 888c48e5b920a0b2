//go:build e2e

// Package e2e holds the end-to-end tests: shard-router driven by the real
// programs its users run (kpt, podman, and later a cluster). They need the
// e2e build tag and the tools that `make tools` builds into .tools/bin:
//
//	go test -tags e2e ./test/e2e/...
//
// This file holds the helpers every test of the package shares. TestMain is
// defined here; tests register clean-ups with t.Cleanup, or with
// atExit for what outlives one test.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/testenv"
)

// Env names the helpers read.
const (
	// EnvShardRouter, when set, is the shard-router binary to test instead
	// of one built from the working tree.
	EnvShardRouter = "SHARD_ROUTER"
)

// Timeouts for the commands the tests run. They only stop a hung process;
// no test asserts on time.
const (
	buildTimeout = 5 * time.Minute
	toolTimeout  = 2 * time.Minute
)

var (
	exitFuncs []func()
	tmpRoot   string
)

// TestMain gives the package one temporary directory for what is shared by
// tests (the shard-router binary) and runs the atExit functions.
func TestMain(m *testing.M) {
	if url := os.Getenv(envExecPlugin); url != "" {
		// A kubeconfig's exec plugin (tenant_harness_test.go), not a test run.
		os.Exit(execPluginMain(url))
	}
	dir, err := os.MkdirTemp("", "shard-router-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	tmpRoot = dir
	code := m.Run()
	for i := len(exitFuncs) - 1; i >= 0; i-- {
		exitFuncs[i]()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// atExit runs f once all tests of the package have finished.
func atExit(f func()) { exitFuncs = append(exitFuncs, f) }

var repoRootOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/shard-router/shard-router\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/shard-router/shard-router above the working directory")
		}
		dir = parent
	}
})

// repoRoot returns the absolute path of the repository (the main module's
// directory).
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := repoRootOnce()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// toolPath returns the path of a third-party program the tests use: the
// environment variable named after it (kpt: KPT, kube-apiserver:
// KUBE_APISERVER), else .tools/bin/<name>, built by `make tools`.
func toolPath(t testing.TB, name string) string {
	t.Helper()
	env := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if p := os.Getenv(env); p != "" {
		return p
	}
	p := filepath.Join(repoRoot(t), ".tools", "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s (build it with `make tools`, or set %s): %v", name, p, env, err)
	}
	return p
}

var shardRouterOnce = sync.OnceValues(func() (string, error) { return buildShardRouter("shard-router") })

// shardRouterFnOnce builds the function's binary, as the image has it:
// without the live commands (-tags nolive).
var shardRouterFnOnce = sync.OnceValues(func() (string, error) { return buildShardRouter("shard-router-fn", "-tags", "nolive") })

func buildShardRouter(name string, flags ...string) (string, error) {
	if p := os.Getenv(EnvShardRouter); p != "" && name == "shard-router" {
		return filepath.Abs(p)
	}
	root, err := repoRootOnce()
	if err != nil {
		return "", err
	}
	out := filepath.Join(tmpRoot, "bin", name)
	// Static, as `make build` and the image build it.
	args := append(append([]string{"build", "-trimpath"}, flags...), "-o", out, "./cmd/shard-router")
	res := run(context.Background(), cmdSpec{Dir: root, Env: []string{"CGO_ENABLED=0"}, Timeout: buildTimeout}, "go", args...)
	if res.Err != nil || res.ExitCode != 0 {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), res.Err, res.Stderr)
	}
	return out, nil
}

// shardRouterFn returns the function's binary (-tags nolive), built once.
func shardRouterFn(t testing.TB) string {
	t.Helper()
	p, err := shardRouterFnOnce()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shardRouter returns the shard-router binary under test: $SHARD_ROUTER, or
// one built from the working tree (once per test binary, CGO_ENABLED=0).
func shardRouter(t testing.TB) string {
	t.Helper()
	p, err := shardRouterOnce()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// requireProgram returns the path of a program on PATH. When it is missing
// the test fails in CI (CI=true), whose script installs it, and is skipped
// elsewhere; hint says how to install it.
func requireProgram(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Missing(t, name, fmt.Sprintf("%s: %v", hint, err))
	}
	return p
}

// cmdSpec says how to run a command. The zero value runs in the test's
// working directory with the test's environment and toolTimeout.
type cmdSpec struct {
	Dir string
	// Env is added to the process's environment (later entries win).
	Env     []string
	Stdin   io.Reader
	Timeout time.Duration
}

// result is what a command did.
type result struct {
	// Cmd is the command line, for messages.
	Cmd            string
	Stdout, Stderr string
	// ExitCode is the process's exit code, -1 when it did not exit.
	ExitCode int
	// Err is set when the command could not run or was killed (not for a
	// non-zero exit).
	Err error
	// Wall is how long the process ran; Usage is its resource usage as
	// wait4 reports it (CPU times, peak RSS), nil when it did not start.
	Wall  time.Duration
	Usage *syscall.Rusage
}

func (r result) String() string {
	return fmt.Sprintf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", r.Cmd, r.ExitCode, r.Stdout, r.Stderr)
}

func run(ctx context.Context, spec cmdSpec, name string, args ...string) result {
	timeout := spec.Timeout
	if timeout == 0 {
		timeout = toolTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdin = spec.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := result{Cmd: strings.Join(append([]string{name}, args...), " "), ExitCode: -1, Wall: time.Since(start)}
	if cmd.ProcessState != nil {
		res.Usage, _ = cmd.ProcessState.SysUsage().(*syscall.Rusage)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		res.ExitCode = 0
	case ctx.Err() != nil:
		res.Err = fmt.Errorf("killed after %s: %w", timeout, ctx.Err())
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		res.Err = err
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	return res
}

// runCmd runs a command and returns what it did. A command that cannot be
// started or outlives its timeout fails the test; a non-zero exit does not.
func runCmd(t testing.TB, spec cmdSpec, name string, args ...string) result {
	t.Helper()
	res := run(context.Background(), spec, name, args...)
	if res.Err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", res.Cmd, res.Err, res.Stdout, res.Stderr)
	}
	return res
}

// mustRun runs a command that must exit 0.
func mustRun(t testing.TB, spec cmdSpec, name string, args ...string) result {
	t.Helper()
	res := runCmd(t, spec, name, args...)
	if res.ExitCode != 0 {
		t.Fatal(res)
	}
	return res
}

// copyTree copies the regular files and directories under src to dst,
// keeping file modes. Symlinks and other special files are an error: the
// trees the tests copy have none.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		return copyEntry(path, filepath.Join(dst, rel), d)
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}

// copyFiles copies the listed files (relative to src) to dst, creating
// their directories. Listed files that do not exist are skipped.
func copyFiles(t testing.TB, src, dst string, files []string) {
	t.Helper()
	for _, rel := range files {
		info, err := os.Lstat(filepath.Join(src, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyEntry(filepath.Join(src, rel), filepath.Join(dst, rel), fs.FileInfoToDirEntry(info)); err != nil {
			t.Fatal(err)
		}
	}
}

func copyEntry(from, to string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	switch {
	case d.IsDir():
		return os.MkdirAll(to, info.Mode().Perm()|0o700)
	case info.Mode().IsRegular():
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, info.Mode().Perm())
	default:
		return fmt.Errorf("%s: not a regular file or directory (%s)", from, info.Mode().Type())
	}
}

// snapshot returns the contents of every regular file under dir, by slash
// path relative to dir, skipping the directories named in skip.
func snapshot(t testing.TB, dir string, skip ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			for _, s := range skip {
				if rel == s {
					return filepath.SkipDir
				}
			}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[rel] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// changedFiles compares two snapshots and returns the files added, removed
// and modified, each sorted by path.
func changedFiles(before, after map[string]string) (added, removed, modified []string) {
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			added = append(added, p)
		case a != b:
			modified = append(modified, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			removed = append(removed, p)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	slices.Sort(modified)
	return added, removed, modified
}

// git runs git in dir, isolated from the user's and the system's git
// configuration so that its output is the same everywhere.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid",
		"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
		"GIT_DIFF_OPTS=", "LC_ALL=C",
	}
	return mustRun(t, cmdSpec{Dir: dir, Env: env}, "git", args...).Stdout
}

// writeFile writes a file, creating its directory.
func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
