package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/output"
	"github.com/shard-router/shard-router/pkg/route"
)

// reportFlags are the flags of `shard-router report`.
type reportFlags struct {
	// output is the format: table or json.
	output string
	// config is the function config file; default: the input's config.
	config string
}

func newReportCommand(s Streams) *cobra.Command {
	f := &reportFlags{}
	cmd := &cobra.Command{
		Use:   "report [PKG_DIR | -] [-o table|json|yaml] [--config FILE]",
		Short: "Show how many objects and bytes each context and datastore would hold",
		Long: `report routes a kpt package exactly as the function does, writes nothing, and
prints what each context (cluster) and each of its datastores (etcd) would hold:
objects, their serialized size in bytes, and their share of the total, with the
budgets of the config. It also lists the Namespaces that spec.placement would
place now.

The input is a package directory (default ".", read as kpt fn source reads it),
or "-" for a ResourceList or YAML stream on stdin. The config is --config FILE,
else the ResourceList's functionConfig, else the package's single ShardConfig.

Bytes are the length of each object's compact JSON encoding, without kpt's and
shard-router's own annotations: an estimate of what etcd stores (built-in kinds
are stored as protobuf, and the server adds metadata).

The report is printed even when routing fails, for the resources that could be
routed. Errors and warnings go to stderr (and into the JSON); any error, such as
a refused move or an exceeded budget with enforce: true, makes it exit non-zero,
as the function would.`,
		Example: `  shard-router report my-pkg
  shard-router report my-pkg -o json | jq '.contexts[] | {name, bytes}'
  kpt fn source my-pkg | shard-router report - --config shards.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := "."
			if len(args) == 1 {
				src = args[0]
			}
			return runReport(s, f, src)
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table (for people), json or yaml (for machines)")
	cmd.Flags().StringVar(&f.config, "config", "", "the ShardConfig (or ConfigMap) file; default: the input's functionConfig or single ShardConfig")
	return cmd
}

func runReport(s Streams, f *reportFlags, src string) error {
	if err := output.Check(f.output, reportFormats...); err != nil {
		return err
	}
	in, err := readInput(s, src, nil)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(s, in, f.config)
	if err != nil {
		return err
	}
	items := in.Items()
	out := cfg.Decide(items)
	rep := newReport(items, out)
	p := output.Printer{Formats: reportFormats, Text: map[string]output.Renderer{
		"table": func(w io.Writer) error { return writeReportTable(w, rep) }}}
	if err := p.Print(s.Out, f.output, rep); err != nil {
		return err
	}
	printResults(s.Err, out.Results)
	if n := len(problems(rep, framework.Error)); n > 0 {
		return errAlreadyReported{fmt.Errorf("report: %d error(s)", n)}
	}
	return nil
}

// Report is the JSON and YAML form of `shard-router report`.
type Report = v1alpha1.CapacityReport

// ReportKind is the kind of the JSON report.
const ReportKind = v1alpha1.CapacityReportKind

// reportFormats are report's -o values.
var reportFormats = []string{"table", output.JSON, output.YAML}

func newReport(items []function.Item, out *function.Outcome) *Report {
	r := &Report{TypeMeta: v1alpha1.NewTypeMeta(ReportKind), Capacity: out.Capacity,
		Placed: []v1alpha1.PlacedNamespace{}, Results: framework.Results{}}
	for i, d := range out.Routing.Decisions {
		if d.Reason != route.Placed {
			continue
		}
		p := v1alpha1.PlacedNamespace{Namespace: items[i].Name, Context: out.Contexts[i]}
		if d.Label != nil {
			p.Label = d.Label.Key + "=" + d.Label.Value
		}
		r.Placed = append(r.Placed, p)
	}
	for _, res := range out.Results {
		if res.Severity == framework.Error || res.Severity == framework.Warning {
			r.Results = append(r.Results, res)
		}
	}
	return r
}

// problems returns the results of one severity.
func problems(r *Report, sev framework.Severity) framework.Results {
	var out framework.Results
	for _, res := range r.Results {
		if res.Severity == sev {
			out = append(out, res)
		}
	}
	return out
}

// writeReportTable prints one row per context (datastore "*": all of them)
// and per datastore of each context, then the total.
func writeReportTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tDATASTORE\tOBJECTS\tOBJECTS %\tSIZE\tBYTES\tBYTES %\tBUDGET")
	row := func(ctx, ds string, u function.Usage, b *function.BudgetStatus) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", ctx, ds, u.Objects, pct(u.ObjectShare), function.HumanBytes(u.Bytes), u.Bytes, pct(u.ByteShare), budgetText(b))
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
	if n, m := len(problems(r, framework.Error)), len(problems(r, framework.Warning)); n+m > 0 {
		fmt.Fprintf(w, "\n%d error(s), %d warning(s): see stderr.\n", n, m)
	}
	return nil
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// budgetText renders "maxObjects 10000, maxBytes 1.0 GiB OVER (enforced)".
func budgetText(b *function.BudgetStatus) string {
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
		parts = append(parts, "maxBytes "+function.HumanBytes(*b.MaxBytes)+overText(over["maxBytes"]))
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
