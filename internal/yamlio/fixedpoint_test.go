package yamlio_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
)

// deployment is a Deployment whose only container ends with body (lines
// indented for the container's keys).
func deployment(name, containers string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n  namespace: ns\nspec:\n  template:\n    spec:\n      containers:\n" + containers
}

// commentShapes are the comment shapes yaml.v3 does not read back where
// it wrote them, reduced from rook-ceph's operator manifests (v1.14), each
// as the documents of one file. The first pass of function mode over a
// ResourceList of them changed on the second pass before settleList.
var commentShapes = []struct{ name, file string }{
	// The operator ConfigMap ends with comment blocks separated by blank
	// lines; read as items of one ResourceList, all but the first block go
	// between apiVersion and kind of the next item, and the next pass
	// drops the blank line after the last of them.
	{"foot comment blocks with blank lines ending an item", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\ndata:\n  k: v\n  # c1\n\n  # c2a\n  # c2b\n\n  # c3a\n  # c3b\n---\n# head\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: ns\n"},
	{"foot comment blocks ending an item, next item without a head comment", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\ndata:\n  k: v\n  # c1\n\n  # c2a\n  # c2b\n\n  # c3a\n  # c3b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: ns\n"},
	{"foot comment blocks ending the last item", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\ndata:\n  k: v\n  # c1\n\n  # c2a\n  # c2b\n\n  # c3a\n  # c3b\n"},
	// The operator container's env list is followed by a commented-out
	// resources block and another block: the first pass writes the first
	// block at the list's column, the next reads it as the foot comment of
	// the list's last entry and indents it under that entry.
	{"comment block after a nested compact list, a blank line, another block", deployment("d", "      - name: c\n        env:\n        - name: A\n          value: a\n        # r1\n\n        # u1\n      volumes: []\n")},
	{"comment blocks after a nested wide list and at the outer level", deployment("d", "        - name: c\n          env:\n            - name: A\n              value: a\n          # r1\n          # r2\n\n          # u1\n\n      # h1\n      volumes:\n        - name: v\n")},
	{"comment block after a nested list ending the document", deployment("d", "      - name: c\n        env:\n        - name: A\n          value: a\n        # r1\n\n        # u1\n")},
}

// resourceListOf is a ResourceList as a user writes one: the documents of
// file as its items, as written (comments included), and passConfig.
func resourceListOf(file string) string {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for _, doc := range strings.Split(file, "---\n") {
		for i, line := range strings.Split(strings.TrimSuffix(doc, "\n"), "\n") {
			switch {
			case i == 0:
				b.WriteString("- " + line + "\n")
			case line == "":
				b.WriteString("\n")
			default:
				b.WriteString("  " + line + "\n")
			}
		}
	}
	b.WriteString("functionConfig:\n")
	for _, line := range strings.Split(strings.TrimSuffix(passConfig, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// functionPass runs function mode on a ResourceList.
func functionPass(t *testing.T, in []byte, ref bool) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := function.Run(bytes.NewReader(in), &out, yamlio.Options{Reference: ref}); err != nil {
		t.Fatalf("%v\n%s", err, in)
	}
	return out.Bytes()
}

// requireFixedPoint feeds a pass's output back twice: both later passes
// must write the first pass's bytes.
func requireFixedPoint(t *testing.T, name string, in string, pass func(string) string) {
	t.Helper()
	p1 := pass(in)
	for n := 2; n <= 3; n++ {
		if p := pass(p1); p != p1 {
			t.Errorf("%s: pass %d changes the bytes:\n--- input\n%s--- pass 1\n%s--- pass %d\n%s", name, n, in, p1, n, p)
			return
		}
	}
}

// TestCommentShapesAreAFixedPoint: each comment shape, fed back twice
// through every path: function mode on a ResourceList as a user pipes it
// and as kpt hands it (a package file), fast and reference, and a package
// file as split writes it (Encode).
func TestCommentShapesAreAFixedPoint(t *testing.T) {
	for _, sh := range commentShapes {
		for _, ref := range []bool{false, true} {
			name := fmt.Sprintf("%s, reference %v", sh.name, ref)
			requireFixedPoint(t, "piped ResourceList: "+name, resourceListOf(sh.file), func(s string) string {
				return string(functionPass(t, []byte(s), ref))
			})
			requireFixedPoint(t, "kpt fn eval: "+name, sh.file, func(s string) string { return kptPass(t, s, ref) })
			requireFixedPoint(t, "split's file: "+name, sh.file, func(s string) string {
				out, err := yamlio.Encode(parseAll(t, s), yamlio.Options{Reference: ref})
				if err != nil {
					t.Fatal(err)
				}
				return string(out)
			})
		}
	}
}
