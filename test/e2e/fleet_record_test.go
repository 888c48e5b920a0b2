//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// Issue 40 on TestFleetLock's clusters: what status and the lock messages
// say about the fleet's record while a run bakes, once it is killed, after
// the rerun that settles it, and on a stale OUT_DIR.

// fleetStatus is one status of an OUT_DIR: -o json with
// --detailed-exitcode (its exit code), and the table.
type fleetStatus struct {
	doc   *v1alpha1.FleetStatus
	exit  int
	table string
}

// status reads out's status, as JSON and as the table, whose rows stay
// within 120 columns.
func (f *fleetLockE2E) status(t *testing.T, out string) fleetStatus {
	t.Helper()
	doc, res := f.e.status(t, out, "--detailed-exitcode")
	table := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, f.e.bin, "status", out, "--kubeconfig", f.e.kubeconfig)
	for _, line := range strings.Split(table.Stdout, "\n") {
		// Table rows start with a context's name or two spaces; a note may
		// be longer.
		row := strings.HasPrefix(line, "CONTEXT") || strings.HasPrefix(line, "  CONTEXT") || slices.ContainsFunc(f.e.names, func(n string) bool {
			return strings.HasPrefix(line, n+" ") || strings.HasPrefix(line, "  "+n+" ")
		})
		if row && len(line) > 120 {
			t.Errorf("a status table row of %d columns:\n%s", len(line), line)
		}
	}
	return fleetStatus{doc: doc, exit: res.ExitCode, table: table.Stdout}
}

// context is one context of the status.
func (s fleetStatus) context(t *testing.T, name string) v1alpha1.ContextStatus {
	t.Helper()
	return statusContext(t, s.doc, name)
}

// runID is the run id of a holder (its last word).
func runID(holder string) string { return holder[strings.LastIndex(holder, " run ")+len(" run "):] }

// outRecord is OUT_DIR's record of one context (.shard-router-fleet.json).
type outRecord struct {
	Serial    int64  `json:"serial"`
	Outcome   string `json:"outcome"`
	SettledBy string `json:"settledBy"`
}

func outRecordOf(t testing.TB, out, ctx string) outRecord {
	t.Helper()
	var rec struct {
		Contexts map[string]outRecord `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(clusterReadFile(t, filepath.Join(out, ".shard-router-fleet.json"))), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Contexts[ctx]
}

// requireInProgress: while the run bakes the canary, status reads from
// the clusters alone that it is in progress: by whom, in which wave, the
// time its bake has left; both contexts are being applied, so status
// --detailed-exitcode exits 2, and nothing tells the user to resume it.
func (f *fleetLockE2E) requireInProgress(t *testing.T, run *runningApply) {
	s := f.status(t, f.base.out)
	if s.exit != 2 {
		t.Errorf("status --detailed-exitcode while a run bakes: exit %d, want 2", s.exit)
	}
	if len(s.doc.Runs) != 1 {
		t.Fatalf("status while a run bakes: runs %+v, want the one baking\n%s", s.doc.Runs, s.table)
	}
	r := s.doc.Runs[0]
	t.Logf("shard-router status (table) while the run bakes:\n%s", s.table)
	left := r.BakeEnds.Sub(s.doc.ReadAt)
	if !strings.Contains(r.Holder, run.holder()) || !slices.Equal(r.Contexts, f.e.names) || r.Gone != "" || r.Wave != "canary" || r.Phase != "baking" ||
		left <= 4*time.Minute || left > 5*time.Minute {
		t.Errorf("the run in progress: %+v (bake left %s); want %s holding A and B, alive, baking wave canary, 4-5m left", r, left, run.holder())
	}
	if ro := s.doc.Rollout; ro == nil || ro.State != v1alpha1.RolloutInProgress || ro.StoppedAt != "canary" {
		t.Errorf("the rollout while its run bakes: %+v, want inProgress in canary", ro)
	}
	for _, ctx := range f.e.names {
		if c := s.context(t, ctx); !c.Record.Applying() || c.InSync() {
			t.Errorf("%s while the run bakes: record %+v, in sync %v; want applying, not in sync", ctx, c.Record, c.InSync())
		}
	}
	clusterMentions(t, "status while a run bakes", s.table, "In progress: "+r.Holder+" holds the locks of A, B since", ": wave canary baking, ",
		"left (until ", "Rollout in progress, in wave canary", "Its run is alive: let it finish", "2 context(s) being applied by a run in progress.")
	if !regexp.MustCompile(`: wave canary baking, [45]m\d+s left`).MatchString(s.table) {
		t.Errorf("status while a run bakes does not say the time its bake has left:\n%s", s.table)
	}
	// (The killed runs of this test are CI jobs named killed-N.)
	for _, never := range []string{"halted", "Killed:", "run killed", " killed "} {
		if strings.Contains(s.table, never) {
			t.Errorf("status calls a live rollout halted or killed (%q):\n%s", never, s.table)
		}
	}
}

// requireKilled: once the run is killed, status says it is gone (its pid
// no longer runs on this host) while its locks still hold, when they free
// themselves, the command that breaks them, and that the rollout was
// killed; --detailed-exitcode exits 2 until a rerun settles it.
func (f *fleetLockE2E) requireKilled(t *testing.T, run *runningApply) {
	s := f.status(t, f.base.out)
	if s.exit != 2 {
		t.Errorf("status --detailed-exitcode after a kill: exit %d, want 2", s.exit)
	}
	if len(s.doc.Runs) != 1 || !strings.Contains(s.doc.Runs[0].Gone, "no longer runs on this host") {
		t.Fatalf("status after a kill: runs %+v, want the killed one, gone\n%s", s.doc.Runs, s.table)
	}
	r := s.doc.Runs[0]
	t.Logf("shard-router status (table) after the kill:\n%s", s.table)
	if ro := s.doc.Rollout; ro == nil || ro.State != v1alpha1.RolloutKilled || ro.StoppedAt != "canary" {
		t.Errorf("the rollout after its run was killed: %+v, want killed in canary", ro)
	}
	for _, ctx := range f.e.names {
		if c := s.context(t, ctx); !c.Record.Killed() {
			t.Errorf("%s after the kill: record %+v, want killed", ctx, c.Record)
		}
	}
	clusterMentions(t, "status after a kill", s.table, "Killed: "+r.Holder+" still holds the locks of A, B, but it is gone (pid",
		"no longer runs on this host", "they free themselves at", "--force-unlock-held-by "+runID(r.Holder)+" --out "+f.base.out,
		"Unfinished rollout: killed in wave canary", "2 context(s) last written by a run that died applying them: apply again.", "run killed")
	if strings.Contains(s.table, "In progress") {
		t.Errorf("status calls a killed run in progress:\n%s", s.table)
	}
}

// requireSettled: after the rerun, ctx's record is settled in the cluster
// and in OUT_DIR, at the killed run's serial, and status, its table and
// --detailed-exitcode agree that the fleet is in sync.
func (f *fleetLockE2E) requireSettled(t *testing.T, ctx, serial string) {
	t.Helper()
	obj := f.e.clusters[ctx].API.Get(t, "/apis/coordination.k8s.io/v1/namespaces/default/leases/"+leaseName(ctx))
	l := parseLease(obj)
	if l.Holder != "" || l.Outcome != "applied" || l.Serial != serial || clusterAnnotation(obj, "shardrouter.dev/settled-by") == "" {
		t.Errorf("%s: Lease after the rerun: %+v, settled by %q; want free, applied at serial %s, settled", ctx, l, clusterAnnotation(obj, "shardrouter.dev/settled-by"), serial)
	}
	if rec := outRecordOf(t, f.base.out, ctx); rec.Outcome != "applied" || rec.SettledBy == "" || serial != jsonInt(rec.Serial) {
		t.Errorf("%s: OUT_DIR's record after the rerun: %+v; want applied at serial %s, settled", ctx, rec, serial)
	}
	s := f.status(t, f.base.out)
	if s.exit != 0 || len(s.doc.Runs) > 0 || s.doc.Rollout != nil {
		t.Errorf("status --detailed-exitcode after the rerun: exit %d, runs %+v, rollout %+v; want 0, none, none\n%s", s.exit, s.doc.Runs, s.doc.Rollout, s.table)
	}
	if c := s.context(t, ctx); c.Record == nil || c.Record.Outcome != "applied" || c.Record.SettledBy == "" || !c.InSync() {
		t.Errorf("%s: status after the rerun: %+v", ctx, c.Record)
	}
	clusterMentions(t, "status after the rerun", s.table, "2 of 2 contexts in sync.", ctx+": settled by ")
	for _, never := range []string{"Killed:", "run killed", " killed ", " applying ", "Unfinished rollout", "In progress"} {
		if strings.Contains(s.table, never) {
			t.Errorf("status after the rerun still says %q:\n%s", never, s.table)
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// countLines counts the lines of out that hold every one of parts.
func countLines(out string, parts ...string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			n++
		}
	}
	return n
}

// unlockCommand is the command a lock error offers to break the locks.
var unlockCommand = regexp.MustCompile(`shard-router apply --force-unlock-held-by (\S+) --out (\S+) --kubeconfig (\S+)`)

// requireStaleStatus: status on a stale OUT_DIR says so per context, with
// the serials and the last writer, does not report that writer's changes
// as drift, extras or not applied (its objects are the cluster's, with
// their health), and exits 2 with --detailed-exitcode; the current OUT_DIR
// is in sync.
func (f *fleetLockE2E) requireStaleStatus(t *testing.T, stale, current, lastWriter string, moved []string) {
	s := f.status(t, stale)
	if s.exit != 2 {
		t.Errorf("status --detailed-exitcode on a stale OUT_DIR: exit %d, want 2\n%s", s.exit, s.table)
	}
	for _, ctx := range f.e.names {
		c := s.context(t, ctx)
		if m := c.OutDirMismatch; m == nil || m.State != v1alpha1.OutDirStale || !strings.Contains(m.Message, `context "`+ctx+`": OUT_DIR is stale`) ||
			!strings.Contains(m.Message, lastWriter) || !strings.Contains(m.Message, "cluster serial ") {
			t.Errorf("%s on a stale OUT_DIR: mismatch %+v", ctx, m)
		}
		for _, o := range c.Objects {
			if len(o.Drift) > 0 || o.Inventory != v1alpha1.ObjectApplied {
				t.Errorf("%s on a stale OUT_DIR: %s reported drift %v, inventory %s: the other run's change as this OUT_DIR's", ctx, o.ObjectRef, o.Drift, o.Inventory)
			}
		}
	}
	// A holds what the other run moved there, as the cluster lists it.
	a := s.context(t, "A")
	for _, p := range moved {
		name := p[strings.LastIndex(p, "/")+1:]
		if !slices.ContainsFunc(a.Objects, func(o v1alpha1.ObjectStatus) bool { return o.Name == name && o.Status == v1alpha1.StatusCurrent }) {
			t.Errorf("A on a stale OUT_DIR does not list %s (Current), which its cluster holds: %+v", p, a.Objects)
		}
	}
	t.Logf("shard-router status (table) on a stale OUT_DIR:\n%s", s.table)
	clusterMentions(t, "status on a stale OUT_DIR", s.table, "OUT_DIR is stale for 2 context(s): another run applied since.", "stale OUT_DIR", "-        -      -")
	if cur := f.status(t, current); cur.exit != 0 {
		t.Errorf("status --detailed-exitcode on the current OUT_DIR: exit %d, want 0\n%s", cur.exit, cur.table)
	}
}
