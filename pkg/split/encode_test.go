package split

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/gen"
)

// encodeCases are resources that stress encode's direct edits and its
// refusals: every one must encode exactly as kio.ByteWriter does.
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

func parseAll(t *testing.T, data string) []*yaml.RNode {
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

func requireSameEncoding(t *testing.T, name string, nodes []*yaml.RNode) {
	t.Helper()
	want, werr := encodeReference(copies(nodes))
	got, gerr := encode(copies(nodes))
	if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
		t.Errorf("%s: encode differs from kio.ByteWriter:\n--- encode (%v)\n%s--- kio.ByteWriter (%v)\n%s", name, gerr, got, werr, want)
	}
}

func TestEncodeMatchesByteWriter(t *testing.T) {
	var all []*yaml.RNode
	for _, c := range encodeCases {
		nodes := parseAll(t, c)
		requireSameEncoding(t, c, nodes)
		all = append(all, nodes...)
	}
	requireSameEncoding(t, "all cases in one file", all)

	// Every resource of the tests' inputs, one file each and in groups.
	inputs := [][]byte{[]byte(trickyList), gen.Bytes(gen.Options{Items: 300, Contexts: 3, Seed: 9, Routed: true})}
	golden, _ := filepath.Glob(filepath.Join("..", "function", "testdata", "*", "input.yaml"))
	for _, f := range golden {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, data)
	}
	count, direct := 0, 0
	for _, data := range inputs {
		in, err := readStreamReference(bytes.NewReader(data))
		if err != nil {
			continue
		}
		nodes, err := in.Nodes()
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range nodes {
			if _, ok := plainAnnotations(n.YNode()); ok {
				direct++
			}
			requireSameEncoding(t, describeNode(n), []*yaml.RNode{n})
			if i%7 == 0 && i+3 <= len(nodes) {
				requireSameEncoding(t, "group at "+describeNode(n), nodes[i:i+3])
			}
			count++
		}
	}
	if count < 300 || direct < count*9/10 {
		t.Errorf("%d resources compared, %d of them edited directly: the direct path was not exercised", count, direct)
	}
}

// TestSharedFilesEncodeAlike: a file that several contexts hold with the
// same resources is encoded once; each context's copy must be what
// encoding it for that context gives.
func TestSharedFilesEncodeAlike(t *testing.T) {
	in, err := readStreamReference(bytes.NewReader(gen.Bytes(gen.Options{Items: 400, Contexts: 8, Seed: 11})))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := runRoute(t, in, nil, &Options{PackageName: "p"})
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, pkg := range plan.Packages {
		for k := range pkg.files {
			f := &pkg.files[k]
			if f.shared == nil {
				continue
			}
			shared++
			got, err := pkg.render(k)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pkg.encodeFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("context %s: shared %s differs from its own encoding:\n%s---\n%s", pkg.Context, f.path, got, want)
			}
		}
	}
	if shared < 2*len(plan.Packages) {
		t.Errorf("only %d shared files in %d contexts: broadcast resources were not shared", shared, len(plan.Packages))
	}
}
