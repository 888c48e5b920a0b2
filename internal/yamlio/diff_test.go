package yamlio_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/internal/yamlio"
)

// The differential suite: every fast path of this package against its
// reference on the same input, which must give identical bytes and
// results: function mode (the streaming path against kyaml's framework),
// the stream reader (the per-item ResourceList reader against
// kio.ByteReader), the package reader (per file against
// kio.LocalPackageReader) and the encoder (direct edits against
// kio.ByteWriter). An input a fast path refuses is asserted as refused
// with a reason; it is never compared with itself. FuzzFastMatchesReference
// runs the same checks on any input.

// TestFunctionMatchesReferenceGenerated: generated packages of several
// sizes, context counts and seeds, fresh and already routed, go through
// the streaming path and give the reference path's bytes.
func TestFunctionMatchesReferenceGenerated(t *testing.T) {
	for _, o := range []gen.Options{
		{Items: 1, Contexts: 1, Seed: 1},
		{Items: 7, Contexts: 2, Seed: 2},
		{Items: 300, Contexts: 3, Seed: 3},
		{Items: 300, Contexts: 3, Seed: 3, Routed: true},
		{Items: 400, Contexts: 64, Seed: 4},
		{Items: 300, Contexts: 100, Seed: 5, Routed: true}, // several batches of results
	} {
		if testing.Short() {
			o.Items = min(o.Items, 40) // the same shapes, smaller; full size in test-slow
		}
		name := fmt.Sprintf("items=%d,contexts=%d,seed=%d,routed=%v", o.Items, o.Contexts, o.Seed, o.Routed)
		fast, ref, streamed, refusal := runBoth(t, gen.Bytes(o))
		if !streamed {
			t.Errorf("%s: streaming path refused a generated package: %s", name, refusal)
			continue
		}
		requireSame(t, name, fast, ref)
		if ref.Err != "" {
			t.Errorf("%s: a generated package fails: %s", name, ref.Err)
		}
	}
}

// TestFunctionMatchesReferenceGolden runs the golden inputs of the
// function's tests through both paths.
func TestFunctionMatchesReferenceGolden(t *testing.T) {
	inputs := goldenInputs(t)
	if len(inputs) == 0 {
		t.Fatal("no golden inputs in pkg/function/testdata/*/input.yaml")
	}
	for f, data := range inputs {
		fast, ref, streamed, refusal := runBoth(t, data)
		if !streamed {
			t.Logf("%s: refused, read by the reference path only: %s", f, refusal)
			continue
		}
		requireSame(t, f, fast, ref)
	}
}

// goldenInputs reads the function's golden inputs.
func goldenInputs(t testing.TB) map[string][]byte {
	files, _ := filepath.Glob(filepath.Join("..", "..", "pkg", "function", "testdata", "*", "input.yaml"))
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = data
	}
	return out
}

// diffInputs are the inputs every pair is compared on: the function mode
// cases, the golden inputs and generated packages.
func diffInputs(t testing.TB) map[string][]byte {
	inputs := goldenInputs(t)
	for _, tc := range streamCases {
		inputs[tc.name] = []byte(tc.input)
	}
	// The same shapes in both tiers, a quarter of the items in -short.
	for _, o := range []gen.Options{
		{Items: 1, Contexts: 1, Seed: 1},
		{Items: testenv.Iterations(250), Contexts: 3, Seed: 2},
		{Items: testenv.Iterations(250), Contexts: 3, Seed: 3, Routed: true},
		{Items: testenv.Iterations(400), Contexts: 64, Seed: 4},
	} {
		inputs[fmt.Sprintf("%+v", o)] = gen.Bytes(o)
	}
	return inputs
}

// dump is what a reader gives for one resource, as text: the node with its
// comments and annotations.
func dump(n *yaml.RNode, _ bool) string {
	return yaml.NewRNode(n.Document()).MustString()
}

// readStream reads with ReadStream, dumped.
func readStream(data []byte, opts yamlio.Options) (string, error) {
	nodes, fc, err := yamlio.ReadStream(bytes.NewReader(data), opts, dump)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if fc != nil {
		fmt.Fprintf(&b, "functionConfig:\n%s", fc.MustString())
	}
	for i, n := range nodes {
		fmt.Fprintf(&b, "--- %d\n%s", i, n)
	}
	return b.String(), nil
}

// requireSameStream: when the per-item reader takes the input, ReadStream
// gives what kio.ByteReader gives; when it refuses it, the refusal is a
// fallback. It reports whether the fast reader took the input.
func requireSameStream(t testing.TB, name string, data []byte) bool {
	t.Helper()
	if _, err := yamlio.ReadList(data); err != nil {
		if !yamlio.IsFallback(err) {
			t.Errorf("%s: the stream reader fails instead of refusing: %v", name, err)
		}
		return false
	}
	fast, err := readStream(data, yamlio.Options{})
	ref, refErr := readStream(data, yamlio.Options{Reference: true})
	if (err == nil) != (refErr == nil) || fmt.Sprint(err) != fmt.Sprint(refErr) {
		t.Errorf("%s: stream reader error %v, reference %v", name, err, refErr)
	}
	if fast != ref {
		t.Errorf("%s: the stream reader differs from kio.ByteReader:\n%s", name, firstDiff(fast, ref))
	}
	return true
}

func TestReadStreamMatchesReference(t *testing.T) {
	inputs := diffInputs(t)
	fast := 0
	for name, data := range inputs {
		if requireSameStream(t, name, data) {
			fast++
		}
	}
	if fast < len(inputs)/2 {
		t.Errorf("only %d of %d inputs took the fast stream reader", fast, len(inputs))
	}
}

// readPackage reads with ReadPackage, dumped.
func readPackage(dir string, opts yamlio.Options) (string, error) {
	nodes, err := yamlio.ReadPackage(dir, func(string) bool { return false }, opts, dump)
	if err != nil {
		return "", err
	}
	return strings.Join(nodes, "---\n"), nil
}

// requireSamePackage: ReadPackage gives what kio.LocalPackageReader gives,
// or the same error.
func requireSamePackage(t testing.TB, name, dir string) {
	t.Helper()
	fast, err := readPackage(dir, yamlio.Options{})
	ref, refErr := readPackage(dir, yamlio.Options{Reference: true})
	if fmt.Sprint(err) != fmt.Sprint(refErr) {
		t.Errorf("%s: package reader error %v, reference %v", name, err, refErr)
	}
	if fast != ref {
		t.Errorf("%s: the package reader differs from kio.LocalPackageReader:\n%s", name, firstDiff(fast, ref))
	}
}

// writeTree writes files (slash paths) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadPackageMatchesReference(t *testing.T) {
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n"
	nested := t.TempDir()
	writeTree(t, nested, map[string]string{
		"Kptfile":         kptfile,
		"ns.yaml":         "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# two\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n",
		"cm.json":         `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j", "namespace": "a"}}`,
		"anchors.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: a\n  labels: &l\n    shard: a\ndata: *l\n",
		"sub/Kptfile":     "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\n",
		"sub/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n  namespace: a\n",
		"sub/notes.txt":   "not a resource\n",
		".krmignore":      "ignored/\n",
		"ignored/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ignored\n  namespace: a\n",
		"list.yaml":       "- a\n- b\n",
	})
	requireSamePackage(t, "nested", nested)
	items := testenv.Iterations(300)
	for _, o := range []gen.Options{{Items: items, Contexts: 4, Seed: 7}, {Items: items, Contexts: 4, Seed: 8, Routed: true}} {
		dir := t.TempDir()
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(gen.Bytes(o)), PreserveSeqIndent: true}).Read()
		if err != nil {
			t.Fatal(err)
		}
		if err := (kio.LocalPackageWriter{PackagePath: dir}).Write(nodes); err != nil {
			t.Fatal(err)
		}
		requireSamePackage(t, fmt.Sprintf("%+v", o), dir)
	}
	// Errors name the file, as kyaml's reader does.
	bad := t.TempDir()
	writeTree(t, bad, map[string]string{"Kptfile": kptfile, "bad.yaml": "a: [\n"})
	if _, err := readPackage(bad, yamlio.Options{}); err == nil {
		t.Error("a file that does not parse was read")
	}
	requireSamePackage(t, "bad", bad)
}

// encodeCases are resources that stress the encoder's direct edits and
// its refusals: every one must encode exactly as kio.ByteWriter does.
var encodeCases = []string{
	// internal and legacy annotations only: annotations, then metadata, go.
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    config.kubernetes.io/index: '0'\n    internal.config.kubernetes.io/path: a.yaml\n",
	// a user annotation stays, in place, with its comment.
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    # mine\n    a: b # kept\n    config.kubernetes.io/path: a.yaml\n    internal.config.kubernetes.io/seqindent: wide\ndata:\n  l:\n    - x\n",
	// empty annotations and metadata: kio.ByteWriter removes them.
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: {}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n",
	// not strings, repeated keys, odd shapes.
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    a: 1\n    b: true\n    config.kubernetes.io/index: 0\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    a: x\n    a: y\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nmetadata:\n  name: d\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: [a, b]\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    a: {b: c}\n",
	"apiVersion: v1\nkind: ConfigMap\n",
	// a JSON file of one resource is written as JSON.
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    config.kubernetes.io/path: x/c.json\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    internal.config.kubernetes.io/path: c.json\n    config.kubernetes.io/path: c.yaml\n",
	// a bare sequence, as the reader wraps it.
	"- a\n- b\n",
	// a comment above the document.
	"# top of the file\n\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    config.kubernetes.io/path: c.yaml\n# the end\n",
	// block scalars that keep their trailing newlines.
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: |+\n    x\n\n",
}

func parseAll(t testing.TB, data string) []*yaml.RNode {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(data), PreserveSeqIndent: true, WrapBareSeqNode: true, DisableUnwrapping: true}).Read()
	if err != nil {
		// The reader refuses to annotate it; a resource of a ResourceList
		// is not annotated by the reader.
		n, err := yaml.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		return []*yaml.RNode{n}
	}
	return nodes
}

func copies(nodes []*yaml.RNode) []*yaml.RNode {
	out := make([]*yaml.RNode, len(nodes))
	for i, n := range nodes {
		out[i] = n.Copy()
	}
	return out
}

// requireSameEncoding: Encode writes the nodes as kio.ByteWriter does.
func requireSameEncoding(t testing.TB, name string, nodes []*yaml.RNode) {
	t.Helper()
	want, werr := yamlio.Encode(copies(nodes), yamlio.Options{Reference: true})
	got, gerr := yamlio.Encode(copies(nodes), yamlio.Options{})
	if fmt.Sprint(werr) != fmt.Sprint(gerr) || !bytes.Equal(got, want) {
		t.Errorf("%s: Encode differs from kio.ByteWriter:\n--- fast (%v)\n%s--- kio.ByteWriter (%v)\n%s", name, gerr, got, werr, want)
	}
}

func TestEncodeMatchesReference(t *testing.T) {
	var all []*yaml.RNode
	for _, c := range encodeCases {
		nodes := parseAll(t, c)
		requireSameEncoding(t, c, nodes)
		all = append(all, nodes...)
	}
	requireSameEncoding(t, "all cases in one file", all)

	// Every resource of the inputs, one file each and in groups.
	count, direct := 0, 0
	for name, data := range diffInputs(t) {
		nodes, _, err := yamlio.ReadStream(bytes.NewReader(data), yamlio.Options{Reference: true},
			func(n *yaml.RNode, _ bool) *yaml.RNode { return n })
		if err != nil {
			continue
		}
		for i, n := range nodes {
			if yamlio.PlainAnnotations(n.YNode()) {
				direct++
			}
			requireSameEncoding(t, fmt.Sprintf("%s, resource %d", name, i), []*yaml.RNode{n})
			if i%7 == 0 && i+3 <= len(nodes) {
				requireSameEncoding(t, fmt.Sprintf("%s, resources %d-%d", name, i, i+2), nodes[i:i+3])
			}
			count++
		}
	}
	if count < testenv.Iterations(300) || direct < count*9/10 {
		t.Errorf("%d resources compared, %d of them edited directly: the direct path was not exercised", count, direct)
	}
}
