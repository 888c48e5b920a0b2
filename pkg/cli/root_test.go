package cli_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/cli"
)

// runMain runs the command line on in-memory streams.
func runMain(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.Main(cli.Streams{In: stdin, Out: &out, Err: &errOut}, args)
	return code, out.String(), errOut.String()
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "function", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noStdin fails the test if the command reads stdin.
type noStdin struct{ t *testing.T }

func (r noStdin) Read([]byte) (int, error) {
	r.t.Errorf("stdin was read")
	return 0, io.EOF
}

// resourceList parses a ResourceList as kpt would: its items, and the
// whole document.
func resourceList(t *testing.T, s string) (items []*yaml.RNode, doc *yaml.RNode) {
	t.Helper()
	r := &kio.ByteReader{Reader: strings.NewReader(s), OmitReaderAnnotations: true}
	items, err := r.Read()
	if err != nil {
		t.Fatalf("not a ResourceList: %v\n%s", err, s)
	}
	if r.WrappingKind != "ResourceList" || r.WrappingAPIVersion != "config.kubernetes.io/v1" {
		t.Fatalf("stdout is a %s %s, not a config.kubernetes.io/v1 ResourceList", r.WrappingAPIVersion, r.WrappingKind)
	}
	doc, err = yaml.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return items, doc
}

func TestFunctionMode(t *testing.T) {
	input := fixture(t, "valid.yaml")
	code, stdout, stderr := runMain(t, strings.NewReader(input))
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("a clean run writes nothing to stderr, got:\n%s", stderr)
	}
	if n := strings.Count("\n"+stdout, "\n---"); n != 0 {
		t.Errorf("stdout holds %d document separators: only the ResourceList goes there", n)
	}
	items, _ := resourceList(t, stdout)
	in, _ := resourceList(t, input)
	if len(items) != len(in) {
		t.Fatalf("%d items in, %d out", len(in), len(items))
	}
	want := []struct{ name, context string }{
		{"team-a", "c00"}, {"settings", "c00"}, {"reader", "c00,c01"},
	}
	for i, w := range want {
		a := items[i].GetAnnotations()
		if items[i].GetName() != w.name || a["shardrouter.dev/context"] != w.context || a["shardrouter.dev/datastore"] != "default" {
			t.Errorf("item %d: %s with %v, want %s in %s", i, items[i].GetName(), a, w.name, w.context)
		}
		// kpt's annotations come back as they went in.
		for k, v := range in[i].GetAnnotations() {
			if a[k] != v {
				t.Errorf("item %d: annotation %s = %q, want %q", i, k, a[k], v)
			}
		}
	}
	if !strings.Contains(stdout, "metadata: # a comment") {
		t.Errorf("the comment was lost:\n%s", stdout)
	}
}

// TestFunctionModeIdempotent: the output, run again, comes out byte for byte.
func TestFunctionModeIdempotent(t *testing.T) {
	code, first, stderr := runMain(t, strings.NewReader(fixture(t, "valid.yaml")))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, second, stderr := runMain(t, strings.NewReader(first))
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	if first != second {
		t.Errorf("second run changed the output:\n--- first\n%s--- second\n%s", first, second)
	}
}

func TestFunctionModeError(t *testing.T) {
	input := fixture(t, "invalid.yaml")
	code, stdout, stderr := runMain(t, strings.NewReader(input))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	// The ResourceList is still written, with every item as it came in.
	items, doc := resourceList(t, stdout)
	in, _ := resourceList(t, input)
	if len(items) != len(in) {
		t.Fatalf("%d items in, %d out", len(in), len(items))
	}
	for i := range in {
		if a, b := in[i].MustString(), items[i].MustString(); a != b {
			t.Errorf("item %d changed:\n--- in\n%s--- out\n%s", i, a, b)
		}
	}
	// The results say it too, with the file and the field.
	results, err := doc.Pipe(yaml.Lookup("results"))
	if err != nil || results == nil {
		t.Fatalf("no results in the output: %v", err)
	}
	var found bool
	for _, r := range results.Content() {
		rn := yaml.NewRNode(r)
		if yaml.GetValue(rn.Field("severity").Value) != "error" {
			continue
		}
		found = true
		if p, _ := rn.Pipe(yaml.Lookup("file", "path")); p == nil || yaml.GetValue(p) != "team-z/orphan.yaml" {
			t.Errorf("error result without file team-z/orphan.yaml:\n%s", rn.MustString())
		}
		if p, _ := rn.Pipe(yaml.Lookup("file", "index")); p == nil || yaml.GetValue(p) != "3" {
			t.Errorf("error result without file index 3:\n%s", rn.MustString())
		}
		if p, _ := rn.Pipe(yaml.Lookup("field", "path")); p == nil || yaml.GetValue(p) != "metadata.namespace" {
			t.Errorf("error result without field:\n%s", rn.MustString())
		}
	}
	if !found {
		t.Errorf("no error result:\n%s", results.MustString())
	}
	// stderr: one line for the error, naming file, resource and field.
	var errLines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.Contains(l, "error") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != 1 {
		t.Fatalf("want one error line on stderr, got:\n%s", stderr)
	}
	for _, frag := range []string{"team-z/orphan.yaml", "ConfigMap team-z/orphan", "metadata.namespace", `Namespace "team-z" is not in the package`} {
		if !strings.Contains(errLines[0], frag) {
			t.Errorf("stderr line %q does not mention %s", errLines[0], frag)
		}
	}
}

// TestFunctionModeWarnings: warnings do not fail the run; they are results
// of the ResourceList, which kpt shows.
func TestFunctionModeWarnings(t *testing.T) {
	input := strings.Replace(fixture(t, "valid.yaml"), "    name: reader\n", "    name: reader\n    labels: {shard: \"01\"}\n", 1)
	input = strings.Replace(input, "    - name: c01\n", "    - name: c01\n      resourceSelector: {matchLabels: {shard: \"01\"}}\n", 1)
	input = strings.Replace(input, "      config.k8s.io/id: '3'\n", "      config.k8s.io/id: '3'\n      shardrouter.dev/context: c00,c01\n", 1)
	input += "    allowMoves: true\n"
	code, stdout, stderr := runMain(t, strings.NewReader(input))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	items, doc := resourceList(t, stdout)
	if got := items[2].GetAnnotations()["shardrouter.dev/context"]; got != "c01" {
		t.Errorf("ClusterRole context = %q, want c01", got)
	}
	results, err := doc.Pipe(yaml.Lookup("results"))
	if err != nil || results == nil {
		t.Fatalf("no results: %v", err)
	}
	var warnings []string
	for _, r := range results.Content() {
		rn := yaml.NewRNode(r)
		if yaml.GetValue(rn.Field("severity").Value) == "warning" {
			warnings = append(warnings, yaml.GetValue(rn.Field("message").Value))
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "ClusterRole reader") || !strings.Contains(warnings[0], `"c00,c01" to "c01"`) {
		t.Errorf("want one warning about the move of ClusterRole reader, got %q", warnings)
	}
}

// TestFunctionModeUnreadableInput: when the input cannot be read, nothing
// goes to stdout (kpt would take it for the package).
func TestFunctionModeUnreadableInput(t *testing.T) {
	cases := map[string]string{
		"broken YAML":               "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: [Namespace\n",
		"bad indentation":           "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n kind: Namespace\n  metadata: {name: a}\n",
		"tab indentation":           "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n\t- apiVersion: v1\n",
		"items not mappings":        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [a, b]\nfunctionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {c: a=b}}\n",
		"a bare resource":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"a List":                    "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
		"a ResourceList of nothing": "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n",
		"legacy and internal paths disagree": `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: a
    annotations: {config.kubernetes.io/path: a.yaml, internal.config.kubernetes.io/path: b.yaml}
functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {c: a=b}}
`,
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, strings.NewReader(input))
			if code == 0 {
				t.Errorf("exit 0")
			}
			if stdout != "" {
				t.Errorf("stdout must stay empty, got:\n%s", stdout)
			}
			if strings.TrimSpace(stderr) == "" {
				t.Errorf("no error on stderr")
			}
		})
	}
}

var errStdin = errors.New("stdin: input/output error")

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errStdin }

func TestFunctionModeStdinFails(t *testing.T) {
	code, stdout, stderr := runMain(t, failingReader{})
	if code == 0 || stdout != "" || !strings.Contains(stderr, errStdin.Error()) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestArgumentsNeverFallBackToFunctionMode: a stray argument or an unknown
// flag is an error, without reading stdin.
func TestArgumentsNeverFallBackToFunctionMode(t *testing.T) {
	cases := []struct {
		args []string
		want string // a fragment of stderr
	}{
		{[]string{"foo"}, "foo"},
		{[]string{"shards.yaml"}, "shards.yaml"},
		{[]string{"--bogus"}, "bogus"},
		{[]string{"-x"}, "x"},
		{[]string{"version", "extra"}, "extra"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, noStdin{t}, tc.args...)
			if code == 0 {
				t.Errorf("exit 0")
			}
			if stdout != "" {
				t.Errorf("stdout must stay empty, got %q", stdout)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := runMain(t, noStdin{t}, "version")
	if code != 0 || stdout != cli.Version+"\n" || stderr != "" {
		t.Errorf("version: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, cli.Version+"\n")
	}
	code, stdout, _ = runMain(t, noStdin{t}, "--version")
	if code != 0 || !strings.Contains(stdout, cli.Version) {
		t.Errorf("--version: exit %d, stdout %q", code, stdout)
	}
}

func TestHelpDoesNotReadStdin(t *testing.T) {
	code, stdout, _ := runMain(t, noStdin{t}, "--help")
	if code != 0 || !strings.Contains(stdout, "shard-router") {
		t.Errorf("--help: exit %d, stdout %q", code, stdout)
	}
}
