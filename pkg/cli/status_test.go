//go:build !nolive

package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// unreachableKubeconfig writes a kubeconfig whose contexts ctx-00 and
// ctx-01 point at a 127.0.0.1 port nothing listens on: clusters that
// refuse connections.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeTestFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: down, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts:
- {name: ctx-00, context: {cluster: down, user: u}}
- {name: ctx-01, context: {cluster: down, user: u}}
current-context: ctx-00
`, port))
	return kubeconfig
}

// TestStatusUnreachable: with both contexts' clusters refusing
// connections, status prints both as unreachable, with the error, names
// them on stderr and exits 1, with or without --detailed-exitcode.
func TestStatusUnreachable(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", copySplitPackage(t), "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	kubeconfig := unreachableKubeconfig(t)
	for _, extra := range [][]string{nil, {"--detailed-exitcode"}} {
		code, stdout, stderr := execCLI(t, "", append([]string{"status", out, "--kubeconfig", kubeconfig, "-o", "json", "--timeout", "20s"}, extra...)...)
		var doc v1alpha1.FleetStatus
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("exit %d: %v\n%s%s", code, err, stdout, stderr)
		}
		if code != 1 || len(doc.Contexts) != 2 {
			t.Errorf("%v: exit %d, %d contexts; want 1, 2\n%s", extra, code, len(doc.Contexts), stderr)
		}
		for _, c := range doc.Contexts {
			if c.Reachable || !strings.Contains(c.Error, "connection refused") || c.Inventory.State != v1alpha1.InventoryUnknown {
				t.Errorf("%s: reachable %v, error %q, inventory %s", c.Name, c.Reachable, c.Error, c.Inventory.State)
			}
			if !strings.Contains(stderr, "context "+c.Name+": ") {
				t.Errorf("stderr does not name context %s:\n%s", c.Name, stderr)
			}
		}
	}
	// The table says so too.
	code, stdout, _ := execCLI(t, "", "status", out, "--kubeconfig", kubeconfig, "--context", "ctx-01")
	if code != 1 || !strings.Contains(stdout, "\nctx-01   unreachable  unknown") || strings.Contains(stdout, "ctx-00") {
		t.Errorf("--context ctx-01 (table): exit %d\n%s", code, stdout)
	}
}

// TestStatusCredentialsFailed: a context whose exec plugin is missing is
// reported with its credentials named (context, kubeconfig user, plugin),
// not as a cluster it could not reach for no reason; the other context
// (unreachable) keeps its own error.
func TestStatusCredentialsFailed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", copySplitPackage(t), "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	kubeconfig := unreachableKubeconfig(t)
	plugin := filepath.Join(t.TempDir(), "no-such-plugin")
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	withPlugin := strings.Replace(string(data), "users: [{name: u, user: {token: t}}]",
		fmt.Sprintf("users: [{name: u, user: {token: t}}, {name: ci, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}}]", plugin), 1)
	withPlugin = strings.Replace(withPlugin, "{name: ctx-01, context: {cluster: down, user: u}}", "{name: ctx-01, context: {cluster: down, user: ci}}", 1)
	writeTestFile(t, kubeconfig, withPlugin)
	code, stdout, stderr := execCLI(t, "", "status", out, "--kubeconfig", kubeconfig, "-o", "json", "--timeout", "20s")
	var doc v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != 1 {
		t.Fatalf("exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	want := fmt.Sprintf(`context "ctx-01": kubeconfig user "ci": exec plugin %s: not found`, plugin)
	for _, c := range doc.Contexts {
		if c.Name == "ctx-01" && c.Error != want {
			t.Errorf("ctx-01: error %q, want %q", c.Error, want)
		}
		if c.Name == "ctx-00" && !strings.Contains(c.Error, "connection refused") {
			t.Errorf("ctx-00: error %q, want its connection refused", c.Error)
		}
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not name ctx-01's plugin:\n%s", stderr)
	}
}

// TestStatusTimeout: a cluster that accepts connections and never answers
// is reported as timed out after --timeout, and the command ends.
func TestStatusTimeout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", copySplitPackage(t), "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept, and hold every connection without a word
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeTestFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: mute, cluster: {server: "https://`+l.Addr().String()+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx-00, context: {cluster: mute, user: u}}]
current-context: ctx-00
`)
	code, stdout, stderr := execCLI(t, "", "status", out, "--kubeconfig", kubeconfig, "--context", "ctx-00", "--timeout", "200ms", "-o", "json")
	var doc v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	if c := doc.Contexts[0]; code != 1 || c.Reachable || !strings.HasPrefix(c.Error, "timed out after 200ms (--timeout)") {
		t.Errorf("exit %d, context %+v; want 1, unreachable, timed out", code, c)
	}
}

func TestStatusRefusals(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", copySplitPackage(t), "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown format", []string{"status", out, "-o", "xml"}, []string{`unknown output format "xml"`, "table, markdown, html, json or yaml"}},
		{"a context without a package", []string{"status", out, "--context", "nope"}, []string{`"nope"`, "ctx-00", "ctx-01"}},
		{"no OUT_DIR", []string{"status", filepath.Join(out, "absent")}, []string{"absent"}},
		{"no argument", []string{"status"}, []string{"accepts 1 arg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execCLI(t, "", tc.args...)
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", code, stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
		})
	}
}
