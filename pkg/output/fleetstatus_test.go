package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func objStatus(r v1alpha1.ObjectRef, status, inventory string, drift ...string) v1alpha1.ObjectStatus {
	return v1alpha1.ObjectStatus{ObjectRef: r, Status: status, Inventory: inventory, Drift: drift}
}

// sampleStatus has every state: a context in sync, one with a drifted, a
// missing, an extra, a never-applied, an in-progress and an unreadable
// object, one whose inventory is missing, and an unreachable one.
func sampleStatus() *v1alpha1.FleetStatus {
	inv := func(name, state string) v1alpha1.InventoryState {
		return v1alpha1.InventoryState{Namespace: "default", Name: name, State: state}
	}
	inProgress := objStatus(ref("apps", "Deployment", "payments", "api"), "InProgress", v1alpha1.ObjectApplied)
	inProgress.Message = "Replicas: 1/3"
	unreadable := objStatus(ref("example.com", "Widget", "payments", "w"), v1alpha1.StatusUnknown, v1alpha1.ObjectApplied)
	unreadable.Error = "widgets.example.com is forbidden: User cannot list"
	return &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Contexts: []v1alpha1.ContextStatus{
		{Name: "eu-shard-00", Reachable: true, Inventory: inv("shop-eu-shard-00", v1alpha1.InventoryFound), Objects: []v1alpha1.ObjectStatus{
			objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
			objStatus(ref("", "Namespace", "", "payments"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
		}},
		{Name: "eu-shard-01", Reachable: true, Inventory: inv("shop-eu-shard-01", v1alpha1.InventoryFound), Objects: []v1alpha1.ObjectStatus{
			objStatus(ref("", "ConfigMap", "payments", "settings"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied, "data.color", `data["app.properties"]`),
			objStatus(ref("", "ConfigMap", "payments", "old"), v1alpha1.StatusCurrent, v1alpha1.ObjectExtra),
			objStatus(ref("", "Secret", "payments", "token"), v1alpha1.StatusNotFound, v1alpha1.ObjectApplied),
			objStatus(ref("", "Service", "payments", "new"), v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied),
			objStatus(ref("", "Service", "payments", "web"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
			inProgress, unreadable,
		}},
		{Name: "eu-shard-02", Reachable: true, Inventory: inv("shop-eu-shard-02", v1alpha1.InventoryMissing), Objects: []v1alpha1.ObjectStatus{
			objStatus(ref("", "Namespace", "", "search"), v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied),
		}},
		{Name: "eu-shard-03", Error: "Get \"https://10.0.0.3:6443/api\": dial tcp 10.0.0.3:6443: connect: connection refused",
			Inventory: inv("shop-eu-shard-03", v1alpha1.InventoryUnknown)},
	}}
}

func TestStatusTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := RenderStatusTable(&b, sampleStatus()); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.table", b.Bytes())
	// Every object that needs attention is named; the others are not.
	for _, c := range sampleStatus().Contexts {
		for _, o := range c.Objects {
			if named := strings.Contains(b.String(), "  "+o.ObjectRef.String()+" "); named != o.NeedsAttention() {
				t.Errorf("%s in %s: named %v, needs attention %v", o.ObjectRef, c.Name, named, o.NeedsAttention())
			}
		}
	}
}

func TestStatusMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := RenderStatusMarkdown(&b, sampleStatus()); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.md", b.Bytes())
	md := b.String()
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") || strings.Count(md, "<details>") != 2 {
		t.Errorf("want 2 balanced <details> (the contexts that need attention):\n%s", md)
	}
	if !strings.Contains(md, ":no_entry: `eu-shard-03` is **unreachable**") {
		t.Error("the unreachable context is not called out")
	}
}

func TestStatusMarkdownInSync(t *testing.T) {
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Contexts: sampleStatus().Contexts[:1]}
	var b bytes.Buffer
	if err := RenderStatusMarkdown(&b, s); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); !strings.Contains(md, "**1 of 1 contexts in sync.**") || strings.Contains(md, ":warning:") ||
		strings.Contains(md, "<details>") || !strings.Contains(md, "| `eu-shard-00` | in sync | found | 2 | 2 | 0 | 0 | 0 | 0 |") {
		t.Errorf("markdown:\n%s", md)
	}
}

func TestStatusJSONRoundTrip(t *testing.T) {
	s := sampleStatus()
	var b bytes.Buffer
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.FleetStatus
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("round trip:\n%+v\n%+v", back, *s)
	}
	if !strings.Contains(b.String(), `"drift": [
            "data.color",`) || !strings.Contains(b.String(), `"drift": false`) {
		t.Errorf("drift is not false or the list of fields:\n%s", b.String())
	}
}

// A context whose engine keeps the inventory (a split for Argo CD): every
// format says the extras are not known, keeps the extra and not-applied
// columns with "unknown" in them, and never calls it in sync; an object
// that needs attention for its drift is still listed.
func TestStatusEngineKeepsInventory(t *testing.T) {
	note := "inventory extras not known for argocd: Argo CD keeps what it applied"
	ok := objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectInventoryUnknown)
	drifted := objStatus(ref("", "ConfigMap", "payments", "b"), v1alpha1.StatusCurrent, v1alpha1.ObjectInventoryUnknown, "data.color")
	inv := v1alpha1.InventoryState{Namespace: "argocd", Name: "shop-a", State: v1alpha1.InventoryUnknown, Engine: "argocd", Note: note}
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Contexts: []v1alpha1.ContextStatus{
		{Name: "eu-shard-00", Reachable: true, Inventory: inv, Objects: []v1alpha1.ObjectStatus{ok}},
		{Name: "eu-shard-01", Reachable: true, Inventory: inv, Objects: []v1alpha1.ObjectStatus{ok, drifted}},
	}}
	var table, md, page bytes.Buffer
	if err := RenderStatusTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"eu-shard-00  extras not known  unknown    1        1        0            0        unknown  unknown",
		"eu-shard-01  needs attention   unknown    2        2        0            1        unknown  unknown",
		"0 of 2 contexts in sync. 1 object(s) need attention. 2 context(s) not checked for inventory extras",
		"eu-shard-00: " + note, "ConfigMap payments/b", "\n\nNeeds attention in eu-shard-01 (1):",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "ConfigMap payments/a") || strings.Contains(table.String(), "in sync ") {
		t.Errorf("the table lists the Current object or calls a context in sync:\n%s", table.String())
	}
	for _, want := range []string{"| `eu-shard-00` | extras not known | unknown | 1 | 1 | 0 | 0 | unknown | unknown |", ":grey_question: `eu-shard-00`: " + note} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, want := range []string{`data-label="extra"><span class="warn">? unknown</span>`, `data-inventory-note="eu-shard-01">? <code>eu-shard-01</code>: ` + note} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// recordStatus is a fleet that shard-router apply wrote, in the middle
// of a rollout that a live run is baking: a context applied (its record
// settled by a later run), one the run is applying now (its lock held),
// one whose kube context reaches another cluster (refused, its objects
// not read), one no apply of this release wrote (no record), one whose
// last run was killed, one whose Lease cannot be read, and one that
// another pipeline applied since this OUT_DIR recorded it (stale: its
// objects as its inventory lists them, not compared).
func recordStatus() *v1alpha1.FleetStatus {
	at := time.Date(2026, 8, 3, 10, 15, 0, 0, time.UTC)
	inv := func(name, state string) v1alpha1.InventoryState {
		return v1alpha1.InventoryState{Namespace: "default", Name: name, State: state}
	}
	current := []v1alpha1.ObjectStatus{objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied)}
	bob := "bob@runner-2 pid 99 (GitHub Actions run 123) run x1y2z3"
	return &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), ReadAt: at.Add(time.Hour + time.Minute),
		Runs: []v1alpha1.FleetRun{{Holder: bob, Contexts: []string{"eu-shard-01"}, Since: at.Add(time.Hour), Renewed: at.Add(time.Hour + 55*time.Second),
			Expires: at.Add(time.Hour + 85*time.Second), Wave: "eu", Phase: "baking", BakeEnds: at.Add(time.Hour + 5*time.Minute),
			Unlock: "shard-router apply --force-unlock-held-by x1y2z3 --out out"}},
		Rollout: &v1alpha1.RolloutSummary{Waves: []string{"canary", "eu"}, Baked: []string{"canary"}, StoppedAt: "eu", State: "inProgress", Left: []string{"eu"},
			Contexts: []v1alpha1.RolloutContext{{Name: "eu-shard-00", Wave: "canary", Previous: true}, {Name: "eu-shard-01", Wave: "eu", Previous: true},
				{Name: "eu-shard-04", Wave: "eu"}},
			Resume: "shard-router apply PKG --out out", Rollback: "shard-router apply --rollback --out out"},
		Contexts: []v1alpha1.ContextStatus{
			{Name: "eu-shard-00", Reachable: true, Inventory: inv("shop-eu-shard-00", v1alpha1.InventoryFound), Objects: current,
				Record: &v1alpha1.ContextRecord{Serial: 7, Digest: "sha256:5d41402abc4b2a76", AppliedBy: "alice@runner-1 pid 4242 (GitLab CI job 7)",
					AppliedAt: at, Outcome: "applied", SettledBy: "carol@laptop pid 8", SettledAt: at.Add(10 * time.Minute),
					OwnerName:  "package shop, OUT_DIR first applied by alice@runner-1",
					ClusterUID: "0f6c2a8e-1111-4b1e-9a55-000000000000", Server: "https://10.0.0.1:6443"}},
			{Name: "eu-shard-01", Reachable: true, Inventory: inv("shop-eu-shard-01", v1alpha1.InventoryFound), Objects: current,
				Record: &v1alpha1.ContextRecord{Serial: 9, AppliedBy: "bob@runner-2 pid 99 (GitHub Actions run 123)", AppliedAt: at.Add(time.Hour),
					Outcome: "applying", ClusterUID: "1c9d0e2f-2222-4b1e-9a55-000000000000", Server: "https://10.0.0.2:6443",
					Lock: &v1alpha1.LockState{Holder: bob, Since: at.Add(time.Hour), Renewed: at.Add(time.Hour + 55*time.Second),
						Expires: at.Add(time.Hour + 85*time.Second), Wave: "eu", Phase: "baking", BakeEnds: at.Add(time.Hour + 5*time.Minute)}}},
			{Name: "eu-shard-02", Reachable: true, Inventory: inv("", v1alpha1.InventoryUnknown), Objects: []v1alpha1.ObjectStatus{},
				Error:  `context "eu-shard-02" reaches another cluster: OUT_DIR recorded cluster UID 0f6c2a8e-3333-4b1e-9a55-000000000000 (server https://10.0.0.3:6443), the kube context now reaches cluster UID 7a7a7a7a-0000-4000-8000-000000000000 at https://10.9.9.9:6443; its objects were not read`,
				Record: &v1alpha1.ContextRecord{ClusterUID: "7a7a7a7a-0000-4000-8000-000000000000", Server: "https://10.9.9.9:6443"}},
			{Name: "eu-shard-03", Reachable: true, Inventory: inv("shop-eu-shard-03", v1alpha1.InventoryFound), Objects: current},
			{Name: "eu-shard-04", Reachable: true, Inventory: inv("shop-eu-shard-04", v1alpha1.InventoryFound), Objects: current,
				Record: &v1alpha1.ContextRecord{Serial: 3, AppliedBy: "carol@laptop pid 7", AppliedAt: at.Add(-24 * time.Hour), Outcome: "applying",
					ClusterUID: "0f6c2a8e-4444-4b1e-9a55-000000000000", Server: "https://10.0.0.4:6443"}},
			{Name: "eu-shard-05", Reachable: true, Inventory: inv("shop-eu-shard-05", v1alpha1.InventoryFound), Objects: current,
				Record: &v1alpha1.ContextRecord{ClusterUID: "0f6c2a8e-5555-4b1e-9a55-000000000000", Server: "https://10.0.0.5:6443",
					Error: `reading Lease default/shard-router.shop-eu-shard-05: leases.coordination.k8s.io "shard-router.shop-eu-shard-05" is forbidden`}},
			{Name: "eu-shard-06", Reachable: true, Inventory: inv("shop-eu-shard-06", v1alpha1.InventoryFound),
				Objects: []v1alpha1.ObjectStatus{objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
					objStatus(ref("apps", "Deployment", "payments", "api"), "InProgress", v1alpha1.ObjectApplied)},
				OutDirMismatch: &v1alpha1.OutDirMismatch{OutDirSerial: 10, State: v1alpha1.OutDirStale,
					Message: `context "eu-shard-06": OUT_DIR is stale: another run wrote the cluster since OUT_DIR recorded it (cluster serial 12, OUT_DIR serial 10; last written by dave@build-agent-eu-west-1-prod-0042 pid 123456 (Buildkite job 0191b7a2-5c7e-4f1a) at 2026-08-03T09:15:00Z, applied): its objects are shown as that run left them, with their health; they are not compared with OUT_DIR. Fetch the current OUT_DIR (the one that run left)`},
				Record: &v1alpha1.ContextRecord{Serial: 12, AppliedBy: "dave@build-agent-eu-west-1-prod-0042 pid 123456 (Buildkite job 0191b7a2-5c7e-4f1a)", AppliedAt: at.Add(-time.Hour),
					Outcome: "applied", ClusterUID: "9b8a7c6d-6666-4b1e-9a55-000000000000", Server: "https://10.0.0.6:6443"}},
		}}
}

// The record and the rollout in text and markdown: the rollout first,
// then the contexts' table as without them, then one record row per
// context whose cluster says something, a held lock named with its
// holder and expiry, a killed run said so.
func TestStatusRecordsGolden(t *testing.T) {
	s := recordStatus()
	var table, md bytes.Buffer
	if err := RenderStatusTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-records.table", table.Bytes())
	golden(t, "status-records.md", md.Bytes())
	for name, out := range map[string]string{"table": table.String(), "markdown": md.String()} {
		for _, want := range []string{"Rollout in progress, in wave ", "waves baked: ", "waves left: ", "shard-router apply PKG --out out", "shard-router apply --rollback --out out",
			"In progress: bob@runner-2 pid 99 (GitHub Actions run 123) run x1y2z3 holds the locks of ", "eu-shard-01", " since 2026-08-03T11:15:00Z, last renewed 2026-08-03T11:15:55Z: wave ",
			" baking, 4m0s left (until 2026-08-03T11:20:00Z).", "Its run is alive: let it finish",
			"Killed: the run that last wrote ", "eu-shard-04", ", carol@laptop pid 7, died applying it, and no live run holds its lock: apply again",
			"settled by carol@laptop pid 8 at 2026-08-03T10:25:00Z", "2026-08-03T10:15:00Z",
			"OUT_DIR is stale for 1 context(s): another run applied since.", "stale OUT_DIR", `context "eu-shard-06": OUT_DIR is stale`,
			"1 context(s) being applied by a run in progress.", "1 context(s) last written by a run that died applying them: apply again.",
			`record not read in full: reading Lease default/shard-router.shop-eu-shard-05: leases.coordination.k8s.io "shard-router.shop-eu-shard-05" is forbidden`, "reaches another cluster"} {
			if !strings.Contains(out, want) {
				t.Errorf("the %s lacks %q:\n%s", name, want, out)
			}
		}
		for _, never := range []string{"waves canary", "not finished", "resume it while", "its bake did not end"} {
			if strings.Contains(out, never) {
				t.Errorf("the %s says %q:\n%s", name, never, out)
			}
		}
		if strings.Index(out, "Rollout in progress") > strings.Index(out, "eu-shard-03") || strings.Index(out, "In progress: bob") > strings.Index(out, "Rollout in progress") {
			t.Errorf("the %s does not show the run, then the rollout, first", name)
		}
	}
	// The text tables keep within 120 columns: what does not fit is a
	// note under its table.
	for _, line := range strings.Split(table.String(), "\n") {
		if len(line) > TableWidth && (strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "CONTEXT") || strings.HasPrefix(line, "eu-shard-")) && !strings.Contains(line, ": ") {
			t.Errorf("a table row of %d columns:\n%s", len(line), line)
		}
	}
	for _, want := range []string{"  eu-shard-06  12      applied   2026-08-03T09:15:00Z  9b8a7c6d  -     (below)",
		"  eu-shard-06: applied by dave@build-agent-eu-west-1-prod-0042 pid 123456 (Buildkite job 0191b7a2-5c7e-4f1a)",
		"eu-shard-06  stale OUT_DIR  found      2        1        1            -        -      -"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	// eu-shard-03 has no record: it has its summary row, and no record row.
	if got := strings.Count(table.String(), "\n  eu-shard-03 "); got != 0 {
		t.Errorf("eu-shard-03 has %d record rows in the table, want 0", got)
	}
	if got := strings.Count(md.String(), "| `eu-shard-03` |"); got != 1 {
		t.Errorf("eu-shard-03 has %d rows in the markdown, want 1 (its summary row)", got)
	}
	// The context that reaches another cluster failed; none of its
	// objects is listed.
	if !s.Contexts[2].Failed() || !strings.Contains(table.String(), "eu-shard-02  error") {
		t.Errorf("the context that reaches another cluster is not failed:\n%s", table.String())
	}
}

// Without a record, a lock, a run or a rollout, nothing of them is shown:
// the outputs are those of a fleet no apply of this release wrote.
func TestStatusNoRecordsUnchanged(t *testing.T) {
	s := recordStatus()
	s.Rollout, s.Runs = nil, nil
	for i := range s.Contexts {
		s.Contexts[i].Record, s.Contexts[i].OutDirMismatch = nil, nil
	}
	var table, md, page bytes.Buffer
	if err := RenderStatusTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": table.String(), "markdown": md.String(), "html": page.String()} {
		for _, never := range []string{"unfinished rollout", "last apply", "serial", "| cluster uid |", "cluster-uid", "held by", `id="records"`, `id="rollout"`} {
			if strings.Contains(strings.ToLower(out), never) {
				t.Errorf("the %s shows %q without records or a rollout", name, never)
			}
		}
	}
}

// A fleet too big for a pull-request comment is abridged within
// MarkdownLimit, saying what it left out; the rollout, the warnings and
// the summary and record rows come first and are kept whole.
func TestStatusMarkdownLimit(t *testing.T) {
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Rollout: recordStatus().Rollout}
	for c := range 64 {
		cs := v1alpha1.ContextStatus{Name: fmt.Sprintf("eu-shard-%02d", c), Reachable: true,
			Inventory: v1alpha1.InventoryState{Namespace: "default", Name: "shop", State: v1alpha1.InventoryFound},
			Record: &v1alpha1.ContextRecord{Serial: int64(c + 1), AppliedBy: "alice@runner-1 pid 4242", Outcome: "applied",
				ClusterUID: fmt.Sprintf("0f6c2a8e-%04d-4b1e-9a55-000000000000", c)}}
		for i := range 60 {
			cs.Objects = append(cs.Objects, objStatus(ref("", "ConfigMap", "payments", fmt.Sprintf("config-%02d", i)),
				v1alpha1.StatusCurrent, v1alpha1.ObjectApplied, "data.color", "data.size"))
		}
		s.Contexts = append(s.Contexts, cs)
	}
	var b bytes.Buffer
	if err := RenderStatusMarkdown(&b, s); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if len(md) > MarkdownLimit {
		t.Errorf("%d characters, more than %d", len(md), MarkdownLimit)
	}
	if !strings.Contains(md, ":scissors: **Abridged**") || !strings.Contains(md, "objects that need attention. The full status: `shard-router status OUT_DIR -o json`") {
		t.Errorf("the note of what was left out is missing:\n%s", md[:min(len(md), 2000)])
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("unbalanced <details>")
	}
	for _, want := range []string{"Rollout in progress", "| `eu-shard-63` | needs attention |", "| `eu-shard-63` | 64 | applied | alice@runner-1 pid 4242 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q", want)
		}
	}
	// Every object listed or counted as left out: 64 contexts of 60.
	listed := strings.Count(md, "| `ConfigMap payments/config-")
	m := regexp.MustCompile(`left out (\d+) objects that need attention`).FindStringSubmatch(md)
	if m == nil {
		t.Fatal("no count of the objects left out")
	}
	if left, _ := strconv.Atoi(m[1]); listed+left != 64*60 {
		t.Errorf("%d objects listed and %d left out, want %d in all", listed, left, 64*60)
	}
}

// The page shows the rollout before the fleet matrix, and a record row
// for each context whose cluster says something, with its server; the
// JSON keeps every field of the record, times included.
func TestStatusRecordsHTMLAndJSON(t *testing.T) {
	s := recordStatus()
	var page, doc bytes.Buffer
	if err := RenderStatusHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if r, f := strings.Index(html, `id="rollout"`), strings.Index(html, `id="fleet"`); r < 0 || r > f {
		t.Error("the page does not show the rollout before the fleet")
	}
	for _, c := range s.Contexts {
		if has := strings.Contains(html, `data-record="`+c.Name+`"`); has != (c.Record != nil) {
			t.Errorf("%s: a record row %v, a record %v", c.Name, has, c.Record != nil)
		}
	}
	if !strings.Contains(html, `<span class="small">https://10.9.9.9:6443</span>`) {
		t.Error("the page does not name the server the refused context reaches")
	}
	for _, want := range []string{`data-run="bob@runner-2 pid 99 (GitHub Actions run 123) run x1y2z3"><strong>! In progress: `, "wave eu baking, 4m0s left",
		`data-outdir-mismatch="eu-shard-06">! <code>eu-shard-06</code> is stale OUT_DIR: `, `<span class="warn">! killed</span>`,
		"settled by carol@laptop pid 8", `data-label="drifted"><span class="warn">-</span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if r, f := strings.Index(html, `data-run=`), strings.Index(html, `id="rollout"`); r < 0 || r > f {
		t.Error("the page does not show the run in progress before the rollout")
	}
	if err := WriteJSON(&doc, s); err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.FleetStatus
	if err := json.Unmarshal(doc.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("round trip:\n%+v\n%+v", back, *s)
	}
	for _, want := range []string{`"appliedAt": "2026-08-03T10:15:00Z"`, `"expires": "2026-08-03T11:16:25Z"`, `"rollback": "shard-router apply --rollback --out out"`,
		`"readAt": "2026-08-03T11:16:00Z"`, `"bakeEnds": "2026-08-03T11:20:00Z"`, `"state": "inProgress"`, `"outDirSerial": 10`, `"settledBy": "carol@laptop pid 8"`,
		`"unlock": "shard-router apply --force-unlock-held-by x1y2z3 --out out"`} {
		if !strings.Contains(doc.String(), want) {
			t.Errorf("the JSON lacks %s", want)
		}
	}
	if strings.Contains(doc.String(), `"appliedAt": "0001`) {
		t.Error("an unknown time is written as the zero time")
	}
}

// Each state of an unfinished rollout says one thing, and how to go on;
// a run that is gone says when its locks free themselves and the command
// that breaks them, never to wait for it.
func TestRolloutStatesAndRuns(t *testing.T) {
	base := recordStatus().Rollout
	for state, want := range map[string]string{
		v1alpha1.RolloutKilled: "Unfinished rollout: killed in wave eu (the run applying it died before its bake ended); waves baked: canary; waves left: eu; it changed 3 context(s).",
		v1alpha1.RolloutHalted: "Unfinished rollout: halted in wave eu (the run ended before its bake finished); waves baked: canary; waves left: eu; it changed 3 context(s).",
		v1alpha1.RolloutPaused: "Unfinished rollout: paused before wave eu; waves baked: canary; waves left: eu; it changed 3 context(s).",
	} {
		r := *base
		r.State = state
		if got := rolloutHeadline(&r, plain); got != want {
			t.Errorf("%s: %q, want %q", state, got, want)
		}
		if wait, _ := rolloutWayOn(&r, plain); wait != "" {
			t.Errorf("%s: %q: only a live run is waited for", state, wait)
		}
	}
	r := *base
	r.Baked = nil
	r.Left = []string{"canary", "eu"}
	r.State, r.StoppedAt = v1alpha1.RolloutKilled, "canary"
	if got := rolloutHeadline(&r, plain); !strings.Contains(got, "; no wave baked yet; waves left: canary, eu;") {
		t.Errorf("nothing baked: %q", got)
	}

	readAt := time.Date(2026, 12, 2, 19, 32, 13, 0, time.UTC)
	gone := v1alpha1.FleetRun{Holder: "ci@runner-1 pid 42 (job 7) run x1y2z3", Contexts: []string{"A", "B"}, Expires: readAt.Add(23 * time.Second),
		Gone: "pid 42 no longer runs on this host, runner-1", Unlock: "shard-router apply --force-unlock-held-by x1y2z3 --out out"}
	want := "Killed: ci@runner-1 pid 42 (job 7) run x1y2z3 still holds the locks of A, B, but it is gone (pid 42 no longer runs on this host, runner-1): they free themselves at 2026-12-02T19:32:36Z, in 23s; to break them now: shard-router apply --force-unlock-held-by x1y2z3 --out out"
	if got := runText(gone, readAt, plain); got != want {
		t.Errorf("a gone run:\n%q\nwant\n%q", got, want)
	}
	ended := v1alpha1.FleetRun{Holder: "h run r", Contexts: []string{"A"}, Wave: "canary", Phase: "baking", BakeEnds: readAt.Add(-time.Second)}
	if got := runText(ended, readAt, code); !strings.Contains(got, "holds the locks of `A` since") || !strings.HasSuffix(got, ": wave canary baking, its bake ended at 2026-12-02T19:32:12Z.") {
		t.Errorf("a run past its bake: %q", got)
	}
}

// A record of an apply that impersonated someone (--as, or the
// kubeconfig's as:) says as whom in every format: the user in the tables
// (their rows stay short), the whole identity in JSON.
func TestStatusRecordShowsImpersonation(t *testing.T) {
	s := recordStatus()
	s.Contexts[4].Record.AppliedAs = "team-a (groups: deployers; uid: 42)"
	var table, md, page bytes.Buffer
	if err := RenderStatusTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": table.String(), "markdown": md.String(), "html": page.String()} {
		if !strings.Contains(out, "carol@laptop pid 7 as team-a") || strings.Contains(out, "deployers") {
			t.Errorf("the %s does not say carol applied as team-a (and only that):\n%s", name, out)
		}
		if strings.Count(out, " as team-a") != 1 {
			t.Errorf("the %s names the impersonation %d times, want once (eu-shard-04 only)", name, strings.Count(out, " as team-a"))
		}
	}
	doc, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), `"appliedAs":"team-a (groups: deployers; uid: 42)"`) {
		t.Errorf("the JSON lacks appliedAs:\n%s", doc)
	}
}
