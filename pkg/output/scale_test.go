package output

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The reports at 256 contexts: a summary line first, the failed contexts
// at the top, then the rest in the document's order; the pull-request
// comment within MarkdownLimit and the pages without a row per object of
// the fleet. Sizes and order are asserted, not timing.

const fleetSize = 256

func ctxName(i int) string { return fmt.Sprintf("eu-shard-%03d", i) }

// apply256 is an apply over 256 contexts: 250 Applied, 4 Unchanged, 2
// Failed (eu-shard-017 and eu-shard-200, each with 40 failed objects).
func apply256() *v1alpha1.ApplyReport {
	r := &v1alpha1.ApplyReport{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.ApplyReportKind)}
	for i := range fleetSize {
		c := v1alpha1.ContextApply{Name: ctxName(i), Status: v1alpha1.ApplyApplied, Objects: 5, Applied: 5, Reconciled: 5}
		switch i {
		case 3, 64, 128, 255:
			c = v1alpha1.ContextApply{Name: ctxName(i), Status: v1alpha1.ApplyUnchanged, Objects: 5}
		case 17, 200:
			c.Status, c.Reconciled, c.Failed = v1alpha1.ApplyFailed, 0, 40
			c.Error = fmt.Sprintf("context %q: %s", c.Name, strings.Repeat("apps/Deployment team/api: not Current within --reconcile-timeout 5m0s; ", 3))
			for k := range 40 {
				c.Failures = append(c.Failures, fmt.Sprintf("ConfigMap team/c-%02d: apply failed: admission webhook denied the request", k))
			}
		}
		r.Contexts = append(r.Contexts, c)
	}
	return r
}

// status256 is a fleet of 256 contexts of perObject objects each: five
// unreachable (a long error each), attention contexts whose every object
// drifted and is missing from the inventory, the rest in sync.
func status256(perContext, attention int) *v1alpha1.FleetStatus {
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind)}
	for i := range fleetSize {
		c := v1alpha1.ContextStatus{Name: ctxName(i), Reachable: true,
			Inventory: v1alpha1.InventoryState{Namespace: "default", Name: "shop-" + ctxName(i), State: v1alpha1.InventoryFound}}
		switch {
		case i%51 == 7: // 7, 58, 109, 160, 211
			c.Reachable, c.Inventory.State = false, v1alpha1.InventoryUnknown
			c.Error = fmt.Sprintf(`Get "https://10.0.%d.1:6443/api": dial tcp 10.0.%d.1:6443: connect: connection refused%s`, i, i, strings.Repeat(" (retried)", 20))
		default:
			step := fleetSize / max(attention, 1)
			bad := attention > 0 && i%step == 1%step
			for k := range perContext {
				o := objStatus(ref("", "ConfigMap", fmt.Sprintf("team-%d", k%7), fmt.Sprintf("settings-%04d", k)), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied)
				if bad {
					o = objStatus(o.ObjectRef, v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied, "data.color", "data.size", "metadata.labels.tier")
					o.Message = "the object was deleted from the cluster after its last apply, or never applied there"
				}
				c.Objects = append(c.Objects, o)
			}
		}
		s.Contexts = append(s.Contexts, c)
	}
	return s
}

// plan256 is a plan of 256 contexts, each creating perContext objects,
// pruning two, and updating one with a diff of its own.
func plan256(perContext int) *v1alpha1.SplitPlan {
	p := v1alpha1.NewSplitPlan()
	for i := range fleetSize {
		name := ctxName(i)
		cp := v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextKept, Unchanged: 10}
		for k := range perContext {
			cp.Create = append(cp.Create, ref("", "ConfigMap", "team", fmt.Sprintf("new-%04d", k)))
		}
		cp.Prune = []v1alpha1.ObjectRef{ref("", "Secret", "team", "old-token"), ref("", "Service", "team", "legacy")}
		r := ref("apps", "Deployment", "team", "api")
		cp.Update = []v1alpha1.ObjectRef{r}
		cp.Diffs = []v1alpha1.ObjectDiff{{Ref: r, Diff: fmt.Sprintf("--- previous/%s/api.yaml\n+++ new/%s/api.yaml\n@@ -1,2 +1,2 @@\n spec:\n-  replicas: %d\n+  replicas: %d\n%s", name, name, i, i+1, strings.Repeat(" # padding of a long diff\n", 40))}}
		cp.Previous = cp.Unchanged + 3
		p.Contexts = append(p.Contexts, cp)
	}
	return p
}

func render(t *testing.T, f func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := f(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// firstFields are the first field of the lines after the line that
// starts with header, up to the next empty line.
func firstFields(out, header string) []string {
	var names []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, header):
			in = true
		case in && l == "":
			return names
		case in:
			names = append(names, strings.Fields(l)[0])
		}
	}
	return names
}

// wantOrder checks that got lists first then the rest of 0..n-1, each in
// ascending order.
func wantOrder(t *testing.T, what string, got []string, first []int) {
	t.Helper()
	want := make([]string, 0, fleetSize)
	isFirst := map[int]bool{}
	for _, i := range first {
		want = append(want, ctxName(i))
		isFirst[i] = true
	}
	for i := range fleetSize {
		if !isFirst[i] {
			want = append(want, ctxName(i))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: %d contexts in the order %v..., want %v...", what, len(got), got[:min(8, len(got))], want[:8])
	}
}

func TestApplyReportAt256Contexts(t *testing.T) {
	r := apply256()
	var rest []string
	for i := 1; i < fleetSize; i++ {
		rest = append(rest, ctxName(i))
	}
	r.Waves = []v1alpha1.WaveApply{{Name: "canary", Contexts: []string{ctxName(0)}, Status: v1alpha1.WaveApplied},
		{Name: "rest", Contexts: rest, Status: v1alpha1.WaveApplied, Error: "2 of 255 context(s) failed, within maxFailures 5"}}
	text := render(t, func(b *bytes.Buffer) error { return RenderApplyText(b, r) })
	if !strings.Contains(text, "\nrest    Applied  "+strings.Join(rest[:10], ", ")+" and 245 more  2 of 255") {
		t.Errorf("the waves do not name 10 contexts, then count the rest:\n%s", text[strings.Index(text, "WAVE"):])
	}
	if first, _, _ := strings.Cut(text, "\n"); first != "256 context(s): 250 applied, 4 unchanged, 2 failed; the apply failed." {
		t.Errorf("first line %q, want the contexts counted by status", first)
	}
	wantOrder(t, "the text table", firstFields(text, "CONTEXT"), []int{17, 200})
	page := render(t, func(b *bytes.Buffer) error { return RenderApplyHTML(b, r) })
	var rows []string
	for _, m := range regexp.MustCompile(`<tr data-context="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		rows = append(rows, m[1])
	}
	wantOrder(t, "the page's contexts", rows, []int{17, 200})
	t.Logf("256 contexts: text %d bytes, page %d bytes", len(text), len(page))
	if len(page) > 512<<10 {
		t.Errorf("the page of 256 contexts has %d bytes, want at most 512 KiB", len(page))
	}
}

func TestStatusAt256Contexts(t *testing.T) {
	unreachable := []int{7, 58, 109, 160, 211}
	// Eight contexts need attention: 1, 33, 65, ...
	var attention []int
	for i := 1; i < fleetSize; i += fleetSize / 8 {
		attention = append(attention, i)
	}
	failedFirst := append(append([]int{}, unreachable...), attention...)
	for _, tc := range []struct {
		name                  string
		perContext, attention int
		abridged              bool
	}{
		{"20 objects, 8 contexts need attention", 20, 8, false},
		{"400 objects, every context needs attention", 400, fleetSize, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := status256(tc.perContext, tc.attention)
			headline := statusHeadline(s)
			table := render(t, func(b *bytes.Buffer) error { return RenderStatusTable(b, s) })
			if !strings.HasPrefix(table, headline+"\n") {
				t.Errorf("the table does not start with the headline %q:\n%.300s", headline, table)
			}
			if !tc.abridged {
				wantOrder(t, "the table", firstFields(table, "CONTEXT"), failedFirst)
			} else {
				wantOrder(t, "the table", firstFields(table, "CONTEXT"), unreachable)
			}

			md := render(t, func(b *bytes.Buffer) error { return RenderStatusMarkdown(b, s) })
			if len(md) > MarkdownLimit {
				t.Errorf("the markdown has %d bytes, more than GitHub's %d", len(md), MarkdownLimit)
			}
			if !strings.HasPrefix(md, "### shard-router status\n\n**"+headline+"**\n\n") {
				t.Errorf("the markdown does not start with the headline:\n%.300s", md)
			}
			if got := strings.Contains(md, ":scissors: **Abridged**"); got != tc.abridged {
				t.Errorf("abridged: %v, want %v", got, tc.abridged)
			}
			var rows []string
			for _, m := range regexp.MustCompile("(?m)^\\| `(eu-shard-\\d+)` \\| (unreachable|needs attention|in sync) ").FindAllStringSubmatch(md, -1) {
				rows = append(rows, m[1])
			}
			want := failedFirst
			if tc.abridged {
				want = unreachable
			}
			wantOrder(t, "the markdown summary", rows, want)

			page := render(t, func(b *bytes.Buffer) error { return RenderStatusHTML(b, s) })
			objectRows := strings.Count(page, "<tr><td><code>")
			needs := 0
			for _, c := range s.Contexts {
				needs += min(countContext(c).attention, TableListLimit)
			}
			if objectRows != needs {
				t.Errorf("the page lists %d objects that need attention, want %d (at most %d per context)", objectRows, needs, TableListLimit)
			}
			if tc.abridged && !strings.Contains(page, "... and 350 more (<code>shard-router status -o json</code> lists them all)") {
				t.Error("the page does not say how many objects it left out of a context")
			}
			if listed := strings.Count(table, "\n  ConfigMap "); listed != needs {
				t.Errorf("the table lists %d objects that need attention, want %d (at most %d per context)", listed, needs, TableListLimit)
			}
			if tc.abridged && !strings.Contains(table, "\n  ... and 350 more (-o json lists them all)\n") {
				t.Error("the table does not say how many objects it left out of a context")
			}
			t.Logf("table %d bytes, markdown %d bytes, page %d bytes", len(table), len(md), len(page))
			if len(page) > 8<<20 || len(table) > 4<<20 {
				t.Errorf("the page has %d bytes and the table %d, want at most 8 and 4 MiB", len(page), len(table))
			}
		})
	}
}

func TestPlanAt256Contexts(t *testing.T) {
	p := plan256(150)
	table := render(t, func(b *bytes.Buffer) error { return RenderPlanTable(b, p) })
	if first, _, _ := strings.Cut(table, "\n"); first != headline(p) {
		t.Errorf("the table's first line %q, want the headline %q", first, headline(p))
	}
	md := render(t, func(b *bytes.Buffer) error { return RenderPlanMarkdown(b, p) })
	t.Logf("table %d bytes, markdown %d bytes", len(table), len(md))
	if len(md) > MarkdownLimit {
		t.Errorf("the markdown has %d bytes, more than GitHub's %d", len(md), MarkdownLimit)
	}
	if !strings.HasPrefix(md, "### shard-router plan\n\n**"+headline(p)+"**\n\n> :scissors: **Abridged**") {
		t.Errorf("the markdown does not start with the headline, then the note of what it left out:\n%.400s", md)
	}
}
