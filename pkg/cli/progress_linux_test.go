package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/ptytest"
	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/pkg/progress"
)

// bigPackage writes a package of progress.Threshold items: ConfigMaps in two
// namespaces, routed to two contexts by testfixture.ShardConfig.
func bigPackage(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, ns := range []string{"a", "b"} {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    shard: %s\n---\n", ns, ns)
	}
	for i := range progress.Threshold - 4 { // and the Namespaces, the Kptfile and the config
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n  namespace: %s\ndata:\n  k: v\n---\n", i, []string{"a", "b"}[i%2])
	}
	dir := t.TempDir()
	testfixture.WriteTree(t, dir, map[string]string{"Kptfile": testfixture.Kptfile("big"), "shards.yaml": testfixture.ShardConfig, "objects.yaml": b.String()})
	return dir
}

// split, plan and report on 10,000 objects show their progress on a
// terminal's stderr, and nothing of it on a stderr that is not one. Slow
// tier (10,000 objects through each command twice); the fast tier has
// pkg/progress's own tests.
func TestProgressOnlyOnATerminal(t *testing.T) {
	testenv.Slow(t, "split, plan and report of 10,000 objects, each twice")
	pkg := bigPackage(t)
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"split", pkg, "-o", out},
		{"plan", pkg, "--previous", out},
		{"report", pkg},
	} {
		t.Run(args[0], func(t *testing.T) {
			var piped bytes.Buffer
			if code := Main(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &piped}, args); code != 0 {
				t.Fatalf("exit %d: %s", code, piped.String())
			}
			if strings.ContainsAny(piped.String(), "\r\x1b") || strings.Contains(piped.String(), "routing") {
				t.Errorf("progress on a stderr that is not a terminal: %q", piped.String())
			}

			ptmx, tty := ptytest.Open(t)
			read := ptytest.Capture(ptmx)
			code := Main(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: tty}, args)
			tty.Close()
			shown := read()
			if code != 0 {
				t.Fatalf("exit %d: %s", code, shown)
			}
			if !strings.Contains(shown, fmt.Sprintf("\r\x1b[Kshard-router: routing %d objects", progress.Threshold)) || !strings.Contains(shown, "s)\r\x1b[K") {
				t.Errorf("no progress on a terminal, or its line is not cleared: %q", shown)
			}
			// What the command prints besides is unchanged.
			if rest := strings.ReplaceAll(stripProgress(shown), "\r\n", "\n"); rest != piped.String() {
				t.Errorf("stderr on a terminal, without the progress line:\n%q\nwant:\n%q", rest, piped.String())
			}
		})
	}
}

// stripProgress removes the progress lines: each starts with \r\x1b[K and
// ends where the next \r\x1b[K clears it.
func stripProgress(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "\r\x1b[K")
		if i < 0 {
			return b.String() + s
		}
		b.WriteString(s[:i])
		s = s[i+len("\r\x1b[K"):]
		if strings.HasPrefix(s, "shard-router: ") && !strings.HasPrefix(s, "shard-router: wrote") {
			if j := strings.Index(s, "\r\x1b[K"); j >= 0 {
				s = s[j:]
			}
		}
	}
}
