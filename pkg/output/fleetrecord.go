package output

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// What status shows of each context's last apply (its cluster's Lease and
// identity), of the runs that hold locks now, of OUT_DIR's unfinished
// rollout, and of an OUT_DIR stale for a context, in every format. Each
// is shown only when there is something: a fleet that no apply of this
// release wrote, with no rollout halted, reads as before.

// hasRecords reports whether some context has a record to show.
func hasRecords(s *v1alpha1.FleetStatus) bool {
	for _, c := range s.Contexts {
		if c.Record != nil {
			return true
		}
	}
	return false
}

// recordSerial is a record's serial, "-" when no apply recorded one.
func recordSerial(r *v1alpha1.ContextRecord) string {
	if r.Serial == 0 {
		return "-"
	}
	return fmt.Sprint(r.Serial)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// recordTime is a time of the record in RFC 3339, UTC; "-" when unknown.
func recordTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// recordOutcome is the last apply's outcome in a word: killed for a run
// that died applying the context (no live run holds its lock).
func recordOutcome(r *v1alpha1.ContextRecord) string {
	if r.Killed() {
		return "killed"
	}
	return orDash(r.Outcome)
}

// lockCell is a lock in a word, for a table cell: held, orphaned (held by
// a run that is gone, until it expires) or "-".
func lockCell(l *v1alpha1.LockState) string {
	switch {
	case l == nil:
		return "-"
	case l.Gone != "":
		return "orphaned"
	}
	return "held"
}

// lockText is a held lock in words; "-" when none.
func lockText(l *v1alpha1.LockState) string {
	if l == nil {
		return "-"
	}
	s := "held by " + l.Holder
	if !l.Since.IsZero() {
		s += " since " + recordTime(l.Since)
	}
	if !l.Renewed.IsZero() {
		s += ", last renewed " + recordTime(l.Renewed)
	}
	if l.Gone != "" {
		return s + "; that run is gone (" + l.Gone + "): it frees itself at " + recordTime(l.Expires)
	}
	return s + "; it frees itself at " + recordTime(l.Expires) + " unless its holder renews it"
}

// killedText says what a record left by a run that died means, and the
// way on, about one context or several.
func killedText(several bool) string {
	if several {
		return "died applying them, and no live run holds their locks: apply again; a run that finds a context in sync settles its record (one Lease write), one that changes it writes a new one"
	}
	return "died applying it, and no live run holds its lock: apply again; a run that finds the context in sync settles its record (one Lease write), one that changes it writes a new one"
}

// settledText says who settled a record, "" when none did.
func settledText(r *v1alpha1.ContextRecord) string {
	if r == nil || r.SettledBy == "" {
		return ""
	}
	return fmt.Sprintf("settled by %s at %s (the run that applied it died; this one found the context in sync)", r.SettledBy, recordTime(r.SettledAt))
}

// killedNotes groups the contexts whose last run died applying them by
// that run: one sentence each, naming its contexts with quote.
func killedNotes(contexts []v1alpha1.ContextStatus, quote func(string) string) []string {
	var order []string
	byRun := map[string][]string{}
	for _, c := range contexts {
		if c.Record.Killed() {
			by := orDash(c.Record.AppliedBy)
			if _, ok := byRun[by]; !ok {
				order = append(order, by)
			}
			byRun[by] = append(byRun[by], quote(c.Name))
		}
	}
	notes := make([]string, len(order))
	for i, by := range order {
		notes[i] = fmt.Sprintf("Killed: the run that last wrote %s, %s, %s.", strings.Join(byRun[by], ", "), by, killedText(len(byRun[by]) > 1))
	}
	return notes
}

// progressText is where a run's rollout is, at readAt: "wave canary
// baking, 4m12s left (until ...)"; "" when it recorded none.
func progressText(wave, phase string, bakeEnds, readAt time.Time) string {
	if wave == "" {
		return ""
	}
	s := "wave " + wave
	if phase != "" {
		s += " " + phase
	}
	if phase == "baking" && !bakeEnds.IsZero() {
		left := bakeEnds.Sub(readAt).Round(time.Second)
		switch {
		case readAt.IsZero():
			s += ", until " + recordTime(bakeEnds)
		case left > 0:
			s += fmt.Sprintf(", %s left (until %s)", left, recordTime(bakeEnds))
		default:
			s += ", its bake ended at " + recordTime(bakeEnds)
		}
	}
	return s
}

// inTime is ", in 23s" from readAt to t; "" when unknown or past.
func inTime(t, readAt time.Time) string {
	if d := t.Sub(readAt).Round(time.Second); !readAt.IsZero() && d > 0 {
		return fmt.Sprintf(", in %s", d)
	}
	return ""
}

// runText is a run that holds locks, in one sentence: in progress (where
// its rollout is), or killed (the evidence, when its locks free
// themselves, and the command that breaks them).
func runText(r v1alpha1.FleetRun, readAt time.Time, quote func(string) string) string {
	names := make([]string, len(r.Contexts))
	for i, c := range r.Contexts {
		names[i] = quote(c)
	}
	of := strings.Join(names, ", ")
	if r.Gone != "" {
		return fmt.Sprintf("Killed: %s still holds the locks of %s, but it is gone (%s): they free themselves at %s%s; to break them now: %s",
			r.Holder, of, r.Gone, recordTime(r.Expires), inTime(r.Expires, readAt), quote(r.Unlock))
	}
	s := fmt.Sprintf("In progress: %s holds the locks of %s since %s, last renewed %s", r.Holder, of, recordTime(r.Since), recordTime(r.Renewed))
	if p := progressText(r.Wave, r.Phase, r.BakeEnds, readAt); p != "" {
		s += ": " + p
	}
	return s + "."
}

// rollbackTo says what a rollback gives a context.
func rollbackTo(c v1alpha1.RolloutContext) string {
	if c.Previous {
		return "its previous package"
	}
	return "nothing (it had no package before the rollout)"
}

// rolloutHeadline is the unfinished rollout in one sentence: how it
// stands, which waves baked, which are left, what it changed.
func rolloutHeadline(r *v1alpha1.RolloutSummary, quote func(string) string) string {
	head := "Unfinished rollout"
	switch r.State {
	case v1alpha1.RolloutInProgress:
		head = "Rollout in progress, in wave " + quote(r.StoppedAt)
	case v1alpha1.RolloutKilled:
		head += fmt.Sprintf(": killed in wave %s (the run applying it died before its bake ended)", quote(r.StoppedAt))
	case v1alpha1.RolloutHalted:
		head += fmt.Sprintf(": halted in wave %s (the run ended before its bake finished)", quote(r.StoppedAt))
	case v1alpha1.RolloutPaused:
		head += fmt.Sprintf(": paused before wave %s", quote(r.StoppedAt))
	}
	var baked, left []string
	for _, w := range r.Waves {
		if slices.Contains(r.Baked, w) {
			baked = append(baked, quote(w))
		}
	}
	for _, w := range r.Left {
		left = append(left, quote(w))
	}
	bakedText := "no wave baked yet"
	if len(baked) > 0 {
		bakedText = "waves baked: " + strings.Join(baked, ", ")
	}
	leftText := ""
	if len(left) > 0 {
		leftText = "; waves left: " + strings.Join(left, ", ")
	}
	soFar := ""
	if r.State == v1alpha1.RolloutInProgress {
		soFar = " so far"
	}
	return fmt.Sprintf("%s; %s%s; it changed %d context(s)%s.", head, bakedText, leftText, len(r.Contexts), soFar)
}

// rolloutWayOn says how to go on from the unfinished rollout: resume it
// or roll it back; while its run is alive, first let it finish (wait,
// "" otherwise).
func rolloutWayOn(r *v1alpha1.RolloutSummary, quote func(string) string) (wait string, ways []string) {
	ways = []string{"To resume it: " + quote(r.Resume), "To roll it back: " + quote(r.Rollback)}
	if r.State == v1alpha1.RolloutInProgress {
		wait = "Its run is alive: let it finish. Once it is over, if the rollout is still unfinished:"
	}
	return wait, ways
}

// plain quotes nothing.
func plain(s string) string { return s }

// code quotes a name as markdown code, outside a table.
func code(s string) string { return "`" + s + "`" }
