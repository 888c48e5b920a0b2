package lease

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The record round-trips through the Lease's annotations, who the run
// acted as included; a record without one leaves no annotation.
func TestRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 8, 3, 10, 15, 0, 0, time.UTC)
	for _, rec := range []Record{
		{Serial: 3, Digest: "sha256:ab", AppliedBy: "ci@runner pid 7", AppliedAt: at, AppliedAs: "team-a (groups: deployers)",
			Outcome: OutcomeApplied, ClusterUID: "uid", Owner: "o", OwnerName: "package p"},
		{Serial: 1, AppliedBy: "ci@runner pid 7", AppliedAt: at, Outcome: OutcomeApplying},
	} {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "shard-router.inv", Namespace: "team-a",
			Annotations: map[string]string{AppliedAsAnnotation: "someone before"}}}
		setRecord(l, rec)
		st, err := stateOf(l)
		if err != nil {
			t.Fatal(err)
		}
		if st.Record != rec {
			t.Errorf("read back %+v, want %+v", st.Record, rec)
		}
		if _, ok := l.Annotations[AppliedAsAnnotation]; ok != (rec.AppliedAs != "") {
			t.Errorf("annotation %s present %v, want %v", AppliedAsAnnotation, ok, rec.AppliedAs != "")
		}
	}
}
