package yamlio_test

import (
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// The one table of which annotation changes plan does not count (NotApplied)
// and which a written file never carries nor a size counts (Bookkeeping).
func TestAnnotationPredicates(t *testing.T) {
	cases := []struct {
		key                     string
		notApplied, bookkeeping bool
	}{
		{"internal.config.kubernetes.io/path", true, true},
		{"internal.config.kubernetes.io/index", true, true},
		{"internal.config.kubernetes.io/seqindent", true, true},
		{"internal.config.kubernetes.io/package-path", true, true},
		{"config.kubernetes.io/path", true, true},
		{"config.kubernetes.io/index", true, true},
		{"config.k8s.io/id", true, true},
		// kpt live apply sends them (cli-utils reads the first two; a
		// local-config object is not applied at all).
		{"config.kubernetes.io/local-config", false, false},
		{"config.kubernetes.io/origin", false, false},
		{"config.kubernetes.io/function", false, false},
		{"config.kubernetes.io/depends-on", false, false},
		{"config.kubernetes.io/apply-time-mutation", false, false},
		// Set on the cluster's objects, or the user's own.
		{"config.k8s.io/owning-inventory", false, false},
		{"cli-utils.sigs.k8s.io/on-remove", false, false},
		{"client.lifecycle.config.k8s.io/deletion", false, false},
		{"shardrouter.dev/context", false, false},
		{"shardrouter.dev/datastore", false, false},
		{"kubectl.kubernetes.io/last-applied-configuration", false, false},
		{"example.com/config.kubernetes.io/path", false, false},
		{"", false, false},
	}
	for _, c := range cases {
		if got := yamlio.NotApplied(c.key); got != c.notApplied {
			t.Errorf("NotApplied(%q) = %v, want %v", c.key, got, c.notApplied)
		}
		if got := yamlio.Bookkeeping(c.key); got != c.bookkeeping {
			t.Errorf("Bookkeeping(%q) = %v, want %v", c.key, got, c.bookkeeping)
		}
	}
}
