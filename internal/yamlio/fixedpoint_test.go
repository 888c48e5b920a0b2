package yamlio_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testenv"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/internal/yamlio/yamliotest"
	"github.com/shard-router/shard-router/pkg/function"
)

// resourceListOf is a ResourceList as a user writes one: the documents of
// file as its items, as written (comments included), and passConfig.
func resourceListOf(file string) string {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for _, doc := range separator.Split(file, -1) {
		if !hasContent(doc) {
			continue // only comments: no resource
		}
		for i, line := range strings.Split(strings.TrimSuffix(doc, "\n"), "\n") {
			switch {
			case i == 0:
				b.WriteString("- " + line + "\n")
			case line == "":
				b.WriteString("\n")
			default:
				b.WriteString("  " + line + "\n")
			}
		}
	}
	b.WriteString("functionConfig:\n")
	for _, line := range strings.Split(strings.TrimSuffix(passConfig, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// separator is a line that separates YAML documents.
var separator = regexp.MustCompile(`(?m)^---.*\n`)

// hasContent reports whether a document has a line that is not blank nor a
// comment.
func hasContent(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// functionPass runs function mode on a ResourceList.
func functionPass(t *testing.T, in []byte, ref bool) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := function.Run(bytes.NewReader(in), &out, yamlio.Options{Reference: ref}); err != nil {
		t.Fatalf("%v\n%s", err, in)
	}
	return out.Bytes()
}

// requireFixedPoint feeds a pass's output back twice: both later passes
// must write the first pass's bytes.
func requireFixedPoint(t *testing.T, name string, in string, pass func(string) string) {
	t.Helper()
	p1 := pass(in)
	for n := 2; n <= 3; n++ {
		if p := pass(p1); p != p1 {
			t.Errorf("%s: pass %d changes the bytes:\n--- input\n%s--- pass 1\n%s--- pass %d\n%s", name, n, in, p1, n, p)
			return
		}
	}
}

// TestCommentShapesAreAFixedPoint: each comment shape, fed back twice
// through every path: function mode on a ResourceList as a user pipes it
// and as kpt hands it (a package file), fast and reference, and a package
// file as split writes it (Encode).
func TestCommentShapesAreAFixedPoint(t *testing.T) {
	for _, sh := range yamliotest.CommentShapes {
		for _, ref := range []bool{false, true} {
			name := fmt.Sprintf("%s, reference %v", sh.Name, ref)
			requireFixedPoint(t, "piped ResourceList: "+name, resourceListOf(sh.File), func(s string) string {
				return string(functionPass(t, []byte(s), ref))
			})
			requireFixedPoint(t, "kpt fn eval: "+name, sh.File, func(s string) string { return kptPass(t, s, ref) })
			requireFixedPoint(t, "split's file: "+name, sh.File, func(s string) string {
				out, err := yamlio.Encode(parseAll(t, s), yamlio.Options{Reference: ref})
				if err != nil {
					t.Fatal(err)
				}
				return string(out)
			})
		}
	}
}

// itemsOf is the items part of function mode's output: the results of a
// second pass may differ (a warned move is no longer a move).
func itemsOf(out []byte) []byte {
	for _, key := range []string{"\nfunctionConfig:\n", "\nresults:\n"} {
		if i := bytes.Index(out, []byte(key)); i >= 0 {
			out = out[:i+1]
		}
	}
	return out
}

// passesOf are the paths and the passes after the first that the
// differential tests run: in -short the fast path (which falls back to the
// reference on what it is not sure of) and one more pass; both paths and
// two more passes in test-slow.
func passesOf() (refs []bool, last int) {
	if testing.Short() {
		return []bool{false}, 2
	}
	return []bool{false, true}, 3
}

// requireItemsFixedPoint runs function mode on a ResourceList, then on its
// output again: the items must come out byte for byte as the first pass
// wrote them. A failing run (an invalid golden) writes its items unchanged
// and is fed back all the same.
func requireItemsFixedPoint(t *testing.T, name string, in []byte) {
	t.Helper()
	refs, last := passesOf()
	for _, ref := range refs {
		run := func(b []byte) []byte {
			var out bytes.Buffer
			_ = function.Run(bytes.NewReader(b), &out, yamlio.Options{Reference: ref})
			if out.Len() == 0 {
				t.Fatalf("%s, reference %v: no output", name, ref)
			}
			return out.Bytes()
		}
		p1 := run(in)
		p := p1
		for n := 2; n <= last; n++ {
			p = run(p)
			if !bytes.Equal(itemsOf(p), itemsOf(p1)) {
				t.Errorf("%s, reference %v: pass %d changes the items:\n%s", name, ref, n, firstDiff(string(itemsOf(p1)), string(itemsOf(p))))
				break
			}
		}
	}
}

// kptPackagePass is kpt fn eval on a package directory: read as kpt reads
// it, the function run with fnConfig (without path annotations, as under
// --fn-config), the items written back as kpt writes them. kpt writes
// nothing when the function fails; ok is false then.
func kptPackagePass(t *testing.T, dir string, fnConfig []byte, ref bool) (ok bool) {
	t.Helper()
	rw := &kio.LocalPackageReadWriter{PackagePath: dir, PreserveSeqIndent: true, WrapBareSeqNode: true}
	nodes, err := rw.Read()
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	if err := (kio.ByteWriter{Writer: &in, KeepReaderAnnotations: true, WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion, FunctionConfig: yaml.MustParse(string(fnConfig))}).Write(nodes); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := function.Run(&in, &out, yamlio.Options{Reference: ref}); err != nil {
		return false
	}
	items, err := (&kio.ByteReader{Reader: &out}).Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Write(items); err != nil {
		t.Fatal(err)
	}
	return true
}

// snapshot is every file under dir, by path.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requirePackageFixedPoint copies a package (without its .expected and
// README.md) and runs kpt fn eval on it again and again (passesOf): every
// later pass must leave every file as the first wrote it. ok is whether
// the function succeeds on the package.
func requirePackageFixedPoint(t *testing.T, name, src string, fnConfig []byte, ok bool) {
	t.Helper()
	refs, last := passesOf()
	for _, ref := range refs {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		_ = os.RemoveAll(filepath.Join(dir, ".expected"))
		_ = os.Remove(filepath.Join(dir, "README.md"))
		if got := kptPackagePass(t, dir, fnConfig, ref); got != ok {
			t.Fatalf("%s: the function succeeds: %v, want %v", name, got, ok)
		}
		first := snapshot(t, dir)
		for n := 2; n <= last; n++ {
			kptPackagePass(t, dir, fnConfig, ref)
			for f, b := range snapshot(t, dir) {
				if b != first[f] {
					t.Errorf("%s, reference %v: pass %d changes %s:\n%s", name, ref, n, f, firstDiff(first[f], b))
				}
			}
		}
	}
}

// exampleConfig is the function config an example runs with, as kpt fn
// eval builds it from .expected/config.yaml: the file fnConfig names, or a
// ConfigMap function-input of the args in their order; and whether the
// example succeeds (exitCode 0).
func exampleConfig(t *testing.T, dir string) (fnConfig []byte, ok bool) {
	t.Helper()
	c, err := os.ReadFile(filepath.Join(dir, ".expected", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := yaml.Parse(string(c))
	if err != nil {
		t.Fatal(err)
	}
	ok = conf.Field("exitCode") == nil || conf.Field("exitCode").Value.YNode().Value == "0"
	if f := conf.Field("fnConfig"); f != nil {
		b, err := os.ReadFile(filepath.Join(dir, f.Value.YNode().Value))
		if err != nil {
			t.Fatal(err)
		}
		return b, ok
	}
	args := conf.Field("args")
	if args == nil {
		t.Fatalf("%s: neither fnConfig nor args", dir)
	}
	cm := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n")
	if err := cm.PipeE(yaml.SetField("data", args.Value)); err != nil {
		t.Fatal(err)
	}
	return []byte(cm.MustString()), ok
}

// TestSecondPassChangesNothing: function mode's second pass writes the
// first pass's bytes on every input the project has: each example package
// under kpt fn eval (as kpt hands it and writes it back), each golden
// ResourceList and the command line's (as a user pipes one), and generated
// ResourceLists (see passesOf).
func TestSecondPassChangesNothing(t *testing.T) {
	examples, _ := filepath.Glob("../../examples/*/.expected/config.yaml")
	if len(examples) < 4 {
		t.Fatalf("found %d examples", len(examples))
	}
	for _, c := range examples {
		dir := filepath.Dir(filepath.Dir(c))
		fnConfig, ok := exampleConfig(t, dir)
		requirePackageFixedPoint(t, dir, dir, fnConfig, ok)
	}
	for _, dir := range []string{"../../pkg/cli/testdata/split-pkg", "../../pkg/cli/testdata/report-pkg"} {
		shards, err := os.ReadFile(filepath.Join(dir, "shards.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		requirePackageFixedPoint(t, dir, dir, shards, true)
	}
	goldens, _ := filepath.Glob("../../pkg/function/testdata/*/*.yaml")
	cli, _ := filepath.Glob("../../pkg/cli/testdata/function/*.yaml")
	if len(goldens) < 24 || len(cli) < 2 {
		t.Fatalf("found %d goldens and %d command line cases", len(goldens), len(cli))
	}
	for _, f := range append(goldens, cli...) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		requireItemsFixedPoint(t, f, in)
	}
	for seed := uint64(1); seed <= uint64(testenv.Iterations(3)); seed++ {
		o := gen.Options{Items: 50, Contexts: 3, Seed: seed, Routed: seed%2 == 0}
		requireItemsFixedPoint(t, fmt.Sprintf("generated %+v", o), gen.Bytes(o))
	}
}

// TestRookBundleIsAFixedPoint: rook-ceph's operator manifests (testdata,
// with the comment shapes of CommentShapes) through function mode twice,
// as a user pipes them (each document an item, as written) and as kpt fn
// eval hands them and writes them back. Slow tier: a megabyte a pass.
func TestRookBundleIsAFixedPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("a megabyte of manifests, six passes a path; the reduced shapes run in -short")
	}
	dir := filepath.Join("testdata", "rook-ceph")
	var file strings.Builder
	for _, f := range []string{"common.yaml", "crds.yaml", "operator.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		file.WriteString(strings.TrimSuffix(string(b), "---\n") + "\n---\n")
	}
	requireItemsFixedPoint(t, "rook-ceph piped", []byte(resourceListOf(file.String())))
	requirePackageFixedPoint(t, "rook-ceph under kpt fn eval", dir, []byte(passConfig), true)
}
