package output

import (
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

const (
	// MarkdownLimit is GitHub's limit on a comment (65,536 characters);
	// the markdown plan never has more bytes, so never more characters.
	MarkdownLimit = 65536
	// MarkdownListLimit caps the creates and the updates listed per
	// context, so that a comment on a big change stays readable.
	MarkdownListLimit = 100
	// markdownReserve is kept for what must still be written once the
	// budget is spent: closing tags and the note of what was left out.
	markdownReserve = 1024
)

// RenderPlanMarkdown renders a plan as GitHub-flavoured markdown for a
// pull-request comment, within MarkdownLimit however big the plan: the
// headline; a refusal first, with its errors; a warning line for every
// prune, refusal and mass deletion; a summary table; the etcd override
// changes; then collapsed sections: warnings, moves, datastore changes,
// the objects of each changed context, and the diffs, each diff once with
// the contexts that share it. What does not fit is left out, counted in a
// note under the headline that says how to get the full plan.
func RenderPlanMarkdown(w io.Writer, p *v1alpha1.SplitPlan) error {
	head := "### shard-router plan\n\n**" + headline(p) + "**\n\n"
	if p.Apply != nil {
		head += "Apply writes with " + escape(p.Apply.Describe()) + ".\n\n"
	}
	m := &mdWriter{limit: MarkdownLimit - len(head) - markdownReserve}
	m.refusal(p)
	m.banners(p)
	m.summary(p)
	m.waves(p)
	m.overrides(p)
	m.section("Warnings", "warnings", "", escapeAll(p.Warnings))
	m.section("Moves", "moves", "| object | from | to | |\n| --- | --- | --- | --- |\n", moveRows(p.Moves))
	m.section("Datastore changes", "datastore changes", "| object | context | from | to | |\n| --- | --- | --- | --- | --- |\n", dataStoreRows(p.DataStoreChanges))
	for _, c := range p.Contexts {
		m.context(c)
	}
	m.diffs(p)
	_, err := io.WriteString(w, head+m.note()+m.b.String())
	return err
}

// mdWriter writes markdown within a budget, and counts what it leaves out.
type mdWriter struct {
	b     strings.Builder
	limit int
	// left counts what was left out, by what it is, in order.
	left  map[string]int
	order []string
	// full says how to see everything, in the note; default: the plan's.
	full string
}

// add writes s if it fits.
func (m *mdWriter) add(s string) bool {
	if m.b.Len()+len(s) > m.limit {
		return false
	}
	m.b.WriteString(s)
	return true
}

// leave counts n things left out.
func (m *mdWriter) leave(n int, what string) {
	if n == 0 {
		return
	}
	if m.left == nil {
		m.left = map[string]int{}
	}
	if _, ok := m.left[what]; !ok {
		m.order = append(m.order, what)
	}
	m.left[what] += n
}

// lines writes each line that fits; once one does not, it and the rest
// are left out.
func (m *mdWriter) lines(lines []string, what string) {
	for k, l := range lines {
		if !m.add(l) {
			m.leave(len(lines)-k, what)
			return
		}
	}
}

// section writes a collapsed section: a header, then a line per row.
func (m *mdWriter) section(title, what, header string, rows []string) {
	if len(rows) == 0 {
		return
	}
	if !m.add(fmt.Sprintf("\n<details><summary>%s (%d)</summary>\n\n%s", title, len(rows), header)) {
		m.leave(len(rows), what)
		return
	}
	m.lines(rows, what)
	m.b.WriteString("\n</details>\n") // within the reserve
}

// note says what was left out and how to see everything.
func (m *mdWriter) note() string {
	if len(m.order) == 0 {
		return ""
	}
	parts := make([]string, len(m.order))
	for i, what := range m.order {
		parts[i] = fmt.Sprintf("%d %s", m.left[what], what)
	}
	full := m.full
	if full == "" {
		full = "The full plan: `shard-router plan PKG --previous OUT -o json --diff` (every object and diff; save it as a file or CI artifact)."
	}
	return fmt.Sprintf("> :scissors: **Abridged** to fit a pull-request comment (%d characters): left out %s. %s\n\n",
		MarkdownLimit, strings.Join(parts, ", "), full)
}

// refusal lists the errors first: nothing may be applied until they are
// fixed.
func (m *mdWriter) refusal(p *v1alpha1.SplitPlan) {
	if len(p.Errors) == 0 {
		return
	}
	m.add(fmt.Sprintf("> :no_entry: **Refused**: %d error(s); nothing may be applied until they are fixed:\n\n", len(p.Errors)))
	rows := escapeAll(p.Errors)
	m.lines(rows, "errors")
	m.add("\n")
}

// banners are one warning paragraph each, so that GitHub shows each on its
// own line.
func (m *mdWriter) banners(p *v1alpha1.SplitPlan) {
	t := totals(p)
	var warns []string
	if len(t.mass) > 0 {
		warns = append(warns, fmt.Sprintf("> :warning: **Mass deletion** in %s.\n", codeList(t.mass)))
	}
	if t.prune > 0 {
		var where []string
		for _, c := range p.Contexts {
			if len(c.Prune) > 0 {
				where = append(where, fmt.Sprintf("`%s` (%d)", cell(c.Name), len(c.Prune)))
			}
		}
		warns = append(warns, fmt.Sprintf("> :warning: **%d object(s) will be deleted** (pruned) from %s.\n", t.prune, strings.Join(where, ", ")))
	}
	if n := refusedCount(p); n > 0 {
		warns = append(warns, fmt.Sprintf("> :no_entry: %d refused move(s), datastore or etcd override change(s).\n", n))
	}
	if len(warns) > 0 && !m.add(strings.Join(warns, ">\n")+"\n") {
		m.leave(len(warns), "warning lines")
	}
}

// summary is one table row per context.
func (m *mdWriter) summary(p *v1alpha1.SplitPlan) {
	if !m.add("| context | state | create | update | prune | unchanged |\n| --- | --- | ---: | ---: | ---: | ---: |\n") {
		m.leave(len(p.Contexts), "summary rows")
		return
	}
	rows := make([]string, len(p.Contexts))
	for i, c := range p.Contexts {
		prune := fmt.Sprint(len(c.Prune))
		if len(c.Prune) > 0 {
			prune = "**" + prune + "**"
		}
		if c.MassPrune {
			prune += " :warning:"
		}
		rows[i] = fmt.Sprintf("| `%s` | %s | %d | %d | %s | %d |\n", cell(c.Name), c.State, len(c.Create), len(c.Update), prune, c.Unchanged)
	}
	m.lines(rows, "summary rows")
}

// waves lists spec.rollout's waves in order, open: the order the change
// reaches the clusters in.
func (m *mdWriter) waves(p *v1alpha1.SplitPlan) {
	if len(p.Waves) == 0 {
		return
	}
	rows := make([]string, len(p.Waves))
	for i, w := range p.Waves {
		rows[i] = fmt.Sprintf("| %d | `%s` | %s |\n", i+1, cell(w.Name), codeList(w.Contexts))
	}
	if !m.add("\n**Rollout waves**, applied in this order:\n\n| | wave | contexts |\n| ---: | --- | --- |\n") {
		m.leave(len(rows), "wave rows")
		return
	}
	m.lines(rows, "wave rows")
	var gates []string
	for _, w := range p.Waves {
		for _, g := range w.Gates {
			gates = append(gates, fmt.Sprintf("- `%s`: %s\n", cell(w.Name), cell(g)))
		}
	}
	if len(gates) == 0 {
		return
	}
	if !m.add("\n**Gates**, measured in each context of their wave while it bakes:\n\n") {
		m.leave(len(gates), "gate rows")
		return
	}
	m.lines(gates, "gate rows")
}

// overrides lists the etcd override changes, open: each changes where a
// cluster stores a resource.
func (m *mdWriter) overrides(p *v1alpha1.SplitPlan) {
	if len(p.OverrideChanges) == 0 {
		return
	}
	if !m.add(fmt.Sprintf("\n**Etcd override changes (%d)**: kube-apiserver's `--etcd-servers-overrides` changes; it never migrates data.\n\n| context | resource | from | to | |\n| --- | --- | --- | --- | --- |\n", len(p.OverrideChanges))) {
		m.leave(len(p.OverrideChanges), "etcd override changes")
		return
	}
	rows := make([]string, len(p.OverrideChanges))
	for i, o := range p.OverrideChanges {
		verdict := refusedCell(!o.Allowed)
		if o.Allowed && o.Ephemeral {
			verdict = "allowed (ephemeral)"
		}
		rows[i] = fmt.Sprintf("| `%s` | `%s` | %s | %s | %s |\n", cell(o.Context), cell(o.Resource), location(o.From), location(o.To), verdict)
	}
	m.lines(rows, "etcd override changes")
}

func location(l v1alpha1.OverrideLocation) string {
	if len(l.Servers) == 0 {
		return "the main etcd"
	}
	s := escape(cell(strings.Join(l.Servers, ";")))
	if l.DataStore != "" {
		s = "`" + cell(l.DataStore) + "` (" + s + ")"
	}
	return s
}

// context lists the objects one context prunes (all), creates and updates.
func (m *mdWriter) context(c v1alpha1.ContextPlan) {
	n := len(c.Create) + len(c.Update) + len(c.Prune)
	if n == 0 {
		return
	}
	if !m.add(fmt.Sprintf("\n<details><summary><code>%s</code> (%s): %d create, %d update, %d prune</summary>\n", escape(c.Name), c.State, len(c.Create), len(c.Update), len(c.Prune))) {
		m.leave(n, "object names")
		return
	}
	for _, l := range objectLists(c, MarkdownListLimit) {
		if len(l.refs) == 0 {
			continue
		}
		if !m.add(fmt.Sprintf("\n**%s (%d)**\n\n", l.title, len(l.refs))) {
			m.leave(len(l.refs), "object names")
			continue
		}
		var rows []string
		for k, r := range l.refs {
			if l.limit > 0 && k == l.limit {
				rows = append(rows, fmt.Sprintf("- ... and %d more (`shard-router plan -o json` lists them all)\n", len(l.refs)-k))
				break
			}
			rows = append(rows, "- `"+r.String()+"`\n")
		}
		m.lines(rows, "object names")
	}
	m.b.WriteString("\n</details>\n")
}

// sharedDiff is one diff and the contexts whose update it is.
type sharedDiff struct {
	ref      v1alpha1.ObjectRef
	file     string
	body     string
	contexts []string
}

// groupDiffs groups the plan's diffs: each distinct diff once, in the
// order first seen, with the contexts whose update it is; total is how
// many updates they are. The markdown and the html plans both show them so.
func groupDiffs(p *v1alpha1.SplitPlan) (all []*sharedDiff, total int) {
	byKey := map[string]*sharedDiff{}
	for _, c := range p.Contexts {
		for _, d := range c.Diffs {
			total++
			file, body := splitDiff(d.Diff, c.Name)
			key := d.Ref.String() + "\x00" + file + "\x00" + body
			if sd := byKey[key]; sd != nil {
				sd.contexts = append(sd.contexts, c.Name)
				continue
			}
			sd := &sharedDiff{ref: d.Ref, file: file, body: body, contexts: []string{c.Name}}
			byKey[key] = sd
			all = append(all, sd)
		}
	}
	return all, total
}

// diffs writes each distinct diff once, naming its object, its file and
// the contexts that share it.
func (m *mdWriter) diffs(p *v1alpha1.SplitPlan) {
	all, total := groupDiffs(p)
	if len(all) == 0 {
		return
	}
	if !m.add(fmt.Sprintf("\n<details><summary>Diffs (%d distinct, of %d updates)</summary>\n", len(all), total)) {
		m.leave(len(all), "diffs")
		return
	}
	for k, sd := range all {
		if !m.add(sd.markdown(len(p.Contexts))) {
			m.leave(len(all)-k, "diffs")
			break
		}
	}
	m.b.WriteString("\n</details>\n")
}

func (sd *sharedDiff) markdown(contexts int) string {
	where := codeList(sd.contexts)
	if len(sd.contexts) > 1 && len(sd.contexts) == contexts {
		where = fmt.Sprintf("all %d contexts", contexts)
	} else if len(sd.contexts) > 20 {
		where = codeList(sd.contexts[:20]) + fmt.Sprintf(" and %d more", len(sd.contexts)-20)
	}
	text := "--- previous/" + sd.file + "\n+++ new/" + sd.file + "\n" + sd.body
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fmt.Sprintf("\n**`%s`** (`%s`) in %s:\n\n%sdiff\n%s%s\n", sd.ref, sd.file, where, fence, text, fence)
}

// ownContext matches a diff line that holds the context annotation as
// split writes it in each context: its value is that context's name.
var ownContext = regexp.MustCompile(`^([ +-]\s*shardrouter\.dev/context: )'?([^',]+)'?$`)

// splitDiff returns a diff's file (without its context directory) and its
// body (without the file header), the context annotation's value written
// as <context> where it names the context itself, so that the same change
// in several contexts is one diff.
func splitDiff(diff, ctx string) (file, body string) {
	header, rest, _ := strings.Cut(diff, "\n")
	file = strings.TrimPrefix(strings.TrimPrefix(header, "--- previous/"), ctx+"/")
	if _, after, ok := strings.Cut(rest, "\n"); ok && strings.HasPrefix(rest, "+++ ") {
		rest = after
	}
	lines := strings.Split(rest, "\n")
	for i, l := range lines {
		if sm := ownContext.FindStringSubmatch(l); sm != nil && sm[2] == ctx {
			lines[i] = sm[1] + "<context>"
		}
	}
	return path.Clean(file), strings.Join(lines, "\n")
}

func moveRows(moves []v1alpha1.Move) []string {
	rows := make([]string, len(moves))
	for i, mv := range moves {
		rows[i] = fmt.Sprintf("| `%s` | %s | %s | %s |\n", cell(mv.Ref.String()), codeList(mv.From), codeList(mv.To), refusedCell(mv.Refused))
	}
	return rows
}

func dataStoreRows(changes []v1alpha1.DataStoreChange) []string {
	rows := make([]string, len(changes))
	for i, d := range changes {
		rows[i] = fmt.Sprintf("| `%s` | `%s` | %s | %s | %s |\n", cell(d.Ref.String()), cell(d.Context), d.From, d.To, refusedCell(d.Refused))
	}
	return rows
}

func escapeAll(msgs []string) []string {
	out := make([]string, len(msgs))
	for i, s := range msgs {
		out[i] = "- " + escape(s) + "\n"
	}
	return out
}
