package yamlio

import (
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// scalarValues are every string of up to depth characters over an
// alphabet that holds what block scalars are sensitive to: line breaks,
// leading spaces and tabs, and text.
func scalarValues(depth int) []string {
	alphabet := []string{"a", " ", "\n", "\t"}
	vals := []string{""}
	for prev := vals; depth > 0; depth-- {
		var next []string
		for _, p := range prev {
			for _, c := range alphabet {
				next = append(next, p+c)
			}
		}
		vals = append(vals, next...)
		prev = next
	}
	return vals
}

// TestSuspectCoversEveryFailure: a value suspect lets through is one the
// library writes back exactly, in every block style; and suspect is not
// trivially true.
func TestSuspectCoversEveryFailure(t *testing.T) {
	failures, depth := 0, 6
	if testing.Short() {
		depth = 5 // every string of up to 5 characters (1,365), 6 (5,461) in test-slow
	}
	for _, style := range []yaml.Style{yaml.FoldedStyle, yaml.LiteralStyle, 0} {
		for _, v := range scalarValues(depth) {
			if roundTrips(v, style) {
				continue
			}
			failures++
			if !suspect(v, style == yaml.FoldedStyle) {
				t.Errorf("style %v, value %q: does not round-trip, but is not suspect", style, v)
			}
		}
	}
	if failures == 0 {
		t.Fatal("no value fails to round-trip: the library is fixed, and KeepScalars may go")
	}
	if suspect("line 1\nline 2\n", true) || suspect("line 1\n  indented\n", false) {
		t.Error("common values are suspect: every block scalar would be encoded twice")
	}
}
