//go:build !nolive

package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/cli"
	"github.com/shard-router/shard-router/pkg/outdir"
)

func TestApplyFlags(t *testing.T) {
	pkg := filepath.Join("testdata", "split-pkg")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{"apply", pkg}, "--out OUT_DIR"},
		{"bad format", []string{"apply", pkg, "--out", t.TempDir(), "-o", "yaml"}, `unknown output format "yaml"`},
		{"bad timeout", []string{"apply", pkg, "--out", t.TempDir(), "--reconcile-timeout", "0s"}, "--reconcile-timeout"},
		{"absent kubeconfig", []string{"apply", pkg, "--out", t.TempDir(), "--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
		// As for plan --previous: a mistyped OUT_DIR is refused, not taken for a first apply.
		{"absent out", []string{"apply", pkg, "--out", filepath.Join(t.TempDir(), "out")}, "out does not exist"},
		// As kubectl: a group or UID is impersonated along with a user.
		{"as-group without as", []string{"apply", pkg, "--out", t.TempDir(), "--as-group", "devs"}, "--as-group and --as-uid need --as"},
		{"as-uid without as", []string{"apply", pkg, "--out", t.TempDir(), "--as-uid", "42"}, "--as-group and --as-uid need --as"},
		{"status as-group without as", []string{"status", t.TempDir(), "--as-group", "devs"}, "--as-group and --as-uid need --as"},
		{"plan as without live", []string{"plan", pkg, "--previous", t.TempDir(), "--as", "team-a"}, "are for plan --live"},
		{"plan as-group without as", []string{"plan", pkg, "--previous", t.TempDir(), "--live", "--as-group", "devs"}, "--as-group and --as-uid need --as"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := cli.Main(cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, tc.args)
			if code != 1 || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut.String(), tc.want)
			}
		})
	}
}

// apply refuses an OUT_DIR that another writer holds, before reading it.
func TestApplyRefusesALockedOutDir(t *testing.T) {
	out := t.TempDir()
	held, err := outdir.LockOutDir(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	var stdout, stderr bytes.Buffer
	args := []string{"apply", filepath.Join("testdata", "split-pkg"), "--out", out, "--kubeconfig", "/nonexistent/kubeconfig"}
	code := cli.Main(cli.Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr}, args)
	if code != 1 || !strings.Contains(stderr.String(), out) || !strings.Contains(stderr.String(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("apply into a locked OUT_DIR: exit %d, stderr %q; want 1 naming %s and the holder's pid", code, stderr.String(), out)
	}
}
