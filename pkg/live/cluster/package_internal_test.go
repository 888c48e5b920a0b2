package cluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kptdev/kpt/pkg/live"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmdtesting "k8s.io/kubectl/pkg/cmd/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// resourceGroup is resourcegroup.yaml as split writes it.
const resourceGroup = `apiVersion: kpt.dev/v1alpha1
kind: ResourceGroup
metadata:
  name: demo
  namespace: default
  labels:
    cli-utils.sigs.k8s.io/inventory-id: 0123abcd
`

const kptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: demo
  annotations:
    config.kubernetes.io/local-config: "true"
`

// trickyValues are values whose reading depends on YAML's rules (ints
// against strings, quoted "true" and "1", nulls, timestamps, big ints,
// octal and hexadecimal, floats, anchors, merge keys, block scalars, the
// folded scalar kyaml's encoder writes back with another value, tags,
// unusual keys), each the spec of a ConfigMap of its own, so that a value
// that JSONObject leaves to kpt's conversion does not hide the others: kpt
// applies whatever its reader makes of them, so ReadPackage must make the
// same. fast says whether JSONObject converts it itself.
var trickyValues = []struct {
	spec string
	fast bool
}{
	{"ints: [0, 1, -1, +5, 007, 0777, 0x1F, 0o17, 1_000, 123456789012345, 1234567890123456]", true},
	{"big: [9007199254740993, -9223372036854775808, 9223372036854775808, 18446744073709551615, 99999999999999999999]", true},
	{"floats: [1.0, 1e3, -0.0, .5, 6.02e23, 1.7976931348623157e308, 0.1, 1_0.5, -1.5E-3]", true},
	{"bools: [true, True, TRUE, false, FALSE, yes, no, on, off, y, n]", true},
	{"nulls: [~, null, Null, NULL, ]\nempty:", true},
	{`quoted: ["true", "1", '1.0', "null", "~", "", ' ', "0x1F", "1e3", "2001-12-14", "yes"]`, true},
	{"times: [2001-12-14, 2002-1-2]\ntime: 2001-12-14", true},
	// kyaml's encoder quotes a timestamp with ':' in a flow collection, so
	// kpt reads a string there, and the time elsewhere.
	{"flow-times: [2001-12-14t21:59:43.10-05:00, 2001-12-14 21:59:43.10 -5, 2002-12-14T21:59:43Z]", false},
	{"block-time: 2001-12-14t21:59:43.10-05:00\nspaced: 2001-12-14 21:59:43.10 -5", false},
	// It quotes an empty null in a flow collection too: kpt reads "".
	{"flow-nulls: {a: , b: ~, c: null}", false},
	{"block-nulls:\n  a:\n  b: ~", true},
	{`strings: ["a: b", "# not a comment", "é ✓ 日本 🎉", "x ", " y", '''', "\\", 'a\nb']`, true},
	{`keys: {"1": one, "true": t, "null": n, "a b": c, "": empty, '<<': quoted-merge}`, true},
	{"nested: {a: {b: {c: [[], {}, [[]], [{}]]}}}\nflow: [a, {b: c}, [d]]", true},
	{`controls: ["tab\there", "new\nline", "cr\rhere", "\u2028", "\x01", "bom\ufeff"]`, false},
	{"block: |\n  line one\n    indented\n  tab\tinside\nstrip: |-\n  no newline\nkeep: |+\n  kept\n\n", false},
	{"folded: >\n  folded\n  text\n", false},
	{"folded-more: >\n  folded\n    more\n  back\n", false},
	// kyaml's reader replaces aliases with copies and drops anchors.
	{"anchor: &shared {x: 1, y: [a, b]}\nalias: *shared", true},
	{"base: &base {x: 1, y: 2}\nmerged:\n  <<: *base\n  y: override", true},
	{"anchored-only: &lonely 5", true},
	{`tagged: [!!str 123, !!int "5", !!float 1, !!str true]`, false},
	{"binary: !!binary aGVsbG8=", false},
	{"plain-multiline: a\n  b\n\n  c", false},
}

// trickyPackage writes each of trickyValues as a ConfigMap.
func trickyPackage() string {
	var docs []string
	for i, v := range trickyValues {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: v%02d\n  labels: {app: \"1\", tier: 'true', empty: \"\"}\n  annotations: {plain: yes}\nspec:\n  %s\n",
			i, strings.ReplaceAll(v.spec, "\n", "\n  ")))
	}
	return strings.Join(docs, "---\n")
}

// readCases are packages (file name to content) that ReadPackage must read
// exactly as kpt's loader does, or refuse as it does.
var readCases = map[string]map[string]string{
	"tricky values": {"values.yaml": trickyPackage()},
	"a namespace from the context and local config": {"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: local
  annotations: {config.kubernetes.io/local-config: "true"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
  annotations: {config.kubernetes.io/local-config: "false"}
`, "sub/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n", "sub/more.yml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n"},
	"a List":                       {"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b, namespace: x}\n"},
	"a label that is a number":     {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {n: 1}\n"},
	"an annotation that is null":   {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: {n: ~}\n"},
	"labels that are a list":       {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: [a]\n"},
	"labels null":                  {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: null\n"},
	"labels and annotations empty": {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: ~\n  annotations:\n"},
	"infinity":                     {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec: {x: .inf}\n"},
	"not a number":                 {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec: {x: .nan}\n"},
	"a duplicate key":              {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: x, a: y}\n"},
	"a nested number key":          {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec: {1: x}\n"},
	"a top-level number key":       {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n1: x\n"},
	"a custom tag":                 {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec: {x: !custom y}\n"},
	"a tab-led block line":         {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  x: |\n    a\n    \tb\n"},
	"a bare list":                  {"list.yaml": "- a\n- b\n"},
	"unreadable YAML":              {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [c\n"},
	"a JSON file":                  {"cm.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}`},
	"a subpackage":                 {"sub/Kptfile": kptfile, "sub/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n", "sub/rg.yaml": strings.ReplaceAll(resourceGroup, "demo", "sub")},
	"a second ResourceGroup":       {"rg2.yaml": strings.ReplaceAll(resourceGroup, "demo", "other")},
	"the Kptfile's inventory too":  {"Kptfile": kptfile + "inventory:\n  name: demo\n  namespace: default\n  inventoryID: abcd\n"},
	"no inventory":                 {"resourcegroup.yaml": ""},
	"an inventory without an id":   {"resourcegroup.yaml": strings.ReplaceAll(resourceGroup, "cli-utils.sigs.k8s.io/inventory-id: 0123abcd", "team: a")},
	"an inventory with labels and annotations": {"resourcegroup.yaml": strings.ReplaceAll(resourceGroup, "  labels:\n",
		"  annotations: {team: a, config.kubernetes.io/local-config: \"true\"}\n  labels:\n    team: b\n")},
	"a Kptfile inventory only":       {"resourcegroup.yaml": "", "Kptfile": kptfile + "inventory:\n  name: demo\n  namespace: default\n  inventoryID: abcd\n"},
	"a Kptfile that does not decode": {"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: demo}\nunknown: field\n"},
}

// TestReadPackageIsKpts is the differential test of ReadPackage's reader
// against kpt's loader (live.Load, the kpt module tools/kpt builds): the
// same objects, value for value and type for type, the same inventory, or
// an error from both, for the examples' packages and readCases.
func TestReadPackageIsKpts(t *testing.T) {
	tf := cmdtesting.NewTestFactory()
	t.Cleanup(tf.Cleanup)
	f := withKinds(tf)
	examples, _ := filepath.Glob("../../../examples/*/Kptfile")
	if len(examples) < 4 {
		t.Fatalf("found %d examples", len(examples))
	}
	for _, kf := range examples {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Dir(kf))); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, "resourcegroup.yaml"), resourceGroup)
		t.Run(filepath.Base(filepath.Dir(kf)), func(t *testing.T) { compareWithKpt(t, f, dir, true) })
	}
	for name, files := range readCases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTestFile(t, filepath.Join(dir, "Kptfile"), kptfile)
			writeTestFile(t, filepath.Join(dir, "resourcegroup.yaml"), resourceGroup)
			for p, data := range files {
				writeTestFile(t, filepath.Join(dir, p), data)
			}
			compareWithKpt(t, f, dir, false)
		})
	}
}

// compareWithKpt reads dir with load and with kpt's loader and fails on
// any difference; readable says both must read it.
func compareWithKpt(t *testing.T, f cmdutil.Factory, dir string, readable bool) {
	t.Helper()
	want, wantInv, wantErr := live.Load(f, dir, nil)
	got, gotInv, err := load(f, dir)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("error %v, kpt's %v", err, wantErr)
	}
	if err != nil {
		if readable {
			t.Fatal(err)
		}
		t.Logf("both refuse: %v (kpt: %v)", err, wantErr)
		return
	}
	if !reflect.DeepEqual(gotInv, wantInv) {
		t.Errorf("inventory %#v, kpt's %#v", gotInv, wantInv)
	}
	if len(got) != len(want) {
		t.Fatalf("%d objects, kpt has %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Object, want[i].Object) {
			t.Errorf("object %d (%s %s) differs from kpt's:\n%s", i, want[i].GetKind(), want[i].GetName(), describeDiff(got[i], want[i]))
		}
	}
}

// describeDiff shows both objects with their Go types.
func describeDiff(got, want *unstructured.Unstructured) string {
	return fmt.Sprintf("got:  %#v\nkpt:  %#v", got.Object, want.Object)
}

// TestJSONObjectTakesTheFastPath checks that JSONObject converts the
// values a package usually holds itself and leaves the others to kpt's
// conversion: TestReadPackageIsKpts proves the results equal to kpt's,
// this that the work is saved.
func TestJSONObjectTakesTheFastPath(t *testing.T) {
	nodes, err := kio.FromBytes([]byte(trickyPackage()))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if _, ok := yamlio.JSONObject(n.YNode()); ok != trickyValues[i].fast {
			t.Errorf("%s: fast path %v, want %v", trickyValues[i].spec, ok, trickyValues[i].fast)
		}
	}
}

// kindsFactory is a test factory whose REST mapper also knows the kinds
// of the examples that kubectl's test mapper lacks.
type kindsFactory struct {
	*cmdtesting.TestFactory
	mapper meta.RESTMapper
}

func (f kindsFactory) ToRESTMapper() (meta.RESTMapper, error) { return f.mapper, nil }

func withKinds(tf *cmdtesting.TestFactory) cmdutil.Factory {
	base, err := tf.ToRESTMapper()
	if err != nil {
		panic(err)
	}
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "shardrouter.dev", Version: "v1alpha1", Kind: "ShardConfig"}, meta.RESTScopeNamespace},
	} {
		m.Add(k.gvk, k.scope)
	}
	return kindsFactory{TestFactory: tf, mapper: meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{m, base}}}
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadPackageIsKpts: whatever a package's one file holds, ReadPackage's
// reader gives kpt's loader's objects and inventory, or refuses it as kpt
// does. The seeds are trickyValues, readCases and the examples' files.
func FuzzReadPackageIsKpts(f *testing.F) {
	f.Add([]byte(trickyPackage()))
	for _, files := range readCases {
		for _, data := range files {
			f.Add([]byte(data))
		}
	}
	examples, _ := filepath.Glob("../../../examples/*/*.yaml")
	for _, p := range examples {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	tf := cmdtesting.NewTestFactory()
	f.Cleanup(tf.Cleanup)
	factory := withKinds(tf)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16<<10 || bytes.Count(data, []byte("*")) > 4 {
			// Too big, or aliases that kyaml's reader (both sides'
			// parse) expands without a bound: an input must take
			// milliseconds.
			t.Skip()
		}
		dir := t.TempDir()
		writeTestFile(t, filepath.Join(dir, "Kptfile"), kptfile)
		writeTestFile(t, filepath.Join(dir, "resourcegroup.yaml"), resourceGroup)
		writeTestFile(t, filepath.Join(dir, "values.yaml"), string(data))
		compareWithKpt(t, factory, dir, false)
	})
}
