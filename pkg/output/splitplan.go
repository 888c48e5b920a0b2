package output

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// TableListLimit caps the creates and the updates the plan's table names
// per context (prunes are always named in full: a deletion never hides in
// a count), and the objects that need attention the status table and page
// name per context.
const TableListLimit = 50

// planTotals sums a plan's contexts.
type planTotals struct {
	create, update, prune, unchanged, changed int
	mass                                      []string
}

func totals(p *v1alpha1.SplitPlan) planTotals {
	var t planTotals
	overrides := map[string]bool{}
	for _, o := range p.OverrideChanges {
		overrides[o.Context] = true
	}
	for _, c := range p.Contexts {
		t.create += len(c.Create)
		t.update += len(c.Update)
		t.prune += len(c.Prune)
		t.unchanged += c.Unchanged
		if len(c.Create)+len(c.Update)+len(c.Prune) > 0 || c.State == v1alpha1.ContextDropped || overrides[c.Name] {
			t.changed++
		}
		if c.MassPrune {
			t.mass = append(t.mass, c.Name)
		}
	}
	return t
}

// headline is the plan in one sentence.
func headline(p *v1alpha1.SplitPlan) string {
	t := totals(p)
	s := "No changes."
	if p.HasChanges() {
		s = fmt.Sprintf("%d to create, %d to update, %d to prune", t.create, t.update, t.prune)
		if n := len(p.OverrideChanges); n > 0 {
			s += fmt.Sprintf(", %d etcd override change(s)", n)
		}
		s += fmt.Sprintf(", in %d of %d contexts.", t.changed, len(p.Contexts))
	}
	if n := len(p.Errors); n > 0 {
		s += fmt.Sprintf(" The split is refused: %d error(s).", n)
	}
	return s
}

func refusedText(refused bool) string {
	if refused {
		return "  REFUSED"
	}
	return ""
}

// RenderPlanTable renders a plan for a terminal: the headline, one line
// per context (in config order, which is also the waves' order), the errors (a refusal first), the moves, datastore and etcd
// override changes, the warnings, then per context the objects it prunes
// (all), creates and updates (by name), and the diffs.
func RenderPlanTable(w io.Writer, p *v1alpha1.SplitPlan) error {
	var buf bytes.Buffer
	fmt.Fprintf(w, "%s\n\n", headline(p))
	if p.Apply != nil {
		fmt.Fprintf(w, "Apply writes with %s.\n\n", p.Apply.Describe())
	}
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	// The WAVE column only with spec.rollout: without it the table is
	// as it always was.
	waves := len(p.Waves) > 0
	if waves {
		fmt.Fprint(tw, "WAVE\t")
	}
	fmt.Fprintln(tw, "CONTEXT\tSTATE\tCREATE\tUPDATE\tPRUNE\tUNCHANGED\tNOTE")
	for _, c := range p.Contexts {
		note := ""
		if c.MassPrune {
			note = fmt.Sprintf("mass deletion: %d of %d", len(c.Prune), c.Previous)
		}
		if waves {
			wave := p.WaveOf(c.Name)
			if wave == "" {
				wave = "-"
			}
			fmt.Fprintf(tw, "%s\t", wave)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", c.Name, c.State, len(c.Create), len(c.Update), len(c.Prune), c.Unchanged, note)
	}
	if err := flushTrimmed(w, tw, &buf); err != nil {
		return err
	}
	list := func(title string, lines []string) {
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s (%d):\n", title, len(lines))
			for _, l := range lines {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
	list("Errors", p.Errors)
	var gates []string
	for _, wv := range p.Waves {
		for _, g := range wv.Gates {
			gates = append(gates, "wave "+wv.Name+": "+g)
		}
	}
	list("Gates", gates)
	var moves, stores, overrides []string
	for _, m := range p.Moves {
		moves = append(moves, fmt.Sprintf("%s: %s -> %s%s", m.Ref, ctxList(m.From), ctxList(m.To), refusedText(m.Refused)))
	}
	for _, d := range p.DataStoreChanges {
		stores = append(stores, fmt.Sprintf("%s in %s: %s -> %s%s", d.Ref, d.Context, d.From, d.To, refusedText(d.Refused)))
	}
	for _, o := range p.OverrideChanges {
		overrides = append(overrides, o.Message)
	}
	list("Moves", moves)
	list("Datastore changes", stores)
	list("Etcd override changes", overrides)
	list("Warnings", p.Warnings)
	for _, c := range p.Contexts {
		tableObjects(w, c)
	}
	for _, c := range p.Contexts {
		for _, d := range c.Diffs {
			fmt.Fprintf(w, "\n%s", d.Diff)
		}
	}
	return nil
}

// tableObjects names what one context prunes (every one), creates and
// updates (at most TableListLimit of each).
func tableObjects(w io.Writer, c v1alpha1.ContextPlan) {
	titles := map[string]string{"Prune": "Pruned from", "Create": "Created in", "Update": "Updated in"}
	for _, l := range objectLists(c, TableListLimit) {
		if len(l.refs) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s %s (%d):\n", titles[l.title], c.Name, len(l.refs))
		for k, r := range l.refs {
			if l.limit > 0 && k == l.limit {
				fmt.Fprintf(w, "  ... and %d more (-o json lists them all)\n", len(l.refs)-k)
				break
			}
			fmt.Fprintf(w, "  %s\n", r)
		}
	}
}

// objectList is one kind of change of a context: its objects, and how many
// of them a renderer names (0: all).
type objectList struct {
	title string
	refs  []v1alpha1.ObjectRef
	limit int
}

// objectLists are a context's prunes (always all: a deletion never hides
// in a count), creates and updates (at most limit of each).
func objectLists(c v1alpha1.ContextPlan, limit int) []objectList {
	return []objectList{{"Prune", c.Prune, 0}, {"Create", c.Create, limit}, {"Update", c.Update, limit}}
}

func ctxList(c []string) string {
	if len(c) == 0 {
		return "(none)"
	}
	return strings.Join(c, ",")
}

func refusedCount(p *v1alpha1.SplitPlan) int {
	n := 0
	for _, m := range p.Moves {
		if m.Refused {
			n++
		}
	}
	for _, d := range p.DataStoreChanges {
		if d.Refused {
			n++
		}
	}
	for _, o := range p.OverrideChanges {
		if !o.Allowed {
			n++
		}
	}
	return n
}

func refusedCell(refused bool) string {
	if refused {
		return ":no_entry: refused"
	}
	return "allowed"
}

// cell keeps a name from ending a markdown table cell (GitHub needs \| even
// in code spans).
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func codeList(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + cell(n) + "`"
	}
	return strings.Join(q, ", ")
}

// escape keeps a message from opening HTML in markdown.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return escaper.Replace(s) }
