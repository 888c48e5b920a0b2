package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The HTML goldens and the documents they are rendered from are in
// testdata/html, as <page>-<contexts>.html and .json: the browser test
// (test/e2e, TestHTMLPagesInChromium) loads each page and compares its text
// with the JSON document.

// htmlStatus2 is a two-context fleet: one in sync, one with a drifted, an
// extra, a never-applied, an in-progress and an unreadable object, and a
// message that must be escaped.
func htmlStatus2() *v1alpha1.FleetStatus {
	inProgress := objStatus(ref("apps", "Deployment", "payments", "api"), "InProgress", v1alpha1.ObjectApplied)
	inProgress.Message = "Replicas: 1/3 <script>alert(1)</script>"
	unreadable := objStatus(ref("example.com", "Widget", "payments", "w"), v1alpha1.StatusUnknown, v1alpha1.ObjectApplied)
	unreadable.Error = "widgets.example.com is forbidden: User cannot list"
	return &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Contexts: []v1alpha1.ContextStatus{
		{Name: "eu-shard-00", Reachable: true, Inventory: v1alpha1.InventoryState{Namespace: "default", Name: "shop-eu-shard-00", State: v1alpha1.InventoryFound},
			Objects: []v1alpha1.ObjectStatus{
				objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
				objStatus(ref("", "Namespace", "", "payments"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
			}},
		{Name: "eu-shard-01", Reachable: true, Inventory: v1alpha1.InventoryState{Namespace: "default", Name: "shop-eu-shard-01", State: v1alpha1.InventoryFound},
			Objects: []v1alpha1.ObjectStatus{
				objStatus(ref("", "ConfigMap", "payments", "settings"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied, "data.color", `data["app.properties"]`),
				objStatus(ref("", "ConfigMap", "payments", "old"), v1alpha1.StatusCurrent, v1alpha1.ObjectExtra),
				objStatus(ref("", "Service", "payments", "new"), v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied),
				objStatus(ref("", "Service", "payments", "web"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
				inProgress, unreadable,
			}},
	}}
}

// htmlStatus64 is 64 contexts of 20 to 26 objects each, generated: some
// unreachable, some with their inventory missing, and drifted, extra,
// never-applied and in-progress objects spread over the others.
func htmlStatus64() *v1alpha1.FleetStatus {
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind)}
	for c := range 64 {
		name := fmt.Sprintf("eu-shard-%02d", c)
		cs := v1alpha1.ContextStatus{Name: name, Reachable: true,
			Inventory: v1alpha1.InventoryState{Namespace: "default", Name: "shop-" + name, State: v1alpha1.InventoryFound}}
		switch {
		case c%19 == 7:
			cs.Reachable, cs.Inventory.State = false, v1alpha1.InventoryUnknown
			cs.Error = fmt.Sprintf(`Get "https://10.0.%d.1:6443/api": dial tcp 10.0.%d.1:6443: connect: connection refused`, c, c)
			s.Contexts = append(s.Contexts, cs)
			continue
		case c%23 == 5:
			cs.Inventory.State = v1alpha1.InventoryMissing
		}
		for i := range 20 + c%7 {
			o := objStatus(ref("", "ConfigMap", fmt.Sprintf("team-%d", i%5), fmt.Sprintf("config-%02d", i)), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied)
			switch {
			case cs.Inventory.State == v1alpha1.InventoryMissing:
				o.Status, o.Inventory = v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied
			case c%4 == 1 && i == 3:
				o.Drift = v1alpha1.Drift{"data.color"}
			case c%6 == 2 && i == 4:
				o.Inventory = v1alpha1.ObjectExtra
			case c%10 == 3 && i == 5:
				o.Status, o.Inventory = v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied
			case c%8 == 5 && i == 6:
				o.Status, o.Message = "InProgress", fmt.Sprintf("Replicas: %d/3", c%3)
			}
			cs.Objects = append(cs.Objects, o)
		}
		s.Contexts = append(s.Contexts, cs)
	}
	return s
}

// htmlStatusEngine is a split for Flux on three contexts: one whose
// Kustomization is Ready at a revision, one whose Kustomization failed (with
// a message to show and escape), one whose Kustomization is missing.
func htmlStatusEngine() *v1alpha1.FleetStatus {
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind)}
	for i, e := range []v1alpha1.EngineStatus{
		{Ready: "True", Reason: "ReconciliationSucceeded", Revision: "main@sha1:3f9a2c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39", Message: "Applied revision: main@sha1:3f9a2c1e"},
		{Ready: "False", Reason: "HealthCheckFailed", Revision: "main@sha1:0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c", Message: "Deployment/payments/api <status> InProgress: timeout waiting"},
		{},
	} {
		name := fmt.Sprintf("eu-shard-%02d", i)
		e.Engine, e.Kind, e.Namespace, e.Name = "flux", "Kustomization", "flux-system", "shop-"+name
		inv := v1alpha1.InventoryState{Namespace: e.Namespace, Name: e.Name, State: v1alpha1.InventoryFound}
		objs := []v1alpha1.ObjectStatus{objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied)}
		if e.Ready == "" {
			inv.State = v1alpha1.InventoryMissing
			objs = []v1alpha1.ObjectStatus{objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied)}
		}
		s.Contexts = append(s.Contexts, v1alpha1.ContextStatus{Name: name, Reachable: true, Inventory: inv, Engine: &e, Objects: objs})
	}
	return s
}

// htmlPlan2 is a two-context plan with every part: creates, updates with
// a diff, prunes with a mass deletion, a refused and an allowed move, a
// refused datastore change, an etcd override change, errors and warnings.
func htmlPlan2() *v1alpha1.SplitPlan {
	p := samplePlan()
	p.Contexts = p.Contexts[:2]
	p.Contexts[1].Update = []v1alpha1.ObjectRef{ref("apps", "Deployment", "payments", "api")}
	p.Contexts[1].Diffs = []v1alpha1.ObjectDiff{{Ref: ref("apps", "Deployment", "payments", "api"),
		Diff: strings.ReplaceAll(p.Contexts[0].Diffs[0].Diff, "eu-shard-00", "eu-shard-01")}}
	p.Moves[1].From, p.Moves[1].To = []string{"eu-shard-00"}, []string{"eu-shard-00", "eu-shard-01"}
	return p
}

// htmlPlan64 is 64 contexts, generated: creates, updates and prunes in a
// pattern, a mass deletion, an added and a dropped context, moves (one
// refused), datastore and etcd override changes, a diff that every context
// shares and diffs of their own.
func htmlPlan64() *v1alpha1.SplitPlan {
	p := v1alpha1.NewSplitPlan()
	crd := ref("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com")
	for c := range 64 {
		name := fmt.Sprintf("eu-shard-%02d", c)
		cp := v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextKept, Unchanged: 30 + c%9, Update: []v1alpha1.ObjectRef{crd}}
		cp.Diffs = []v1alpha1.ObjectDiff{{Ref: crd, Diff: fmt.Sprintf("--- previous/%s/crds.yaml\n+++ new/%s/crds.yaml\n@@ -1,4 +1,4 @@\n metadata:\n   annotations:\n     shardrouter.dev/context: '%s'\n-    version: 1\n+    version: 2\n", name, name, name)}}
		for i := range c % 3 {
			cp.Create = append(cp.Create, ref("", "ConfigMap", fmt.Sprintf("team-%d", c%5), fmt.Sprintf("new-%d", i)))
		}
		if c%4 == 2 {
			r := ref("apps", "Deployment", fmt.Sprintf("team-%d", c%5), "api")
			cp.Update = append(cp.Update, r)
			cp.Diffs = append(cp.Diffs, v1alpha1.ObjectDiff{Ref: r, Diff: fmt.Sprintf("--- previous/%s/api.yaml\n+++ new/%s/api.yaml\n@@ -1,2 +1,2 @@\n spec:\n-  replicas: %d\n+  replicas: %d\n", name, name, c%3+1, c%3+2)})
		}
		if c%5 == 0 {
			cp.Prune = append(cp.Prune, ref("", "Secret", fmt.Sprintf("team-%d", c%5), "old-token"), ref("", "Service", fmt.Sprintf("team-%d", c%5), "legacy"))
		}
		cp.Previous = cp.Unchanged + len(cp.Update) + len(cp.Prune)
		if c == 63 {
			cp = v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextAdded, Create: []v1alpha1.ObjectRef{ref("", "Namespace", "", "team-3"), ref("", "ConfigMap", "team-3", "settings")}}
		}
		if c == 17 {
			cp.Prune = append(cp.Prune, cp.Create...)
			for i := range 40 {
				cp.Prune = append(cp.Prune, ref("", "ConfigMap", "team-2", fmt.Sprintf("config-%02d", i)))
			}
			cp.Create, cp.Unchanged, cp.Previous, cp.MassPrune = nil, 2, 43, true
		}
		p.Contexts = append(p.Contexts, cp)
	}
	p.Contexts = append(p.Contexts, v1alpha1.ContextPlan{Name: "old-shard-99", State: v1alpha1.ContextDropped, Previous: 2,
		Prune: []v1alpha1.ObjectRef{ref("", "Namespace", "", "legacy"), ref("", "ConfigMap", "legacy", "settings")}})
	p.Moves = []v1alpha1.Move{
		{Ref: ref("", "Namespace", "", "team-3"), From: []string{"eu-shard-62"}, To: []string{"eu-shard-63"}},
		{Ref: ref("", "ConfigMap", "team-3", "settings"), From: []string{"eu-shard-62"}, To: []string{"eu-shard-63"}},
		{Ref: ref("", "Namespace", "", "team-2"), From: []string{"eu-shard-17"}, To: []string{"eu-shard-18"}, Refused: true},
	}
	p.DataStoreChanges = []v1alpha1.DataStoreChange{
		{Ref: ref("coordination.k8s.io", "Lease", "team-1", "leader"), Context: "eu-shard-11", From: "default", To: "leases"},
		{Ref: ref("", "Event", "team-1", "e1"), Context: "eu-shard-11", From: "default", To: "events", Refused: true},
	}
	p.OverrideChanges = []v1alpha1.OverrideChange{{Context: "eu-shard-11", Resource: "coordination.k8s.io/leases", From: v1alpha1.OverrideLocation{DataStore: "default"},
		To: v1alpha1.OverrideLocation{DataStore: "leases", Servers: []string{"https://etcd-leases-11:2379"}}, Allowed: true, Severity: "info",
		Message: `context "eu-shard-11": coordination.k8s.io/leases moves from the main etcd to datastore "leases"`}}
	p.Errors = []string{`team-2.yaml[0]: Namespace team-2 would move from "eu-shard-17" to "eu-shard-18": set spec.allowMoves`,
		`eu-shard-17: mass deletion: 42 of 43 objects would be pruned`, `team-1/e1.yaml[0]: Event team-1/e1 would change datastore in "eu-shard-11" from "default" to "events"`}
	p.Warnings = []string{"shards.yaml[0]: context old-shard-99 is no longer in the config: its package is dropped"}
	return p
}

// htmlReport2 is two contexts of three datastores, with budgets, one
// exceeded, a placed Namespace and a warning.
func htmlReport2() *v1alpha1.CapacityReport {
	return capacityReport(2, []string{"default", "events", "leases"}, []v1alpha1.PlacedNamespace{{Namespace: "team-new", Context: "eu-shard-01", Label: "shard=01"}})
}

// htmlReport64 is 64 contexts of 10 datastores each, generated.
func htmlReport64() *v1alpha1.CapacityReport {
	stores := []string{"default", "events", "leases", "configmaps", "secrets", "crds", "audit", "jobs", "cache", "metrics"}
	return capacityReport(64, stores, []v1alpha1.PlacedNamespace{{Namespace: "team-new", Context: "eu-shard-40"}})
}

// capacityReport generates a report: each datastore's objects and bytes
// in a pattern, the events datastore budgeted (exceeded in some contexts),
// every fourth context budgeted as a whole, the shares and totals summed
// as the function sums them.
func capacityReport(contexts int, stores []string, placed []v1alpha1.PlacedNamespace) *v1alpha1.CapacityReport {
	r := &v1alpha1.CapacityReport{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.CapacityReportKind), Capacity: &v1alpha1.Capacity{NotRouted: 3, Failed: 0},
		Placed: placed, Results: framework.Results{}}
	ptr := func(n int64) *int64 { return &n }
	for c := range contexts {
		cc := v1alpha1.ContextCapacity{Name: fmt.Sprintf("eu-shard-%02d", c)}
		for d, name := range stores {
			objects := int64((c*37 + d*11 + 5) % 480)
			ds := v1alpha1.DataStoreCapacity{Name: name, Usage: v1alpha1.Usage{Objects: objects, Bytes: objects * int64(700+d*130+c)}}
			if name == "events" {
				ds.Budget = &v1alpha1.BudgetStatus{MaxObjects: ptr(400), Field: fmt.Sprintf("spec.contexts[%d].dataStores[0].budget", c)}
				if objects > 400 {
					ds.Budget.Exceeded = []string{"maxObjects"}
				}
			}
			cc.DataStores = append(cc.DataStores, ds)
			cc.Objects += ds.Objects
			cc.Bytes += ds.Bytes
		}
		if c%4 == 1 {
			cc.Budget = &v1alpha1.BudgetStatus{MaxObjects: ptr(2500), MaxBytes: ptr(4 << 20), Enforce: true, Field: fmt.Sprintf("spec.contexts[%d].budget", c)}
			if cc.Objects > 2500 {
				cc.Budget.Exceeded = append(cc.Budget.Exceeded, "maxObjects")
			}
			if cc.Bytes > 4<<20 {
				cc.Budget.Exceeded = append(cc.Budget.Exceeded, "maxBytes")
			}
		}
		r.Contexts = append(r.Contexts, cc)
		r.Total.Objects += cc.Objects
		r.Total.Bytes += cc.Bytes
	}
	share := func(n, total int64) float64 {
		if total == 0 {
			return 0
		}
		return float64(int64(float64(n)/float64(total)*10000+0.5)) / 10000
	}
	for i := range r.Contexts {
		c := &r.Contexts[i]
		c.ObjectShare, c.ByteShare = share(c.Objects, r.Total.Objects), share(c.Bytes, r.Total.Bytes)
		for j := range c.DataStores {
			d := &c.DataStores[j]
			d.ObjectShare, d.ByteShare = share(d.Objects, r.Total.Objects), share(d.Bytes, r.Total.Bytes)
		}
	}
	r.Total.ObjectShare, r.Total.ByteShare = 1, 1
	r.Results = append(r.Results, &framework.Result{Severity: framework.Warning,
		Message: `context "eu-shard-01" datastore "events": 401 objects exceed maxObjects 400 (spec.contexts[1].dataStores[0].budget) <not enforced>`})
	return r
}

type htmlCase struct {
	page string
	doc  any
	html func(*bytes.Buffer) error
}

func htmlCases() map[string]htmlCase {
	cases := map[string]htmlCase{}
	for n, s := range map[int]*v1alpha1.FleetStatus{2: htmlStatus2(), 64: htmlStatus64()} {
		cases[fmt.Sprintf("status-%d", n)] = htmlCase{"status", s, func(b *bytes.Buffer) error { return RenderStatusHTML(b, s) }}
	}
	engine := htmlStatusEngine()
	cases["status-engine"] = htmlCase{"status", engine, func(b *bytes.Buffer) error { return RenderStatusHTML(b, engine) }}
	records := recordStatus()
	cases["status-records"] = htmlCase{"status", records, func(b *bytes.Buffer) error { return RenderStatusHTML(b, records) }}
	gated := gateStatus()
	cases["status-gates"] = htmlCase{"status", gated, func(b *bytes.Buffer) error { return RenderStatusHTML(b, gated) }}
	for n, p := range map[int]*v1alpha1.SplitPlan{2: htmlPlan2(), 64: htmlPlan64()} {
		cases[fmt.Sprintf("plan-%d", n)] = htmlCase{"plan", p, func(b *bytes.Buffer) error { return RenderPlanHTML(b, p) }}
	}
	gates := htmlPlanGates()
	cases["plan-gates"] = htmlCase{"plan", gates, func(b *bytes.Buffer) error { return RenderPlanHTML(b, gates) }}
	applied := htmlApplyGates()
	cases["apply-gates"] = htmlCase{"apply", applied, func(b *bytes.Buffer) error { return RenderApplyHTML(b, applied) }}
	for n, r := range map[int]*v1alpha1.CapacityReport{2: htmlReport2(), 64: htmlReport64()} {
		cases[fmt.Sprintf("report-%d", n)] = htmlCase{"report", r, func(b *bytes.Buffer) error { return RenderCapacityHTML(b, r) }}
	}
	return cases
}

// external matches anything that would make a page load something: a
// script, a stylesheet, an image, a font, a frame, a link.
var external = regexp.MustCompile(`(?i)<script|<link|<img|<iframe|<object|<embed|\ssrc=|\shref=|url\(|@import|@font-face`)

func TestHTMLGolden(t *testing.T) {
	for name, c := range htmlCases() {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.html(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("html", name+".html"), b.Bytes())
			var doc bytes.Buffer
			if err := WriteJSON(&doc, c.doc); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("html", name+".json"), doc.Bytes())

			page := b.String()
			if m := external.FindString(page); m != "" {
				t.Errorf("the page loads something: %q", m)
			}
			if !strings.Contains(page, "@media (prefers-color-scheme: dark)") {
				t.Error("the page does not follow prefers-color-scheme")
			}
			if strings.Count(page, "<details") != strings.Count(page, "</details>") || strings.Count(page, "<tr") != strings.Count(page, "</tr>") {
				t.Error("unbalanced <details> or <tr>")
			}
			var generic struct {
				Contexts []struct{ Name string } `json:"contexts"`
			}
			if err := json.Unmarshal(doc.Bytes(), &generic); err != nil {
				t.Fatal(err)
			}
			for _, ctx := range generic.Contexts {
				if !strings.Contains(page, `data-context="`+ctx.Name+`"`) {
					t.Errorf("no row for context %s", ctx.Name)
				}
			}
		})
	}
}

// Names and messages are escaped: a message cannot open an element, and
// the entities are html/template's, which the pages were first written with.
func TestHTMLEscapes(t *testing.T) {
	s := htmlStatus2()
	s.Contexts[0].Name = `a"<b>`
	s.Contexts[1].Name = "it's & 1+1\x00"
	var b bytes.Buffer
	if err := RenderStatusHTML(&b, s); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script>alert", "<b>", `data-context="a"`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `data-context="a&#34;&lt;b&gt;"`, "<code>a&#34;&lt;b&gt;</code>",
		// The rest of what html/template's escaper replaces, as it does.
		"<code>it&#39;s &amp; 1&#43;1\uFFFD</code>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// Each distinct diff is shown once, folded, with the contexts that share
// it; a context that prunes is open, one that does not is folded.
func TestHTMLPlanDiffsOnce(t *testing.T) {
	var b bytes.Buffer
	if err := RenderPlanHTML(&b, htmlPlan64()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "&#43;    version: 2"); n != 1 {
		t.Errorf("the shared CRD diff is shown %d times, want once", n)
	}
	if !strings.Contains(page, "(<code>crds.yaml</code>) in eu-shard-00, eu-shard-01, ") || strings.Contains(page, "eu-shard-62, eu-shard-63</summary>") {
		t.Error("the shared diff does not name the 63 contexts that share it (not eu-shard-63, added)")
	}
	// 16 contexts update their Deployment; eu-shard-02 and eu-shard-62
	// in the same way (namespace team-2, replicas 3 to 4).
	if n := strings.Count(page, "<span class=\"add\">&#43;  replicas:"); n != 15 {
		t.Errorf("%d replica diffs, want 15", n)
	}
	if !strings.Contains(page, "<code>Deployment.apps team-2/api</code> (<code>api.yaml</code>) in eu-shard-02, eu-shard-62</summary>") {
		t.Error("the diff eu-shard-02 and eu-shard-62 share is not named once with both")
	}
	if !strings.Contains(page, `<details open data-objects="eu-shard-00">`) || !strings.Contains(page, `<details data-objects="eu-shard-01">`) {
		t.Error("a context that prunes is folded, or one that does not is open")
	}
	if strings.Index(page, `id="refusal"`) > strings.Index(page, `id="contexts"`) {
		t.Error("the refusal is not first")
	}
}

func TestMain(m *testing.M) {
	if err := os.MkdirAll(filepath.Join("testdata", "html"), 0o755); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
