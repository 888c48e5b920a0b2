package yamlio_test

import (
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// The one table of the annotations a written file never carries, and that
// neither plan's digest nor a size counts (Bookkeeping).
func TestAnnotationPredicates(t *testing.T) {
	cases := []struct {
		key         string
		bookkeeping bool
	}{
		{"internal.config.kubernetes.io/path", true},
		{"internal.config.kubernetes.io/index", true},
		{"internal.config.kubernetes.io/seqindent", true},
		{"internal.config.kubernetes.io/package-path", true},
		{"config.kubernetes.io/path", true},
		{"config.kubernetes.io/index", true},
		{"config.k8s.io/id", true},
		// kpt live apply sends them (cli-utils reads depends-on and
		// apply-time-mutation; a local-config object is not applied at all).
		{"config.kubernetes.io/local-config", false},
		{"config.kubernetes.io/origin", false},
		{"config.kubernetes.io/function", false},
		{"config.kubernetes.io/depends-on", false},
		{"config.kubernetes.io/apply-time-mutation", false},
		// Set on the cluster's objects, or the user's own.
		{"config.k8s.io/owning-inventory", false},
		{"cli-utils.sigs.k8s.io/on-remove", false},
		{"client.lifecycle.config.k8s.io/deletion", false},
		{"shardrouter.dev/context", false},
		{"shardrouter.dev/datastore", false},
		{"kubectl.kubernetes.io/last-applied-configuration", false},
		{"example.com/config.kubernetes.io/path", false},
		{"", false},
	}
	for _, c := range cases {
		if got := yamlio.Bookkeeping(c.key); got != c.bookkeeping {
			t.Errorf("Bookkeeping(%q) = %v, want %v", c.key, got, c.bookkeeping)
		}
	}
}
