package status

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// A context whose kube context reaches another cluster than OUT_DIR
// recorded is refused, naming both; so is one whose cluster cannot say
// who it is while OUT_DIR recorded who it was. Without a recorded
// identity anything goes.
func TestCheckIdentity(t *testing.T) {
	rec := &outdir.FleetContext{Serial: 3, ClusterUID: "uid-a", Server: "https://a:6443"}
	for _, tc := range []struct {
		name  string
		rec   *outdir.FleetContext
		id    cluster.Identity
		idErr error
		want  []string // "" : no error
	}{
		{name: "same cluster", rec: rec, id: cluster.Identity{UID: "uid-a", Server: "https://a.example:6443"}},
		{name: "no record", id: cluster.Identity{UID: "uid-b"}},
		{name: "no recorded identity", rec: &outdir.FleetContext{Serial: 1}, id: cluster.Identity{UID: "uid-b"}},
		{name: "no recorded identity, unreadable", rec: &outdir.FleetContext{Serial: 1}, idErr: errors.New("forbidden")},
		{name: "another cluster", rec: rec, id: cluster.Identity{UID: "uid-b", Server: "https://b:6443"},
			want: []string{`context "eu-shard-00" reaches another cluster: OUT_DIR recorded cluster UID uid-a (server https://a:6443), the kube context now reaches cluster UID uid-b at https://b:6443;`, "--cluster-replaced eu-shard-00"}},
		{name: "unreadable", rec: rec, id: cluster.Identity{Server: "https://b:6443"}, idErr: errors.New("namespaces \"kube-system\" is forbidden"),
			want: []string{`context "eu-shard-00": cannot tell which cluster it reaches (OUT_DIR recorded cluster UID uid-a, server https://a:6443)`, "is forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkIdentity("eu-shard-00", tc.rec, tc.id, tc.idErr)
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("error %v, want one: %v", err, len(tc.want) > 0)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The record is read with two GETs (the kube-system Namespace and the
// Lease), the lock shown only while held, times in UTC to the second.
func TestContextRecordFromCluster(t *testing.T) {
	now := time.Date(2026, 8, 3, 11, 15, 10, 0, time.UTC)
	acquired := metav1.NewMicroTime(now.Add(-5*time.Second + 250*time.Millisecond))
	holder := "bob@runner-2 pid 99 run x1y2z3"
	ks := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "uid-a"}}
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: lease.Name("shop"), Annotations: map[string]string{
			lease.SerialAnnotation: "9", lease.AppliedByAnnotation: "bob@runner-2 pid 99", lease.AppliedAtAnnotation: "2026-08-03T11:15:05Z",
			lease.OutcomeAnnotation: lease.OutcomeApplying, lease.ClusterAnnotation: "uid-a", lease.DigestAnnotation: "sha256:ab",
			lease.OwnerNameAnnotation: "package shop"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &acquired, RenewTime: &acquired}}
	for _, tc := range []struct {
		name   string
		objs   []runtime.Object
		now    time.Time
		serial int64
		uid    string
		lock   bool
		// idErr: the kube-system Namespace is not found, said in the record.
		idErr bool
	}{
		{name: "no Lease, no identity", idErr: true},
		{name: "identity only", objs: []runtime.Object{ks}, uid: "uid-a"},
		{name: "held lock", objs: []runtime.Object{ks, held}, now: now, serial: 9, uid: "uid-a", lock: true},
		{name: "expired lock", objs: []runtime.Object{ks, held}, now: now.Add(time.Minute), serial: 9, uid: "uid-a"},
		{name: "Lease only: the recorded identity", objs: []runtime.Object{held}, now: now, serial: 9, uid: "uid-a", lock: true, idErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.objs...)
			ctx := context.Background()
			id, idErr := cluster.IdentityOf(ctx, cs, "https://a:6443")
			st, leaseErr := lease.Read(ctx, cs.CoordinationV1(), "default", "shop")
			if leaseErr != nil {
				t.Fatal(leaseErr)
			}
			r := contextRecord(st, nil, id, idErr, tc.now)
			if gets := len(cs.Actions()); gets != 2 {
				t.Errorf("%d requests, want 2", gets)
			}
			if r == nil {
				t.Fatal("no record")
			}
			if r.Serial != tc.serial || r.ClusterUID != tc.uid || (r.Lock != nil) != tc.lock || r.Server != "https://a:6443" {
				t.Errorf("serial %d, cluster %q at %q, lock %+v; want %d, %q, lock %v", r.Serial, r.ClusterUID, r.Server, r.Lock, tc.serial, tc.uid, tc.lock)
			}
			if got := strings.Contains(r.Error, "reading the cluster's identity (Namespace kube-system) at https://a:6443"); got != tc.idErr {
				t.Errorf("record error %q, want the identity's error: %v", r.Error, tc.idErr)
			}
			if tc.serial > 0 && (r.AppliedBy != "bob@runner-2 pid 99" || r.Outcome != "applying" || r.Digest != "sha256:ab" || r.OwnerName != "package shop" ||
				!r.AppliedAt.Equal(time.Date(2026, 8, 3, 11, 15, 5, 0, time.UTC))) {
				t.Errorf("record %+v", r)
			}
			if l := r.Lock; l != nil {
				want := now.Add(-5 * time.Second)
				if l.Holder != holder || !l.Since.Equal(want) || !l.Expires.Equal(want.Add(lease.Duration)) || l.Since.Location() != time.UTC {
					t.Errorf("lock %+v, want %s since %s", l, holder, want)
				}
			}
		})
	}
}

// A cluster without the Lease whose identity was not read has no record.
func TestContextRecordNone(t *testing.T) {
	if r := contextRecord(&lease.State{}, nil, cluster.Identity{Server: "https://a:6443"}, nil, time.Now()); r != nil {
		t.Errorf("record %+v, want none", r)
	}
}

// A Lease or identity that cannot be read is said in the record; it does
// not fail the context.
func TestContextRecordErrors(t *testing.T) {
	r := contextRecord(nil, errors.New("reading Lease default/shard-router.shop: forbidden"), cluster.Identity{Server: "https://a:6443"},
		errors.New("reading the cluster's identity: forbidden"), time.Now())
	if r == nil || !strings.Contains(r.Error, "identity: forbidden; reading Lease") || r.Server != "https://a:6443" {
		t.Errorf("record %+v", r)
	}
}

// An unfinished rollout in OUT_DIR is summarised with the commands that
// resume it and roll it back; none is nil.
func TestRolloutSummary(t *testing.T) {
	out := t.TempDir()
	d := &outdir.OutDir{Path: out, Given: "out"}
	r, err := outdir.OpenRollout(d)
	if err != nil {
		t.Fatal(err)
	}
	if s := rolloutSummary(r, "out"); s != nil {
		t.Fatalf("no rollout recorded, summary %+v", s)
	}
	if err := os.MkdirAll(filepath.Join(out, "eu-shard-00"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "eu-shard-00", outdir.RGFile), []byte("kind: ResourceGroup\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return r.Save("eu-shard-00", "canary", []string{"canary", "eu"}) },
		func() error { return r.MarkBaked("canary") },
		func() error { return r.Save("eu-shard-01", "eu", []string{"canary", "eu"}) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	r, err = outdir.OpenRollout(d)
	if err != nil {
		t.Fatal(err)
	}
	s := rolloutSummary(r, "out")
	if s == nil {
		t.Fatal("no summary of the recorded rollout")
	}
	if strings.Join(s.Waves, ",") != "canary,eu" || strings.Join(s.Baked, ",") != "canary" || len(s.Contexts) != 2 ||
		!s.Contexts[0].Previous || s.Contexts[1].Previous || s.Contexts[1].Wave != "eu" {
		t.Errorf("summary %+v", s)
	}
	if s.StoppedAt != "eu" || s.State != "halted" || strings.Join(s.Left, ",") != "eu" {
		t.Errorf("stopped at %q (%s), left %q: want halted in eu, eu left", s.StoppedAt, s.State, s.Left)
	}
	// A run paused before a wave that it never started (--until-wave).
	paused, err := outdir.OpenRollout(d)
	if err != nil {
		t.Fatal(err)
	}
	paused.Contexts = paused.Contexts[:1]
	if ps := rolloutSummary(paused, "out"); ps.StoppedAt != "eu" || ps.State != "paused" {
		t.Errorf("paused before eu: stopped at %q (%s)", ps.StoppedAt, ps.State)
	}
	if s.Resume != "shard-router apply PKG --out out" || s.Rollback != "shard-router apply --rollback --out out" {
		t.Errorf("resume %q, rollback %q", s.Resume, s.Rollback)
	}
}

// The runs that hold locks, from the contexts' records, and how the
// unfinished rollout stands: in progress while a live run holds a lock
// (in the wave it recorded), killed while a record says a dead run was
// applying, else as OUT_DIR recorded it.
func TestDescribeRuns(t *testing.T) {
	now := time.Date(2026, 12, 2, 19, 32, 0, 0, time.UTC)
	bob := "bob@elsewhere pid 7 run x1y2z3"
	lock := func(renewed time.Duration, wave, gone string) *v1alpha1.LockState {
		return &v1alpha1.LockState{Holder: bob, Since: now.Add(-time.Minute), Renewed: now.Add(-renewed), Expires: now.Add(30*time.Second - renewed),
			Wave: wave, Phase: "baking", BakeEnds: now.Add(4 * time.Minute), Gone: gone}
	}
	rollout := func() *v1alpha1.RolloutSummary {
		return &v1alpha1.RolloutSummary{Waves: []string{"canary", "rest"}, StoppedAt: "canary", State: v1alpha1.RolloutHalted, Left: []string{"canary", "rest"}}
	}
	for _, tc := range []struct {
		name    string
		records []*v1alpha1.ContextRecord
		state   string
		runs    int
		wave    string
		gone    bool
	}{
		{"a live run baking", []*v1alpha1.ContextRecord{{Serial: 3, Outcome: "applying", Lock: lock(2*time.Second, "", "")}, {Serial: 4, Outcome: "applying", Lock: lock(time.Second, "rest", "")}},
			v1alpha1.RolloutInProgress, 1, "rest", false},
		{"its holder gone, its locks not expired", []*v1alpha1.ContextRecord{{Serial: 3, Outcome: "applying", Lock: lock(25*time.Second, "canary", "it has not renewed its lock for 25s")}},
			v1alpha1.RolloutKilled, 1, "canary", true},
		{"a dead run's record, its locks expired", []*v1alpha1.ContextRecord{{Serial: 3, Outcome: "applying"}, {Serial: 4, Outcome: "applied"}},
			v1alpha1.RolloutKilled, 0, "", false},
		{"the run ended", []*v1alpha1.ContextRecord{{Serial: 3, Outcome: "failed"}, nil}, v1alpha1.RolloutHalted, 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := &v1alpha1.FleetStatus{Rollout: rollout()}
			for i, r := range tc.records {
				doc.Contexts = append(doc.Contexts, v1alpha1.ContextStatus{Name: string(rune('A' + i)), Record: r})
			}
			describeRuns(doc, "out", "", now)
			if doc.Rollout.State != tc.state || len(doc.Runs) != tc.runs || !doc.ReadAt.Equal(now) {
				t.Fatalf("state %q, runs %+v, read at %s; want %q, %d run(s)", doc.Rollout.State, doc.Runs, doc.ReadAt, tc.state, tc.runs)
			}
			if tc.runs == 0 {
				return
			}
			run := doc.Runs[0]
			if run.Wave != tc.wave || (run.Gone != "") != tc.gone || run.Unlock != "shard-router apply --force-unlock-held-by x1y2z3 --out out" ||
				len(run.Contexts) != len(tc.records) || !run.Expires.Equal(now.Add(30*time.Second-minRenewed(tc.records))) {
				t.Errorf("run %+v", run)
			}
			if tc.state == v1alpha1.RolloutInProgress && (doc.Rollout.StoppedAt != tc.wave || strings.Join(doc.Rollout.Left, ",") != "rest") {
				t.Errorf("in progress in %q, left %q; want %s, rest", doc.Rollout.StoppedAt, doc.Rollout.Left, tc.wave)
			}
		})
	}
}

func minRenewed(recs []*v1alpha1.ContextRecord) time.Duration {
	var latest time.Time
	for _, r := range recs {
		if r.Lock.Renewed.After(latest) {
			latest = r.Lock.Renewed
		}
	}
	return time.Date(2026, 12, 2, 19, 32, 0, 0, time.UTC).Sub(latest)
}

// OUT_DIR's serial against the cluster's, as apply compares them: stale,
// older, or nothing to say.
func TestOutDirMismatch(t *testing.T) {
	st := &lease.State{Found: true, Record: lease.Record{Serial: 5, AppliedBy: "bob@runner-2 pid 7", Outcome: lease.OutcomeApplied}}
	if m := outDirMismatch("A", "default", "shop-a", &outdir.FleetContext{Serial: 5}, st); m != nil {
		t.Errorf("equal serials: %+v", m)
	}
	if m := outDirMismatch("A", "default", "shop-a", nil, &lease.State{}); m != nil {
		t.Errorf("no record on either side: %+v", m)
	}
	if m := outDirMismatch("A", "default", "shop-a", nil, nil); m != nil {
		t.Errorf("the Lease not read: %+v", m)
	}
	m := outDirMismatch("A", "default", "shop-a", &outdir.FleetContext{Serial: 2}, st)
	if m == nil || m.State != v1alpha1.OutDirStale || m.OutDirSerial != 2 ||
		!strings.HasPrefix(m.Message, `context "A": OUT_DIR is stale: another run wrote the cluster since OUT_DIR recorded it (cluster serial 5, OUT_DIR serial 2; last written by bob@runner-2 pid 7`) ||
		!strings.Contains(m.Message, "not compared with OUT_DIR") {
		t.Errorf("stale: %+v", m)
	}
	if m := outDirMismatch("A", "default", "shop-a", &outdir.FleetContext{Serial: 9}, st); m == nil || m.State != v1alpha1.OutDirOlder {
		t.Errorf("older: %+v", m)
	}
}
