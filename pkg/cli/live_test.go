//go:build !nolive

package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// captureStderr runs f with os.Stderr, where klog writes, read into a string.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	t.Cleanup(func() { os.Stderr = saved })
	os.Stderr = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	f()
	os.Stderr = saved
	w.Close()
	return <-done
}

// With every cluster unreachable, status and apply say so once per
// context, in their own lines: client-go's log (a warning and an
// "Unhandled Error" per context) no longer reaches stderr before them.
func TestLiveCommandsQuietClientLog(t *testing.T) {
	pkg := copySplitPackage(t)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	kubeconfig := unreachableKubeconfig(t)
	for _, args := range [][]string{
		{"status", out, "--kubeconfig", kubeconfig, "--timeout", "20s"},
		{"apply", pkg, "--out", out, "--kubeconfig", kubeconfig},
	} {
		var code int
		var stderr string
		logged := captureStderr(t, func() { code, _, stderr = execCLI(t, "", args...) })
		if code != 1 || !strings.Contains(stderr, "ctx-00") || !strings.Contains(stderr, "ctx-01") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 1, naming both contexts", args[0], code, stderr)
		}
		if logged != "" {
			t.Errorf("%s: client-go logged to stderr:\n%s", args[0], logged)
		}
	}
}
