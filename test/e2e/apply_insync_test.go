//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// auditMarks are where every cluster's audit log ends now.
func (a *applyE2E) auditMarks(t testing.TB) map[string]int64 {
	t.Helper()
	marks := map[string]int64{}
	for _, name := range a.e.names {
		marks[name] = a.e.clusters[name].API.auditMark(t)
	}
	return marks
}

// writesSince are the write requests each cluster received since marks.
func (a *applyE2E) writesSince(t testing.TB, marks map[string]int64) map[string][]auditEvent {
	t.Helper()
	out := map[string][]auditEvent{}
	for _, name := range a.e.names {
		out[name] = a.e.clusters[name].API.writesSince(t, marks[name])
	}
	return out
}

// requireNoWrites fails for each cluster in names that received a write.
func requireNoWrites(t testing.TB, what string, writes map[string][]auditEvent, names ...string) {
	t.Helper()
	for _, name := range names {
		if ws := writes[name]; len(ws) > 0 {
			var lines []string
			for i, w := range ws {
				if i == 10 {
					lines = append(lines, "...")
					break
				}
				lines = append(lines, w.String())
			}
			t.Errorf("%s: cluster %s received %d write request(s):\n%s", what, name, len(ws), strings.Join(lines, "\n"))
		}
	}
}

// driftCorrected: objects edited and deleted out of band are put back by
// the next apply, which writes only to the cluster that drifted; the
// apply after it sends no write at all, and the real kpt finds nothing to
// do.
func (a *applyE2E) driftCorrected(t *testing.T) {
	apiA := a.e.clusters["A"].API
	apiA.MergePatch(t, "/api/v1/namespaces/apply-a1/configmaps/settings-1", map[string]any{"data": map[string]any{"value": "out-of-band"}})
	const gone = "/api/v1/namespaces/apply-a1/configmaps/settings-2"
	if code, body, err := apiA.do("DELETE", gone, "", nil); err != nil || code != 200 {
		t.Fatalf("DELETE %s: %d %v %s", gone, code, err, body)
	}
	want := a.liveValue(t, "B", "apply-b1", "settings-1")

	marks := a.auditMarks(t)
	r := a.apply(t)
	writes := a.writesSince(t, marks)
	if r.ExitCode != 0 {
		t.Fatalf("apply after drift:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyUnchanged})
	clusterMentions(t, "apply's progress", r.Stderr, "A: the plan has no change, but the cluster differs")
	if len(writes["A"]) == 0 {
		t.Error("the apply that corrects A's drift sent A no write")
	}
	requireNoWrites(t, "the apply that corrects A's drift", writes, "B")
	if got := a.liveValue(t, "A", "apply-a1", "settings-1"); got != want {
		t.Errorf("A's drift was not corrected: settings-1 = %q, want %q", got, want)
	}
	if apiA.Get(t, gone) == nil {
		t.Errorf("%s deleted out of band was not created again", gone)
	}
	t.Logf("correcting the drift: %d write request(s) to A", len(writes["A"]))

	marks = a.auditMarks(t)
	a.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "an apply after the drift was corrected", a.writesSince(t, marks), a.e.names...)
	a.checkPlaced(t)
	a.kptChangesNothing(t)
}
