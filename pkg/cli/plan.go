package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/output"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/progress"
	"github.com/shard-router/shard-router/pkg/split"
)

// planFlags are the flags of `shard-router plan`.
type planFlags struct {
	// previous is the previous split's output directory.
	previous string
	// config is the function config file; default: the input's config.
	config string
	// name names the context packages, as split's --name.
	name string
	// output is table, markdown, html, json or yaml.
	output string
	// diff adds a unified diff of every update.
	diff bool
	// detailedExitCode exits 2 when there are changes and no errors.
	detailedExitCode bool
	// allowMassPrune turns the mass-deletion guard into a warning.
	allowMassPrune bool
	// live adds the refusals apply would give against the clusters of
	// kubeconfig; adoptCluster and clusterReplaced are apply's flags.
	live            bool
	kubeconfig      string
	adoptCluster    bool
	clusterReplaced []string
	as              impersonateFlags
	// engine and handoffStatus are split's: a move handed off keeps the
	// old copies, which plan then does not count as pruned.
	engine, handoffStatus string
	// strategy are kpt live apply's flags, as apply's: the plan says which
	// apply would use, and --live asks the clusters with them.
	strategy      strategyFlags
	strategyGiven *v1alpha1.ApplyOptions
}

var planFormats = []string{"table", "markdown", output.HTML, output.JSON, output.YAML}

const planLong = `plan routes a kpt package exactly as split does (same inputs, flags, engine,
refusals and inventories), writes nothing, and compares each context's new
package with the previous split in OUT_DIR, i.e. what was last applied. It
prints, per context, what kpt live apply OUT_DIR/<context> --context <context>
would then do in that cluster:

  create     objects of the new package that the previous one lacks
  update     objects of both that differ in anything that reaches the
             cluster (compared as data: formatting, comments, key order and
             kpt's bookkeeping annotations, internal.config.kubernetes.io/*
             and the legacy path and index, are not changes; every other
             annotation is, config.kubernetes.io/* included, since kpt live
             apply sends it)
  prune      objects of the previous package that the new one lacks: kpt
             deletes them from that cluster
  unchanged  a count

and whether the context is added (no previous package), kept, or dropped
(a previous package, no longer in the config). An object is its group,
kind, namespace and name, as kpt's inventory knows it: an apiVersion change
within one group is an update. Across contexts it lists the moves and the
datastore changes, and which of them the rules refuse (allowMoves,
allowDataStoreChanges, ephemeral). OUT_DIR must exist: a path that does not
is an error (a typo would hide every prune). For a first apply, give an
empty directory: every object is then a create.

The mass-deletion guard applies as in split: pruning all of one context's
objects, or, from one context that held at least spec.pruneGuard.minObjects
(10) objects, more than spec.pruneGuard.maxPercent (50) of them, is refused
unless spec.allowMassPrune or --allow-mass-prune.

split records each context's --etcd-servers-overrides in its package (a
local-config file that is never applied); plan shows every change of them
(a datastore's servers changed, an override added or removed), and refuses
what overrides --previous refuses.

Formats: table (default: the objects each context creates, updates and
prunes by name), markdown (a pull-request comment of at most 65,536
characters: a refusal and its errors first, then summaries, each context
collapsed, each distinct diff once with the contexts sharing it; what does
not fit is counted, and -o json gives everything), html (one self-contained
page with everything: refusals first, each context's objects, each distinct
diff once, folded; no script, nothing loaded from elsewhere), json and yaml
(a SplitPlan, apiVersion shardrouter.dev/v1alpha1). The plan is printed in
every case, a refusal (an invalid config included) too; errors also go to
stderr. Exit status: 1 when split would refuse (any error), else 0; with
--detailed-exitcode, 2 when there are changes (etcd override changes
included) and no errors.`

const planExample = `  # What the next split and apply would do, against the last split.
  shard-router plan my-pkg --previous out

  # A pull-request comment, with diffs; exit 2 when anything changes.
  shard-router plan my-pkg --previous out -o markdown --diff --detailed-exitcode > plan.md

  # A page for a CI artifact: open it in any browser, offline.
  shard-router plan my-pkg --previous out -o html --diff > plan.html

  # From a stream.
  kpt fn source my-pkg | shard-router plan - --previous out -o json`

func newPlanCommand(s Streams) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:     "plan [PKG_DIR | -] --previous OUT_DIR [--config FILE] [--name NAME] [-o table|markdown|html|json|yaml] [--diff] [--detailed-exitcode]",
		Short:   "Show what every cluster will gain, change and lose before anything is applied",
		Long:    planLong,
		Example: planExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := "."
			if len(args) == 1 {
				src = args[0]
			}
			f.strategyGiven = f.strategy.options(cmd.Flags())
			return runPlan(cmd.Context(), s, f, src)
		},
	}
	cmd.Flags().StringVar(&f.previous, "previous", "", "the previous split's output directory OUT_DIR (what was last applied); required, and must exist (empty for a first apply)")
	cmd.Flags().StringVar(&f.config, "config", "", "the ShardConfig (or ConfigMap) file; default: the input's functionConfig or single ShardConfig")
	cmd.Flags().StringVar(&f.name, "name", "", "package name for the context packages and inventories, as split's --name")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table, markdown, html, json or yaml")
	cmd.Flags().BoolVar(&f.diff, "diff", false, "add a unified diff (YAML, as split writes it) of every update")
	cmd.Flags().BoolVar(&f.detailedExitCode, "detailed-exitcode", false, "exit 2 when there are changes and no errors (0: no changes, 1: errors)")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "turn the mass-deletion guard's refusal into a warning")
	cmd.Flags().StringVar(&f.engine, "engine", string(gitops.Kpt), "as split's --engine: with flux, argocd or configsync the contexts hold no Kptfile nor ResourceGroup, and a move hands off (the old copies stay until --handoff-status shows the new ones Current)")
	cmd.Flags().BoolVar(&f.live, "live", false, "read the clusters too (--kubeconfig), and list the refusals apply would give: a context that reaches another cluster, an inventory another OUT_DIR owns, a stale OUT_DIR, the guards on what each cluster's inventory holds; writes nothing")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "with --live: the kubeconfig file; default: $KUBECONFIG, else ~/.kube/config")
	cmd.Flags().BoolVar(&f.adoptCluster, "adopt-cluster-state", false, "with --live: as apply's")
	cmd.Flags().StringSliceVar(&f.clusterReplaced, "cluster-replaced", nil, "with --live: as apply's")
	f.as.add(cmd.Flags(), "with --live: ")
	cmd.Flags().StringVar(&f.handoffStatus, "handoff-status", "", "as split's --handoff-status (with --engine flux|argocd|configsync)")
	addStrategyFlags(cmd.Flags(), &f.strategy, false)
	return cmd
}

func runPlan(ctx context.Context, s Streams, f *planFlags, src string) error {
	if err := output.Check(f.output, planFormats...); err != nil {
		return err
	}
	if !f.live && (f.kubeconfig != "" || f.adoptCluster || len(f.clusterReplaced) > 0 || f.as.set()) {
		return errors.New("--kubeconfig, --adopt-cluster-state, --cluster-replaced and --as are for plan --live")
	}
	if err := f.as.check(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if f.previous == "" {
		return errors.New("plan needs --previous OUT_DIR: the previous split's output (for a first apply, an empty directory: everything is then a create)")
	}
	meter := progress.New(s.Err, progress.IsTerminal(s.Err))
	defer meter.Done()
	meter.Phase("reading %s and %s", src, f.previous)
	out, in, err := readPrevious(s, src, f.previous)
	if err != nil {
		return err
	}
	meter.Objects(in.Len())
	node, err := configNode(in, f.config)
	if err != nil {
		return err
	}
	// An invalid config is a refusal too: the plan (and so the pull
	// request's comment) says so.
	doc, results := v1alpha1.NewSplitPlan(), framework.Results(nil)
	if cfg, invalid := function.LoadConfig(node); len(invalid) > 0 {
		results = invalid
	} else {
		engine, current, err := planEngine(f)
		if err != nil {
			return err
		}
		cfg.Router.ForEngine(engine)
		// The engine's own objects are not compared: plan needs no repository.
		opts := plan.Options{Split: split.Options{PackageName: f.name, Out: out, Engine: engine, Current: current}, AllowMassPrune: f.allowMassPrune, Diff: f.diff}
		var layout *split.Layout
		meter.Phase("routing %d objects, comparing %d contexts", in.Len(), len(cfg.Config.Names))
		if doc, layout, err = plan.Preview(in, cfg, opts); err != nil {
			return err
		}
		results = layout.Results
		if a := cfg.Config.Source.Spec.Apply.Over(f.strategyGiven); cfg.Config.Source.Spec.Apply != nil || f.strategyGiven != nil {
			if err := a.Check(); err != nil {
				return err
			}
			how := v1alpha1.ResolveStrategy(a, 0)
			doc.Apply = &how
		}
		if f.live && results.ExitCode() == 0 {
			if engine.Pulls() {
				return errors.New("--live reads kpt's inventories: a split for a GitOps engine has none (its engine applies it)")
			}
			meter.Phase("reading %d clusters", len(cfg.Config.Names))
			if err := checkLive(ctx, f, in, cfg, opts, doc); err != nil {
				return err
			}
		}
	}
	doc.Warnings = append(doc.Warnings, unusedConfigs(in, f.config)...)
	for _, r := range results {
		switch r.Severity {
		case framework.Error:
			doc.Errors = append(doc.Errors, FormatResult(r))
		case framework.Warning:
			doc.Warnings = append(doc.Warnings, FormatResult(r))
		}
	}
	meter.Done()
	p := output.Printer{Formats: planFormats, Text: map[string]output.Renderer{
		"table":     func(w io.Writer) error { return output.RenderPlanTable(w, doc) },
		"markdown":  func(w io.Writer) error { return output.RenderPlanMarkdown(w, doc) },
		output.HTML: func(w io.Writer) error { return output.RenderPlanHTML(w, doc) },
	}}
	if err := p.Print(s.Out, f.output, doc); err != nil {
		return err
	}
	printResults(s.Err, results)
	if len(doc.Errors) > 0 {
		return errAlreadyReported{fmt.Errorf("plan: %d error(s)", len(doc.Errors))}
	}
	if f.detailedExitCode && doc.HasChanges() {
		return exitCode(2)
	}
	return nil
}

// readPrevious opens the previous split's output directory (what was last
// applied), then reads the input, as plan and apply do.
func readPrevious(s Streams, src, previous string) (*outdir.OutDir, *input.Input, error) {
	out, err := outdir.OpenPrevious(previous)
	if err != nil {
		return nil, nil, err
	}
	in, err := readInput(s, src, out)
	return out, in, err
}

// readWithPrevious is readPrevious, then the input's config, which must be
// valid (apply; plan reports an invalid config in its plan instead).
func readWithPrevious(s Streams, src, previous, config string) (*outdir.OutDir, *input.Input, *function.Engine, error) {
	out, in, err := readPrevious(s, src, previous)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := loadConfig(s, in, config)
	if err != nil {
		return nil, nil, nil, err
	}
	return out, in, cfg, nil
}

// planEngine reads --engine and --handoff-status.
func planEngine(f *planFlags) (gitops.Engine, split.CurrentFunc, error) {
	engine, err := gitops.ParseEngine(f.engine)
	if err != nil {
		return "", nil, err
	}
	if !engine.Pulls() && f.handoffStatus != "" {
		return "", nil, errors.New("--handoff-status is for a GitOps engine: add --engine flux, argocd or configsync")
	}
	current, err := handoffStatus(f.handoffStatus)
	return engine, current, err
}
