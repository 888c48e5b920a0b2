package split

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/internal/yamlio/yamliotest"
	"github.com/shard-router/shard-router/pkg/input"
)

// The streaming readers (input.ReadStream's per-item ResourceList reader,
// input.ReadPackage's per-file reader) must give split exactly what kyaml's
// whole-tree readers give: the same resources and the same written bytes.

// dumpInput is everything Route reads from an input.
func dumpInput(t *testing.T, in *input.Input) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "dir %q, %d resources\n", in.Dir, in.Len())
	if in.FunctionConfig != nil {
		fmt.Fprintf(&b, "functionConfig:\n%s", in.FunctionConfig.MustString())
	}
	for i := 0; i < in.Len(); i++ {
		n, err := in.Node(i)
		if err != nil {
			t.Fatalf("resource %d: %v", i, err)
		}
		var enc bytes.Buffer
		if err := yaml.NewEncoder(&enc).Encode(n.YNode()); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "--- %d %q %q %v\n%s", i, in.Loc(i).Path, in.Loc(i).Index, in.Loc(i).Err, enc.String())
	}
	// What Route reads from the kept ShardConfigs and Kptfiles.
	fmt.Fprintf(&b, "package %q\n", in.PackageName())
	if c, err := in.Config(); err == nil {
		fmt.Fprintf(&b, "config %s\n", input.DescribeNode(c))
	} else {
		fmt.Fprintf(&b, "config: %v\n", err)
	}
	return b.String()
}

// dumpPlan is everything split writes for a plan: results, then every file
// of every context, then each context's stream form.
func dumpPlan(t *testing.T, plan *Layout) string {
	t.Helper()
	var b strings.Builder
	for _, r := range plan.Results {
		fmt.Fprintf(&b, "result %s\n", r.String())
	}
	for _, pkg := range plan.Packages {
		fmt.Fprintf(&b, "== %s %+v %d\n", pkg.Context, pkg.Inventory, pkg.Resources)
		for _, f := range mustFiles(t, pkg) {
			fmt.Fprintf(&b, "-- %s\n%s", f.Path, f.Data)
		}
		fmt.Fprintf(&b, "-- stream\n")
		if err := pkg.WriteStream(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// planOf routes an input with its own config: the plan's results and
// files, or why there is no plan.
func planOf(t *testing.T, in *input.Input) string {
	t.Helper()
	plan, err := runRoute(t, in, nil, &Options{PackageName: "pkg"})
	if plan == nil {
		return "no plan: " + err.Error()
	}
	return dumpPlan(t, plan)
}

func requireSameInput(t *testing.T, name string, fast, ref *input.Input) {
	t.Helper()
	if fi, ri := fast.Items(), ref.Items(); !reflect.DeepEqual(fi, ri) {
		for i := range min(len(fi), len(ri)) {
			if !reflect.DeepEqual(fi[i], ri[i]) {
				t.Fatalf("%s: item %d differs:\nstreaming: %+v\nkyaml:     %+v", name, i, fi[i], ri[i])
			}
		}
		t.Fatalf("%s: %d items, kyaml %d", name, len(fi), len(ri))
	}
	if f, r := dumpInput(t, fast), dumpInput(t, ref); f != r {
		t.Fatalf("%s: the streaming reader differs from kyaml's:\n%s", name, yamliotest.FirstDiff(f, r))
	}
	if f, r := planOf(t, fast), planOf(t, ref); f != r {
		t.Fatalf("%s: the split differs from the split of kyaml's reading:\n%s", name, yamliotest.FirstDiff(f, r))
	}
}

// trickyList holds what the per-item reader must keep: comments, both
// sequence styles, block scalars with kept trailing newlines, several
// resources in one file with indexes, a JSON file, resources without a
// path, quoted and non-string scalars.
const trickyList = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Namespace
  # The namespace of the app.
  metadata:
    name: a # inline
    labels:
      shard: a
    annotations:
      config.kubernetes.io/path: 'ns.yaml'
      config.kubernetes.io/index: '0'
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: keep
    namespace: a
    annotations:
      config.kubernetes.io/path: 'apps/all.yaml'
      config.kubernetes.io/index: '1'
      internal.config.kubernetes.io/seqindent: 'wide'
  data:
    script: |+
      echo hi

    list: "- a"
    n: 0x10
  binaryData: {}
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    namespace: a
    annotations:
      config.kubernetes.io/path: 'apps/all.yaml'
      config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/seqindent: 'wide'
  spec:
    replicas: 0
    template:
      spec:
        containers:
          - name: web
            args:
              - --a
              - |
                multi
                line
            # a comment between fields
            image: web
- apiVersion: v1
  kind: Service
  metadata:
    name: svc
    namespace: a
    annotations:
      config.kubernetes.io/path: 'svc.json'
  spec:
    ports:
    - port: 80
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: reader
  rules:
  - verbs: ["get"]
    apiGroups: ['']
    resources: [pods]
functionConfig:
  apiVersion: shardrouter.dev/v1alpha1
  kind: ShardConfig
  metadata:
    name: shards
  spec:
    contexts:
    - name: ctx-a
      selector:
        matchLabels:
          shard: a
      namespaceSelector:
        matchLabels:
          shard: a
    - name: ctx-b
      selector:
        matchLabels:
          shard: b
`

func TestReadStreamMatchesKyaml(t *testing.T) {
	inputs := map[string][]byte{"tricky": []byte(trickyList)}
	// The same shapes in both tiers, a quarter of the items in -short.
	for _, o := range []gen.Options{
		{Items: 1, Contexts: 1, Seed: 1},
		{Items: testenv.Iterations(250), Contexts: 3, Seed: 2},
		{Items: testenv.Iterations(250), Contexts: 3, Seed: 3, Routed: true},
		{Items: testenv.Iterations(400), Contexts: 64, Seed: 4},
	} {
		inputs[fmt.Sprintf("%+v", o)] = gen.Bytes(o)
	}
	golden, _ := filepath.Glob(filepath.Join("..", "function", "testdata", "*", "input.yaml"))
	for _, f := range golden {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = data
	}
	streamed := 0
	for name, data := range inputs {
		ref, refErr := input.ReadStream(bytes.NewReader(data), yamlio.Options{Reference: true})
		if _, err := yamlio.ReadList(data); yamlio.IsFallback(err) {
			t.Logf("%s: read by kyaml: %v", name, err)
			continue
		}
		fast, err := input.ReadStream(bytes.NewReader(data), yamlio.Options{})
		if err != nil || refErr != nil {
			t.Fatalf("%s: streaming error %v, kyaml error %v", name, err, refErr)
		}
		streamed++
		requireSameInput(t, name, fast, ref)
	}
	if streamed < len(inputs)/2 {
		t.Errorf("only %d of %d inputs took the streaming reader", streamed, len(inputs))
	}
	// What the per-item reader refuses, input.ReadStream reads with kyaml.
	plain := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n"
	in, err := input.ReadStream(strings.NewReader(plain), yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := input.ReadStream(strings.NewReader(plain), yamlio.Options{Reference: true})
	requireSameInput(t, "plain stream", in, ref)
}

// writePackage writes the resources of a ResourceList to a directory at
// their path annotations, as kpt fn sink does.
func writePackage(t *testing.T, dir string, data []byte) {
	t.Helper()
	rw := &kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true}
	nodes, err := rw.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := (kio.LocalPackageWriter{PackagePath: dir}).Write(nodes); err != nil {
		t.Fatal(err)
	}
}

func TestReadPackageMatchesKyaml(t *testing.T) {
	dirs := map[string]string{}
	base := t.TempDir()
	writeTree(t, base, basePackage())
	dirs["base"] = base

	// Subpackages, ignored files and files that are not KRM.
	nested := t.TempDir()
	files := basePackage()
	files["sub/Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\n"
	files["sub/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n  namespace: a\n"
	files["sub/notes.txt"] = "not a resource\n"
	files[".krmignore"] = "ignored/\n"
	files["ignored/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ignored\n  namespace: a\n"
	files["list.yaml"] = "- a\n- b\n"
	writeTree(t, nested, files)
	dirs["nested"] = nested

	items := testenv.Iterations(300)
	for _, o := range []gen.Options{{Items: items, Contexts: 4, Seed: 7}, {Items: items, Contexts: 4, Seed: 8, Routed: true}} {
		dir := t.TempDir()
		writePackage(t, dir, gen.Bytes(o))
		// The package's config, as a file of the package.
		rr := &kio.ByteReader{Reader: bytes.NewReader(gen.Bytes(o))}
		if _, err := rr.Read(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "shard-config.yaml"), []byte(rr.FunctionConfig.MustString()), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs[fmt.Sprintf("%+v", o)] = dir
	}

	for name, dir := range dirs {
		fast, err := input.ReadPackage(dir, yamlio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := input.ReadPackage(dir, yamlio.Options{Reference: true})
		if err != nil {
			t.Fatal(err)
		}
		if fast.Len() < 5 {
			t.Fatalf("%s: only %d resources read", name, fast.Len())
		}
		requireSameInput(t, name, fast, ref)
	}

	// Errors name the file, as kyaml's reader does.
	bad := t.TempDir()
	writeTree(t, bad, map[string]string{"Kptfile": basePackage()["Kptfile"], "bad.yaml": "a: [\n"})
	_, fastErr := input.ReadPackage(bad, yamlio.Options{})
	_, refErr := input.ReadPackage(bad, yamlio.Options{Reference: true})
	if fastErr == nil || refErr == nil || fastErr.Error() != refErr.Error() {
		t.Errorf("a file that does not parse:\nstreaming: %v\nkyaml:     %v", fastErr, refErr)
	}
}

// TestReadStreamFromFile: a regular file on stdin is mapped, not copied;
// the resources must outlive the mapping.
func TestReadStreamFromFile(t *testing.T) {
	data := gen.Bytes(gen.Options{Items: testenv.Iterations(200), Contexts: 4, Seed: 12})
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fromFile, err := input.ReadStream(f, yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := input.ReadStream(bytes.NewReader(data), yamlio.Options{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	requireSameInput(t, "stdin from a file", fromFile, ref)
}
