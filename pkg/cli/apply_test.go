//go:build !nolive

package cli_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/cli"
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
		{"absent kubeconfig", []string{"apply", pkg, "--out", filepath.Join(t.TempDir(), "out"), "--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
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
