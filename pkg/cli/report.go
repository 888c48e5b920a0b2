package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/output"
	"github.com/shard-router/shard-router/pkg/progress"
)

// reportFlags are the flags of `shard-router report`.
type reportFlags struct {
	// output is the format: table, html, json or yaml.
	output string
	// config is the function config file; default: the input's config.
	config string
}

func newReportCommand(s Streams) *cobra.Command {
	f := &reportFlags{}
	cmd := &cobra.Command{
		Use:   "report [PKG_DIR | -] [-o table|html|json|yaml] [--config FILE]",
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
as the function would.

-o html writes one self-contained page: a heatmap of contexts x datastores
with the objects, bytes, shares and budgets in every cell (no script,
nothing loaded from elsewhere).`,
		Example: `  shard-router report my-pkg
  shard-router report my-pkg -o json | jq '.contexts[] | {name, bytes}'
  shard-router report my-pkg -o html > capacity.html
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
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table or html (for people), json or yaml (for machines)")
	cmd.Flags().StringVar(&f.config, "config", "", "the ShardConfig (or ConfigMap) file; default: the input's functionConfig or single ShardConfig")
	return cmd
}

func runReport(s Streams, f *reportFlags, src string) error {
	if err := output.Check(f.output, reportFormats...); err != nil {
		return err
	}
	meter := progress.New(s.Err, progress.IsTerminal(s.Err))
	defer meter.Done()
	meter.Phase("reading %s", src)
	in, err := readInput(s, src, nil)
	if err != nil {
		return err
	}
	meter.Objects(in.Len())
	cfg, err := loadConfig(s, in, f.config)
	if err != nil {
		return err
	}
	meter.Phase("routing %d objects", in.Len())
	items := in.Items()
	out := cfg.Decide(items)
	meter.Phase("counting the bytes of %d contexts", len(cfg.Config.Names))
	rep := out.Report(items)
	meter.Done()
	p := output.Printer{Formats: reportFormats, Text: map[string]output.Renderer{
		"table":     func(w io.Writer) error { return output.RenderCapacityTable(w, rep) },
		output.HTML: func(w io.Writer) error { return output.RenderCapacityHTML(w, rep) }}}
	if err := p.Print(s.Out, f.output, rep); err != nil {
		return err
	}
	printResults(s.Err, out.Results)
	if n := rep.Count(framework.Error); n > 0 {
		return errAlreadyReported{fmt.Errorf("report: %d error(s)", n)}
	}
	return nil
}

// reportFormats are report's -o values.
var reportFormats = []string{"table", output.HTML, output.JSON, output.YAML}
