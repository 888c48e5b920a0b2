package output

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// HTML is the -o value of the self-contained page of status, plan and
// report: one file, inline CSS and SVG, no script and nothing loaded from
// anywhere, so that a CI job can keep it as an artifact and anyone can open
// it offline. The pages are rendered from the same documents as -o json
// (htmlpages.go): every name and message is escaped.
const HTML = "html"

// signal is how a state is shown: a class for its colour and a symbol, so
// that colour is never the only signal (the state is also in words).
type signal struct {
	Class, Symbol string
}

var (
	signalOK   = signal{"ok", "✓"}
	signalWarn = signal{"warn", "!"}
	signalBad  = signal{"bad", "✕"}
)

// statusView is the status page.
type statusView struct {
	Doc      *v1alpha1.FleetStatus
	Headline string
	InSync   int
	// HasEngine adds the engine sync column: some context has its GitOps
	// engine's status (a split for Flux).
	HasEngine bool
	Failed    []statusRow
	Rows      []statusRow
	Attention []attentionGroup
}

type statusRow struct {
	v1alpha1.ContextStatus
	State                                                         string
	Signal                                                        signal
	Objects, Current, NotCurrent, Drifted, Extra, NotApplied, Att int
}

type attentionGroup struct {
	Name    string
	Objects []attentionObject
	// More counts the objects that need attention beyond Objects, the
	// first TableListLimit: a page of hundreds of contexts stays usable.
	More int
}

// attentionObject is one object that needs attention, with a signal for
// each of its columns: its kstatus, its inventory state and its drift.
type attentionObject struct {
	v1alpha1.ObjectStatus
	Ref, Note               string
	StatusSig, InventorySig signal
}

func contextSignal(c v1alpha1.ContextStatus) signal {
	switch {
	case c.Failed():
		return signalBad
	case c.InSync():
		return signalOK
	}
	return signalWarn
}

func statusSignal(o v1alpha1.ObjectStatus) signal {
	switch {
	case o.Error != "" || o.Status == "Failed":
		return signalBad
	case o.Status == v1alpha1.StatusCurrent:
		return signalOK
	}
	return signalWarn
}

// inventorySignal: an extra object is pruned by the next apply.
func inventorySignal(o v1alpha1.ObjectStatus) signal {
	switch o.Inventory {
	case v1alpha1.ObjectApplied:
		return signalOK
	case v1alpha1.ObjectExtra:
		return signalBad
	}
	return signalWarn
}

// RenderStatusHTML renders a fleet status as a page: the headline, each
// failed context's error, the fleet matrix (one row per context:
// unreachable or failed first, then those that need attention, then those
// in sync), then the objects that need attention, grouped by context, at
// most TableListLimit per context.
func RenderStatusHTML(w io.Writer, s *v1alpha1.FleetStatus) error {
	v := statusView{Doc: s, Headline: statusHeadline(s)}
	for _, c := range statusOrder(s) {
		n := countContext(c)
		row := statusRow{ContextStatus: c, State: contextState(c), Signal: contextSignal(c), Objects: n.objects, Current: n.current,
			NotCurrent: n.notCurrent, Drifted: n.drifted, Extra: n.extra, NotApplied: n.notApplied, Att: n.attention}
		v.Rows = append(v.Rows, row)
		if c.Engine != nil {
			v.HasEngine = true
		}
		if c.InSync() {
			v.InSync++
		}
		if c.Failed() {
			v.Failed = append(v.Failed, row)
		}
		if n.attention == 0 {
			continue
		}
		g := attentionGroup{Name: c.Name}
		for _, o := range c.Objects {
			switch {
			case !o.NeedsAttention():
			case len(g.Objects) == TableListLimit:
				g.More++
			default:
				g.Objects = append(g.Objects, attentionObject{ObjectStatus: o, Ref: o.ObjectRef.String(), Note: attentionNote(o),
					StatusSig: statusSignal(o), InventorySig: inventorySignal(o)})
			}
		}
		v.Attention = append(v.Attention, g)
	}
	return writePage(w, v.write)
}

// planView is the plan page.
type planView struct {
	Doc       *v1alpha1.SplitPlan
	Headline  string
	Refused   int
	Mass      []string
	Prune     int
	Changed   int
	Rows      []planRow
	Moves     []moveRow
	Stores    []storeRow
	Overrides []overrideRow
	Objects   []planObjects
	Diffs     []diffView
	DiffCount int
}

type planRow struct {
	v1alpha1.ContextPlan
	Changed bool
}

type moveRow struct {
	Ref, From, To string
	Refused       bool
}

type storeRow struct {
	Ref, Context, From, To string
	Refused                bool
}

type overrideRow struct {
	v1alpha1.OverrideChange
	From, To string
	Verdict  string
}

// planObjects names what one context creates, updates and prunes; it is
// open when the context prunes: a deletion is never folded away.
type planObjects struct {
	Name  string
	State v1alpha1.ContextState
	Open  bool
	Lists []refList
}

type refList struct {
	Title string
	Refs  []string
}

type diffView struct {
	Ref, File, Where string
	Lines            []diffLine
}

type diffLine struct {
	Class, Text string
}

// RenderPlanHTML renders a plan as a page: the headline; the refusal and
// its errors first; the summary (one row per context); the moves,
// datastore and etcd override changes, refused ones first; the warnings;
// the objects of each changed context; then each distinct diff once,
// folded, with the contexts that share it.
func RenderPlanHTML(w io.Writer, p *v1alpha1.SplitPlan) error {
	t := totals(p)
	v := planView{Doc: p, Headline: headline(p), Refused: refusedCount(p), Mass: t.mass, Prune: t.prune, Changed: t.changed}
	overrides := map[string]bool{}
	for _, o := range p.OverrideChanges {
		overrides[o.Context] = true
	}
	for _, c := range p.Contexts {
		changed := len(c.Create)+len(c.Update)+len(c.Prune) > 0
		v.Rows = append(v.Rows, planRow{ContextPlan: c, Changed: changed || c.State == v1alpha1.ContextDropped || overrides[c.Name]})
		if !changed {
			continue
		}
		po := planObjects{Name: c.Name, State: c.State, Open: len(c.Prune) > 0}
		for _, l := range objectLists(c, 0) {
			if len(l.refs) > 0 {
				po.Lists = append(po.Lists, refList{Title: strings.ToLower(l.title), Refs: refStrings(l.refs)})
			}
		}
		v.Objects = append(v.Objects, po)
	}
	for _, m := range p.Moves {
		v.Moves = append(v.Moves, moveRow{Ref: m.Ref.String(), From: contextNames(m.From), To: contextNames(m.To), Refused: m.Refused})
	}
	slices.SortStableFunc(v.Moves, func(a, b moveRow) int { return refusedFirst(a.Refused, b.Refused) })
	for _, d := range p.DataStoreChanges {
		v.Stores = append(v.Stores, storeRow{Ref: d.Ref.String(), Context: d.Context, From: d.From, To: d.To, Refused: d.Refused})
	}
	slices.SortStableFunc(v.Stores, func(a, b storeRow) int { return refusedFirst(a.Refused, b.Refused) })
	for _, o := range p.OverrideChanges {
		verdict := "allowed"
		if !o.Allowed {
			verdict = "refused"
		} else if o.Ephemeral {
			verdict = "allowed (ephemeral)"
		}
		v.Overrides = append(v.Overrides, overrideRow{OverrideChange: o, From: htmlLocation(o.From), To: htmlLocation(o.To), Verdict: verdict})
	}
	slices.SortStableFunc(v.Overrides, func(a, b overrideRow) int { return refusedFirst(!a.Allowed, !b.Allowed) })
	v.Diffs, v.DiffCount = planDiffs(p)
	return writePage(w, v.write)
}

// contextNames joins a move's contexts for people.
func contextNames(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

func refusedFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func refStrings(refs []v1alpha1.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}

func htmlLocation(l v1alpha1.OverrideLocation) string {
	if len(l.Servers) == 0 {
		return "the main etcd"
	}
	s := strings.Join(l.Servers, ";")
	if l.DataStore != "" {
		s = l.DataStore + " (" + s + ")"
	}
	return s
}

// planDiffs are the plan's diffs grouped as the markdown plan groups them
// (groupDiffs), with how many updates they are.
func planDiffs(p *v1alpha1.SplitPlan) ([]diffView, int) {
	all, total := groupDiffs(p)
	views := make([]diffView, len(all))
	for i, sd := range all {
		where := strings.Join(sd.contexts, ", ")
		if len(sd.contexts) > 1 && len(sd.contexts) == len(p.Contexts) {
			where = fmt.Sprintf("all %d contexts", len(p.Contexts))
		}
		dv := diffView{Ref: sd.ref.String(), File: sd.file, Where: where}
		text := "--- previous/" + sd.file + "\n+++ new/" + sd.file + "\n" + strings.TrimSuffix(sd.body, "\n")
		for _, l := range strings.Split(text, "\n") {
			class := ""
			switch {
			case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "@@"):
				class = "hunk"
			case strings.HasPrefix(l, "+"):
				class = "add"
			case strings.HasPrefix(l, "-"):
				class = "del"
			}
			dv.Lines = append(dv.Lines, diffLine{Class: class, Text: l})
		}
		views[i] = dv
	}
	return views, total
}

// reportView is the capacity page.
type reportView struct {
	Doc      *v1alpha1.CapacityReport
	Stores   []string
	Rows     []heatRow
	Total    heatCell
	MinWidth int
	Errors   []string
	Warnings []string
}

type heatRow struct {
	Name  string
	Total heatCell
	Cells []heatCell
}

// heatCell is one context's or datastore's usage. Level (1 to 4, 0 for
// nothing) is its share of its budget where one is set, else its bytes
// against the largest datastore cell; Over marks an exceeded budget, in
// words too.
type heatCell struct {
	Present bool
	v1alpha1.Usage
	Use   string
	Over  []string
	Level int
}

// RenderCapacityHTML renders a capacity report as a page: a heatmap of
// contexts x datastores with the objects, bytes, shares and budgets in
// every cell, the total, the placed Namespaces and the results.
func RenderCapacityHTML(w io.Writer, r *v1alpha1.CapacityReport) error {
	v := reportView{Doc: r}
	var largest int64
	for _, c := range r.Contexts {
		for _, ds := range c.DataStores {
			if !slices.Contains(v.Stores, ds.Name) {
				v.Stores = append(v.Stores, ds.Name)
			}
			largest = max(largest, ds.Bytes)
		}
	}
	for _, c := range r.Contexts {
		row := heatRow{Name: c.Name, Total: newHeatCell(c.Usage, c.Budget, 0)}
		for _, name := range v.Stores {
			i := slices.IndexFunc(c.DataStores, func(d v1alpha1.DataStoreCapacity) bool { return d.Name == name })
			if i < 0 {
				row.Cells = append(row.Cells, heatCell{})
				continue
			}
			row.Cells = append(row.Cells, newHeatCell(c.DataStores[i].Usage, c.DataStores[i].Budget, largest))
		}
		v.Rows = append(v.Rows, row)
	}
	v.Total = newHeatCell(r.Total, nil, 0)
	// Each datastore column needs about 84 px; below that, the heatmap
	// scrolls in its own box rather than squeezing the numbers.
	v.MinWidth = 130 + 96*(len(v.Stores)+1)
	for _, res := range r.Results {
		switch res.Severity {
		case framework.Error:
			v.Errors = append(v.Errors, res.String())
		case framework.Warning:
			v.Warnings = append(v.Warnings, res.String())
		}
	}
	return writePage(w, v.write)
}

func newHeatCell(u v1alpha1.Usage, b *v1alpha1.BudgetStatus, largest int64) heatCell {
	c := heatCell{Present: true, Usage: u}
	if b != nil {
		c.Over = b.Exceeded
		use := 0.0
		var parts []string
		if b.MaxObjects != nil && *b.MaxObjects > 0 {
			f := float64(u.Objects) / float64(*b.MaxObjects)
			use = max(use, f)
			parts = append(parts, fmt.Sprintf("%s of max %d obj", Percent(f), *b.MaxObjects))
		}
		if b.MaxBytes != nil && *b.MaxBytes > 0 {
			f := float64(u.Bytes) / float64(*b.MaxBytes)
			use = max(use, f)
			parts = append(parts, fmt.Sprintf("%s of max %d B", Percent(f), *b.MaxBytes))
		}
		c.Use = strings.Join(parts, ", ")
		if b.Enforce {
			c.Use += " (enforced)"
		}
		c.Level = heatLevel(use)
		if len(b.Exceeded) > 0 {
			c.Level = 5
		}
		return c
	}
	if largest > 0 {
		c.Level = heatLevel(float64(u.Bytes) / float64(largest))
	}
	return c
}

// heatLevel buckets a fraction into quarters: 1 up to 25%, ..., 4 above
// 75%; 0 for nothing at all.
func heatLevel(f float64) int {
	switch {
	case f <= 0:
		return 0
	case f <= 0.25:
		return 1
	case f <= 0.5:
		return 2
	case f <= 0.75:
		return 3
	}
	return 4
}
