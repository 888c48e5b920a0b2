package output

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// MarkdownListLimit caps the creates and the updates listed per context in
// markdown, so that a comment on a big change stays readable; prunes are
// always listed in full: a deletion never hides in a count.
const MarkdownListLimit = 100

// planTotals sums a plan's contexts.
type planTotals struct {
	create, update, prune, unchanged, changed int
	mass                                      []string
}

func totals(p *v1alpha1.SplitPlan) planTotals {
	var t planTotals
	for _, c := range p.Contexts {
		t.create += len(c.Create)
		t.update += len(c.Update)
		t.prune += len(c.Prune)
		t.unchanged += c.Unchanged
		if len(c.Create)+len(c.Update)+len(c.Prune) > 0 || c.State == v1alpha1.ContextDropped {
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
		s = fmt.Sprintf("%d to create, %d to update, %d to prune, in %d of %d contexts.", t.create, t.update, t.prune, t.changed, len(p.Contexts))
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

// RenderPlanTable renders a plan for a terminal: one line per context, then
// the moves, datastore changes, errors and warnings, the pruned objects of
// each context by name, and the diffs.
func RenderPlanTable(w io.Writer, p *v1alpha1.SplitPlan) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tSTATE\tCREATE\tUPDATE\tPRUNE\tUNCHANGED\tNOTE")
	for _, c := range p.Contexts {
		note := ""
		if c.MassPrune {
			note = fmt.Sprintf("mass deletion: %d of %d", len(c.Prune), c.Previous)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", c.Name, c.State, len(c.Create), len(c.Update), len(c.Prune), c.Unchanged, note)
	}
	if err := flushTrimmed(w, tw, &buf); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", headline(p))
	if len(p.Moves) > 0 {
		fmt.Fprintf(w, "\nMoves (%d):\n", len(p.Moves))
		for _, m := range p.Moves {
			fmt.Fprintf(w, "  %s: %s -> %s%s\n", m.Ref, ctxList(m.From), ctxList(m.To), refusedText(m.Refused))
		}
	}
	if len(p.DataStoreChanges) > 0 {
		fmt.Fprintf(w, "\nDatastore changes (%d):\n", len(p.DataStoreChanges))
		for _, d := range p.DataStoreChanges {
			fmt.Fprintf(w, "  %s in %s: %s -> %s%s\n", d.Ref, d.Context, d.From, d.To, refusedText(d.Refused))
		}
	}
	for _, l := range []struct {
		name string
		msgs []string
	}{{"Errors", p.Errors}, {"Warnings", p.Warnings}} {
		if len(l.msgs) > 0 {
			fmt.Fprintf(w, "\n%s (%d):\n", l.name, len(l.msgs))
			for _, m := range l.msgs {
				fmt.Fprintf(w, "  %s\n", m)
			}
		}
	}
	for _, c := range p.Contexts {
		if len(c.Prune) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nPruned from %s (%d):\n", c.Name, len(c.Prune))
		for _, r := range c.Prune {
			fmt.Fprintf(w, "  %s\n", r)
		}
	}
	for _, c := range p.Contexts {
		for _, d := range c.Diffs {
			fmt.Fprintf(w, "\n%s", d.Diff)
		}
	}
	return nil
}

func ctxList(c []string) string {
	if len(c) == 0 {
		return "(none)"
	}
	return strings.Join(c, ",")
}

// RenderPlanMarkdown renders a plan as GitHub-flavoured markdown for a
// pull-request comment: the headline and a warning line for every prune,
// refusal and mass deletion, a summary table, then one collapsed section
// per changed context listing prunes, creates and updates (with diffs).
func RenderPlanMarkdown(w io.Writer, p *v1alpha1.SplitPlan) error {
	var b strings.Builder
	t := totals(p)
	b.WriteString("### shard-router plan\n\n")
	b.WriteString("**" + headline(p) + "**\n\n")
	// One paragraph per warning, so that GitHub shows each on its own line.
	var warns []string
	if len(p.Errors) > 0 {
		warns = append(warns, fmt.Sprintf("> :no_entry: **Refused**: %d error(s); nothing may be applied until they are fixed.\n", len(p.Errors)))
	}
	if len(t.mass) > 0 {
		warns = append(warns, fmt.Sprintf("> :warning: **Mass deletion** in %s.\n", codeList(t.mass)))
	}
	if t.prune > 0 {
		var where []string
		for _, c := range p.Contexts {
			if len(c.Prune) > 0 {
				where = append(where, fmt.Sprintf("`%s` (%d)", c.Name, len(c.Prune)))
			}
		}
		warns = append(warns, fmt.Sprintf("> :warning: **%d object(s) will be deleted** (pruned) from %s.\n", t.prune, strings.Join(where, ", ")))
	}
	if n := refusedCount(p); n > 0 {
		warns = append(warns, fmt.Sprintf("> :no_entry: %d refused move(s) or datastore change(s).\n", n))
	}
	if len(warns) > 0 {
		b.WriteString(strings.Join(warns, ">\n") + "\n")
	}
	b.WriteString("| context | state | create | update | prune | unchanged |\n| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, c := range p.Contexts {
		prune := fmt.Sprint(len(c.Prune))
		if len(c.Prune) > 0 {
			prune = "**" + prune + "**"
		}
		if c.MassPrune {
			prune += " :warning:"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %s | %d |\n", cell(c.Name), c.State, len(c.Create), len(c.Update), prune, c.Unchanged)
	}
	section := func(title string, n int, body func()) {
		if n == 0 {
			return
		}
		fmt.Fprintf(&b, "\n<details><summary>%s (%d)</summary>\n\n", title, n)
		body()
		b.WriteString("\n</details>\n")
	}
	section("Errors", len(p.Errors), func() {
		for _, m := range p.Errors {
			b.WriteString("- " + escape(m) + "\n")
		}
	})
	section("Warnings", len(p.Warnings), func() {
		for _, m := range p.Warnings {
			b.WriteString("- " + escape(m) + "\n")
		}
	})
	section("Moves", len(p.Moves), func() {
		b.WriteString("| object | from | to | |\n| --- | --- | --- | --- |\n")
		for _, m := range p.Moves {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Ref, codeList(m.From), codeList(m.To), refusedCell(m.Refused))
		}
	})
	section("Datastore changes", len(p.DataStoreChanges), func() {
		b.WriteString("| object | context | from | to | |\n| --- | --- | --- | --- | --- |\n")
		for _, d := range p.DataStoreChanges {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", d.Ref, cell(d.Context), d.From, d.To, refusedCell(d.Refused))
		}
	})
	for _, c := range p.Contexts {
		if len(c.Create)+len(c.Update)+len(c.Prune) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n<details><summary><code>%s</code> (%s): %d create, %d update, %d prune</summary>\n", c.Name, c.State, len(c.Create), len(c.Update), len(c.Prune))
		refs := func(title string, refs []v1alpha1.ObjectRef, limit int) {
			if len(refs) == 0 {
				return
			}
			fmt.Fprintf(&b, "\n**%s (%d)**\n\n", title, len(refs))
			for k, r := range refs {
				if limit > 0 && k == limit {
					fmt.Fprintf(&b, "- ... and %d more (`shard-router plan -o json` lists them all)\n", len(refs)-limit)
					break
				}
				fmt.Fprintf(&b, "- `%s`\n", r)
			}
		}
		refs("Prune", c.Prune, 0)
		refs("Create", c.Create, MarkdownListLimit)
		refs("Update", c.Update, MarkdownListLimit)
		for k, d := range c.Diffs {
			if k == MarkdownListLimit {
				break
			}
			fence := "```"
			for strings.Contains(d.Diff, fence) {
				fence += "`"
			}
			fmt.Fprintf(&b, "\n%sdiff\n%s%s\n", fence, d.Diff, fence)
		}
		b.WriteString("\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
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
