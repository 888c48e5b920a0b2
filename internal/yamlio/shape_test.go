package yamlio_test

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
)

// shapeCases are ResourceLists with an item that is no Kubernetes object,
// and the error every reader gives for it. kyaml's readers hand such items
// on, and its metadata helpers panic on some (GetAnnotations indexes a
// one-entry sequence as a mapping); kyaml refuses others in words that
// name neither the item nor the field.
var shapeCases = []struct{ name, input, want string }{
	// The fuzzer's find: items a mapping with a complex key, whose key
	// kyaml hands on as an item.
	{"items mapping, complex key", " \nkind: ResourceList\nitems: {[00]}", "item 0: it is a sequence, not a mapping"},
	{"items mapping", "kind: ResourceList\nitems: {a: b}", "item 0: it is a scalar, not a mapping"},
	{"sequence item", streamHeader + "- - a\n", "item 0: it is a sequence, not a mapping"},
	{"scalar item", streamHeader + "- a\n", "item 0: it is a scalar, not a mapping"},
	{"null item", streamHeader + "- ~\n", "item 0: it is null, not a mapping"},
	{"complex key in the object", shapeItem("  [a]: b\n  metadata:\n    name: x\n"), "item 1 (ConfigMap x): the object has a key that is a sequence, not a string"},
	{"metadata a sequence", shapeItem("  metadata: [a]\n"), "item 1 (ConfigMap): metadata is a sequence, not a mapping"},
	{"metadata a scalar", shapeItem("  metadata: x\n"), "item 1 (ConfigMap): metadata is a scalar, not a mapping"},
	{"complex key in metadata", shapeItem("  metadata:\n    name: x\n    {a: b}: c\n"), "item 1 (ConfigMap x): metadata has a key that is a mapping, not a string"},
	{"labels a sequence", shapeItem("  metadata:\n    name: x\n    labels: [shard, x]\n"), "item 1 (ConfigMap x): metadata.labels is a sequence, not a mapping"},
	{"labels a scalar", shapeItem("  metadata:\n    name: x\n    labels: x\n"), "item 1 (ConfigMap x): metadata.labels is a scalar, not a mapping"},
	{"complex key in labels", shapeItem("  metadata:\n    name: x\n    labels:\n      [a]: b\n"), "item 1 (ConfigMap x): metadata.labels has a key that is a sequence, not a string"},
	{"label value a sequence", shapeItem("  metadata:\n    name: x\n    labels:\n      shard: [x]\n"), "item 1 (ConfigMap x): metadata.labels[shard] is a sequence, not a string"},
	{"annotations a one-entry sequence", shapeItem("  metadata:\n    name: x\n    annotations: [a]\n"), "item 1 (ConfigMap x): metadata.annotations is a sequence, not a mapping"},
	{"complex key in annotations", shapeItem("  metadata:\n    name: x\n    annotations:\n      ? - a\n      : b\n"), "item 1 (ConfigMap x): metadata.annotations has a key that is a sequence, not a string"},
	{"annotation value a mapping", shapeItem("  metadata:\n    name: x\n    annotations:\n      a: {b: c}\n"), "item 1 (ConfigMap x): metadata.annotations[a] is a mapping, not a string"},
	// A label value routing would read as text but kube-apiserver would
	// refuse (a number, a boolean) or read as "" (null).
	{"label value a number", shapeItem("  metadata:\n    name: x\n    labels:\n      shard: 00\n"), `item 1 (ConfigMap x): metadata.labels[shard] is "00", which YAML reads as int, not a string: quote it (shard: "00")`},
	{"label value a boolean", shapeItem("  metadata:\n    name: x\n    labels:\n      shard: true\n"), `metadata.labels[shard] is "true", which YAML reads as bool`},
	{"label value null", shapeItem("  metadata:\n    name: x\n    labels:\n      shard: null\n"), `metadata.labels[shard] is "null", which YAML reads as null`},
	{"label value empty", shapeItem("  metadata:\n    name: x\n    labels:\n      shard:\n"), `metadata.labels[shard] is "", which YAML reads as null`},
	{"label value a date", shapeItem("  metadata:\n    name: x\n    labels:\n      shard: 2001-12-14\n"), `metadata.labels[shard] is "2001-12-14", which YAML reads as timestamp`},
	{"label value a number by alias", shapeItem("  data:\n    n: &n 1.5\n  metadata:\n    name: x\n    labels:\n      shard: *n\n"), `metadata.labels[shard] is "1.5", which YAML reads as float`},
	{"annotation value a number", shapeItem("  metadata:\n    name: x\n    annotations:\n      prometheus.io/port: 8080\n"), `item 1 (ConfigMap x): metadata.annotations[prometheus.io/port] is "8080", which YAML reads as int, not a string: quote it (prometheus.io/port: "8080")`},
	{"annotation value a boolean", shapeItem("  metadata:\n    name: x\n    annotations:\n      config.kubernetes.io/local-config: true\n"), `metadata.annotations[config.kubernetes.io/local-config] is "true", which YAML reads as bool`},
	// Aliases and merge keys are followed, as routing follows them.
	{"labels an alias to a sequence", shapeItem("  data:\n    s: &s [a]\n  metadata:\n    name: x\n    labels: *s\n"), "item 1 (ConfigMap x): metadata.labels is a sequence, not a mapping"},
	{"labels merged in", shapeItem("  metadata:\n    name: x\n    <<: {labels: [a]}\n"), "item 1 (ConfigMap x): metadata.labels is a sequence, not a mapping"},
}

// shapeItem is a ResourceList whose second item is a ConfigMap with the
// given fields (indented as an item's).
func shapeItem(fields string) string {
	return streamHeader + "- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ok\n- apiVersion: v1\n  kind: ConfigMap\n" + fields
}

// TestReadStreamRefusesNonObjects: both stream readers refuse each shape
// with the same error, which names the item and the field.
func TestReadStreamRefusesNonObjects(t *testing.T) {
	for _, tc := range shapeCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readStream([]byte(tc.input), yamlio.Options{})
			_, refErr := readStream([]byte(tc.input), yamlio.Options{Reference: true})
			if err == nil || refErr == nil || err.Error() != refErr.Error() {
				t.Fatalf("errors: fast %v, reference %v", err, refErr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// TestFunctionRefusesNonObjects: function mode, streaming and reference
// path, refuses each shape with that error and writes nothing.
func TestFunctionRefusesNonObjects(t *testing.T) {
	for _, tc := range shapeCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, opts := range []yamlio.Options{{}, {Reference: true}} {
				var out bytes.Buffer
				err := function.Run(strings.NewReader(tc.input+"\n"+streamConfig), &out, opts)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("reference %v: error %v, want %q", opts.Reference, err, tc.want)
				}
				if out.Len() > 0 {
					t.Errorf("reference %v: wrote %q", opts.Reference, out.String())
				}
			}
		})
	}
}

// TestReadPackageRefusesNonObjects: the package readers refuse a file
// holding such a resource with one error naming the file, the resource and
// the field; kyaml's own refusals (it annotates every resource it reads)
// name the file too.
func TestReadPackageRefusesNonObjects(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"labels a sequence", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: [a]\n", "cm.yaml: resource 1 (ConfigMap x in cm.yaml): metadata.labels is a sequence, not a mapping"},
		{"complex key in the object", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n[a]: b\n", "cm.yaml: resource 1 (ConfigMap x in cm.yaml): the object has a key that is a sequence, not a string"},
		{"annotations a sequence", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations: [a]\n", "cm.yaml: wrong node kind"},
		{"label value a number", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {shard: 00}\n", `cm.yaml: resource 1 (ConfigMap x in cm.yaml): metadata.labels[shard] is "00", which YAML reads as int`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\n" + tc.file})
			_, err := readPackage(dir, yamlio.Options{})
			_, refErr := readPackage(dir, yamlio.Options{Reference: true})
			if err == nil || refErr == nil || err.Error() != refErr.Error() {
				t.Fatalf("errors: fast %v, reference %v", err, refErr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// TestEncodeRefusesNonObjects: the encoder, both paths, refuses a node no
// reader hands on (kio.ByteWriter panics on a one-entry sequence).
func TestEncodeRefusesNonObjects(t *testing.T) {
	for _, src := range []string{"[00]\n", "a\n", "kind: X\nmetadata: [a]\n", "kind: X\nmetadata:\n  labels: [a]\n"} {
		n, err := yaml.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []yamlio.Options{{}, {Reference: true}} {
			out, err := yamlio.Encode([]*yaml.RNode{n.Copy()}, opts)
			if err == nil || !strings.HasPrefix(err.Error(), "resource 0") {
				t.Errorf("%q (reference %v): wrote %q, error %v", src, opts.Reference, out, err)
			}
		}
	}
}
