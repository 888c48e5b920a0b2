package function

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/golden"
)

// UPDATE_GOLDEN=1 go test ./pkg/function -run Golden rewrites expected.yaml
// from the actual output (byte counts masked: golden.MaskResultBytes); read
// every changed file before keeping it. The errors.txt files (one regexp a
// line) are written by hand and never rewritten.
var updateGolden = os.Getenv("UPDATE_GOLDEN") == "1"

// goldenCases returns testdata/<case> directories, failing on a badly named
// or incomplete one: valid-* cases have expected.yaml, invalid-* cases have
// errors.txt and also expected.yaml (items unchanged, results).
func goldenCases(t *testing.T) (valid, invalid []string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range dirs {
		dir := filepath.Dir(in)
		switch name := filepath.Base(dir); {
		case strings.HasPrefix(name, "valid-"):
			valid = append(valid, dir)
			if _, err := os.Stat(filepath.Join(dir, "errors.txt")); err == nil {
				t.Errorf("%s: a valid case has no errors.txt", dir)
			}
		case strings.HasPrefix(name, "invalid-"):
			invalid = append(invalid, dir)
			if _, err := os.Stat(filepath.Join(dir, "errors.txt")); err != nil {
				t.Errorf("%s: an invalid case needs errors.txt", dir)
			}
		default:
			t.Errorf("%s: case names start with valid- or invalid-", dir)
		}
	}
	if len(valid)+len(invalid) < 12 {
		t.Errorf("only %d golden cases", len(valid)+len(invalid))
	}
	return valid, invalid
}

// TestGolden runs each case as kyaml's ProcessorResultsChecker would:
// valid cases must succeed, invalid ones must fail with errors matching each
// line of errors.txt, and both must give expected.yaml exactly (an invalid
// case with its items unchanged), capacity byte counts masked.
func TestGolden(t *testing.T) {
	valid, invalid := goldenCases(t)
	for _, dir := range append(valid, invalid...) {
		t.Run(dir, func(t *testing.T) {
			input, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got, runErr := runLikeChecker(t, input)
			got = golden.MaskResultBytes(got)
			wantErrs, _ := os.ReadFile(filepath.Join(dir, "errors.txt"))
			switch {
			case wantErrs == nil && runErr != nil:
				t.Errorf("a valid case failed: %v", runErr)
			case wantErrs != nil && runErr == nil:
				t.Error("an invalid case succeeded")
			case wantErrs != nil:
				for _, line := range strings.Split(strings.TrimSpace(string(wantErrs)), "\n") {
					if !regexp.MustCompile(line).MatchString(runErr.Error()) {
						t.Errorf("the error does not match %q:\n%v", line, runErr)
					}
				}
				requireSameItems(t, string(input), got)
			}
			expectedFile := filepath.Join(dir, "expected.yaml")
			if updateGolden {
				if err := os.WriteFile(expectedFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(expectedFile)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
				t.Errorf("output differs from expected.yaml:\n%s", got)
			}
		})
	}
}

// runLikeChecker runs the Processor with the ByteReadWriter settings of
// kyaml's ProcessorResultsChecker.
func runLikeChecker(t *testing.T, input []byte) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := framework.Execute(Processor{}, &kio.ByteReadWriter{Reader: bytes.NewReader(input), Writer: &out})
	return out.String(), err
}

// TestGoldenIdempotent feeds each valid case's expected.yaml back in: the
// items must come out identical (a second run changes nothing). Results may
// differ: a warned move is no longer a move.
func TestGoldenIdempotent(t *testing.T) {
	valid, _ := goldenCases(t)
	for _, dir := range valid {
		t.Run(dir, func(t *testing.T) {
			expected, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := runLikeChecker(t, expected)
			if err != nil {
				t.Fatalf("second run failed: %v", err)
			}
			requireSameItems(t, string(expected), got)
		})
	}
}

// TestGoldenIdempotentCase: testdata/valid-idempotent is the output of
// valid-per-namespace-sharding, fed back; its output must be its input.
func TestGoldenIdempotentCase(t *testing.T) {
	first, err := os.ReadFile(filepath.Join("testdata", "valid-per-namespace-sharding", "expected.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile(filepath.Join("testdata", "valid-idempotent", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join("testdata", "valid-idempotent", "expected.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, in) {
		t.Errorf("valid-idempotent/input.yaml is not valid-per-namespace-sharding/expected.yaml")
	}
	if !bytes.Equal(in, out) {
		t.Errorf("valid-idempotent: output differs from input")
	}
}

// requireSameItems compares the items of two ResourLists, node by node.
func requireSameItems(t *testing.T, a, b string) {
	t.Helper()
	read := func(s string) []*yaml.RNode {
		items, err := (&kio.ByteReader{Reader: strings.NewReader(s), OmitReaderAnnotations: true}).Read()
		if err != nil {
			t.Fatal(err)
		}
		return items
	}
	ia, ib := read(a), read(b)
	if len(ia) != len(ib) {
		t.Fatalf("%d items, then %d", len(ia), len(ib))
	}
	for i := range ia {
		if sa, sb := ia[i].MustString(), ib[i].MustString(); sa != sb {
			t.Errorf("item %d differs:\n---\n%s---\n%s", i, sa, sb)
		}
	}
}
