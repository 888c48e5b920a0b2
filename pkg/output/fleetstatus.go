package output

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// contextCounts sums one context's objects for the summary lines: objects,
// current and notCurrent count the package's objects, not the extras.
type contextCounts struct {
	objects, current, notCurrent, drifted, extra, notApplied, attention int
}

func countContext(c v1alpha1.ContextStatus) contextCounts {
	var n contextCounts
	for _, o := range c.Objects {
		switch {
		case o.Inventory == v1alpha1.ObjectExtra:
		case o.Status == v1alpha1.StatusCurrent:
			n.objects++
			n.current++
		default:
			n.objects++
			n.notCurrent++
		}
		if len(o.Drift) > 0 {
			n.drifted++
		}
		switch o.Inventory {
		case v1alpha1.ObjectExtra:
			n.extra++
		case v1alpha1.ObjectNotApplied:
			n.notApplied++
		}
		if o.NeedsAttention() {
			n.attention++
		}
	}
	return n
}

// contextState is a context in a word or two: in sync, needs attention,
// inventory missing, unreachable or error; stale OUT_DIR or record older
// (OUT_DIR's record disagrees with its cluster's); applying (a live run
// is applying it) or run killed (the run that last wrote it died doing
// so).
func contextState(c v1alpha1.ContextStatus) string {
	switch {
	case !c.Reachable:
		return "unreachable"
	case c.Failed():
		return "error"
	case c.Stale():
		return "stale OUT_DIR"
	case c.OutDirMismatch != nil:
		return "record older"
	case c.Inventory.State == v1alpha1.InventoryMissing:
		return "inventory missing"
	case c.Record.Applying():
		return "applying"
	case c.Record.Killed():
		return "run killed"
	case c.Inventory.EngineKeeps() && countContext(c).attention == 0:
		// Never "in sync": the extras were not checked.
		return "extras not known"
	case c.InSync():
		return "in sync"
	}
	return "needs attention"
}

// statusHeadline is the fleet in one sentence.
func statusHeadline(s *v1alpha1.FleetStatus) string {
	inSync, failed, attention, unknownExtras, stale, older, applying, killed := 0, 0, 0, 0, 0, 0, 0, 0
	for _, c := range s.Contexts {
		switch {
		case c.Failed():
			failed++
		case c.InSync():
			inSync++
		}
		if c.Inventory.EngineKeeps() {
			unknownExtras++
		}
		switch {
		case c.Failed():
		case c.Stale():
			stale++
		case c.OutDirMismatch != nil:
			older++
		case c.Record.Applying():
			applying++
		case c.Record.Killed():
			killed++
		}
		attention += countContext(c).attention
	}
	h := fmt.Sprintf("%d of %d contexts in sync.", inSync, len(s.Contexts))
	if attention > 0 {
		h += fmt.Sprintf(" %d object(s) need attention.", attention)
	}
	if failed > 0 {
		h += fmt.Sprintf(" %d context(s) unreachable or failed.", failed)
	}
	if stale > 0 {
		h += fmt.Sprintf(" OUT_DIR is stale for %d context(s): another run applied since.", stale)
	}
	if older > 0 {
		h += fmt.Sprintf(" %d context(s) whose cluster's record is older than OUT_DIR's.", older)
	}
	if applying > 0 {
		h += fmt.Sprintf(" %d context(s) being applied by a run in progress.", applying)
	}
	if killed > 0 {
		h += fmt.Sprintf(" %d context(s) last written by a run that died applying them: apply again.", killed)
	}
	if unknownExtras > 0 {
		h += fmt.Sprintf(" %d context(s) not checked for inventory extras (their engine keeps the inventory).", unknownExtras)
	}
	return h
}

// inventoryCount is a count of the inventory's extras or not-applied
// objects, or "unknown" when the engine keeps the inventory (not read).
func inventoryCount(c v1alpha1.ContextStatus, n int) string {
	if c.Inventory.EngineKeeps() {
		return "unknown"
	}
	return compared(c, n)
}

// compared is a count of a comparison with OUT_DIR: "-" for a context
// OUT_DIR is stale for, whose objects were not compared with it.
func compared(c v1alpha1.ContextStatus, n int) string {
	if c.Stale() {
		return "-"
	}
	return fmt.Sprint(n)
}

// attentionNote says why an object needs attention, beyond its status
// and drift columns.
func attentionNote(o v1alpha1.ObjectStatus) string {
	var notes []string
	switch o.Inventory {
	case v1alpha1.ObjectExtra:
		notes = append(notes, "in the live inventory, not in OUT_DIR: the next apply prunes it")
	case v1alpha1.ObjectNotApplied:
		notes = append(notes, "in OUT_DIR, not in the live inventory: never applied")
	}
	if o.Error != "" {
		notes = append(notes, "error: "+o.Error)
	} else if o.Status != v1alpha1.StatusCurrent && o.Message != "" {
		notes = append(notes, o.Message)
	}
	return strings.Join(notes, "; ")
}

func driftText(d v1alpha1.Drift) string {
	if len(d) == 0 {
		return "-"
	}
	return strings.Join(d, ",")
}

// RenderStatusTable renders a fleet status for a terminal: the headline,
// OUT_DIR's unfinished rollout when there is one, one line per context
// (unreachable or failed first, then those that need attention, then
// those in sync), each context's last apply and lock when a cluster
// recorded one, each failed context's error, then the objects that need
// attention, per context in the same order, at most TableListLimit each.
func RenderStatusTable(w io.Writer, s *v1alpha1.FleetStatus) error {
	var buf bytes.Buffer
	fmt.Fprintf(w, "%s\n\n", statusHeadline(s))
	for _, run := range s.Runs {
		fmt.Fprintf(w, "%s\n\n", runText(run, s.ReadAt, plain))
	}
	if r := s.Rollout; r != nil {
		if err := writeRolloutText(w, r, &buf); err != nil {
			return err
		}
	}
	contexts := statusOrder(s)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tSTATE\tINVENTORY\tOBJECTS\tCURRENT\tNOT-CURRENT\tDRIFTED\tEXTRA\tNOT-APPLIED")
	for _, c := range contexts {
		n := countContext(c)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", c.Name, contextState(c), c.Inventory.State,
			n.objects, n.current, n.notCurrent, compared(c, n.drifted), inventoryCount(c, n.extra), inventoryCount(c, n.notApplied))
	}
	if err := flushTrimmed(w, tw, &buf); err != nil {
		return err
	}
	if hasRecords(s) {
		if err := writeRecordsText(w, contexts, &buf); err != nil {
			return err
		}
	}
	if len(s.Gates) > 0 {
		if err := writeGatesText(w, s.Gates, &buf); err != nil {
			return err
		}
	}
	for _, c := range contexts {
		if c.Inventory.EngineKeeps() {
			fmt.Fprintf(w, "\n%s: %s\n", c.Name, c.Inventory.Note)
		}
	}
	for _, c := range contexts {
		switch {
		case c.Error != "":
			fmt.Fprintf(w, "\n%s: %s: %s\n", c.Name, contextState(c), c.Error)
		case c.OutDirMismatch != nil:
			fmt.Fprintf(w, "\n%s: %s: %s\n", c.Name, contextState(c), c.OutDirMismatch.Message)
		}
	}
	for _, c := range contexts {
		n := countContext(c)
		if n.attention == 0 {
			continue
		}
		fmt.Fprintf(w, "\nNeeds attention in %s (%d):\n", c.Name, n.attention)
		tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  OBJECT\tSTATUS\tINVENTORY\tDRIFT\tNOTE")
		listed := 0
		for _, o := range c.Objects {
			if o.NeedsAttention() && listed < TableListLimit {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", o.ObjectRef, o.Status, o.Inventory, driftText(o.Drift), attentionNote(o))
				listed++
			}
		}
		if err := flushTrimmed(w, tw, &buf); err != nil {
			return err
		}
		if listed < n.attention {
			fmt.Fprintf(w, "  ... and %d more (-o json lists them all)\n", n.attention-listed)
		}
	}
	return nil
}

// flushTrimmed flushes a tabwriter that writes to buf, and copies buf to w
// without the padding tabwriter leaves at the end of lines.
func flushTrimmed(w io.Writer, tw *tabwriter.Writer, buf *bytes.Buffer) error {
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n"))); err != nil {
			return err
		}
	}
	buf.Reset()
	return nil
}

// RenderStatusMarkdown renders a fleet status as GitHub-flavoured
// markdown for a pull request or an incident channel, within
// MarkdownLimit however big the fleet: the headline; OUT_DIR's unfinished
// rollout; a warning line per failed context; a summary table; each
// context's last apply and lock when a cluster recorded one; then one
// collapsed section per context that needs attention. The contexts come
// unreachable or failed first, then those that need attention, then
// those in sync. What does not fit
// is left out, counted in a note under the headline.
func RenderStatusMarkdown(w io.Writer, s *v1alpha1.FleetStatus) error {
	head := "### shard-router status\n\n**" + statusHeadline(s) + "**\n\n"
	m := &mdWriter{limit: MarkdownLimit - len(head) - markdownReserve,
		full: "The full status: `shard-router status OUT_DIR -o json` (every context and object; save it as a file or CI artifact)."}
	if len(s.Runs) > 0 {
		var lines []string
		for _, run := range s.Runs {
			lines = append(lines, "> :hourglass: "+escape(runText(run, s.ReadAt, code))+"\n>\n")
		}
		lines[len(lines)-1] = strings.TrimSuffix(lines[len(lines)-1], ">\n") + "\n"
		m.lines(lines, "run lines")
	}
	if r := s.Rollout; r != nil {
		m.rollout(r)
	}
	contexts := statusOrder(s)
	var warns []string
	for _, c := range contexts {
		if c.Error != "" {
			warns = append(warns, fmt.Sprintf("> :no_entry: `%s` is **%s**: %s\n", cell(c.Name), contextState(c), escape(c.Error)))
		} else if c.OutDirMismatch != nil {
			warns = append(warns, fmt.Sprintf("> :warning: `%s` is **%s**: %s\n", cell(c.Name), contextState(c), escape(c.OutDirMismatch.Message)))
		} else if c.Inventory.State == v1alpha1.InventoryMissing {
			warns = append(warns, fmt.Sprintf("> :warning: `%s` has no inventory `%s/%s`: never applied, or deleted.\n",
				cell(c.Name), cell(c.Inventory.Namespace), cell(c.Inventory.Name)))
		} else if c.Inventory.EngineKeeps() {
			warns = append(warns, fmt.Sprintf("> :grey_question: `%s`: %s\n", cell(c.Name), escape(c.Inventory.Note)))
		}
	}
	for i := 1; i < len(warns); i++ {
		warns[i] = ">\n" + warns[i]
	}
	if len(warns) > 0 {
		m.lines(warns, "warnings")
		m.add("\n")
	}
	rows := []string{"| context | state | inventory | objects | current | not current | drifted | extra | not applied |\n" +
		"| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"}
	for _, c := range contexts {
		n := countContext(c)
		drifted, extra, notApplied := bold(n.drifted), bold(n.extra), bold(n.notApplied)
		switch {
		case c.Inventory.EngineKeeps():
			extra, notApplied = "unknown", "unknown"
		case c.Stale():
			drifted, extra, notApplied = "-", "-", "-"
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %d | %d | %s | %s | %s | %s |\n", cell(c.Name), contextState(c), c.Inventory.State,
			n.objects, n.current, bold(n.notCurrent), drifted, extra, notApplied))
	}
	m.lines(rows, "summary rows")
	if hasRecords(s) {
		m.records(contexts)
	}
	if len(s.Gates) > 0 {
		m.gates(s.Gates)
	}
	for _, c := range contexts {
		m.attention(c)
	}
	_, err := io.WriteString(w, head+m.note()+m.b.String())
	return err
}

// rollout is OUT_DIR's unfinished rollout, first: what it changed, and
// how to resume it or roll it back.
func (m *mdWriter) rollout(r *v1alpha1.RolloutSummary) {
	var changed []string
	for _, c := range r.Contexts {
		s := fmt.Sprintf("%s (%s", code(c.Name), cell(c.Wave))
		if !c.Previous {
			s += ", new: nothing to roll back to"
		}
		changed = append(changed, s+")")
	}
	lines := []string{"> :construction: **" + escape(rolloutHeadline(r, code)) + "**\n"}
	if len(changed) > 0 {
		lines = append(lines, "> Changed: "+strings.Join(changed, ", ")+".\n")
	}
	wait, ways := rolloutWayOn(r, code)
	if wait != "" {
		wait += " "
	}
	lines = append(lines, "> "+wait+strings.Join(ways, "; ")+".\n\n")
	m.lines(lines, "rollout lines")
}

// appliedBy is who last applied, and as whom when it impersonated
// someone: the user only (its groups and UID are in the JSON), so that
// the row stays short.
func appliedBy(r *v1alpha1.ContextRecord) string {
	by := orDash(r.AppliedBy)
	if r.AppliedAs != "" {
		user, _, _ := strings.Cut(r.AppliedAs, " (")
		by += " as " + user
	}
	return by
}

// records is each context's last apply, cluster and lock, for the
// contexts whose cluster says something, then what a table cell has no
// room for: the runs that died applying a context, and the records not
// read in full.
func (m *mdWriter) records(contexts []v1alpha1.ContextStatus) {
	rows := []string{"\n| context | serial | outcome | applied by | applied at | cluster UID | lock |\n| --- | ---: | --- | --- | --- | --- | --- |\n"}
	var notes []string
	for _, c := range contexts {
		r := c.Record
		if r == nil {
			continue
		}
		lock := lockCell(r.Lock)
		if r.Lock != nil {
			lock = "**" + lock + "**"
		}
		outcome := escape(cell(recordOutcome(r)))
		if r.Outcome != "" && r.Outcome != "applied" {
			outcome = "**" + outcome + "**"
		}
		if r.Error != "" {
			notes = append(notes, fmt.Sprintf("> :warning: `%s`: record not read in full: %s\n", cell(c.Name), escape(r.Error)))
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s | %s |\n", cell(c.Name), recordSerial(r), outcome, escape(cell(appliedBy(r))),
			recordTime(r.AppliedAt), cell(orDash(r.ClusterUID)), lock))
	}
	for _, k := range killedNotes(contexts, code) {
		notes = append(notes, "> :skull: "+escape(k)+"\n")
	}
	for _, c := range contexts {
		if st := settledText(c.Record); st != "" {
			notes = append(notes, fmt.Sprintf("> `%s`: %s\n", cell(c.Name), escape(st)))
		}
	}
	if len(notes) > 0 {
		for i := 1; i < len(notes); i++ {
			notes[i] = ">\n" + notes[i]
		}
		notes[0] = "\n" + notes[0]
		rows = append(rows, notes...)
	}
	m.lines(rows, "record rows")
}

// attention is one context's collapsed section of the objects that need
// attention, at most MarkdownListLimit of them.
func (m *mdWriter) attention(c v1alpha1.ContextStatus) {
	n := countContext(c)
	if n.attention == 0 {
		return
	}
	const what = "objects that need attention"
	if !m.add(fmt.Sprintf("\n<details><summary><code>%s</code>: %d object(s) need attention</summary>\n\n", c.Name, n.attention) +
		"| object | status | inventory | drift | note |\n| --- | --- | --- | --- | --- |\n") {
		m.leave(n.attention, what)
		return
	}
	listed := 0
	for _, o := range c.Objects {
		if !o.NeedsAttention() {
			continue
		}
		if listed == MarkdownListLimit {
			m.add(fmt.Sprintf("\n... and %d more (`shard-router status -o json` lists them all)\n", n.attention-listed))
			break
		}
		drift := "-"
		if len(o.Drift) > 0 {
			drift = codeList(o.Drift)
		}
		if !m.add(fmt.Sprintf("| `%s` | %s | %s | %s | %s |\n", cell(o.ObjectRef.String()), o.Status, o.Inventory, drift, cell(escape(attentionNote(o))))) {
			m.leave(min(n.attention, MarkdownListLimit)-listed, what)
			break
		}
		listed++
	}
	m.b.WriteString("\n</details>\n") // within the reserve
}

// bold makes a non-zero count stand out.
func bold(n int) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**", n)
}

// writeRolloutText is OUT_DIR's unfinished rollout: its waves, the
// contexts it changed, and how to go on.
func writeRolloutText(w io.Writer, r *v1alpha1.RolloutSummary, buf *bytes.Buffer) error {
	fmt.Fprintf(w, "%s\n", rolloutHeadline(r, plain))
	if len(r.Contexts) > 0 {
		tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  CONTEXT\tWAVE\tA ROLLBACK GIVES IT")
		for _, c := range r.Contexts {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, c.Wave, rollbackTo(c))
		}
		if err := flushTrimmed(w, tw, buf); err != nil {
			return err
		}
	}
	if wait, ways := rolloutWayOn(r, plain); wait != "" {
		fmt.Fprintf(w, "%s\n%s\n\n", wait, strings.Join(ways, "\n"))
	} else {
		fmt.Fprintf(w, "%s\n\n", strings.Join(ways, "\n"))
	}
	return nil
}

// TableWidth is the width the text tables keep within: a cell that would
// make a row wider moves to a note under its table.
const TableWidth = 120

// shortUID is the start of a cluster's UID, enough to tell the clusters of
// a fleet apart in a table (json and html have it whole).
func shortUID(uid string) string {
	if len(uid) > 8 {
		return uid[:8]
	}
	return orDash(uid)
}

// writeRecordsText is each context's last apply, cluster and lock, for
// the contexts whose cluster says something, within TableWidth; then, as
// notes, what a cell has no room for: an applied-by too long for its row,
// the records not read in full, the runs that died applying a context,
// and the records a later run settled.
func writeRecordsText(w io.Writer, contexts []v1alpha1.ContextStatus, buf *bytes.Buffer) error {
	fmt.Fprint(w, "\nLast apply per context (its cluster's record):\n")
	type row struct{ name, cells, by string }
	var rows []row
	for _, c := range contexts {
		if r := c.Record; r != nil {
			rows = append(rows, row{c.Name, fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%s\t", c.Name, recordSerial(r), recordOutcome(r), recordTime(r.AppliedAt),
				shortUID(r.ClusterUID), lockCell(r.Lock)), appliedBy(r)})
		}
	}
	// The columns before APPLIED-BY are as wide in every row: measured once.
	head := "  CONTEXT\tSERIAL\tOUTCOME\tAPPLIED-AT\tCLUSTER\tLOCK\t"
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		fmt.Fprintln(tw, r.cells)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	prefix := len(strings.SplitN(buf.String(), "\n", 2)[0])
	buf.Reset()
	var notes []string
	tw = tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, head+"APPLIED-BY")
	for _, r := range rows {
		by := r.by
		if prefix+len(by) > TableWidth {
			notes = append(notes, fmt.Sprintf("  %s: applied by %s", r.name, by))
			by = "(below)"
		}
		fmt.Fprintln(tw, r.cells+by)
	}
	if err := flushTrimmed(w, tw, buf); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	for _, c := range contexts {
		if c.Record != nil && c.Record.Error != "" {
			fmt.Fprintf(w, "  %s: record not read in full: %s\n", c.Name, c.Record.Error)
		}
	}
	for _, k := range killedNotes(contexts, plain) {
		fmt.Fprintf(w, "  %s\n", k)
	}
	for _, c := range contexts {
		if st := settledText(c.Record); st != "" {
			fmt.Fprintf(w, "  %s: %s\n", c.Name, st)
		}
	}
	return nil
}
