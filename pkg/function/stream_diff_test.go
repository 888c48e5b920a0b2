package function

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/gen"
)

// outcome is everything a caller can observe of one run.
type outcome struct {
	out     string
	err     string
	results framework.Results
	isRes   bool
}

func observe(out *bytes.Buffer, err error) outcome {
	o := outcome{out: out.String()}
	if err != nil {
		o.err = err.Error()
		var res framework.Results
		if errors.As(err, &res) {
			o.results, o.isRes = res, true
		}
	}
	return o
}

// runBoth runs the streaming path (when it accepts the input) and the
// reference path on the same bytes. streamed is false when the streaming
// path fell back, i.e. when Run is the reference path by construction.
func runBoth(t testing.TB, input []byte) (fast, ref outcome, streamed bool, reason string) {
	t.Helper()
	var refOut bytes.Buffer
	ref = observe(&refOut, RunReference(bytes.NewReader(input), &refOut))
	s, err := prepareStream(input, nil)
	if err != nil {
		var fb fallback
		if !errors.As(err, &fb) {
			t.Fatalf("prepareStream: %v", err)
		}
		return ref, ref, false, string(fb)
	}
	var fastOut bytes.Buffer
	fast = observe(&fastOut, s.write(&fastOut))
	return fast, ref, true, ""
}

func requireSame(t testing.TB, name string, fast, ref outcome) {
	t.Helper()
	if fast.out != ref.out {
		t.Errorf("%s: stdout differs from the reference path:\n%s", name, firstDiff(fast.out, ref.out))
	}
	if fast.err != ref.err || fast.isRes != ref.isRes {
		t.Errorf("%s: error differs:\nstream:    %q (results: %v)\nreference: %q (results: %v)", name, fast.err, fast.isRes, ref.err, ref.isRes)
	}
	if !reflect.DeepEqual(fast.results, ref.results) {
		t.Errorf("%s: results differ:\nstream:    %v\nreference: %v", name, fast.results, ref.results)
	}
}

// firstDiff shows the lines around the first difference.
func firstDiff(got, want string) string {
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
			return fmt.Sprintf("line %d:\nstream:    %q\nreference: %q\ncontext (reference):\n%s", i+1, gl, wl,
				strings.Join(w[lo:min(len(w), i+3)], "\n"))
		}
	}
	return "(same lines)"
}

// TestStreamMatchesReferenceGenerated: generated packages of several sizes,
// context counts and seeds, fresh and already routed, go through the
// streaming path and give the reference path's bytes.
func TestStreamMatchesReferenceGenerated(t *testing.T) {
	for _, o := range []gen.Options{
		{Items: 1, Contexts: 1, Seed: 1},
		{Items: 7, Contexts: 2, Seed: 2},
		{Items: 300, Contexts: 3, Seed: 3},
		{Items: 300, Contexts: 3, Seed: 3, Routed: true},
		{Items: 400, Contexts: 64, Seed: 4},
		{Items: 300, Contexts: 100, Seed: 5, Routed: true}, // several batches of results
	} {
		name := fmt.Sprintf("items=%d,contexts=%d,seed=%d,routed=%v", o.Items, o.Contexts, o.Seed, o.Routed)
		fast, ref, streamed, reason := runBoth(t, gen.Bytes(o))
		if !streamed {
			t.Errorf("%s: streaming path refused a generated package: %s", name, reason)
			continue
		}
		requireSame(t, name, fast, ref)
		if ref.err != "" {
			t.Errorf("%s: a generated package fails: %s", name, ref.err)
		}
	}
}

// TestStreamMatchesReferenceGolden runs the golden inputs of the function's
// tests through both paths.
func TestStreamMatchesReferenceGolden(t *testing.T) {
	inputs := goldenInputs(t)
	if len(inputs) == 0 {
		t.Fatal("no golden inputs in testdata/*/input.yaml")
	}
	for f, data := range inputs {
		fast, ref, streamed, reason := runBoth(t, data)
		if !streamed {
			t.Logf("%s: reference path only: %s", f, reason)
		}
		requireSame(t, f, fast, ref)
	}
}

// goldenInputs reads testdata/*/input.yaml.
func goldenInputs(t testing.TB) map[string][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "input.yaml"))
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = data
	}
	return out
}
