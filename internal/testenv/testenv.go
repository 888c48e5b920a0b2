// Package testenv lets tests say what the machine must provide. A test that
// needs a program, a built tool or a downloaded module skips on a developer's
// machine that lacks it, and fails under CI=true, whose script installs
// everything: a skipped test in CI would pass without testing anything.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true, as .ci/run sets it).
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing marks the test as unable to run because something is missing:
// it fails in CI and skips elsewhere. hint says how to provide it.
func Missing(t testing.TB, what, hint string) {
	t.Helper()
	msg := fmt.Sprintf("%s is missing (%s)", what, hint)
	if InCI() {
		t.Fatal(msg + "; CI must provide it")
	}
	t.Skip(msg)
}

// Slow skips a test in the fast tier (go test -short, `make test`); the
// slow tier (`make test-slow`, run by CI) runs it.
func Slow(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow tier (make test-slow): " + why)
	}
}

// Iterations returns n in the slow tier and n/4 (at least 1) in the fast
// tier: property tests keep their shape and run fewer seeds, differential
// tests the same generated shapes with fewer items.
func Iterations(n int) int {
	if testing.Short() {
		return max(n/4, 1)
	}
	return n
}
