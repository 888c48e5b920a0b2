// Package yamliotest compares the fast and the reference paths of package
// yamlio in tests: one run of each on the same bytes, and what differs.
package yamliotest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// Outcome is everything a caller can observe of one function-mode run.
type Outcome struct {
	Out     string
	Err     string
	Results framework.Results
	IsRes   bool
}

// Observe is what a caller sees of a run that wrote out and returned err.
func Observe(out *bytes.Buffer, err error) Outcome {
	o := Outcome{Out: out.String()}
	if err != nil {
		o.Err = err.Error()
		var res framework.Results
		if errors.As(err, &res) {
			o.Results, o.IsRes = res, true
		}
	}
	return o
}

// RunBoth runs fn in function mode on the same bytes on the reference path
// and, when the streaming path takes the input, on the streaming path.
// Streamed reports whether it does; when it does not, refusal is its
// reason, a fallback error (any other error fails the test), and fast is
// empty: a refused input is known to be refused, and never compared with
// the reference path's run of itself.
func RunBoth[T any](t testing.TB, fn yamlio.Function[T], input []byte) (fast, ref Outcome, streamed bool, refusal string) {
	t.Helper()
	var refOut bytes.Buffer
	ref = Observe(&refOut, yamlio.RunFunction(bytes.NewReader(input), &refOut, fn, yamlio.Options{Reference: true}))
	if err := yamlio.StreamRefusal(input); err != nil {
		if !yamlio.IsFallback(err) {
			t.Fatalf("the streaming path fails instead of refusing: %v", err)
		}
		return Outcome{}, ref, false, err.Error()
	}
	var fastOut bytes.Buffer
	fast = Observe(&fastOut, yamlio.RunFunction(bytes.NewReader(input), &fastOut, fn, yamlio.Options{}))
	return fast, ref, true, ""
}

// RequireSame fails the test unless both runs wrote the same bytes and
// returned the same error and results.
func RequireSame(t testing.TB, name string, fast, ref Outcome) {
	t.Helper()
	if fast.Out != ref.Out {
		t.Errorf("%s: stdout differs from the reference path:\n%s", name, FirstDiff(fast.Out, ref.Out))
	}
	if fast.Err != ref.Err || fast.IsRes != ref.IsRes {
		t.Errorf("%s: error differs:\nfast:      %q (results: %v)\nreference: %q (results: %v)", name, fast.Err, fast.IsRes, ref.Err, ref.IsRes)
	}
	if !reflect.DeepEqual(fast.Results, ref.Results) {
		t.Errorf("%s: results differ:\nfast:      %v\nreference: %v", name, fast.Results, ref.Results)
	}
}

// FirstDiff shows the lines around the first difference.
func FirstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\nfast:      %q\nreference: %q\ncontext (reference):\n%s", i+1, gl, wl,
				strings.Join(w[lo:min(len(w), i+3)], "\n"))
		}
	}
	return "(same lines)"
}
