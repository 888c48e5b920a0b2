//go:build e2e

package e2e

import "testing"

// The retry of TestCluster's kpt live apply covers cli-utils' watcher race
// and nothing else: a failed apply, or a timeout of an object whose CRD the
// run did not apply, is still a failure.
func TestOnlyNewCRDTimeouts(t *testing.T) {
	const crd = "customresourcedefinition.apiextensions.k8s.io/widgets.e2e.shardrouter.dev apply successful\n"
	const applied = "apply result: 20 attempted, 20 successful, 0 skipped, 0 failed\n"
	for _, tc := range []struct {
		name, out string
		want      bool
	}{
		{"race", crd + "widget.e2e.shardrouter.dev/gadget reconcile timeout\n" + applied, true},
		{"no timeout", crd + applied, false},
		{"a Deployment timed out", crd + "deployment.apps/web reconcile timeout\n" + applied, false},
		{"CRD not in this run", "widget.e2e.shardrouter.dev/gadget reconcile timeout\n" + applied, false},
		{"an apply failed", crd + "widget.e2e.shardrouter.dev/gadget reconcile timeout\napply result: 20 attempted, 19 successful, 0 skipped, 1 failed\n", false},
	} {
		if got := onlyNewCRDTimeouts(tc.out); got != tc.want {
			t.Errorf("%s: onlyNewCRDTimeouts = %v, want %v", tc.name, got, tc.want)
		}
	}
}
