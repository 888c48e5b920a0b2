package output

import (
	"fmt"
	"strings"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// What status shows of each context's last apply (its cluster's Lease and
// identity) and of OUT_DIR's unfinished rollout, in every format. Both are
// shown only when there is something: a fleet that no apply of this
// release wrote, with no rollout halted, reads as before.

// outcomeApplying is the outcome of a run that has not finished (lease).
const outcomeApplying = "applying"

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

// recordOutcome is the last apply's outcome; a run that is applying
// without holding the lock was killed, or lost it.
func recordOutcome(r *v1alpha1.ContextRecord) string {
	if r.Outcome == outcomeApplying && r.Lock == nil {
		return "applying, not finished (no run holds the lock: it was killed)"
	}
	return orDash(r.Outcome)
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
	return s + ", expires " + recordTime(l.Expires) + " unless renewed"
}

// rolloutWaves lists the waves, each baked one said so.
func rolloutWaves(r *v1alpha1.RolloutSummary, quote func(string) string) string {
	parts := make([]string, len(r.Waves))
	for i, w := range r.Waves {
		parts[i] = quote(w)
		for _, b := range r.Baked {
			if b == w {
				parts[i] += " (baked)"
			}
		}
	}
	return strings.Join(parts, ", ")
}

// rollbackTo says what a rollback gives a context.
func rollbackTo(c v1alpha1.RolloutContext) string {
	if c.Previous {
		return "its previous package"
	}
	return "nothing (it had no package before the rollout)"
}

// rolloutHeadline is the unfinished rollout in one sentence.
func rolloutHeadline(r *v1alpha1.RolloutSummary, quote func(string) string) string {
	where := ""
	switch r.State {
	case "halted":
		where = fmt.Sprintf(" halted in wave %s (its bake did not end: a failure, or a kill);", quote(r.StoppedAt))
	case "paused":
		where = fmt.Sprintf(" paused before wave %s;", quote(r.StoppedAt))
	}
	left := make([]string, len(r.Left))
	for i, w := range r.Left {
		left[i] = quote(w)
	}
	if len(left) > 0 {
		where += fmt.Sprintf(" waves left: %s;", strings.Join(left, ", "))
	}
	return fmt.Sprintf("Unfinished rollout:%s waves %s; it changed %d context(s).", where, rolloutWaves(r, quote), len(r.Contexts))
}

// plain quotes nothing.
func plain(s string) string { return s }

// code quotes a name as markdown code, outside a table.
func code(s string) string { return "`" + s + "`" }
