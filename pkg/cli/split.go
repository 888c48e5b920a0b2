package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/split"
)

// splitFlags are the flags of `shard-router split`.
type splitFlags struct {
	// out is the output directory (OUT_DIR).
	out string
	// config is the function config file; default: the package's ShardConfig.
	config string
	// context selects one context to write as a stream on stdout.
	context string
	// name names the context packages when the input has no Kptfile.
	name string
	// allowMassPrune turns the mass-deletion guard into a warning.
	allowMassPrune bool
}

func newSplitCommand(s Streams) *cobra.Command {
	f := &splitFlags{}
	cmd := &cobra.Command{
		Use:   "split [PKG_DIR | -] -o OUT_DIR [--config FILE]",
		Short: "Write one ready kpt package per kube context",
		Long: `split routes a kpt package exactly as the function does and writes
OUT_DIR/<context>/ for every context of the config: the context's resources at
their paths in the package (a resource that goes to several contexts is copied
into each), a Kptfile, and an inventory ResourceGroup (resourcegroup.yaml, as
kpt live init writes it), so that kpt live apply needs no other step.

The input is a package directory (default ".", read as kpt fn source reads it),
or "-" for a ResourceList or YAML stream on stdin. The config is --config FILE,
else the ResourceList's functionConfig, else the package's single ShardConfig.

An OUT_DIR inside PKG_DIR is never read back (add it to .krmignore so that kpt
does not read it either).

The previous split in OUT_DIR counts as the old placement of resources that
carry no context annotation: a move between contexts is refused unless the
config sets allowMoves, as in function mode. Any error writes nothing.

The mass-deletion guard refuses a split that would prune all of one
context's objects, or, from one context whose previous package held at least
spec.pruneGuard.minObjects objects (default 10), more than
spec.pruneGuard.maxPercent of them (default 50), unless spec.allowMassPrune
or --allow-mass-prune. Run
shard-router plan first to see what each cluster would gain and lose.

Re-running regenerates every context directory completely, so files of deleted
resources disappear. split only deletes what it wrote (it marks its directories
with ` + split.MarkerFile + ` files) and refuses to write into a non-empty
directory it did not create.

With --context NAME, split writes that context's resources and its inventory
to stdout as one YAML stream instead, and writes no files (OUT_DIR is then
optional, and read only for the previous placement).`,
		Example: `  # One package per cluster, then apply each to its cluster.
  shard-router split my-pkg -o out
  for ctx in $(ls out); do kpt live apply "out/$ctx" --context "$ctx"; done

  # The pipe form.
  kpt fn source my-pkg | shard-router split - --context ctx-00 | kpt live apply - --context ctx-00`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := "."
			if len(args) == 1 {
				src = args[0]
			}
			return runSplit(s, f, src)
		},
	}
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "output directory OUT_DIR: one subdirectory per context")
	cmd.Flags().StringVar(&f.config, "config", "", "the ShardConfig (or ConfigMap) file; default: the package's single ShardConfig")
	cmd.Flags().StringVar(&f.context, "context", "", "write only this context's package, as a YAML stream on stdout")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "turn the mass-deletion guard's refusal into a warning (as spec.allowMassPrune)")
	cmd.Flags().StringVar(&f.name, "name", "", "package name for the context packages and inventories; default: the input's Kptfile name, else the directory name")
	return cmd
}

// notAFormat refuses -o FORMAT: split's -o is a directory, but plan,
// report and overrides take a format there, so a bare format name that is
// not a directory yet is most likely a mix-up.
func notAFormat(out string) error {
	formats := append(slices.Clone(planFormats), "md", "table", "flag", "kamaji")
	if !slices.Contains(formats, out) {
		return nil
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return nil
	}
	return fmt.Errorf("split -o takes an output directory, and %q is an output format (plan, report and overrides take -o FORMAT): "+
		"give a directory (-o out), or write -o ./%s to create a directory of that name", out, out)
}

func runSplit(s Streams, f *splitFlags, src string) error {
	if f.out == "" && f.context == "" {
		return errors.New("split needs -o OUT_DIR (or --context NAME to write one context to stdout)")
	}
	if err := notAFormat(f.out); err != nil {
		return err
	}
	var out *split.OutDir
	if f.out != "" {
		var err error
		if out, err = split.OpenOutDir(f.out); err != nil {
			return err
		}
	}
	in, err := readInput(s, src, out)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(s, in, f.config)
	if err != nil {
		return err
	}
	if f.context != "" && cfg.Compiled.Index(f.context) < 0 {
		return unknownContext(f.context, cfg.Compiled.Names)
	}
	layout, err := split.Build(in, cfg, split.Options{PackageName: f.name, Out: out, AllowMassPrune: f.allowMassPrune})
	if err != nil {
		return err
	}
	printResults(s.Err, layout.Results)
	if layout.Results.ExitCode() != 0 {
		return fmt.Errorf("split failed: %s", summarize(layout.Results))
	}
	if f.context != "" {
		pkg, _ := layout.Package(f.context)
		return pkg.WriteStream(s.Out)
	}
	if err := out.Write(layout); err != nil {
		return err
	}
	for _, pkg := range layout.Packages {
		fmt.Fprintf(s.Err, "shard-router: wrote %s: %d resources, inventory %s/%s (id %s)\n",
			filepath.Join(f.out, pkg.Context), pkg.Resources, pkg.Inventory.Namespace, pkg.Inventory.Name, pkg.Inventory.ID)
	}
	return nil
}

// readInput reads a package directory, or stdin for "-". An output
// directory inside the package is never read back.
func readInput(s Streams, src string, out *split.OutDir) (*split.Input, error) {
	if src == "-" {
		return split.ReadStream(s.In, ioOptions())
	}
	var skip []string
	if out != nil {
		skip = append(skip, out.Path)
	}
	return split.ReadPackage(src, ioOptions(), skip...)
}

// configNode returns --config FILE, else the input's config.
func configNode(in *split.Input, file string) (*yaml.RNode, error) {
	if file != "" {
		return split.ReadConfigFile(file)
	}
	return in.Config()
}

// loadConfig loads --config FILE, else the input's config; its errors are
// printed to stderr as the function prints them.
func loadConfig(s Streams, in *split.Input, file string) (*function.Config, error) {
	node, err := configNode(in, file)
	if err != nil {
		return nil, err
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		printResults(s.Err, results)
		return nil, errAlreadyReported{errors.New("invalid config")}
	}
	return cfg, nil
}

func unknownContext(name string, known []string) error {
	q := make([]string, len(known))
	for i, k := range known {
		q[i] = fmt.Sprintf("%q", k)
	}
	return fmt.Errorf("unknown context %q: the config declares %s", name, strings.Join(q, ", "))
}

// summarize counts the error results.
func summarize(results framework.Results) string {
	n := 0
	for _, r := range results {
		if r.Severity == framework.Error {
			n++
		}
	}
	return fmt.Sprintf("%d error(s), nothing written", n)
}
