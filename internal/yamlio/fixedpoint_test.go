package yamlio_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/internal/yamlio/yamliotest"
	"github.com/shard-router/shard-router/pkg/function"
)

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
	for _, sh := range yamliotest.CommentShapes {
		for _, ref := range []bool{false, true} {
			name := fmt.Sprintf("%s, reference %v", sh.Name, ref)
			requireFixedPoint(t, "piped ResourceList: "+name, resourceListOf(sh.File), func(s string) string {
				return string(functionPass(t, []byte(s), ref))
			})
			requireFixedPoint(t, "kpt fn eval: "+name, sh.File, func(s string) string { return kptPass(t, s, ref) })
			requireFixedPoint(t, "split's file: "+name, sh.File, func(s string) string {
				out, err := yamlio.Encode(parseAll(t, s), yamlio.Options{Reference: ref})
				if err != nil {
					t.Fatal(err)
				}
				return string(out)
			})
		}
	}
}
