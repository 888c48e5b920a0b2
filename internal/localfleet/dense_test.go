package localfleet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/shard-router/shard-router/pkg/cli"
)

func TestDenseValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Dense
		want []string // substrings of the error; none: valid
	}{
		{"valid-256-on-4", Dense{Contexts: 256, Clusters: 4}, nil},
		{"valid-one-each", Dense{Contexts: 3, Clusters: 3}, nil},
		{"invalid-no-context", Dense{Contexts: 0, Clusters: 4}, []string{"0 contexts"}},
		{"invalid-no-cluster", Dense{Contexts: 4, Clusters: 0}, []string{"0 clusters"}},
		{"invalid-both", Dense{Contexts: -1, Clusters: 0}, []string{"-1 contexts", "0 clusters"}},
		{"invalid-idle-cluster", Dense{Contexts: 2, Clusters: 3}, []string{"3 clusters for 2 contexts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestDenseNames(t *testing.T) {
	d := Dense{Contexts: 1500, Clusters: 4}
	if got := d.ContextName(7); got != "ctx-0007" {
		t.Errorf("ContextName(7) of 1,500 = %q, want ctx-0007", got)
	}
	if got := (Dense{Contexts: 64, Clusters: 4}).ContextName(7); got != "ctx-007" {
		t.Errorf("ContextName(7) of 64 = %q, want ctx-007", got)
	}
	if got := d.ClusterOf(7); got != 3 {
		t.Errorf("ClusterOf(7) = %d, want 3", got)
	}
}

// TestDenseKubeconfig: every context of the kubeconfig reaches the
// server of cluster i % Clusters, one cluster entry per server.
func TestDenseKubeconfig(t *testing.T) {
	d := Dense{Contexts: 10, Clusters: 3}
	servers := make([]*APIServer, d.Clusters)
	for j := range servers {
		servers[j] = &APIServer{Name: d.ClusterName(j), URL: fmt.Sprintf("https://127.0.0.1:%d", 1000+j), CAFile: "/ca-" + d.ClusterName(j)}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfigContexts(path, &Creds{User: "admin", Token: "t"}, d.KubeContexts(servers)); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != d.Contexts || len(cfg.Clusters) != d.Clusters {
		t.Fatalf("%d contexts and %d clusters, want %d and %d", len(cfg.Contexts), len(cfg.Clusters), d.Contexts, d.Clusters)
	}
	if cfg.CurrentContext != "ctx-000" {
		t.Errorf("current context %q, want ctx-000", cfg.CurrentContext)
	}
	for i, name := range d.ContextNames() {
		c := cfg.Contexts[name]
		if c == nil {
			t.Fatalf("no context %s", name)
		}
		want := servers[i%d.Clusters]
		if got := cfg.Clusters[c.Cluster]; got == nil || got.Server != want.URL || got.CertificateAuthority != want.CAFile || c.AuthInfo != "admin" {
			t.Errorf("context %s reaches %+v as %q, want %s", name, got, c.AuthInfo, want.URL)
		}
	}
}

// TestDensePackageSplits: shard-router split gives each context exactly
// its own Namespaces (j % Contexts) and their ConfigMaps, and its own
// inventory; FirstValue changes one ConfigMap per context.
func TestDensePackageSplits(t *testing.T) {
	p := DensePackage{Name: "dense", Prefix: "d", Dense: Dense{Contexts: 6, Clusters: 2}, Namespaces: 15, ConfigMaps: 2, Value: "v1", FirstValue: "v2"}
	dir := t.TempDir()
	pkg, out := filepath.Join(dir, "pkg"), filepath.Join(dir, "out")
	if err := p.Write(pkg); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Main(cli.Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr}, []string{"split", pkg, "-o", out}); code != 0 {
		t.Fatalf("split: exit %d\n%s", code, stderr.String())
	}
	inventories := map[string]bool{}
	for i, ctx := range p.ContextNames() {
		var want []string
		for j := range p.Namespaces {
			if p.ContextOf(j) == i {
				want = append(want, p.NamespaceName(j))
			}
		}
		text := readAll(t, filepath.Join(out, ctx))
		var got []string
		for _, line := range strings.Split(text, "\n") {
			if name, ok := strings.CutPrefix(line, "  namespace: "+p.Prefix+"-"); ok && !strings.Contains(text, "name: "+p.Prefix+"-"+name+"\n  labels:") {
				t.Errorf("context %s holds a ConfigMap of Namespace %s, which it does not hold", ctx, name)
			}
			if name, ok := strings.CutPrefix(line, "  name: "+p.Prefix+"-ns-"); ok {
				got = append(got, p.Prefix+"-ns-"+name)
			}
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("context %s holds Namespaces %v, want %v", ctx, got, want)
		}
		if n := strings.Count(text, "kind: ConfigMap\n"); n != len(want)*p.ConfigMaps {
			t.Errorf("context %s holds %d ConfigMaps, want %d", ctx, n, len(want)*p.ConfigMaps)
		}
		if n := strings.Count(text, `value: "v2"`); n != 1 {
			t.Errorf("context %s holds %d ConfigMaps of FirstValue, want 1", ctx, n)
		}
		inv := between(text, "cli-utils.sigs.k8s.io/inventory-id: ", "\n")
		if inv == "" || inventories[inv] {
			t.Errorf("context %s: inventory id %q missing or shared", ctx, inv)
		}
		inventories[inv] = true
	}
}

// readAll concatenates the files of a directory.
func readAll(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String()
}

func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return strings.Trim(v, `"'`)
}
