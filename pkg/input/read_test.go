package input

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// A resource with anchors cannot be packed (yamlio.Pack refuses it): the
// fast reader keeps it as a node, and only it; every resource reads back
// as kyaml's reader gives it.
func TestReaderKeepsAnchoredResourcesWhole(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n",
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: a\n  labels: &l\n    shard: a\ndata: *l\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := ReadPackage(dir, yamlio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ReadPackage(dir, yamlio.Options{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	if in.Len() != 3 || ref.Len() != 3 {
		t.Fatalf("read %d and kyaml %d resources, want 3", in.Len(), ref.Len())
	}
	anchored := 0
	for i := range in.nodes {
		if in.nodes[i] != nil {
			anchored++
			if in.items[i].Name != "c" {
				t.Errorf("resource %d (%s) kept as a node; only the anchored ConfigMap should be", i, in.items[i].Name)
			}
		}
		got, err := in.Node(i)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Node(i)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got.MustString(), want.MustString(); g != w {
			t.Errorf("resource %d reads back as\n%s\nkyaml's reader gives\n%s", i, g, w)
		}
	}
	if anchored != 1 {
		t.Errorf("%d resources kept as nodes, want the anchored one", anchored)
	}
}
