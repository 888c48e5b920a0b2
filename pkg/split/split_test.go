package split

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// The fixtures and helpers shared with other packages' tests.
const shardConfig = testfixture.ShardConfig

var (
	basePackage  = testfixture.BasePackage
	writeTree    = testfixture.WriteTree
	readTree     = testfixture.ReadTree
	keys         = testfixture.Keys
	errorResults = testfixture.ErrorResults
	wantError    = testfixture.WantError
	mustParse    = testfixture.MustParse
	hasResult    = testfixture.HasResult
)

// splitDir runs what `shard-router split PKG -o OUT` runs. It returns the
// plan, or the error that stopped it; plan errors make it return an error
// naming them, and nothing is written then.
func splitDir(t *testing.T, pkg, out string) (*Layout, error) {
	t.Helper()
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		return nil, err
	}
	in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
	if err != nil {
		return nil, err
	}
	return runRoute(t, in, od, nil)
}

// routeAgainst opens out as the previous split and routes pkg against it,
// writing nothing.
func routeAgainst(t *testing.T, pkg, out string) (*outdir.OutDir, *Layout) {
	t.Helper()
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		t.Fatal(err)
	}
	in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := runRoute(t, in, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return od, l
}

// runRoute routes the input with its own config, then writes the plan to
// od when it is not nil, as `shard-router split` does.
func runRoute(t testing.TB, in *input.Input, od *outdir.OutDir, opts *Options) (*Layout, error) {
	t.Helper()
	node, err := in.Config()
	if err != nil {
		return nil, err
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		return nil, results
	}
	o := Options{Out: od}
	if opts != nil {
		o.PackageName, o.Engine, o.Source = opts.PackageName, opts.Engine, opts.Source
	}
	plan, err := Route(in, cfg, o)
	if err == nil {
		err = plan.Lay() // without package plan's mass-deletion guard (tested there)
	}
	if err != nil {
		return nil, err
	}
	if plan.Results.ExitCode() != 0 {
		if len(plan.Packages) != 0 {
			t.Errorf("a plan with errors has %d packages", len(plan.Packages))
		}
		return plan, errorResults(plan.Results)
	}
	if od != nil {
		return plan, Write(od, plan)
	}
	return plan, nil
}

func mustSplit(t *testing.T, pkg, out string) *Layout {
	t.Helper()
	plan, err := splitDir(t, pkg, out)
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	return plan
}

func TestLayout(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	plan := mustSplit(t, pkg, out)
	tree := readTree(t, out)

	want := []string{
		".shard-router-split",
		"ctx-a/.shard-router-split", "ctx-a/Kptfile", "ctx-a/apps/lease.yaml", "ctx-a/apps/web.yaml",
		"ctx-a/namespaces.yaml", "ctx-a/rbac/reader.yaml", "ctx-a/resourcegroup.yaml", "ctx-a/shard-router-etcd-overrides.yaml",
		"ctx-b/.shard-router-split", "ctx-b/Kptfile", "ctx-b/apps/web.yaml",
		"ctx-b/namespaces.yaml", "ctx-b/rbac/reader.yaml", "ctx-b/resourcegroup.yaml", "ctx-b/shard-router-etcd-overrides.yaml",
	}
	if got := keys(tree); !reflect.DeepEqual(got, want) {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Each resource in its own file, comments and sequence style kept, with
	// the function's annotations and no reader annotations.
	if got, want := tree["ctx-a/apps/web.yaml"], `# The web app.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: a
  annotations:
    shardrouter.dev/context: 'ctx-a'
    shardrouter.dev/datastore: 'default'
spec:
  template:
    spec:
      containers:
        - name: web # wide sequence style, kept
          image: nginx
`; got != want {
		t.Errorf("ctx-a/apps/web.yaml:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(tree["ctx-b/apps/web.yaml"], "name: settings") || strings.Contains(tree["ctx-b/apps/web.yaml"], "Deployment") {
		t.Errorf("ctx-b/apps/web.yaml holds the wrong resources:\n%s", tree["ctx-b/apps/web.yaml"])
	}
	// The Lease is stored in ctx-a's leases datastore.
	if !strings.Contains(tree["ctx-a/apps/lease.yaml"], "shardrouter.dev/datastore: 'leases'") {
		t.Errorf("lease:\n%s", tree["ctx-a/apps/lease.yaml"])
	}
	// A broadcast resource is copied into each context, naming that
	// context alone: nothing else differs.
	a, b := tree["ctx-a/rbac/reader.yaml"], tree["ctx-b/rbac/reader.yaml"]
	if !strings.Contains(a, "shardrouter.dev/context: 'ctx-a'\n") || strings.Replace(a, "context: 'ctx-a'", "context: 'ctx-b'", 1) != b {
		t.Errorf("broadcast ClusterRole:\n%s\n%s", a, b)
	}
	for name, content := range tree {
		if strings.Contains(content, "internal.config.kubernetes.io") || strings.Contains(content, "config.kubernetes.io/index") {
			t.Errorf("%s keeps reader annotations:\n%s", name, content)
		}
		// Neither local config nor the source package's inventory is copied.
		for _, leaked := range []string{"kind: ShardConfig", "name: local", "inventory-source", "source-id"} {
			if strings.Contains(content, leaked) {
				t.Errorf("%s contains %q", name, leaked)
			}
		}
	}

	// The inventory, exactly as kpt live init writes it.
	inv := plan.Packages[0].Inventory
	if want := `apiVersion: kpt.dev/v1alpha1
kind: ResourceGroup
metadata:
  name: my-pkg-ctx-a
  namespace: default
  labels:
    cli-utils.sigs.k8s.io/inventory-id: ` + inv.ID + "\n"; tree["ctx-a/resourcegroup.yaml"] != want {
		t.Errorf("ctx-a/resourcegroup.yaml:\n%s\nwant:\n%s", tree["ctx-a/resourcegroup.yaml"], want)
	}
	// kpt live init's hash: `printf default:my-pkg-ctx-a | sha1sum`.
	if inv.ID != "067d37817131f1247dc7a15ae98e32d1be29ab21" {
		t.Errorf("inventory id %s is not sha1(default:my-pkg-ctx-a)", inv.ID)
	}
	kf := tree["ctx-b/Kptfile"]
	for _, s := range []string{"apiVersion: kpt.dev/v1\n", "kind: Kptfile\n", "  name: my-pkg-ctx-b\n", `config.kubernetes.io/local-config: "true"`} {
		if !strings.Contains(kf, s) {
			t.Errorf("ctx-b/Kptfile lacks %q:\n%s", s, kf)
		}
	}
	// Every context package reads back as kpt fn source reads it.
	for _, ctx := range []string{"ctx-a", "ctx-b"} {
		in, err := input.ReadPackage(filepath.Join(out, ctx), yamlio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n := in.Len(); n != plan.Packages[map[string]int{"ctx-a": 0, "ctx-b": 1}[ctx]].Resources+3 { // Kptfile, inventory, overrides record
			t.Errorf("%s reads back %d resources", ctx, n)
		}
	}
	// The source package is untouched.
	if got := readTree(t, pkg); !reflect.DeepEqual(got, basePackage()) {
		t.Error("the source package changed")
	}
}

func TestDeterministic(t *testing.T) {
	pkg := t.TempDir()
	writeTree(t, pkg, basePackage())
	out1, out2 := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "out")
	mustSplit(t, pkg, out1)
	mustSplit(t, pkg, out2)
	first := readTree(t, out1)
	if second := readTree(t, out2); !reflect.DeepEqual(first, second) {
		t.Error("two splits of one package differ")
	}
	mustSplit(t, pkg, out1) // again, over its own output
	if again := readTree(t, out1); !reflect.DeepEqual(first, again) {
		t.Error("re-running split over its output changed it")
	}
}

func TestStaleFilesRemoved(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	mustSplit(t, pkg, out)
	if err := os.Remove(filepath.Join(pkg, "rbac", "reader.yaml")); err != nil {
		t.Fatal(err)
	}
	// The ConfigMap leaves apps/web.yaml, which still holds the Deployment.
	files := basePackage()
	web := files["apps/web.yaml"]
	writeTree(t, pkg, map[string]string{"apps/web.yaml": web[:strings.Index(web, "---")]})
	mustSplit(t, pkg, out)
	tree := readTree(t, out)
	for _, gone := range []string{"ctx-a/rbac/reader.yaml", "ctx-b/rbac/reader.yaml", "ctx-b/apps/web.yaml"} {
		if _, ok := tree[gone]; ok {
			t.Errorf("%s survived the resource's deletion", gone)
		}
	}
	if _, ok := tree["ctx-a/apps/web.yaml"]; !ok {
		t.Error("ctx-a/apps/web.yaml is gone")
	}
	for name := range tree {
		if strings.Contains(name, "tmp") {
			t.Errorf("staging left %s", name)
		}
	}
}

func TestRefusesToWriteOutside(t *testing.T) {
	for name, path := range map[string]string{
		"dotdot":   "../../escape.yaml",
		"inner":    "apps/../../escape.yaml",
		"absolute": "/tmp/escape.yaml",
		"kptfile":  "Kptfile",
		"drive":    "C:/escape.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			stream := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: a
    labels: {shard: a}
    annotations:
      internal.config.kubernetes.io/path: '` + path + `'
functionConfig:
` + indent(shardConfig) + "\n"
			in, err := input.ReadStream(strings.NewReader(stream), yamlio.Options{})
			if err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			od, err := outdir.OpenOutDir(filepath.Join(parent, "out"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = runRoute(t, in, od, &Options{PackageName: "p"})
			wantError(t, err, "Namespace a", path)
			if tree := readTree(t, parent); len(tree) != 0 {
				t.Errorf("wrote %v", keys(tree))
			}
		})
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func TestRefusesDirectoriesItDidNotWrite(t *testing.T) {
	pkg := t.TempDir()
	writeTree(t, pkg, basePackage())

	t.Run("non-empty output directory", func(t *testing.T) {
		out := t.TempDir()
		writeTree(t, out, map[string]string{"notes.txt": "mine"})
		_, err := splitDir(t, pkg, out)
		wantError(t, err, "not written by shard-router split")
		if !errors.Is(err, outdir.ErrNotSplitDir) {
			t.Errorf("not outdir.ErrNotSplitDir: %v", err)
		}
		if tree := readTree(t, out); !reflect.DeepEqual(tree, map[string]string{"notes.txt": "mine"}) {
			t.Errorf("touched: %v", keys(tree))
		}
	})
	t.Run("unlisted context directory", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		mustSplit(t, pkg, out)
		if err := os.RemoveAll(filepath.Join(out, "ctx-b")); err != nil {
			t.Fatal(err)
		}
		writeTree(t, out, map[string]string{"ctx-b/mine.yaml": "kind: Mine\n"})
		// Listed but without its marker.
		_, err := splitDir(t, pkg, out)
		wantError(t, err, "ctx-b", "no .shard-router-split file")
		if got := readTree(t, out)["ctx-b/mine.yaml"]; got != "kind: Mine\n" {
			t.Error("ctx-b/mine.yaml was changed")
		}
	})
	t.Run("context directory not listed at the root", func(t *testing.T) {
		out := t.TempDir()
		// A marked, empty output directory, and a stranger's ctx-b.
		writeTree(t, out, map[string]string{".shard-router-split": outdir.MarkerFormat + "\n", "ctx-b/x.yaml": "x: 1\n"})
		_, err := splitDir(t, pkg, out)
		wantError(t, err, "ctx-b", "exists and was not written by shard-router split")
		if _, err := os.Stat(filepath.Join(out, "ctx-a")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("ctx-a was written although the split was refused")
		}
	})
	t.Run("tampered root marker", func(t *testing.T) {
		for _, name := range []string{"..", "../sibling", "."} {
			out := filepath.Join(t.TempDir(), "out")
			writeTree(t, out, map[string]string{".shard-router-split": outdir.MarkerFormat + "\ncontext " + name + "\n"})
			_, err := splitDir(t, pkg, out)
			wantError(t, err, "not a context directory name")
		}
		out := filepath.Join(t.TempDir(), "out")
		mustSplit(t, pkg, out)
		writeTree(t, out, map[string]string{"ctx-a/.shard-router-split": outdir.MarkerFormat + "\ncontext ctx-a\nfile ../../outside.yaml\n"})
		_, err := splitDir(t, pkg, out)
		wantError(t, err, "../../outside.yaml", "not a file inside it")
	})
	t.Run("foreign file in a context directory", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		mustSplit(t, pkg, out)
		writeTree(t, out, map[string]string{"ctx-a/apps/extra.yaml": "kind: Extra\n"})
		_, err := splitDir(t, pkg, out)
		wantError(t, err, filepath.Join("ctx-a", "apps", "extra.yaml"), "move the file away")
	})
}

func TestNeverFollowsSymlinks(t *testing.T) {
	pkg := t.TempDir()
	writeTree(t, pkg, basePackage())
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"precious.yaml": "keep: me\n"})

	t.Run("symlinked file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		mustSplit(t, pkg, out)
		link := filepath.Join(out, "ctx-a", "rbac", "reader.yaml")
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "precious.yaml"), link); err != nil {
			t.Fatal(err)
		}
		_, err := splitDir(t, pkg, out)
		wantError(t, err, "symlink")
	})
	t.Run("symlinked context directory", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		mustSplit(t, pkg, out)
		ctx := filepath.Join(out, "ctx-b")
		if err := os.RemoveAll(ctx); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, ctx); err != nil {
			t.Fatal(err)
		}
		_, err := splitDir(t, pkg, out)
		wantError(t, err, "ctx-b", "not a directory")
	})
	if got := readTree(t, outside); !reflect.DeepEqual(got, map[string]string{"precious.yaml": "keep: me\n"}) {
		t.Errorf("the directory outside changed: %v", got)
	}
}

func TestOutDirInsidePackage(t *testing.T) {
	pkg := t.TempDir()
	writeTree(t, pkg, basePackage())
	out := filepath.Join(pkg, "out")
	mustSplit(t, pkg, out)
	first := readTree(t, out)
	// Were out/ read back, every resource would be in the package twice.
	mustSplit(t, pkg, out)
	if again := readTree(t, out); !reflect.DeepEqual(first, again) {
		t.Error("the second split differs")
	}
	if _, err := splitDir(t, filepath.Join(out, "ctx-a"), out); err == nil || !strings.Contains(err.Error(), "inside the output directory") {
		t.Errorf("a package inside OUT_DIR: %v", err)
	}
	if _, err := splitDir(t, pkg, pkg); err == nil {
		t.Error("OUT_DIR = PKG_DIR was accepted")
	}
}

func TestKrmignore(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	files := basePackage()
	files[".krmignore"] = "ignored/\n"
	files["ignored/secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: a\n"
	writeTree(t, pkg, files)
	mustSplit(t, pkg, out)
	for name := range readTree(t, out) {
		if strings.Contains(name, "ignored") {
			t.Errorf("%s was read despite .krmignore", name)
		}
	}
}

// relabel moves Namespace a (and so everything in it) to ctx-b.
func relabel(t *testing.T, pkg string) {
	t.Helper()
	ns := strings.Replace(basePackage()["namespaces.yaml"], "shard: a", "shard: b", 1)
	writeTree(t, pkg, map[string]string{"namespaces.yaml": ns})
}

func TestMoveThroughPreviousOutputIsRefused(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	mustSplit(t, pkg, out)
	before := readTree(t, out)

	relabel(t, pkg)
	_, err := splitDir(t, pkg, out)
	// The Namespace's error covers the resources in it.
	wantError(t, err, "namespaces.yaml", `Namespace a would move from "ctx-a" to "ctx-b"`)
	if after := readTree(t, out); !reflect.DeepEqual(before, after) {
		t.Error("a refused split changed the output")
	}

	// Without the previous output, nothing says where it was: no move.
	if _, err := splitDir(t, pkg, filepath.Join(t.TempDir(), "fresh")); err != nil {
		t.Errorf("a first split: %v", err)
	}

	// allowMoves moves it.
	writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(shardConfig, "spec:\n", "spec:\n  allowMoves: true\n", 1)})
	plan := mustSplit(t, pkg, out)
	tree := readTree(t, out)
	if _, ok := tree["ctx-a/apps/web.yaml"]; ok {
		t.Error("the Deployment stayed in ctx-a")
	}
	if !strings.Contains(tree["ctx-b/apps/web.yaml"], "name: web") {
		t.Errorf("the Deployment is not in ctx-b:\n%s", tree["ctx-b/apps/web.yaml"])
	}
	if !hasResult(plan.Results, framework.Warning, "moves from") {
		t.Error("no warning for the allowed move")
	}
}

func TestAnnotationWinsOverPreviousOutput(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	mustSplit(t, pkg, out)
	// The package now says the Deployment was in ctx-b, where it goes: no move.
	relabel(t, pkg)
	ns := basePackage()["namespaces.yaml"]
	ns = strings.Replace(ns, "shard: a", "shard: b\n  annotations:\n    shardrouter.dev/context: ctx-b", 1)
	web := strings.Replace(basePackage()["apps/web.yaml"], "namespace: a\n", "namespace: a\n  annotations:\n    shardrouter.dev/context: ctx-b\n", 1)
	lease := strings.Replace(basePackage()["apps/lease.yaml"], "namespace: a\n", "namespace: a\n  annotations:\n    shardrouter.dev/context: ctx-b\n", 1)
	writeTree(t, pkg, map[string]string{"namespaces.yaml": ns, "apps/web.yaml": web, "apps/lease.yaml": lease})
	mustSplit(t, pkg, out)
}

func TestDroppedContext(t *testing.T) {
	onlyA := strings.Replace(shardConfig, "  - name: ctx-b\n    namespaceSelector: {matchLabels: {shard: b}}\n", "", 1)
	withoutB := func(pkg string) {
		files := basePackage()
		web := files["apps/web.yaml"]
		writeTree(t, pkg, map[string]string{
			"shards.yaml":     onlyA,
			"namespaces.yaml": files["namespaces.yaml"][:strings.Index(files["namespaces.yaml"], "---")],
			"apps/web.yaml":   web[:strings.Index(web, "---")],
		})
		if err := os.Remove(filepath.Join(pkg, "rbac", "reader.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("refused while it holds resources", func(t *testing.T) {
		pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
		writeTree(t, pkg, basePackage())
		mustSplit(t, pkg, out)
		before := readTree(t, out)
		withoutB(pkg)
		_, err := splitDir(t, pkg, out)
		wantError(t, err, `context "ctx-b" is no longer in the config`, filepath.Join(out, "ctx-b"), "kpt live destroy")
		if after := readTree(t, out); !reflect.DeepEqual(before, after) {
			t.Error("a refused split changed the output")
		}
	})
	t.Run("allowMoves deletes its directory", func(t *testing.T) {
		pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
		writeTree(t, pkg, basePackage())
		mustSplit(t, pkg, out)
		withoutB(pkg)
		writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(onlyA, "spec:\n", "spec:\n  allowMoves: true\n", 1)})
		plan := mustSplit(t, pkg, out)
		if !hasResult(plan.Results, framework.Warning, `context "ctx-b" is no longer in the config`) {
			t.Error("no warning")
		}
		if _, err := os.Stat(filepath.Join(out, "ctx-b")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("ctx-b is still there")
		}
		if m := readTree(t, out)[".shard-router-split"]; strings.Contains(m, "ctx-b") {
			t.Errorf("the root marker still lists ctx-b:\n%s", m)
		}
	})
	t.Run("an empty context directory goes silently", func(t *testing.T) {
		pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
		files := basePackage()
		writeTree(t, pkg, map[string]string{"Kptfile": files["Kptfile"], "shards.yaml": shardConfig,
			"namespaces.yaml": files["namespaces.yaml"][:strings.Index(files["namespaces.yaml"], "---")]})
		mustSplit(t, pkg, out) // ctx-b gets an empty package
		writeTree(t, pkg, map[string]string{"shards.yaml": onlyA})
		mustSplit(t, pkg, out)
		if _, err := os.Stat(filepath.Join(out, "ctx-b")); !errors.Is(err, fs.ErrNotExist) {
			t.Error("ctx-b is still there")
		}
	})
}

func TestDataStoreChangeThroughPreviousOutput(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	mustSplit(t, pkg, out)
	noOverride := shardConfig[:strings.Index(shardConfig, "  dataStoreOverrides:")]
	writeTree(t, pkg, map[string]string{"shards.yaml": noOverride})
	_, err := splitDir(t, pkg, out)
	wantError(t, err, "Lease a/leader would change datastore in context \"ctx-a\" from \"leases\" to \"default\"")
	writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(noOverride, "spec:\n", "spec:\n  allowDataStoreChanges: true\n", 1)})
	mustSplit(t, pkg, out)
}

func TestConfigDiscovery(t *testing.T) {
	pkg := t.TempDir()
	files := basePackage()
	files["more/shards.yaml"] = strings.Replace(shardConfig, "name: shards", "name: other", 1)
	writeTree(t, pkg, files)
	_, err := splitDir(t, pkg, filepath.Join(t.TempDir(), "out"))
	wantError(t, err, "2 ShardConfig", "shards.yaml", "more/shards.yaml")

	delete(files, "more/shards.yaml")
	delete(files, "shards.yaml")
	pkg = t.TempDir()
	writeTree(t, pkg, files)
	_, err = splitDir(t, pkg, filepath.Join(t.TempDir(), "out"))
	wantError(t, err, "no shardrouter.dev/v1alpha1 ShardConfig", "--config")
	if !errors.Is(err, input.ErrNoConfig) {
		t.Errorf("not input.ErrNoConfig: %v", err)
	}
}

func TestRoutingErrorWritesNothing(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	files := basePackage()
	files["orphan.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: orphan\n  namespace: nowhere\n"
	writeTree(t, pkg, files)
	_, err := splitDir(t, pkg, out)
	wantError(t, err, "ConfigMap nowhere/orphan has no context")
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the output directory was created")
	}
}

func TestStream(t *testing.T) {
	pkg := t.TempDir()
	writeTree(t, pkg, basePackage())
	// The pipe form: a ResourceList as kpt fn source writes it.
	var rl strings.Builder
	src, err := input.ReadPackage(pkg, yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srcNodes, err := src.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if err := (kio.ByteWriter{Writer: &rl, KeepReaderAnnotations: true, WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion}).Write(srcNodes); err != nil {
		t.Fatal(err)
	}
	in, err := input.ReadStream(strings.NewReader(rl.String()), yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.PackageName(); got != "my-pkg" {
		t.Errorf("package name %q, want the Kptfile's", got)
	}
	plan, err := runRoute(t, in, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pkgA, ok := plan.Package("ctx-a")
	if !ok {
		t.Fatal("no ctx-a")
	}
	var b strings.Builder
	if err := pkgA.WriteStream(&b); err != nil {
		t.Fatal(err)
	}
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(b.String()), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes {
		got = append(got, n.GetKind()+" "+n.GetName())
		for k := range n.GetAnnotations() {
			if strings.Contains(k, "config.kubernetes.io/") && k != "config.kubernetes.io/local-config" {
				t.Errorf("%s %s keeps %s", n.GetKind(), n.GetName(), k)
			}
		}
	}
	want := []string{"ResourceGroup my-pkg-ctx-a", "Lease leader", "Deployment web", "Namespace a", "ClusterRole reader"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stream holds %v, want %v", got, want)
	}
	if !strings.Contains(b.String(), "cli-utils.sigs.k8s.io/inventory-id: "+pkgA.Inventory.ID) || !strings.Contains(b.String(), "# The web app.") {
		t.Errorf("stream:\n%s", b.String())
	}

	// The same package split from the directory gives the same files.
	out := filepath.Join(t.TempDir(), "out")
	mustSplit(t, pkg, out)
	tree := readTree(t, out)
	for _, f := range mustFiles(t, pkgA) {
		if tree["ctx-a/"+f.Path] != string(f.Data) {
			t.Errorf("%s differs between the stream and the directory input", f.Path)
		}
	}
}

func TestPlainStreamWithoutPaths(t *testing.T) {
	stream := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  labels: {shard: a}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: a\n"
	in, err := input.ReadStream(strings.NewReader(stream), yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in.FunctionConfig = mustParse(t, shardConfig)
	if _, err := runRoute(t, in, nil, nil); err == nil || !strings.Contains(err.Error(), "--name") {
		t.Errorf("no Kptfile and no name: %v", err)
	}
	plan, err := runRoute(t, in, nil, &Options{PackageName: "p"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range mustFiles(t, plan.Packages[0]) {
		paths = append(paths, f.Path)
	}
	// kpt's default file names for resources without a path.
	if want := []string{"Kptfile", "a/configmap_c.yaml", "namespace_a.yaml", "resourcegroup.yaml", "shard-router-etcd-overrides.yaml"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("files %v, want %v", paths, want)
	}
}

func mustFiles(t *testing.T, pkg *Package) []File {
	t.Helper()
	files, err := pkg.Files()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// splitBase writes the base package and splits it to a fresh output.
func splitBase(t *testing.T) (pkg, out string) {
	t.Helper()
	pkg, out = t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	mustSplit(t, pkg, out)
	return pkg, out
}
