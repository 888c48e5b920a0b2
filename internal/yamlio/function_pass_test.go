package yamlio_test

import (
	"bytes"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
)

// passConfig routes everything to one context.
const passConfig = "apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata:\n  name: shards\nspec:\n  contexts:\n  - name: c00\n    resourceSelector: {}\n"

// kptPass is kpt fn eval on one file: read as kpt reads a package, run the
// function, write the items back as kpt writes a file.
func kptPass(t *testing.T, file string, ref bool) string {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewBufferString(file), PreserveSeqIndent: true, SetAnnotations: map[string]string{"config.kubernetes.io/path": "op.yaml", "internal.config.kubernetes.io/path": "op.yaml"}}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	if err := (kio.ByteWriter{Writer: &in, KeepReaderAnnotations: true, WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion, FunctionConfig: yaml.MustParse(passConfig)}).Write(nodes); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := function.Run(&in, &out, yamlio.Options{Reference: ref}); err != nil {
		t.Fatalf("%v\n%s", err, in.String())
	}
	items, err := (&kio.ByteReader{Reader: &out}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	if err := (kio.ByteWriter{Writer: &w, ClearAnnotations: []string{"config.kubernetes.io/path", "internal.config.kubernetes.io/path"}}).Write(items); err != nil {
		t.Fatal(err)
	}
	return w.String()
}

// TestFunctionPassIsAFixedPoint: kpt fn eval with shard-router, twice on
// the comment cases (fast and reference paths), writes the same file the
// second time: the first pass settles the comments (the ResourceList is
// itself a read and a write), and the function adds no change after it.
func TestFunctionPassIsAFixedPoint(t *testing.T) {
	for i, in := range commentCases() {
		if _, err := yaml.Parse(in); err != nil {
			continue
		}
		if testing.Short() && i%5 != 0 {
			continue // every fifth case in -short (the picks rotate over indents and styles); all in test-slow
		}
		for _, ref := range []bool{false, true} {
			p1 := kptPass(t, in, ref)
			if p2 := kptPass(t, p1, ref); p1 != p2 {
				t.Errorf("case %d, reference %v: the second pass changes the file:\n--- input\n%s--- pass 1\n%s--- pass 2\n%s", i, ref, in, p1, p2)
			}
		}
	}
}
