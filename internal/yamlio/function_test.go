package yamlio_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/internal/yamlio/yamliotest"
	"github.com/shard-router/shard-router/pkg/function"
)

// Function mode on the fast path (with its fallback) and on the reference
// path, with shard-router's function.
func run(in io.Reader, out io.Writer) error {
	return function.Run(in, out, yamlio.Options{})
}

func runReference(in io.Reader, out io.Writer) error {
	return function.Run(in, out, yamlio.Options{Reference: true})
}

func runBoth(t testing.TB, input []byte) (fast, ref yamliotest.Outcome, streamed bool, refusal string) {
	t.Helper()
	return yamliotest.RunBoth(t, function.Processor{}, input)
}

var (
	requireSame = yamliotest.RequireSame
	firstDiff   = yamliotest.FirstDiff
)

const streamConfig = `functionConfig:
  # the shards
  apiVersion: shardrouter.dev/v1alpha1
  kind: ShardConfig
  metadata:
    name: shards
  spec:
    contexts:
    - name: east
      namespaceSelector:
        matchLabels: {shard: east}
    - name: west # the big one
      namespaceSelector:
        matchLabels:
          shard: west
      resourceSelector:
        matchExpressions:
        - {key: shard, operator: In, values: [west]}
`

const streamHeader = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"

// kptAnnos are the annotations kpt gives an item read from path.
func kptAnnos(path string) string {
	return "    annotations:\n" +
		"      config.kubernetes.io/index: '0'\n" +
		"      config.kubernetes.io/path: '" + path + "'\n" +
		"      internal.config.kubernetes.io/index: '0'\n" +
		"      internal.config.kubernetes.io/path: '" + path + "'\n" +
		"      internal.config.kubernetes.io/seqindent: 'compact'\n"
}

const nsEast = `- apiVersion: v1
  kind: Namespace
  metadata:
    name: shop
    labels:
      shard: east
`

func cm(name, extra string) string {
	return "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: " + name + "\n    namespace: shop\n" +
		kptAnnos("shop/"+name+".yaml") + extra
}

func resourceList(items ...string) string {
	return streamHeader + strings.Join(items, "") + streamConfig
}

// streamCases are inputs the streaming path must read (stream: true) or
// must leave to the reference path; either way the bytes, the error and
// the results must be the reference path's.
var streamCases = []struct {
	name   string
	input  string
	stream bool
}{
	{"plain", resourceList(nsEast+kptAnnos("ns.yaml"), cm("a", "  data:\n    k: v\n")), true},
	{"no internal annotations", resourceList(nsEast, cm("a", "")[:strings.Index(cm("a", ""), "    annotations:")]), true},
	{"legacy annotations only", resourceList(nsEast+"    annotations:\n      config.kubernetes.io/path: 'ns.yaml'\n      config.kubernetes.io/index: '0'\n",
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: shop\n    annotations:\n      config.kubernetes.io/path: 'a.yaml'\n"), true},
	{"internal annotations only", resourceList(nsEast+"    annotations:\n      internal.config.kubernetes.io/path: 'ns.yaml'\n",
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: shop\n    annotations:\n      internal.config.kubernetes.io/path: a.yaml\n      internal.config.kubernetes.io/index: \"3\"\n"), true},
	{"mixed annotation formats", resourceList(nsEast+"    annotations:\n      internal.config.kubernetes.io/path: 'ns.yaml'\n",
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: shop\n    annotations:\n      config.kubernetes.io/path: a.yaml\n"), false},
	{"mismatched path annotations", resourceList(nsEast, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: shop\n    annotations:\n      config.kubernetes.io/path: a.yaml\n      internal.config.kubernetes.io/path: b.yaml\n"), false},
	{"empty internal path", resourceList(nsEast+kptAnnos("ns.yaml"), "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: shop\n    annotations:\n      config.kubernetes.io/path: a.yaml\n      config.kubernetes.io/index: '0'\n      internal.config.kubernetes.io/path: ''\n      internal.config.kubernetes.io/index: '0'\n"), true},
	{"id annotations and a stale resource id", resourceList(nsEast+kptAnnos("ns.yaml")+"      config.k8s.io/id: '1'\n      internal.config.kubernetes.io/id: '1'\n",
		cm("a", "")+"      internal.config.kubernetes.io/annotations-migration-resource-id: '7'\n"), true},
	{"empty annotations and no metadata", resourceList(nsEast+"    annotations: {}\n", "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: shop\n    annotations: {}\n  data: {}\n"), true},
	{"item without metadata", resourceList(nsEast, "- apiVersion: v1\n  kind: ConfigMap\n  data:\n    a: b\n"), true},
	{"comments", resourceList(
		"- # head comment of the first key\n  apiVersion: v1\n  kind: Namespace # line comment\n  metadata:\n    # about the name\n    name: shop\n    labels:\n      shard: east\n\n      # a foot comment?\n"+kptAnnos("ns.yaml"),
		cm("a", "  data:\n    # inside data\n    k: v # trailing\n    # last in data\n  immutable: true\n")), true},
	{"comment ending an item", resourceList(nsEast, cm("a", "  data:\n    k: v\n  # trailing at key level\n")), false},
	{"deep comment ending an item", resourceList(nsEast, cm("a", "  data:\n    k: v\n      # deeper\n"), cm("b", "")), false},
	{"odd comments inside an item", resourceList(nsEast, cm("a", "  data:\n   # odd\n    k: v\n     # odder\n    l: w\n # one\n  immutable: true\n"), cm("b", "")), true},
	{"deep comment ending the last item", resourceList(nsEast, cm("a", "  data:\n    k: v\n    # deeper\n")), false},
	{"odd comment ending an item", resourceList(nsEast, cm("a", "  data:\n    k: v\n   # odd\n"), cm("b", "")), false},
	{"comment ending a nested sequence", resourceList(nsEast, cm("a", "  list:\n  - a\n  - b\n    # after b\n"), cm("b", "")), false},
	{"comment at column 0", resourceList(nsEast, "# between items\n", cm("a", "")), false},
	{"multi-line strings", resourceList(nsEast, cm("a", `  data:
    literal: |
      line 1

      line 3
    folded: >
      folded
      text
    keep: |+
      kept

    strip: |-
      stripped
    indented: |2
        two more
    quoted: "a long
      quoted string"
    plain: a plain
      continued scalar
    single: 'it''s'
    unicode: "caf\u00e9 ☕"
    special: "@at"
    empty: ""
    null: ~
    bools: [yes, no, true, "false"]
`)), true},
	{"keep chomping at the end of an item", resourceList(nsEast, cm("a", "  data:\n    keep: |+\n      kept\n\n\n"), cm("b", "")), true},
	{"keep chomping at the end of the items", resourceList(nsEast, cm("a", "  data:\n    keep: |+\n      kept\n\n")), true},
	{"quoted keys", resourceList(nsEast, "- \"apiVersion\": v1\n  'kind': ConfigMap\n  \"metadata\":\n    name: a\n    \"namespace\": shop\n  data:\n    \"a b\": c\n    ? complex\n    : key\n"), true},
	{"flow style item", resourceList(nsEast, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: shop}}\n"), true},
	{"flow values", resourceList(nsEast, cm("a", "  data: {a: b, c: \"d\"}\n  list: [1, 2, {x: y}]\n")), true},
	{"anchors in an item", resourceList(nsEast, cm("a", "  data: &d\n    k: v\n  copy: *d\n")), false},
	{"alias across items", resourceList("- apiVersion: v1\n  kind: Namespace\n  metadata: &m\n    name: shop\n    labels: {shard: east}\n", "- apiVersion: v1\n  kind: Namespace\n  metadata: *m\n"), false},
	{"tags", resourceList(nsEast, cm("a", "  data:\n    n: !!str 5\n    b: !!binary aGVsbG8=\n")), true},
	{"wide sequence indent", streamHeader + "  - apiVersion: v1\n    kind: Namespace\n    metadata:\n      name: shop\n      labels:\n        shard: east\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: a\n      namespace: shop\n" + streamConfig, true},
	{"wide sequences inside", resourceList(nsEast, "- apiVersion: rbac.authorization.k8s.io/v1\n  kind: ClusterRole\n  metadata:\n    name: r\n    labels:\n      shard: west\n  rules:\n    - apiGroups:\n        - \"\"\n      verbs: [get]\n"), true},
	{"seqindent wide", resourceList(nsEast + "    annotations:\n      internal.config.kubernetes.io/seqindent: wide\n"), true},
	{"blank lines and trailing spaces", resourceList(nsEast+"   \n\n", cm("a", "  data:   \n    k: v  \n\n")), true},
	{"no final newline", strings.TrimSuffix(resourceList(nsEast), "\n"), true},
	{"functionConfig first", streamHeader[:strings.Index(streamHeader, "items:")] + streamConfig + "items:\n" + nsEast, true},
	{"document marker", "---\n" + resourceList(nsEast), false},
	{"two documents", resourceList(nsEast) + "---\napiVersion: v1\nkind: ConfigMap\n", false},
	{"tab", resourceList(nsEast, cm("a", "  data:\n    k: \"a\tb\"\n")), false},
	{"carriage returns", strings.ReplaceAll(resourceList(nsEast), "\n", "\r\n"), false},
	{"results in input", resourceList(nsEast) + "results:\n- message: old\n  severity: info\n", false},
	{"no items", streamHeader + "functionConfig: {}\n", false},
	{"empty items", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n" + streamConfig, false},
	{"a List", "apiVersion: v1\nkind: List\nitems:\n" + nsEast, false},
	{"items not mappings", resourceList(nsEast, "- just a string\n"), false},
	{"nested sequence item", resourceList(nsEast, "- - a\n  - b\n"), false},
	{"bad yaml in an item", resourceList(nsEast, cm("a", "  data:\n    k: [unclosed\n")), false},
	{"duplicate keys", resourceList(nsEast, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    namespace: shop\n    annotations:\n      x: '1'\n      x: '2'\n      config.kubernetes.io/path: a.yaml\n      config.kubernetes.io/path: b.yaml\n"), true},
	{"Kptfile and local config", resourceList("- apiVersion: kpt.dev/v1\n  kind: Kptfile\n  metadata:\n    name: pkg\n    annotations:\n      config.kubernetes.io/local-config: \"true\"\n", nsEast,
		cm("local", "      config.kubernetes.io/local-config: \"true\"\n")), true},
	{"already routed", resourceList(nsEast+"    annotations:\n      shardrouter.dev/context: east\n      shardrouter.dev/datastore: default\n", cm("a", "      shardrouter.dev/context: 'east'\n      shardrouter.dev/datastore: 'default'\n")), true},
	{"refused move", resourceList(nsEast, cm("a", "      shardrouter.dev/context: west\n")), true},
	{"routing error", resourceList(nsEast, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: orphan\n    namespace: elsewhere\n"), true},
	{"duplicate resource", resourceList(nsEast, cm("a", ""), cm("a", "")), true},
	{"config error", streamHeader + nsEast + "functionConfig:\n  apiVersion: shardrouter.dev/v1alpha1\n  kind: ShardConfig\n  metadata:\n    name: x\n  spec:\n    contexts: []\n    bogus: 1\n", true},
	{"no functionConfig", streamHeader + nsEast, true},
	{"ConfigMap config", streamHeader + nsEast + "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: function-input\n  data:\n    east: shard=east\n    west: shard=west\n", true},
	{"quoted wrapper values", "apiVersion: \"config.kubernetes.io/v1\"\nkind: 'ResourceList'\nitems:\n" + nsEast + streamConfig, true},
	{"unknown top-level key", resourceList(nsEast) + "extra: 1\n", false},
	{"metadata on the list", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nmetadata:\n  name: x\nitems:\n" + nsEast + streamConfig, false},
}

func TestStreamMatchesReferenceCases(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			fast, ref, streamed, refusal := runBoth(t, []byte(tc.input))
			if streamed != tc.stream {
				t.Errorf("streamed = %v (%s), want %v", streamed, refusal, tc.stream)
			}
			if streamed {
				requireSame(t, tc.name, fast, ref)
			}
		})
	}
}

// TestRefusedInputsFallBack tests the dispatch, not a pair: an input the
// streaming path refuses goes whole to the reference path, so function
// mode's output (bytes, error, results) is the reference path's, with
// nothing written before the refusal.
func TestRefusedInputsFallBack(t *testing.T) {
	refused := 0
	for _, tc := range streamCases {
		if tc.stream {
			continue
		}
		refused++
		var out, refOut bytes.Buffer
		got := yamliotest.Observe(&out, run(strings.NewReader(tc.input), &out))
		want := yamliotest.Observe(&refOut, runReference(strings.NewReader(tc.input), &refOut))
		requireSame(t, tc.name, got, want)
	}
	if refused < 10 {
		t.Errorf("only %d refused cases", refused)
	}
}

// TestStreamCasesChangeSomething guards the cases above against comparing
// nothing: the function must actually annotate the plain case.
func TestStreamCasesChangeSomething(t *testing.T) {
	var out bytes.Buffer
	if err := run(strings.NewReader(streamCases[0].input), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shardrouter.dev/context: 'east'", "shardrouter.dev/datastore: 'default'", "results:", "name: shards"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestForcedReference: under Options.Reference, function mode gives the
// same bytes, and takes the reference path even where the streaming path
// would refuse nothing: its function is called on the whole list.
func TestForcedReference(t *testing.T) {
	input := gen.Bytes(gen.Options{Items: 50, Contexts: 4, Seed: 9})
	var fast, ref bytes.Buffer
	if err := run(bytes.NewReader(input), &fast); err != nil {
		t.Fatal(err)
	}
	if err := runReference(bytes.NewReader(input), &ref); err != nil {
		t.Fatal(err)
	}
	if fast.String() != ref.String() {
		t.Errorf("forced reference path differs:\n%s", firstDiff(fast.String(), ref.String()))
	}
	var whole wholeList
	if err := yamlio.RunFunction(bytes.NewReader(input), io.Discard, &whole, yamlio.Options{Reference: true}); err != nil {
		t.Fatal(err)
	}
	if whole.processed != 1 || whole.read.Load() != 0 {
		t.Errorf("under Reference: Process called %d times, ReadItem %d times; want 1 and 0", whole.processed, whole.read.Load())
	}
	var streamed wholeList
	if err := yamlio.RunFunction(bytes.NewReader(input), io.Discard, &streamed, yamlio.Options{}); err != nil {
		t.Fatal(err)
	}
	if streamed.processed != 0 || streamed.read.Load() != 50 {
		t.Errorf("streaming: Process called %d times, ReadItem %d times; want 0 and 50", streamed.processed, streamed.read.Load())
	}
}

// wholeList counts how function mode calls it.
type wholeList struct {
	processed int
	read      atomic.Int64
}

func (w *wholeList) Process(*framework.ResourceList) error { w.processed++; return nil }
func (w *wholeList) ReadItem(*yaml.RNode) struct{}         { w.read.Add(1); return struct{}{} }
func (w *wholeList) Decide(*yaml.RNode, []struct{}) (yamlio.Edit, framework.Results, error) {
	return nil, nil, nil
}

// TestRunReadError: a failing reader is reported as the reference path
// reports it, and nothing is written.
func TestRunReadError(t *testing.T) {
	input := resourceList(nsEast)
	broken := errors.New("disk on fire")
	var out, refOut bytes.Buffer
	err := run(io.MultiReader(strings.NewReader(input[:40]), iotest.ErrReader(broken)), &out)
	refErr := runReference(io.MultiReader(strings.NewReader(input[:40]), iotest.ErrReader(broken)), &refOut)
	if err == nil || !errors.Is(err, broken) && !strings.Contains(err.Error(), broken.Error()) {
		t.Fatalf("Run error = %v, want one naming %v", err, broken)
	}
	if err.Error() != refErr.Error() {
		t.Errorf("error %q, reference path: %q", err, refErr)
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q on a read error", out.String())
	}
}

// TestSplitResourceList checks the item boundaries found in raw bytes.
func TestSplitResourceList(t *testing.T) {
	input := streamHeader + nsEast + "\n" + cm("a", "  data:\n    x: |\n      - not an item\n") + streamConfig
	items, skeleton, err := yamlio.SplitResourceList([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("found %d items, want 2", len(items))
	}
	first := input[items[0][0]:items[0][1]]
	if first != nsEast+"\n" {
		t.Errorf("first item = %q", first)
	}
	second := input[items[1][0]:items[1][1]]
	if !strings.HasPrefix(second, "- apiVersion: v1\n  kind: ConfigMap") || !strings.HasSuffix(second, "- not an item\n") {
		t.Errorf("second item = %q", second)
	}
	if want := streamHeader + streamConfig; string(skeleton) != want {
		t.Errorf("skeleton = %q, want %q", skeleton, want)
	}
}

// TestStreamItemsAreTheReferenceItems: the first pass reads each item as
// Process sees it on the reference path (after kyaml's preprocessing of the
// whole list), including for items whose preprocessing it shortcuts.
func TestStreamItemsAreTheReferenceItems(t *testing.T) {
	inputs := map[string][]byte{"generated": gen.Bytes(gen.Options{Items: 300, Contexts: 5, Seed: 11, Routed: true})}
	for _, tc := range streamCases {
		if tc.stream {
			inputs[tc.name] = []byte(tc.input)
		}
	}
	for name, input := range inputs {
		ranges, _, err := yamlio.SplitResourceList(input)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := make([]function.Item, len(ranges))
		err = yamlio.ReadItems(input, func(i int, rn *yaml.RNode) { got[i] = function.ItemOf(rn) })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r := &kio.ByteReader{Reader: bytes.NewReader(input)}
		nodes, err := r.Read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := kio.PreprocessResourcesForInternalAnnotationMigration(nodes); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(nodes) {
			t.Fatalf("%s: %d items, reference %d", name, len(got), len(nodes))
		}
		for i, n := range nodes {
			if want := function.ItemOf(n); !reflect.DeepEqual(got[i], want) {
				t.Errorf("%s: item %d:\nstream:    %+v\nreference: %+v", name, i, got[i], want)
			}
		}
	}
}

// TestStreamMatchesReferenceMutated mutates the cases line by line (a
// comment, a blank line, a line indented differently, a line repeated or
// dropped, a block scalar opened) where byte-level fuzzing rarely reaches,
// and requires the reference path's bytes whenever the streaming path
// accepts the result.
func TestStreamMatchesReferenceMutated(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 6))
	var bases []string
	for _, tc := range streamCases {
		if tc.stream {
			bases = append(bases, tc.input)
		}
	}
	bases = append(bases, string(gen.Bytes(gen.Options{Items: 6, Contexts: 2, Seed: 5})))
	golden := goldenInputs(t)
	for _, f := range slices.Sorted(maps.Keys(golden)) { // a fixed order, for a fixed seed
		bases = append(bases, string(golden[f]))
	}
	inserts := []string{"# c", "#", "- # c", "? k", ": v", "- x", "k: |", "k: |+", "k: >-", "k: \"a", "b\"", "k: 'a", "- {a: b}", "k: [a,", "]", "k: *a", "k: &a x", "k: !!str x", "...", "--- # d", "%YAML 1.2"}
	streamed, mutations := 0, testenv.Iterations(600)
	for n := 0; n < mutations; n++ {
		lines := strings.Split(bases[rnd.IntN(len(bases))], "\n")
		for m := 1 + rnd.IntN(3); m > 0; m-- {
			at := rnd.IntN(len(lines))
			indent := strings.Repeat(" ", rnd.IntN(9))
			switch rnd.IntN(5) {
			case 0:
				lines = slices.Insert(lines, at, indent+inserts[rnd.IntN(len(inserts))])
			case 1:
				lines = slices.Insert(lines, at, indent)
			case 2:
				lines[at] = indent + strings.TrimLeft(lines[at], " ")
			case 3:
				lines = slices.Insert(lines, at, lines[at])
			case 4:
				lines = slices.Delete(lines, at, at+1)
			}
		}
		input := strings.Join(lines, "\n")
		fast, ref, ok, _ := runBoth(t, []byte(input))
		if ok {
			streamed++
			requireSame(t, fmt.Sprintf("mutation %d:\n%s\n", n, input), fast, ref)
		}
		if t.Failed() {
			return
		}
	}
	if streamed < mutations/6 {
		t.Errorf("only %d of %d mutated inputs took the streaming path: the test compares too little", streamed, mutations)
	}
}

// TestRunInputKinds: a file (mapped), a pipe (read in blocks, here several)
// and any other reader give the same output.
func TestRunInputKinds(t *testing.T) {
	testenv.Slow(t, "3,500 items, three times")
	input := gen.Bytes(gen.Options{Items: 3500, Contexts: 8, Seed: 12}) // over one 4 MB block
	var want bytes.Buffer
	if err := run(bytes.NewReader(input), &want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rl.yaml")
	if err := os.WriteFile(path, input, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fromFile bytes.Buffer
	if err := run(f, &fromFile); err != nil {
		t.Fatal(err)
	}
	if fromFile.String() != want.String() {
		t.Errorf("from a file:\n%s", firstDiff(fromFile.String(), want.String()))
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = w.Write(input)
		w.Close()
	}()
	var fromPipe bytes.Buffer
	if err := run(r, &fromPipe); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if fromPipe.String() != want.String() {
		t.Errorf("from a pipe:\n%s", firstDiff(fromPipe.String(), want.String()))
	}
	// A mapped input the streaming path refuses goes to the reference path.
	refused := resourceList(nsEast, cm("a", "  data:\n    k: \"a\tb\"\n"))
	if err := os.WriteFile(path, []byte(refused), 0o600); err != nil {
		t.Fatal(err)
	}
	f2, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	var got, ref bytes.Buffer
	err = run(f2, &got)
	refErr := runReference(strings.NewReader(refused), &ref)
	if got.String() != ref.String() || fmt.Sprint(err) != fmt.Sprint(refErr) {
		t.Errorf("refused file input: %v / %v\n%s", err, refErr, firstDiff(got.String(), ref.String()))
	}
}
