//go:build e2e

package e2e

// shard-router status on a split for Argo CD and for Config Sync, against
// real kube-apiservers. Neither engine runs here (Argo CD's controllers do
// not build with this Go; Config Sync's module is not served), so the test
// applies each context's directory as the engine would, with a server-side
// apply of its objects; what status reads of the engine itself is nothing:
// both keep their inventory where status cannot read it, and the output
// must say so rather than call a context in sync.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

const engineStatusConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: fleet
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  contexts:
  - name: A
    namespaceSelector: {matchLabels: {shard: a}}
  - name: B
    namespaceSelector: {matchLabels: {shard: b}}
`

const engineStatusObjects = `apiVersion: v1
kind: Namespace
metadata:
  name: alpha
  labels: {shard: a}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: alpha
data:
  color: blue
---
apiVersion: v1
kind: Namespace
metadata:
  name: bravo
  labels: {shard: b}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: bravo
data:
  color: green
`

func TestStatusPullingEngines(t *testing.T) {
	for _, tool := range []string{"etcd", "kube-apiserver"} {
		toolPath(t, tool)
	}
	bin := shardRouter(t)
	dir := t.TempDir()
	creds := clusterNewCreds(t, dir)
	etcdA, etcdB := clusterStartEtcd(t, dir, "etcd-a"), clusterStartEtcd(t, dir, "etcd-b")
	etcdA.waitReady(t)
	etcdB.waitReady(t)
	apis := map[string]*clusterAPIServer{"A": clusterStartAPIServer(t, dir, "A", creds, etcdA, ""), "B": clusterStartAPIServer(t, dir, "B", creds, etcdB, "")}
	apis["A"].waitReady(t)
	apis["B"].waitReady(t)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	clusterWriteKubeconfig(t, kubeconfig, creds.Token, apis["A"], apis["B"])

	pkg := filepath.Join(dir, "pkg")
	writeFile(t, filepath.Join(pkg, "shards.yaml"), engineStatusConfig)
	writeFile(t, filepath.Join(pkg, "objects.yaml"), engineStatusObjects)

	outs := map[string]string{}
	for _, engine := range []string{"argocd", "configsync"} {
		out := filepath.Join(dir, "out-"+engine)
		outs[engine] = out
		if res := runCmd(t, cmdSpec{}, bin, "split", pkg, "-o", out, "--engine", engine,
			"--gitops-url", "https://git.example.com/fleet.git", "--gitops-path", "out"); res.ExitCode != 0 {
			t.Fatalf("split --engine %s:\n%s", engine, res)
		}
	}
	// The engine's apply: every object of each directory but local config
	// (both splits hold the same objects).
	want := map[string][]string{}
	for _, ctx := range []string{"A", "B"} {
		for _, n := range engineDirObjects(t, filepath.Join(outs["argocd"], ctx)) {
			s, _ := n.String()
			apis[ctx].applyYAML(t, s)
			want[ctx] = append(want[ctx], refKey("", n.GetKind(), n.GetNamespace(), n.GetName()))
		}
		slices.Sort(want[ctx])
	}
	// An object the cluster holds beyond OUT_DIR: the engine's inventory
	// would tell whether it is an extra; status cannot, and says so.
	apis["A"].applyYAML(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"stray","namespace":"alpha"}}`)

	statusOf := func(t *testing.T, out string, args ...string) (*v1alpha1.FleetStatus, result) {
		e := &clusterE2E{bin: bin, kubeconfig: kubeconfig, out: out}
		return e.status(t, "", args...)
	}
	for _, engine := range []string{"argocd", "configsync"} {
		t.Run(engine, func(t *testing.T) {
			doc, res := statusOf(t, outs[engine])
			if res.ExitCode != 0 {
				t.Fatalf("status: exit %d, want 0\n%s", res.ExitCode, res)
			}
			for _, ctx := range []string{"A", "B"} {
				c := statusContext(t, doc, ctx)
				if !c.Reachable || c.Error != "" {
					t.Errorf("%s: reachable %v, error %q", ctx, c.Reachable, c.Error)
				}
				inv := c.Inventory
				if inv.State != v1alpha1.InventoryUnknown || inv.Engine != engine || !strings.Contains(inv.Note, "inventory extras not known for "+engine) {
					t.Errorf("%s: inventory %+v, want unknown, kept by %s, with a note", ctx, inv, engine)
				}
				if c.InSync() {
					t.Errorf("%s is in sync, though its extras were not checked", ctx)
				}
				var got []string
				for _, o := range c.Objects {
					got = append(got, refKey(o.Group, o.Kind, o.Namespace, o.Name))
					if o.Status != v1alpha1.StatusCurrent || len(o.Drift) > 0 || o.Inventory != v1alpha1.ObjectInventoryUnknown || o.Error != "" {
						t.Errorf("%s: %+v, want Current, no drift, inventory unknown", ctx, o)
					}
				}
				if !slices.Equal(got, want[ctx]) {
					t.Errorf("%s: status lists\n  %v\nits directory holds\n  %v", ctx, got, want[ctx])
				}
			}
			if engine == "argocd" {
				if a := statusContext(t, doc, "A"); !strings.Contains(a.Inventory.Note, "Application argocd/") {
					t.Errorf("A: note %q does not name the Application", a.Inventory.Note)
				}
			} else {
				nodes, err := kio.FromBytes([]byte(clusterReadFile(t, filepath.Join(outs[engine], "_gitops", "configsync", "A.yaml"))))
				if err != nil || len(nodes) != 1 {
					t.Fatalf("A's RootSync: %v", err)
				}
				if a, rg := statusContext(t, doc, "A"), "ResourceGroup config-management-system/"+nodes[0].GetName(); !strings.Contains(a.Inventory.Note, rg) {
					t.Errorf("A: note %q does not name the RootSync's %s", a.Inventory.Note, rg)
				}
			}
			table := runCmd(t, cmdSpec{}, bin, "status", outs[engine], "--kubeconfig", kubeconfig)
			if table.ExitCode != 0 {
				t.Fatalf("status (table):\n%s", table)
			}
			for _, line := range strings.Split(table.Stdout, "\n") {
				if strings.HasPrefix(line, " ") {
					continue // a row of an indented section (the clusters' records), not of the status table
				}
				if f := strings.Fields(line); len(f) > 2 && (f[0] == "A" || f[0] == "B") && !slices.Equal(f[len(f)-2:], []string{"unknown", "unknown"}) {
					t.Errorf("the status table's EXTRA and NOT-APPLIED of %s are not unknown: %q", f[0], line)
				}
			}
			for _, w := range []string{"extras not known", "A: inventory extras not known for " + engine, "not checked for inventory extras"} {
				if !strings.Contains(table.Stdout, w) {
					t.Errorf("the status table lacks %q:\n%s", w, table.Stdout)
				}
			}
			if strings.Contains(table.Stdout, "  in sync  ") {
				t.Errorf("the status table calls a context in sync:\n%s", table.Stdout)
			}
			if res := runCmd(t, cmdSpec{}, bin, "status", outs[engine], "--kubeconfig", kubeconfig, "--detailed-exitcode"); res.ExitCode != 2 {
				t.Errorf("status --detailed-exitcode: exit %d, want 2 (extras not checked)\n%s", res.ExitCode, res)
			}
		})
	}

	// Drift and health are read as for kpt's split.
	clusterPatch(t, apis["A"], "/api/v1/namespaces/alpha/configmaps/settings", "application/merge-patch+json", `{"data":{"color":"red"}}`)
	clusterDelete(t, apis["B"], "/api/v1/namespaces/bravo/configmaps/settings")
	doc, _ := statusOf(t, outs["argocd"])
	if o := statusObject(t, statusContext(t, doc, "A"), refKey("", "ConfigMap", "alpha", "settings")); !slices.Equal(o.Drift, v1alpha1.Drift{"data.color"}) {
		t.Errorf("A: the changed ConfigMap: %+v, want drift data.color", o)
	}
	if o := statusObject(t, statusContext(t, doc, "B"), refKey("", "ConfigMap", "bravo", "settings")); o.Status != v1alpha1.StatusNotFound {
		t.Errorf("B: the deleted ConfigMap: %+v, want NotFound", o)
	}
	if c := statusContext(t, doc, "A"); c.Inventory.State != v1alpha1.InventoryUnknown || len(attention(c)) != 1 {
		t.Errorf("A: inventory %+v, needing attention %v, want the drifted ConfigMap only", c.Inventory, attention(c))
	}
}

// engineDirObjects reads a context directory's objects, as an engine
// applies them: without local config.
func engineDirObjects(t testing.TB, dir string) []*yaml.RNode {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*yaml.RNode
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		nodes, err := kio.FromBytes([]byte(clusterReadFile(t, filepath.Join(dir, e.Name()))))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.GetAnnotations()["config.kubernetes.io/local-config"] != "true" {
				out = append(out, n)
			}
		}
	}
	return out
}
