package output

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// RenderApplyText renders an apply report for people: the headline (the
// contexts counted by status), one line per context (failed first, then
// rolled back, then the rest), each failed object, the waves, the
// handoffs, the objects held in both clusters, warnings and errors.
func RenderApplyText(w io.Writer, r *v1alpha1.ApplyReport) error {
	fmt.Fprintln(w, applyHeadline(r))
	if r.Apply != nil {
		fmt.Fprintf(w, "Written with %s.\n", r.Apply.Describe())
	}
	contexts := applyOrder(r)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tSTATUS\tOBJECTS\tAPPLIED\tRECONCILED\tPRUNED\tFAILED\tERROR")
	for _, c := range contexts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", c.Name, c.Status, c.Objects, c.Applied, c.Reconciled, c.Pruned, c.Failed, c.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(contexts, func(c v1alpha1.ContextApply) bool { return len(c.Failures) > 0 }) {
		fmt.Fprintln(w)
	}
	for _, c := range contexts {
		for _, f := range c.Failures {
			fmt.Fprintf(w, "%s: %s\n", c.Name, f)
		}
	}
	if err := renderWaves(w, r); err != nil {
		return err
	}
	if len(r.Handoffs) > 0 {
		fmt.Fprintf(w, "\nHandoffs (%d): the new contexts get each object first; the old one prunes it once every new copy is Current.\n", len(r.Handoffs))
		for _, h := range r.Handoffs {
			fmt.Fprintf(w, "  %s: %s -> %s\n", h.Ref, h.From, joinNames(h.To))
		}
	}
	if len(r.HeldInBoth) > 0 {
		fmt.Fprintf(w, "\nHeld in both (%d): the old context still holds these; apply again once the new context is fixed.\n", len(r.HeldInBoth))
		for _, h := range r.HeldInBoth {
			fmt.Fprintf(w, "  %s: %s and %s\n", h.Ref, h.From, joinNames(h.To))
		}
	}
	for _, m := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	for _, m := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", m)
	}
	return nil
}

// renderWaves lists a rollout's waves in order, and says when it paused.
func renderWaves(w io.Writer, r *v1alpha1.ApplyReport) error {
	if len(r.Waves) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tSTATUS\tCONTEXTS\tERROR")
	for _, wv := range r.Waves {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", wv.Name, wv.Status, someNames(wv.Contexts), wv.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var gates []string
	for _, wv := range r.Waves {
		for _, g := range wv.Gates {
			gates = append(gates, wv.Name+"\t"+gateCells(g))
		}
	}
	if len(gates) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WAVE\t"+gateHeader)
		for _, l := range gates {
			fmt.Fprintln(tw, l)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	switch {
	case r.Paused && slices.ContainsFunc(r.Waves, func(wv v1alpha1.WaveApply) bool { return wv.Status == v1alpha1.WavePaused }):
		fmt.Fprintln(w, "Paused (an inconclusive gate): the next apply measures the Paused wave again, then applies the Pending waves.")
	case r.Paused:
		fmt.Fprintln(w, "Paused (--until-wave): the Pending waves are applied by the next apply.")
	}
	return nil
}

// waveNamesLimit caps the contexts the text report names per wave: a
// wave of hundreds stays one readable line (-o json names them all).
const waveNamesLimit = 10

// someNames joins at most waveNamesLimit names, then says how many more.
func someNames(names []string) string {
	if len(names) <= waveNamesLimit {
		return joinNames(names)
	}
	return fmt.Sprintf("%s and %d more", joinNames(names[:waveNamesLimit]), len(names)-waveNamesLimit)
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// RenderOverrideChanges renders `overrides --previous` as text: one
// change a line.
func RenderOverrideChanges(w io.Writer, r *v1alpha1.OverridesChangeReport) error {
	for _, c := range r.Changes {
		if _, err := fmt.Fprintln(w, c.Message); err != nil {
			return err
		}
	}
	return nil
}
