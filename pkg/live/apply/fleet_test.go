package apply

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	kptfilev1 "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	kptlive "github.com/kptdev/kpt/pkg/live"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// fleetRun is a run over one context "A" whose OUT_DIR records entry
// (nil: nothing) under owner "mine", and whose cluster has the Lease st
// and an inventory holding live objects.
func fleetRun(t *testing.T, entry *outdir.FleetContext, st *lease.State, live int, hasOld bool, opts Options) (*run, *target) {
	t.Helper()
	od, err := outdir.OpenOutDir(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	fl, err := newFleet(od)
	if err != nil {
		t.Fatal(err)
	}
	fl.record.Owner = "mine"
	if entry != nil {
		fl.record.Contexts["A"] = entry
	}
	info, err := kptlive.ToInventoryInfo(kptfilev1.Inventory{Namespace: "default", Name: "demo-a", InventoryID: "id"})
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{name: "A", pkg: &cluster.Package{Context: "A", Inventory: info}, lease: st,
		identity: cluster.Identity{UID: "uid-a", Server: "https://a"}, report: v1alpha1.ContextApply{Name: "A"}}
	for i := range live {
		tg.live.Objects = append(tg.live.Objects, object.ObjMetadata{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "team", Name: string(rune('a' + i))})
	}
	tg.live.Found = live > 0
	if hasOld {
		tg.old = &cluster.Package{Context: "A"}
	}
	r := &run{opts: opts, fleet: fl, report: newReport(false), log: &progress{}, targets: []*target{tg}}
	return r, tg
}

func leaseWith(serial int64, owner string) *lease.State {
	return &lease.State{Found: true, Record: lease.Record{Serial: serial, Owner: owner, OwnerName: "package other",
		AppliedBy: "bob@runner-2 pid 7", AppliedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Outcome: lease.OutcomeApplied}}
}

func TestCheckFleet(t *testing.T) {
	held := leaseWith(4, "mine")
	held.Holder, held.Since, held.Renewed = "bob@runner-2 pid 7 run abc", time.Now(), time.Now()
	ownLock := leaseWith(4, "mine")
	ownLock.Holder, ownLock.Since, ownLock.Renewed = "this run", time.Now(), time.Now()
	cases := []struct {
		name   string
		entry  *outdir.FleetContext
		st     *lease.State
		live   int
		hasOld bool
		opts   Options
		// want is a part of the refusal; "" when the context may be
		// written.
		want    string
		adopted bool
	}{
		{name: "first apply, empty cluster", st: &lease.State{}},
		{name: "first apply with this release: OUT_DIR has the package", st: &lease.State{}, live: 3, hasOld: true},
		{name: "first apply into an inventory another applied", st: &lease.State{}, live: 3,
			want: `context "A": inventory default/demo-a already holds 3 object(s) (such as ConfigMap team/a) that this OUT_DIR never applied`},
		{name: "serials agree", entry: &outdir.FleetContext{Serial: 4, ClusterUID: "uid-a"}, st: leaseWith(4, "mine"), live: 3, hasOld: true},
		{name: "another run wrote since", entry: &outdir.FleetContext{Serial: 4, ClusterUID: "uid-a"}, st: leaseWith(6, "mine"), live: 3, hasOld: true,
			want: `context "A": OUT_DIR is stale: another run wrote the cluster since OUT_DIR recorded it (cluster serial 6, OUT_DIR serial 4; last written by bob@runner-2 pid 7 at 2026-12-01T10:00:00Z, applied). Fetch the current OUT_DIR`},
		{name: "a stale OUT_DIR of before this release", st: leaseWith(1, "mine"), live: 3, hasOld: true,
			want: "cluster serial 1, OUT_DIR serial 0"},
		{name: "the cluster's record went back", entry: &outdir.FleetContext{Serial: 4}, st: &lease.State{}, live: 3, hasOld: true,
			want: "the cluster's record is older than OUT_DIR's (cluster serial 0, OUT_DIR serial 4): its Lease default/shard-router.demo-a was deleted"},
		{name: "another package owns the inventory", entry: &outdir.FleetContext{Serial: 4}, st: leaseWith(4, "theirs"), live: 3, hasOld: true,
			want: `context "A": inventory default/demo-a belongs to another package: package other (owner id theirs; serial 4, last applied by bob@runner-2 pid 7`},
		{name: "another owner's empty inventory is no loss", entry: &outdir.FleetContext{Serial: 4}, st: leaseWith(4, "theirs")},
		{name: "another cluster behind the context", entry: &outdir.FleetContext{Serial: 4, ClusterUID: "uid-b", Server: "https://b"}, st: leaseWith(4, "mine"), live: 3, hasOld: true,
			want: `context "A" reaches another cluster: OUT_DIR recorded cluster UID uid-b (kube-system Namespace, server https://b), the kube context now reaches cluster UID uid-a at https://a: check the kubeconfig; if the cluster was rebuilt or replaced on purpose, pass --cluster-replaced A`},
		{name: "a cluster replaced on purpose is a first apply", entry: &outdir.FleetContext{Serial: 4, ClusterUID: "uid-b"}, st: &lease.State{},
			opts: Options{ClusterReplaced: []string{"A"}}},
		{name: "a cluster replaced on purpose that holds another's objects", entry: &outdir.FleetContext{Serial: 4, ClusterUID: "uid-b"}, st: &lease.State{}, live: 2,
			opts: Options{ClusterReplaced: []string{"A"}}, want: "already holds 2 object(s)"},
		{name: "stale, adopted", entry: &outdir.FleetContext{Serial: 4}, st: leaseWith(6, "mine"), live: 3, hasOld: true,
			opts: Options{AdoptClusterState: true}, adopted: true},
		{name: "another owner, adopted", entry: &outdir.FleetContext{Serial: 4}, st: leaseWith(4, "theirs"), live: 3, hasOld: true,
			opts: Options{AdoptClusterState: true}, adopted: true},
		{name: "locked by another run", entry: &outdir.FleetContext{Serial: 4}, st: held, live: 3, hasOld: true,
			want: `context "A" is locked by another run: bob@runner-2 pid 7 run abc holds Lease default/shard-router.demo-a since`},
		{name: "locked by another run: the way out breaks its locks only", entry: &outdir.FleetContext{Serial: 4}, st: held, live: 3, hasOld: true,
			want: `wait for that run to finish, or apply again with --lock-timeout to wait for it; if it is gone and cannot release it: shard-router apply --force-unlock-held-by abc --out OUT_DIR`},
		{name: "locked by another run, --lock-timeout: checked under the lock", entry: &outdir.FleetContext{Serial: 3}, st: held, live: 3, hasOld: true,
			opts: Options{LockTimeout: time.Minute}},
		{name: "locked by this run: the rollback after a halt reads it", entry: &outdir.FleetContext{Serial: 4}, st: ownLock, live: 3, hasOld: true},
		{name: "locked by another run, adopting", entry: &outdir.FleetContext{Serial: 4}, st: held, live: 3, hasOld: true,
			opts: Options{AdoptClusterState: true, LockTimeout: time.Minute}, want: "--adopt-cluster-state takes the cluster's state only while no run writes it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, tg := fleetRun(t, c.entry, c.st, c.live, c.hasOld, c.opts)
			if c.st.Holder == "this run" {
				c.st.Holder = r.fleet.me.String()
			}
			refused := r.checkFleet()
			if refused != (c.want != "") {
				t.Fatalf("refused = %v, want %v; errors %q", refused, c.want != "", r.report.Errors)
			}
			if c.want != "" && (len(r.report.Errors) != 1 || !strings.Contains(r.report.Errors[0], c.want)) {
				t.Fatalf("errors %q, want one containing %q", r.report.Errors, c.want)
			}
			if tg.adopted != c.adopted {
				t.Errorf("adopted = %v, want %v", tg.adopted, c.adopted)
			}
			if c.adopted && (len(r.report.Warnings) != 1 || !strings.Contains(r.report.Warnings[0], "--adopt-cluster-state takes the cluster's inventory as the previous state")) {
				t.Errorf("warnings %q, want the adopted finding", r.report.Warnings)
			}
		})
	}
}

// The move guard on the clusters: an object a cluster's inventory holds
// that the new split places in another context is a move, refused without
// allowMoves, where OUT_DIR does not show it (the plan judged those it
// shows) or where the cluster's inventory was adopted as the previous
// state.
func TestGuardLiveMoves(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "namespace": "team"}}}
	for _, tc := range []struct {
		name                       string
		adopted, inOld, allowMoves bool
		want                       string
	}{
		{name: "OUT_DIR shows it: the plan judged it", inOld: true},
		{name: "only the cluster holds it", want: `context "A": its cluster's inventory holds ConfigMap team/a, which this package places in context(s) B: a move that OUT_DIR/A does not show`},
		{name: "adopted: OUT_DIR is not the previous state", adopted: true, inOld: true, want: "which this package places in context(s) B"},
		{name: "allowMoves", allowMoves: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, a := fleetRun(t, nil, &lease.State{}, 1, false, Options{})
			a.adopted = tc.adopted
			if tc.inOld {
				a.old = &cluster.Package{Context: "A", Objects: []*unstructured.Unstructured{cm}}
			}
			b := &target{name: "B", pkg: &cluster.Package{Context: "B"}}
			r.targets = append(r.targets, b)
			r.cfg = &function.Engine{Config: &config.Config{Policy: config.Policy{AllowMoves: tc.allowMoves}}}
			r.guardLiveMoves(placement{refOf(a.live.Objects[0]): {"B"}})
			switch {
			case tc.want == "" && len(r.report.Errors) > 0:
				t.Errorf("errors %q, want none", r.report.Errors)
			case tc.want != "" && (len(r.report.Errors) != 1 || !strings.Contains(r.report.Errors[0], tc.want)):
				t.Errorf("errors %q, want one containing %q", r.report.Errors, tc.want)
			}
		})
	}
}

// Contexts one run holds are refused in one error naming them all, with
// the command that breaks that run's locks and no other's; another
// holder gets its own error.
func TestCheckFleetOneErrorPerHolder(t *testing.T) {
	heldBy := func(holder string) *lease.State {
		st := leaseWith(4, "mine")
		st.Holder, st.Since, st.Renewed = holder, time.Now(), time.Now()
		return st
	}
	r, a := fleetRun(t, &outdir.FleetContext{Serial: 4}, heldBy("bob@runner-2 pid 7 run abc"), 3, true, Options{Kubeconfig: "kc"})
	info, err := kptlive.ToInventoryInfo(kptfilev1.Inventory{Namespace: "default", Name: "demo-b", InventoryID: "id-b"})
	if err != nil {
		t.Fatal(err)
	}
	b := &target{name: "B", pkg: &cluster.Package{Context: "B", Inventory: info}, lease: heldBy("bob@runner-2 pid 7 run abc"), identity: a.identity}
	c := &target{name: "C", pkg: &cluster.Package{Context: "C", Inventory: info}, lease: heldBy("carol@laptop pid 9 run xyz"), identity: a.identity}
	r.targets = append(r.targets, b, c)
	if !r.checkFleet() {
		t.Fatal("not refused")
	}
	if len(r.report.Errors) != 2 {
		t.Fatalf("%d errors, want 2 (one per holder): %q", len(r.report.Errors), r.report.Errors)
	}
	for _, want := range []string{`contexts "A", "B" are locked by another run: bob@runner-2 pid 7 run abc holds their Leases default/shard-router.demo-a, default/shard-router.demo-b`,
		"they free themselves at", "shard-router apply --force-unlock-held-by abc --out OUT_DIR --kubeconfig kc"} {
		if !strings.Contains(r.report.Errors[0], want) {
			t.Errorf("the first error lacks %q:\n%s", want, r.report.Errors[0])
		}
	}
	if !strings.Contains(r.report.Errors[1], `context "C" is locked by another run: carol@laptop pid 9 run xyz`) || !strings.Contains(r.report.Errors[1], "--force-unlock-held-by xyz") {
		t.Errorf("the second error: %s", r.report.Errors[1])
	}
}

// A mass-deletion warning is worded by what happened: "pruned" once the
// context finished, with how many moved; "would prune" otherwise.
func TestSayMassPrunes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status v1alpha1.ApplyStatus
		done   bool
		want   string
	}{
		{"applied", v1alpha1.ApplyApplied, true, `context "A": pruned 3 of the 3 objects its ResourceGroup default/demo-a held in the cluster (such as ConfigMap team/a); 1 of them moved to other contexts, pruned here once their new copies were Current: past the mass-deletion guard`},
		{"failed", v1alpha1.ApplyFailed, false, `context "A": this apply would prune 3 of the 3 objects`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, a := fleetRun(t, nil, &lease.State{}, 3, true, Options{})
			r.report.Warnings = []string{"other", `context "A": this apply would prune 3 of the 3 objects its ResourceGroup default/demo-a holds in the cluster (such as ConfigMap team/a): the mass-deletion guard (allowed by spec.allowMassPrune or --allow-mass-prune)`}
			r.liveMassWarned = map[string]int{"A": 1}
			a.done, a.report.Status = tc.done, tc.status
			a.handoffs = []v1alpha1.Handoff{{Ref: refOf(a.live.Objects[1]), From: "A", To: []string{"B"}}}
			r.sayMassPrunes()
			if r.report.Warnings[0] != "other" || !strings.HasPrefix(r.report.Warnings[1], tc.want) {
				t.Errorf("warnings %q, want the second to start %q", r.report.Warnings, tc.want)
			}
		})
	}
}
