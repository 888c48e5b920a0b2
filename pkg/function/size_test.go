package function

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// sizeByEncodingJSON is the definition of SerializedSize done the slow way:
// decode the YAML with yaml.v3, drop the annotations that are not stored,
// and encode with encoding/json.
func sizeByEncodingJSON(t testing.TB, doc string) int64 {
	t.Helper()
	var v map[string]any
	if err := yaml.MustParse(doc).YNode().Decode(&v); err != nil {
		t.Fatal(err)
	}
	if md, ok := v["metadata"].(map[string]any); ok {
		if annos, ok := md["annotations"].(map[string]any); ok {
			for k := range annos {
				if notStored(k) {
					delete(annos, k)
				}
			}
			if len(annos) == 0 {
				delete(md, "annotations")
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

func TestSerializedSizeMatchesEncodingJSON(t *testing.T) {
	for i, doc := range []string{
		`apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ns}
data: {a: "1", b: x}`,
		`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: "frontend"}
spec:
  replicas: 3
  paused: false
  minReadySeconds: -0
  revisionHistoryLimit: 010
  progressDeadlineSeconds: 0x258
  x-big: 123456789012345678901
  x-bools: [True, FALSE, true]
  x-ints: [+5, 0o17, -12, 0, 1_000]
  template:
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: web
        image: nginx:1.27
        args: ["--a=<b>", "&c", "quote \" and \\ backslash"]
        resources: {limits: {cpu: 1.5, memory: 1e3}}
        env:
        - {name: EMPTY, value: ""}
        - {name: NULL, value: null}
        - {name: TILDE, value: ~}
        - {name: YES, value: yes}`,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  ctl: \"tab\\there\\nnewline\\r\\x01\\x1f\\b\\f\"\n  uni: \"héllo wörld ✓ 😀 \\u2028 \\u2029\"\n",
		`apiVersion: v1
kind: List
metadata: {name: anchors}
base: &base {a: [1, 2.50, -3], b: {}}
copy: *base
empty: []
nested: [[], [{}], [[1]]]
folded: >
  long
  text
literal: |
  line 1
  line 2`,
		`apiVersion: v1
kind: ConfigMap
metadata:
  name: annotated
  annotations:
    internal.config.kubernetes.io/path: a.yaml
    internal.config.kubernetes.io/index: '0'
    config.kubernetes.io/path: a.yaml
    config.kubernetes.io/index: '0'
    config.k8s.io/id: '1'
    shardrouter.dev/context: ctx-00
    shardrouter.dev/datastore: default
    user.example.com/kept: "yes"`,
		`apiVersion: v1
kind: ConfigMap
metadata:
  name: only-local-annotations
  annotations:
    internal.config.kubernetes.io/path: a.yaml
    shardrouter.dev/context: ctx-00`,
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want := sizeByEncodingJSON(t, doc)
			if got := SerializedSize(yaml.MustParse(doc)); got != want {
				t.Errorf("SerializedSize = %d, encoding/json gives %d", got, want)
			}
		})
	}
}

// TestSerializedSizeIgnoresOwnAnnotations: the size is the same before and
// after the function and kpt add their annotations.
func TestSerializedSizeIgnoresOwnAnnotations(t *testing.T) {
	plain := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata: {k: v}\n"
	annotated := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    shardrouter.dev/context: a,b\n    shardrouter.dev/datastore: a=default,b=events\n    internal.config.kubernetes.io/path: cm.yaml\ndata: {k: v}\n"
	if a, b := SerializedSize(yaml.MustParse(plain)), SerializedSize(yaml.MustParse(annotated)); a != b || a != int64(len(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}`)) {
		t.Errorf("sizes %d and %d, want both %d", a, b, len(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}`))
	}
}

func TestSerializedSizeOddInput(t *testing.T) {
	// Keys that are not strings become strings in JSON ({"1":"a","true":"b"}).
	if got, want := SerializedSize(yaml.MustParse("1: a\ntrue: b\n")), int64(len(`{"1":"a","true":"b"}`)); got != want {
		t.Errorf("non-string keys: %d, want %d", got, want)
	}
	// Numbers JSON cannot hold are counted as strings, and nothing panics.
	if got, want := SerializedSize(yaml.MustParse("a: .inf\nb: .nan\n")), int64(len(`{"a":".inf","b":".nan"}`)); got != want {
		t.Errorf("inf/nan: %d, want %d", got, want)
	}
	// yaml.v3 would decode an unquoted date as a time; sigs.k8s.io/yaml,
	// which kubectl uses, keeps the text, and so does SerializedSize.
	if got, want := SerializedSize(yaml.MustParse("d: 2024-01-02\n")), int64(len(`{"d":"2024-01-02"}`)); got != want {
		t.Errorf("timestamp: %d, want %d", got, want)
	}
	if SerializedSize(nil) != 0 {
		t.Error("nil node")
	}
}

// TestSerializedSizeOfWrittenEmptyNull: an empty null in a flow collection
// ({a: b, c}) is written by kyaml (yaml.v3's encoder) as an empty single-quoted string, so the
// package holds "" once written; SerializedSize counts that, so that a
// second run reports the same capacity (FuzzProcess found the difference).
// In a block collection it stays null, and an explicit tag keeps it null.
func TestSerializedSizeOfWrittenEmptyNull(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"r: {a: b, c}\n", `{"r":{"a":"b","c":""}}`},
		{"r: [x, {c: }]\n", `{"r":["x",{"c":""}]}`},
		{"r:\n  a: {b: [1, &e ]}\n  c: *e\n", `{"r":{"a":{"b":[1,""]},"c":""}}`},
		{"r:\n  c:\n", `{"r":{"c":null}}`},
		{"r: {c: !!null }\n", `{"r":{"c":null}}`},
		{"r: {c: ~}\n", `{"r":{"c":null}}`},
		// Annotations are sized on their own path (make fuzz found it there).
		{"metadata:\n  annotations: {a: b, c}\n", `{"metadata":{"annotations":{"a":"b","c":""}}}`},
	} {
		n := yaml.MustParse(tc.doc)
		if got := SerializedSize(n); got != int64(len(tc.want)) {
			t.Errorf("%q: %d, want %d (%s)", tc.doc, got, len(tc.want), tc.want)
		}
		// What kyaml writes sizes the same, and writes the same again.
		written := yaml.MustParse(n.MustString())
		if a, b := SerializedSize(n), SerializedSize(written); a != b {
			t.Errorf("%q: %d, but %d once written as %q", tc.doc, a, b, n.MustString())
		}
	}
}

// sizeGeneratedItem is a realistic ~1.6 KB Deployment, as in the performance notes.
func sizeGeneratedItem(i int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%[1]d
  namespace: team-%[2]d
  labels: {app: app-%[1]d, team: team-%[2]d, tier: backend}
  annotations:
    internal.config.kubernetes.io/path: team-%[2]d/app-%[1]d.yaml
    internal.config.kubernetes.io/index: '0'
    description: "Deployment number %[1]d of the generated package, with a description"
spec:
  replicas: 3
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d, team: team-%[2]d}}
    spec:
      serviceAccountName: app-%[1]d
      containers:
      - name: app
        image: registry.example.com/team-%[2]d/app-%[1]d:v1.2.3
        args: [--port=8080, --log-level=info, --metrics, --config=/etc/app/config.yaml]
        ports: [{containerPort: 8080, name: http}, {containerPort: 9090, name: metrics}]
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: GOMAXPROCS, value: "2"}
        resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1", memory: 512Mi}}
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 10}
        livenessProbe: {httpGet: {path: /livez, port: http}, periodSeconds: 20, failureThreshold: 3}
        volumeMounts: [{name: config, mountPath: /etc/app}]
      volumes:
      - name: config
        configMap: {name: app-%[1]d-config}
`, i, i%50)
}

func TestSerializedSizeGenerated(t *testing.T) {
	for i := range 20 {
		doc := sizeGeneratedItem(i)
		if got, want := SerializedSize(yaml.MustParse(doc)), sizeByEncodingJSON(t, doc); got != want {
			t.Fatalf("item %d: %d, encoding/json gives %d", i, got, want)
		}
	}
}

func sizeBenchItems(b *testing.B, n int) []*yaml.RNode {
	b.Helper()
	var sb strings.Builder
	for i := range n {
		sb.WriteString("---\n")
		sb.WriteString(sizeGeneratedItem(i))
	}
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(sb.String())}).Read()
	if err != nil {
		b.Fatal(err)
	}
	return nodes
}

// BenchmarkSerializedSize10k measures the size of 10,000 generated items,
// which ItemOf computes once per item.
func BenchmarkSerializedSize10k(b *testing.B) {
	nodes := sizeBenchItems(b, 10000)
	b.ResetTimer()
	for b.Loop() {
		for _, n := range nodes {
			SerializedSize(n)
		}
	}
}

// BenchmarkItemOf10k is ItemOf on the same items, size included.
func BenchmarkItemOf10k(b *testing.B) {
	nodes := sizeBenchItems(b, 10000)
	b.ResetTimer()
	for b.Loop() {
		for _, n := range nodes {
			ItemOf(n)
		}
	}
}

// BenchmarkDecodeMarshal10k is the library way (decode, encoding/json),
// for comparison.
func BenchmarkDecodeMarshal10k(b *testing.B) {
	nodes := sizeBenchItems(b, 10000)
	b.ResetTimer()
	for b.Loop() {
		for _, n := range nodes {
			var v any
			if err := n.YNode().Decode(&v); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestSerializedSizeIsWhatKubeAPIServerStores pins the escaping that
// capacity counts to kube-apiserver's own encoder: a custom resource is
// stored as the JSON that apimachinery's serializer writes, and that
// serializer is encoding/json's Encoder with HTML escaping on, so "<", ">"
// and "&" are stored as six bytes each (\u003c). Counting them as one byte
// would undercount. Merge keys are counted as the merged keys.
func TestSerializedSizeIsWhatKubeAPIServerStores(t *testing.T) {
	docs := []string{
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: a}\nspec: {html: '<b>bold</b> & more', cmp: 'a>b', num: 3, f: 1.5, ok: true, none: null}\n",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, labels: {<<: {a: '1', b: '2'}, b: '3'}}\nspec: {text: \"line\\u2028sep \\u00e9\\t\"}\n",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  annotations: &a {note: 'x < y'}\nspec: {copy: *a, list: [1, two, {three: 3}]}\n",
	}
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, nil, nil, kjson.SerializerOptions{})
	for _, doc := range docs {
		var obj map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil { // as kubectl reads it
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := ser.Encode(&unstructured.Unstructured{Object: obj}, &buf); err != nil {
			t.Fatal(err)
		}
		stored := int64(buf.Len() - 1) // the encoder's trailing newline
		if got := SerializedSize(yaml.MustParse(doc)); got != stored {
			t.Errorf("SerializedSize = %d, kube-apiserver's encoder writes %d bytes: %s\nfor %s", got, stored, buf.String(), doc)
		}
	}
}
