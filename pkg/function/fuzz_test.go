package function

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// executeProcessor runs the Processor through framework.Execute as function
// mode does.
func executeProcessor(input []byte) ([]byte, error) {
	return executeWith(Processor{}, input)
}

func executeWith(p framework.ResourceListProcessor, input []byte) ([]byte, error) {
	var out bytes.Buffer
	err := framework.Execute(p, &kio.ByteReadWriter{Reader: bytes.NewReader(input), Writer: &out, KeepReaderAnnotations: true})
	return out.Bytes(), err
}

// noop changes nothing: what it writes is the input as kyaml rewrites it
// (it drops a null metadata, for one).
var noop = framework.ResourceListProcessorFunc(func(*framework.ResourceList) error { return nil })

// fuzzItems reads the items of a ResourceList, one string each.
func fuzzItems(t *testing.T, data []byte) []string {
	t.Helper()
	items, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("cannot read back a ResourceList: %v\n%s", err, data)
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.MustString()
	}
	return out
}

// hasWarning reports whether the output's results hold a warning, which
// depends on the previous annotations and so may go on a second run.
func hasWarning(t *testing.T, data []byte) bool {
	t.Helper()
	doc, err := yaml.Parse(string(data))
	if err != nil {
		t.Fatal(err)
	}
	results := doc.Field("results")
	if results == nil {
		return false
	}
	for _, r := range results.Value.Content() {
		if s := yaml.NewRNode(r).Field("severity"); s != nil && yaml.GetValue(s.Value) == "warning" {
			return true
		}
	}
	return false
}

// FuzzProcess feeds arbitrary bytes to the Processor as a ResourceList. It
// must never panic. When the function runs (the input was readable):
//   - on success, as many items come out as went in, and the output run
//     again gives the same items (the same bytes, warnings aside);
//   - on an error result, the items come out unchanged.
func FuzzProcess(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "input.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range manifestCases { // merge keys, aliases, Lists, old versions
		f.Add(manifestInput(tc))
	}
	for _, seed := range []string{
		"",
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n",
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: {s: x}}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: a}}\nfunctionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: f}, data: {k: s=x, j: '!s'}}\n",
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a, annotations: {shardrouter.dev/context: 'k,j', shardrouter.dev/datastore: 'k=e,j=default'}}}\nfunctionConfig: {apiVersion: shardrouter.dev/v1alpha1, kind: ShardConfig, metadata: {name: s}, spec: {contexts: [{name: k, dataStores: [{name: e, endpoints: ['http://e:1']}]}, {name: j}], dataStoreOverrides: [{resource: /namespaces, dataStore: e}], allowMoves: true}}\n",
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- &a {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: &l {s: x}}}\n- {apiVersion: v1, kind: Secret, metadata: {name: b, namespace: a, labels: *l}}\nfunctionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: f}, data: {k: s=x}}\n",
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a, annotations: {shardrouter.dev/context: ','}}}\n- {kind: ConfigMap, metadata: {name: [x]}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\nfunctionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: f}, data: {k: s}}\n",
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: ws.x}, spec: {group: x, scope: Namespaced, names: {kind: W}}}\n- {apiVersion: x/v1, kind: W, metadata: {name: w}}\nfunctionConfig: {apiVersion: shardrouter.dev/v1alpha1, kind: ShardConfig, metadata: {name: s}, spec: {contexts: [{name: k, resourceSelector: {}}], defaultContext: k}}\n",
		// An empty null in flow annotations, written as '' (make fuzz found
		// a second run sizing it differently).
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: Event\n  metadata:\n    name: e1\n    namespace: a\n    annotations: {x, y: z}\nfunctionConfig: {apiVersion: shardrouter.dev/v1alpha1, kind: ShardConfig, metadata: {name: s}, spec: {contexts: [{name: c, resourceSelector: {}}]}}\n",
		// kyaml's GetLabels panicked on the one-entry labels sequence.
		"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: [x]}}\nfunctionConfig: {apiVersion: shardrouter.dev/v1alpha1, kind: ShardConfig, metadata: {name: s}, spec: {contexts: [{name: c0}, {name: c1}], placement: {strategy: Rendezvous, label: {key: k, values: {c0: '0', c1: '1'}}}}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) > 16<<10 {
			t.Skip("large inputs add nothing but time, and no input may take seconds (the fuzz engine gives up on one after 10 s)")
		}
		out, err := executeProcessor(input)
		r := &kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}
		if _, rerr := r.Read(); rerr != nil || r.WrappingKind != kio.ResourceListKind {
			// Not a ResourceList: function mode refuses it (the reference path);
			// framework.Execute alone echoes bare resources.
			return
		}
		var results framework.Results
		switch {
		case err == nil:
		case errors.As(err, &results):
			// The function ran and refused: items unchanged.
			baseline, err := executeWith(noop, input)
			if err != nil {
				t.Fatalf("kyaml alone fails where the function ran: %v", err)
			}
			in, got := fuzzItems(t, baseline), fuzzItems(t, out)
			if len(in) != len(got) {
				t.Fatalf("%d items in, %d out on error", len(in), len(got))
			}
			for i := range in {
				if in[i] != got[i] {
					t.Fatalf("item %d changed on error %v:\n--- in\n%s--- out\n%s", i, err, in[i], got[i])
				}
			}
			return
		default:
			return // unreadable input: kyaml's error
		}
		in, got := fuzzItems(t, input), fuzzItems(t, out)
		if len(in) != len(got) {
			t.Fatalf("%d items in, %d out", len(in), len(got))
		}
		again, err := executeProcessor(out)
		if err != nil {
			t.Fatalf("the output fails a second run: %v\n%s", err, out)
		}
		if hasWarning(t, out) {
			second := fuzzItems(t, again)
			for i := range got {
				if got[i] != second[i] {
					t.Fatalf("item %d changed on a second run:\n--- first\n%s--- second\n%s", i, got[i], second[i])
				}
			}
			return
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("a second run changed the output:\n--- first\n%s--- second\n%s", out, again)
		}
	})
}

// TestProcessRefusesNonObjects: the Processor, run by kyaml's framework
// alone, refuses an item RunFunction would refuse (here a Namespace to
// place whose labels are a one-entry sequence, which kyaml's GetLabels
// would index as a mapping) with an error naming the item and the field.
func TestProcessRefusesNonObjects(t *testing.T) {
	input := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" +
		"- {apiVersion: v1, kind: Namespace, metadata: {name: a, labels: [x]}}\n" +
		"functionConfig:\n  " + strings.ReplaceAll(strings.TrimSpace(capPlacementConfig), "\n", "\n  ") + "\n"
	_, err := executeProcessor([]byte(input))
	want := "item 0 (Namespace a): metadata.labels is a sequence, not a mapping"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}
