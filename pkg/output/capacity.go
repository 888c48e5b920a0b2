package output

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// RenderCapacityTable prints `report`'s table: one row per context (datastore "*": all of them)
// and per datastore of each context, then the total.
func RenderCapacityTable(w io.Writer, r *v1alpha1.CapacityReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tDATASTORE\tOBJECTS\tOBJECTS %\tSIZE\tBYTES\tBYTES %\tBUDGET")
	row := func(ctx, ds string, u v1alpha1.Usage, b *v1alpha1.BudgetStatus) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", ctx, ds, u.Objects, Percent(u.ObjectShare), HumanBytes(u.Bytes), u.Bytes, Percent(u.ByteShare), budgetText(b))
	}
	for _, c := range r.Contexts {
		row(c.Name, "*", c.Usage, c.Budget)
		for _, ds := range c.DataStores {
			row("", ds.Name, ds.Usage, ds.Budget)
		}
	}
	row("TOTAL", "", r.Total, nil)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nNot routed (local config, Kptfile, function config, inventory): %d. Failed (see the errors): %d.\n", r.NotRouted, r.Failed)
	if len(r.Placed) > 0 {
		fmt.Fprintf(w, "\nNew Namespaces placed by spec.placement (%d):\n", len(r.Placed))
		for _, p := range r.Placed {
			line := fmt.Sprintf("  %s -> %s", p.Namespace, p.Context)
			if p.Label != "" {
				line += " (label " + p.Label + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	if n, m := r.Count(framework.Error), r.Count(framework.Warning); n+m > 0 {
		fmt.Fprintf(w, "\n%d error(s), %d warning(s): see stderr.\n", n, m)
	}
	return nil
}

// Percent renders a share (0.25) as "25.0%".
func Percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// budgetText renders "maxObjects 10000, maxBytes 1.0 GiB OVER (enforced)".
func budgetText(b *v1alpha1.BudgetStatus) string {
	if b == nil {
		return "-"
	}
	over := map[string]bool{}
	for _, e := range b.Exceeded {
		over[e] = true
	}
	var parts []string
	if b.MaxObjects != nil {
		parts = append(parts, "maxObjects "+strconv.FormatInt(*b.MaxObjects, 10)+overText(over["maxObjects"]))
	}
	if b.MaxBytes != nil {
		parts = append(parts, "maxBytes "+HumanBytes(*b.MaxBytes)+overText(over["maxBytes"]))
	}
	s := strings.Join(parts, ", ")
	if b.Enforce {
		s += " (enforced)"
	}
	return s
}

func overText(over bool) string {
	if over {
		return " OVER"
	}
	return ""
}

// HumanBytes renders a size with IEC units and one decimal: "3.4 MiB";
// below 1 KiB, in bytes: "512 B".
func HumanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, u := float64(n)/1024, 0
	for (v >= 1024 || v <= -1024) && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[u])
}
