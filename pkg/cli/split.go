package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/progress"
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
	// previous is the previous split, read only, for the pipe form.
	previous string
	// name names the context packages when the input has no Kptfile.
	name string
	// allowMassPrune turns the mass-deletion guard into a warning.
	allowMassPrune bool
	// engine is who applies the context directories; gitops is the
	// repository a pulling engine reads (over spec.gitops).
	engine string
	gitops gitops.Source
	// handoffStatus is `shard-router status -o json` output: the moved
	// objects it shows Current in their new contexts are handed off.
	handoffStatus string
}

const splitLong = `split routes a kpt package exactly as the function does and writes
OUT_DIR/<context>/ for every context of the config: the context's resources at
their paths in the package (a resource that goes to several contexts is copied
into each, naming that context alone), a Kptfile, an inventory ResourceGroup
(resourcegroup.yaml, as kpt live init writes it), so that kpt live apply needs
no other step (with --engine kpt, the default), and a record of the context's --etcd-servers-overrides
(shard-router-etcd-overrides.yaml, local config that kpt never applies) that
the next split and plan compare with.

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
resources disappear; a context directory whose every file already holds what
split writes is left as it is. split only deletes what it wrote (it marks its
directories with ` + outdir.MarkerFile + ` files) and refuses to write into a
non-empty directory it did not create. While it writes, split holds a lock on
OUT_DIR (a flock on OUT_DIR/` + outdir.LockFile + `, local to this machine): a
second split -o or apply --out on the same directory fails at once, naming the
holder's pid.

With --engine flux, argocd or configsync, each OUT_DIR/<context>/ holds only
what that engine applies to that cluster (no Kptfile, no ResourceGroup; the
overrides record stays, local config that the engine skips), and split also
writes the engine's own objects, generated from the ShardConfig, to
OUT_DIR/` + gitops.Dir + `/: for flux a GitRepository and one Kustomization per context,
both for one management cluster (flux/management.yaml, each context reached
through its kubeconfig Secret, the waves of spec.rollout as dependsOn) and for
one Flux in each cluster (flux/clusters/<context>.yaml); for argocd one
ApplicationSet (one Application per context, destination.name = the context,
spec.rollout's waves as RollingSync steps); for configsync one RootSync per
cluster (Config Sync cannot order waves). The repository is --gitops-url,
--gitops-branch (default main) and --gitops-path (OUT_DIR's path in the
repository, default: found from the .git above OUT_DIR), else spec.gitops.
A move hands off in two splits: the first keeps the moving objects in the old
context's directory as well as the new one's and records the pending hand-off
(OUT_DIR/` + gitops.Dir + `/` + split.HandoffFile + `, local config); every split keeps them, and
says why, until --handoff-status FILE shows the new copies Current: the output
of shard-router status -o json, or Flux's Kustomizations as kubectl get -o json
writes them (the new context's Kustomization Ready at the revision it
attempted, its inventory holding the object). See docs/guides/gitops.md.

With --context NAME, split writes that context's resources and its inventory
to stdout as one YAML stream instead, and writes no files. kpt live apply
prunes by that stream as by a directory, so the pipe form needs the previous
split too: --previous OUT_DIR (or -o OUT_DIR), read only, which must exist
(for a first apply, an empty directory). With it, moves and the
mass-deletion guard are checked as in the directory form; without it, split
refuses and writes nothing to stdout.`

const splitExample = `  # One package per cluster, then apply each to its cluster.
  shard-router split my-pkg -o out
  for ctx in $(ls out); do kpt live apply "out/$ctx" --context "$ctx"; done

  # The pipe form.
  kpt fn source my-pkg | shard-router split - --context ctx-00 --previous out | kpt live apply - --context ctx-00`

func newSplitCommand(s Streams) *cobra.Command {
	f := &splitFlags{}
	cmd := &cobra.Command{
		Use:     "split [PKG_DIR | -] (-o OUT_DIR | --context NAME --previous OUT_DIR) [--config FILE]",
		Short:   "Write one ready kpt package per kube context",
		Long:    splitLong,
		Example: splitExample,
		Args:    cobra.MaximumNArgs(1),
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
	cmd.Flags().StringVar(&f.context, "context", "", "write only this context's package, as a YAML stream on stdout (needs --previous)")
	cmd.Flags().StringVar(&f.previous, "previous", "", "with --context: the previous split's output directory OUT_DIR, read only (must exist; empty for a first apply)")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "turn the mass-deletion guard's refusal into a warning (as spec.allowMassPrune)")
	cmd.Flags().StringVar(&f.engine, "engine", string(gitops.Kpt), "who applies each context directory: kpt (Kptfile and ResourceGroup), flux, argocd or configsync (the engine's own objects in OUT_DIR/"+gitops.Dir+")")
	cmd.Flags().StringVar(&f.gitops.URL, "gitops-url", "", "with --engine flux|argocd|configsync: the git repository's http(s):// or ssh:// URL (default: spec.gitops.url)")
	cmd.Flags().StringVar(&f.gitops.Branch, "gitops-branch", "", "with --engine flux|argocd|configsync: the branch the engine follows (default: spec.gitops.branch, else main)")
	cmd.Flags().StringVar(&f.gitops.Path, "gitops-path", "", "with --engine flux|argocd|configsync: OUT_DIR's path in the repository (default: spec.gitops.path, else found from the .git above OUT_DIR)")
	cmd.Flags().StringVar(&f.handoffStatus, "handoff-status", "", "with --engine flux|argocd|configsync: a FILE that shows which moved objects are Current in their new contexts, so that they leave the old context's directory: shard-router status -o json, or Flux's Kustomizations (kubectl get kustomizations -o json)")
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
	if err := notAFormat(f.out); err != nil {
		return err
	}
	if f.context == "" && f.previous == "" && f.out != "" {
		// The directory form writes OUT_DIR: lock it before reading the
		// previous split, so that it is still what this run replaces.
		lock, err := outdir.LockOutDir(f.out, true)
		if err != nil {
			return err
		}
		defer lock.Unlock()
	}
	out, err := splitOutDir(f)
	if err != nil {
		return err
	}
	meter := progress.New(s.Err, progress.IsTerminal(s.Err))
	defer meter.Done()
	meter.Phase("reading %s", src)
	in, err := readInput(s, src, out)
	if err != nil {
		return err
	}
	meter.Objects(in.Len())
	cfg, err := loadConfig(s, in, f.config)
	if err != nil {
		return err
	}
	if f.context != "" && cfg.Config.Index(f.context) < 0 {
		return unknownContext(f.context, cfg.Config.Names)
	}
	engine, source, err := splitEngine(f, cfg)
	if err != nil {
		return err
	}
	cfg.Router.ForEngine(engine)
	current, err := handoffStatus(f.handoffStatus)
	if err != nil {
		return err
	}
	opts := plan.Options{Split: split.Options{PackageName: f.name, Out: out, Engine: engine, Source: source, Current: current}, AllowMassPrune: f.allowMassPrune}
	if f.context != "" {
		meter.Phase("routing %d objects", in.Len())
		layout, err := plan.Build(in, cfg, opts)
		meter.Done()
		if err != nil {
			return err
		}
		if err := splitResults(s, layout); err != nil {
			return err
		}
		pkg, _ := layout.Package(f.context)
		return pkg.WriteStream(s.Out)
	}
	meter.Phase("routing %d objects, writing %d context packages", in.Len(), len(cfg.Config.Names))
	layout, err := plan.Split(in, cfg, opts)
	meter.Done()
	if layout != nil {
		if err := splitResults(s, layout); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	printWritten(s, f.out, layout, engine, source)
	return nil
}

// printWritten says what split wrote.
func printWritten(s Streams, out string, layout *split.Layout, engine gitops.Engine, source gitops.Source) {
	for _, pkg := range layout.Packages {
		if engine.Pulls() {
			fmt.Fprintf(s.Err, "shard-router: wrote %s: %d resources, for %s\n", filepath.Join(out, pkg.Context), pkg.Resources, engine)
			continue
		}
		fmt.Fprintf(s.Err, "shard-router: wrote %s: %d resources, inventory %s/%s (id %s)\n",
			filepath.Join(out, pkg.Context), pkg.Resources, pkg.Inventory.Namespace, pkg.Inventory.Name, pkg.Inventory.ID)
	}
	if !engine.Pulls() {
		return
	}
	fmt.Fprintf(s.Err, "shard-router: wrote %s: the %s objects for %s, branch %s, path %s\n",
		filepath.Join(out, gitops.Dir), engine, source.URL, source.Branch, source.Path)
	for _, r := range layout.Results {
		if r.Severity == framework.Info && strings.HasPrefix(r.Message, split.HandoffDone) {
			fmt.Fprintf(s.Err, "shard-router: %s\n", r.Message)
		}
	}
}

// handoffStatus reads --handoff-status: `shard-router status -o json`
// (a FleetStatus), or Flux's Kustomizations as `kubectl get
// kustomizations -o json` writes them (a List).
func handoffStatus(file string) (split.CurrentFunc, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--handoff-status: %w", err)
	}
	var head struct {
		Kind  string                `json:"kind"`
		Items []split.Kustomization `json:"items"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("--handoff-status %s: not JSON: %w", file, err)
	}
	switch head.Kind {
	case v1alpha1.FleetStatusKind:
		var st v1alpha1.FleetStatus
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, fmt.Errorf("--handoff-status %s: %w", file, err)
		}
		return split.CurrentIn(&st), nil
	case "List", "KustomizationList":
		return split.CurrentInFlux(head.Items), nil
	}
	return nil, fmt.Errorf("--handoff-status %s: kind %q: want a %s (shard-router status -o json) or a List of Flux Kustomizations (kubectl get kustomizations -o json)", file, head.Kind, v1alpha1.FleetStatusKind)
}

// splitEngine reads --engine and the repository of a pulling engine.
func splitEngine(f *splitFlags, cfg *function.Engine) (gitops.Engine, gitops.Source, error) {
	engine, err := gitops.ParseEngine(f.engine)
	if err != nil {
		return "", gitops.Source{}, err
	}
	if !engine.Pulls() {
		if f.gitops != (gitops.Source{}) || f.handoffStatus != "" {
			return "", gitops.Source{}, errors.New("--gitops-url, --gitops-branch, --gitops-path and --handoff-status are for a GitOps engine: add --engine flux, argocd or configsync")
		}
		return engine, gitops.Source{}, nil
	}
	if f.context != "" {
		return "", gitops.Source{}, fmt.Errorf("--engine %s is for the directory form (-o OUT_DIR): the engine pulls the directories from git, not a stream", engine)
	}
	source, err := gitops.Resolve(f.gitops, cfg.Config.Source.Spec.GitOps, f.out)
	if err != nil {
		return "", gitops.Source{}, fmt.Errorf("split --engine %s: %w", engine, err)
	}
	return engine, source, nil
}

// splitResults prints the layout's results, and fails on an error.
func splitResults(s Streams, layout *split.Layout) error {
	printResults(s.Err, layout.Results)
	if layout.Results.ExitCode() != 0 {
		return fmt.Errorf("split failed: %s", summarize(layout.Results))
	}
	return nil
}

// splitOutDir opens the output directory, or for the pipe form the
// previous split, which must exist: without it, nothing would check the
// moves and the mass-deletion guard of a stream that kpt live apply prunes by.
func splitOutDir(f *splitFlags) (*outdir.OutDir, error) {
	switch {
	case f.context == "" && f.previous != "":
		return nil, errors.New("--previous is for the pipe form (--context NAME); the directory form reads its -o OUT_DIR")
	case f.context == "" && f.out == "":
		return nil, errors.New("split needs -o OUT_DIR (or --context NAME --previous OUT_DIR to write one context to stdout)")
	case f.context == "":
		return outdir.OpenOutDir(f.out)
	case f.previous != "" && f.out != "" && f.previous != f.out:
		return nil, errors.New("give the previous split once: --previous OUT_DIR (-o OUT_DIR means the same with --context)")
	case f.previous == "" && f.out == "":
		return nil, fmt.Errorf("split --context %s needs the previous split, --previous OUT_DIR: kpt live apply prunes by the stream, and without what was applied last split cannot check moves nor the mass-deletion guard (for a first apply, give an empty directory)", f.context)
	}
	prev := f.previous
	if prev == "" {
		prev = f.out
	}
	return outdir.OpenExisting(prev)
}

// readInput reads a package directory, or stdin for "-". An output
// directory inside the package is never read back.
func readInput(s Streams, src string, out *outdir.OutDir) (*input.Input, error) {
	if src == "-" {
		return input.ReadStream(s.In, ioOptions())
	}
	var skip []string
	if out != nil {
		skip = append(skip, out.Path)
	}
	return input.ReadPackage(src, ioOptions(), skip...)
}

// configNode returns --config FILE, else the input's config.
func configNode(in *input.Input, file string) (*yaml.RNode, error) {
	if file != "" {
		return input.ReadConfigFile(file)
	}
	return in.Config()
}

// unusedConfigs are the warnings that --config file replaces a config the
// input holds: the platform's config is the one used, never the one a
// package brings, and the package's author is told.
func unusedConfigs(in *input.Input, file string) []string {
	if file == "" || in == nil {
		return nil
	}
	var out []string
	for _, c := range in.ConfigsBesides(file) {
		out = append(out, fmt.Sprintf("%s is not used: --config %s is the config (a package's own ShardConfig never routes it when --config is given)", c, file))
	}
	return out
}

// loadConfig loads --config FILE, else the input's config; its errors are
// printed to stderr as the function prints them, and so are the
// unusedConfigs warnings.
func loadConfig(s Streams, in *input.Input, file string) (*function.Engine, error) {
	node, err := configNode(in, file)
	if err != nil {
		return nil, err
	}
	for _, w := range unusedConfigs(in, file) {
		fmt.Fprintf(s.Err, "shard-router: warning: %s\n", w)
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
