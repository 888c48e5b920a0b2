package yamlio_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/internal/yamlio"
)

// scanKeys are the annotations the tests ask ScanObjects for: those the
// previous split's reader reads.
var scanKeys = []string{"shardrouter.dev/context", "shardrouter.dev/datastore", "config.kubernetes.io/local-config"}

// scanReference is what ScanObjects must read where it takes a file: the
// file read by kio.ByteReader, as the previous split's parsing reader
// reads it (a scalar field's value, "" when absent or not a scalar; an
// annotation's first value). A document that is not a mapping is an
// object no scan can match.
func scanReference(data []byte, keys []string) ([]yamlio.ScannedObject, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true, WrapBareSeqNode: true}).Read()
	if err != nil {
		return nil, err
	}
	out := []yamlio.ScannedObject{}
	for _, rn := range nodes {
		n := rn.YNode()
		if n.Kind != yaml.MappingNode {
			out = append(out, yamlio.ScannedObject{Kind: "!!not a mapping"})
			continue
		}
		md := yamlio.Lookup(n, "metadata")
		o := yamlio.ScannedObject{APIVersion: scalarAt(n, "apiVersion"), Kind: scalarAt(n, "kind"),
			Name: scalarAt(md, "name"), Namespace: scalarAt(md, "namespace"), Annotations: make([]yamlio.Annotation, len(keys))}
		annos := yamlio.Lookup(md, "annotations")
		for k := 0; annos != nil && annos.Kind == yaml.MappingNode && k+1 < len(annos.Content); k += 2 {
			v := yamlio.Deref(annos.Content[k+1])
			for i, key := range keys {
				if annos.Content[k].Value == key && !o.Annotations[i].Set && v != nil && v.Kind == yaml.ScalarNode {
					o.Annotations[i] = yamlio.Annotation{Value: v.Value, Set: true}
				}
			}
		}
		out = append(out, o)
	}
	return out, nil
}

func scalarAt(n *yaml.Node, name string) string {
	if f := yamlio.Lookup(n, name); f != nil && f.Kind == yaml.ScalarNode {
		return f.Value
	}
	return ""
}

// checkScan requires ScanObjects to read data as scanReference does, or to
// refuse it; it reports whether ScanObjects took it. Where the reader
// fails there is nothing to agree with: the caller of ScanObjects parses
// every file it cannot settle by its bytes.
func checkScan(t testing.TB, data []byte) bool {
	t.Helper()
	got, ok := yamlio.ScanObjects(data, scanKeys)
	if !ok {
		return false
	}
	want, err := scanReference(data, scanKeys)
	if err != nil {
		return true
	}
	if got == nil {
		got = []yamlio.ScannedObject{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ScanObjects read\n%s\nas    %+v\nparse %+v", data, got, want)
	}
	return true
}

var scanCases = []struct {
	name, data string
	ok         bool
}{
	{"plain", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\n  annotations:\n    shardrouter.dev/context: 'x,y'\n    shardrouter.dev/datastore: 'x=events,y=default'\ndata:\n  k: v\n", true},
	{"comment after a value", "# head\napiVersion: rbac.authorization.k8s.io/v1 # tail? no: refused below\nkind: ClusterRole\n", false},
	{"compact sequence at column 0", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: \"r\"\n  finalizers:\n  - a\n  labels:\n    a: b\nrules:\n- apiGroups: [\"\"]\n  verbs: [get]\n", true},
	{"several documents", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\n# only a comment\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n", true},
	{"local config and kpt files", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: 'true'\n---\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: k\n---\napiVersion: v1\nkind: C\nmetadata:\n  name: c\n", true},
	{"local-config false", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: 'false'\n", true},
	{"flow metadata", "apiVersion: v1\nkind: A\nmetadata: {name: a}\n", false},
	{"flow document", "{apiVersion: v1, kind: A, metadata: {name: a}}\n", false},
	{"anchor", "apiVersion: v1\nkind: A\nmetadata:\n  name: &n a\n", false},
	{"alias", "apiVersion: v1\nkind: A\nmetadata:\n  name: *n\n", false},
	{"tag", "apiVersion: v1\nkind: A\nmetadata:\n  name: !!str a\n", false},
	{"block scalar", "apiVersion: v1\nkind: A\nmetadata:\n  name: |\n    a\n", false},
	{"multi-line plain", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n    b\n", false},
	{"escape", "apiVersion: v1\nkind: A\nmetadata:\n  name: \"a\\tb\"\n", false},
	{"tab", "apiVersion: v1\nkind: A\nmetadata:\n\tname: a\n", false},
	{"duplicate key", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  name: b\n", false},
	{"duplicate annotation", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    x: a\n    x: b\n", false},
	{"merge key in metadata", "x: &m\n  name: a\napiVersion: v1\nkind: A\nmetadata:\n  <<: *m\n", false},
	{"merge key at the top", "x: &m\n  kind: A\napiVersion: v1\n<<: *m\nmetadata:\n  name: a\n", false},
	{"merge key in annotations", "x: &m\n  shardrouter.dev/context: y\napiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    <<: *m\n", false},
	{"indented before any key", " 0\n", false},
	{"byte order mark", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\n\ufeffapiVersion: v1\nkind: B\nmetadata:\n  name: b\n", false},
	{"single-quoted value over several lines", "n: \ng: '\nmetadata:\n  name: a\n  s: -confikind: Ae'\n---\napiVersion: v1\nkind: C\nmetadata:\n  name: c\n", false},
	{"double-quoted value over several lines", "apiVersion: v1\nspec:\n  x: \"a\nkind: B\"\nkind: A\nmetadata:\n  name: a\n", false},
	{"flow sequence over several lines", "apiVersion: v1\nx: [a,\nkind: B]\nkind: A\nmetadata:\n  name: a\n", false},
	{"quoted values closed on their lines", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\nspec:\n  x: 'it''s' # c\n  y: [\"a\\\"\", {b: 'c'}]\n  z: it's text\n", true},
	{"UTF-16 byte order mark", "\xfe\xff0:", false},
	{"UTF-16 little-endian byte order mark", "\xff\xfe0\x00:\x00", false},
	{"unicode line separator", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\u2028b\n", false},
	{"quoted key", "apiVersion: v1\nkind: A\nmetadata:\n  \"name\": a\n", false},
	{"boolean name", "apiVersion: v1\nkind: A\nmetadata:\n  name: true\n", false},
	{"null name", "apiVersion: v1\nkind: A\nmetadata:\n  name:\n", false},
	{"bare sequence", "- a\n- b\n", false},
	{"ResourceList, unwrapped by the reader", " \nkind: ResourceList\nitems: {[00]}", false},
	{"ResourceList with only functionConfig", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  kind: A\n", false},
	{"List, unwrapped by the reader", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: A\n  metadata:\n    name: a\n", false},
	{"List after a separator at the start", "---\napiVersion: v1\nkind: List\nitems: []\n", false},
	{"ResourceList among others, refused all the same", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\nkind: ResourceList\nitems: []\n", false},
	{"a List kind of its own is an object", "apiVersion: v1\nkind: ConfigMapList\nitems: []\n", true},
	{"document end marker", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n...\n", false},
	{"metadata's keys at column 3", "x: &m\n name: a\nn: \nd: \nmetadata:\n   <<: *m", false},
	{"metadata's keys at column 4", "apiVersion: v1\nkind: A\nmetadata:\n    name: a\n", false},
	{"annotations' keys at column 6", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n      shardrouter.dev/context: x\n", false},
	{"odd indent", "apiVersion: v1\nkind: A\nmetadata:\n name: a\n", false},
	{"no metadata", "apiVersion: v1\nkind: A\n", true},
	{"comment in a value", "apiVersion: v1\nkind: A\nmetadata:\n  name: a # b\n", false},
	{"single quotes", "apiVersion: v1\nkind: A\nmetadata:\n  name: 'it''s'\n", true},
	{"annotation with a nested value", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    shardrouter.dev/context:\n      x: y\n", false},
	{"other annotations may be anything", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    note: |\n      line\n      line\n    shardrouter.dev/context: x\n    shardrouter.dev/datastore: events\n", true},
}

func TestScanObjectsCases(t *testing.T) {
	for _, tc := range scanCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkScan(t, []byte(tc.data)); got != tc.ok {
				t.Errorf("scanned %v, want %v", got, tc.ok)
			}
		})
	}
}

// splitFiles encodes the resources of a generated package, routed, file by
// file as split writes them (Encode), by path.
func splitFiles(t testing.TB, o gen.Options) map[string][]byte {
	t.Helper()
	nodes, _, err := yamlio.ReadStream(bytes.NewReader(gen.Bytes(o)), yamlio.Options{}, func(n *yaml.RNode, _ bool) *yaml.RNode { return n })
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]*yaml.RNode{}
	for _, n := range nodes {
		p, _, _ := kioutil.GetFileAnnotations(n)
		byPath[p] = append(byPath[p], n)
	}
	out := map[string][]byte{}
	for p, nodes := range byPath {
		if out[p], err = yamlio.Encode(nodes, yamlio.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestScanObjectsAgreesOnWrittenFiles: on every file of generated packages
// as split encodes it, ScanObjects reads what the reader reads, and takes
// most files.
func TestScanObjectsAgreesOnWrittenFiles(t *testing.T) {
	scanned, files := 0, 0
	for seed := uint64(1); seed <= uint64(testenv.Iterations(10)); seed++ {
		rnd := rand.New(rand.NewPCG(seed, 15))
		o := gen.Options{Items: 1 + rnd.IntN(200), Contexts: 1 + rnd.IntN(5), Seed: seed, Routed: rnd.IntN(2) == 0}
		for _, data := range splitFiles(t, o) {
			files++
			if checkScan(t, data) {
				scanned++
			}
		}
	}
	if files == 0 || scanned*10 < files*9 {
		t.Errorf("ScanObjects took %d of %d files", scanned, files)
	}
}

// FuzzScanMatchesReference: whatever the input, ScanObjects refuses it or
// reads what kio.ByteReader reads (where the reader reads it). The seeds
// are the scan cases and files written for small generated packages.
func FuzzScanMatchesReference(f *testing.F) {
	for _, tc := range scanCases {
		f.Add([]byte(tc.data))
	}
	for _, data := range splitFiles(f, gen.Options{Items: 6, Contexts: 3, Seed: 7, Routed: true}) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip("too big")
		}
		checkScan(t, data)
	})
}
