//go:build !nolive

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/apply"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/output"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/split"
)

// applyFlags are the flags of `shard-router apply`.
type applyFlags struct {
	out              string
	config           string
	name             string
	kubeconfig       string
	parallel         int
	reconcileTimeout time.Duration
	dryRun           bool
	allowMassPrune   bool
	output           string
	untilWave        string
	onFailure        string
	rollback         bool
	lockTimeout      time.Duration
	forceUnlock      []string
	forceUnlockBy    string
	adoptCluster     bool
	clusterReplaced  []string
	strategy         strategyFlags
	as               impersonateFlags
}

var applyFormats = []string{"text", "html", output.JSON}

// lockExpiry is lease.Duration as the help says it.
var lockExpiry = lease.Duration.String()

var applyLong = `apply routes and plans a kpt package exactly as plan does, then applies each
context's package to the cluster of the kubeconfig context of the same name,
in-process, with kpt's live library: the same ResourceGroup inventory (the one
split writes), field manager, apply strategy and inventory policy as
kpt live apply OUT_DIR/<context> --context <context>, which afterwards finds
nothing to do. Where a cluster lacks kpt's ResourceGroup CRD, apply installs it.

Before any cluster is written to, apply refuses what split and plan refuse
(unallowed moves and datastore changes, the mass-deletion guard), reads each
cluster's ResourceGroup inventory and applies the guard to what it will really
prune, says where OUT_DIR disagrees with a cluster, and refuses a
config.kubernetes.io/depends-on that points into another context. A kube
context missing from the kubeconfig (--kubeconfig, else $KUBECONFIG, else
~/.kube/config) is an error.

Contexts are applied in parallel, --parallel at a time (default 16: what a
run holds in memory grows with the contexts in progress, not with the
fleet; their locks, one small Lease write each, are taken and released
four times as many at once), and each waits at most
--reconcile-timeout for its objects to be Current (kstatus) and its pruned
objects to be gone. A context that fails (unreachable, an object rejected, a
timeout) does not stop the others; the run then exits 1. OUT_DIR/<context> is
replaced by the new package only once that context's apply and reconcile
succeeded, atomically, so OUT_DIR holds what each cluster last received, and a
rerun retries exactly what failed. Unless --dry-run, apply holds a lock on
OUT_DIR while it runs (a flock on OUT_DIR/` + outdir.LockFile + `, local to this
machine): a second apply --out or split -o on the same directory fails at
once, naming the holder's pid.

Many runners can share one fleet: the clusters, not OUT_DIR, are the truth.
Before its first write apply reads, per context, the cluster's identity (the
UID of its kube-system Namespace) and a Lease beside the inventory
(shard-router.<inventory>, in the inventory's namespace) that records the last
write: a serial, the package digest, who and when, and the OUT_DIR that owns
the inventory. OUT_DIR records the same in ` + outdir.FleetFile + `. A context
that reaches another cluster than OUT_DIR recorded (--cluster-replaced CONTEXT
accepts a rebuilt one), an inventory another OUT_DIR's package owns, and a
cluster written by another run since OUT_DIR recorded it (a stale OUT_DIR) are
refused before any write, naming the context, the serials and who wrote it;
--adopt-cluster-state instead takes each such cluster's inventory as the
previous state, and every guard then compares with it. Then apply takes the
Lease of every context it will write, in context order (a context with nothing
to write takes none, so a no-change apply writes nothing), checks the serial
again just before, and holds it, renewed, until the run ends, bakes included
(with spec.rollout it records there which wave it is applying or baking, and
when the bake ends, for status). Contexts another run holds are refused at
once, in one error per holder naming every context it holds, when its locks
free themselves, whether that run is gone (its pid no longer runs on this
host, or it stopped renewing), and the command that breaks them; or waited
for with --lock-timeout, which says when it starts waiting (the holder, until
when) and when it gets the lock. A killed run's lock expires ` + lockExpiry + ` after
its last renewal; --force-unlock CONTEXT[,CONTEXT...] breaks locks by hand,
whoever holds them, and --force-unlock-held-by HOLDER every lock that one run
(its holder as errors name it, or its run id) holds on OUT_DIR's contexts, and
no other. A killed run leaves the record it took as applying: a later run that
finds such a context in sync settles it (one Lease update, refused as a lock
is, serial kept) in the cluster and in OUT_DIR.

Every request of the run (the identity read, the locks, the inventories,
the objects, the bakes' reads, the gates' kubernetes provider) acts as
--as USER (with --as-group and --as-uid), as kubectl's do, else as the
kubeconfig user entry's as:; the cluster's record and OUT_DIR say who
applied as whom. A context whose credentials fail while it is read (the
cluster rejects them with 401, the kubeconfig's exec plugin is missing or
fails, its token file is missing) refuses the whole run before any write,
naming the context, the kubeconfig user entry and the cause; an
unreachable cluster fails its context alone. During the run a 401 is
retried once with the credentials read again (the exec plugin run again,
the token file read again); a second 401 fails that context, saying its
credentials were rejected. A bearer token that is a JWT expiring before
the rollout's bakes can end is warned about before the run starts.

A move hands off: when an object leaves context A for B (allowMoves), B gets it
first, and A keeps applying its copy; only once every new copy is Current does
A apply its new package, which prunes it. If B fails, A keeps its copy, the
report lists the objects held in both, and the run exits 1; a rerun picks the
handoff up from OUT_DIR and the live inventories. Data in volumes does not move
with the objects.

With spec.rollout, the contexts are applied wave by wave, in the order of
spec.rollout.waves: a wave starts only once every context of the wave before
it is Applied or Unchanged, Current, and stayed Current (kstatus, read every
second) for that wave's bakeTime; an object that leaves Current during the
bake fails its context. When more of a wave's contexts fail than maxFailures
allows, the rollout halts: the later waves are Skipped and their clusters get
no write request. A wave's maxParallel bounds its contexts at once (default
--parallel). --until-wave NAME stops once that wave has baked (exit 0, the
report says paused, the later waves Pending): a manual approval gate; the next
apply resumes, its contexts already holding the new package Unchanged. A move
into a later wave's context keeps the old copy until that wave has the new one
Current. With onFailure: Rollback (or --on-failure rollback), a halted rollout
applies again, newest wave first and with the same handoffs, the package each
context it changed held before it (failed ones included): those and their
waves end RolledBack (the waves' errors name the wave that halted, and why),
OUT_DIR holds those packages again, and the run exits 1. Until a rollout
completes, OUT_DIR/` + outdir.RolloutDir + ` keeps those packages, so that
apply --rollback --out OUT_DIR rolls the last unfinished rollout back by hand,
also after a kill. See docs/guides/rollout.md.

--dry-run asks every cluster for a server-side dry run and changes no cluster
and no file; with spec.rollout it goes through the waves in order, without
bakes or halts, and says what each would do. Progress goes to stderr, one line
per step and context (and wave); the report (text, -o html: one self-contained
page with each wave's gates and their measurements, or -o json: an ApplyReport,
apiVersion shardrouter.dev/v1alpha1) to stdout. Exit status: 0 when every context is Applied, Unchanged, Skipped (left the
config) or Pending (--until-wave), 1 otherwise (a halted or rolled back
rollout included).`

const applyExample = `  # Plan in the pull request, apply to roll out.
  shard-router plan my-pkg --previous out -o markdown > plan.md
  shard-router apply my-pkg --out out

  # Check every cluster accepts the change, without changing anything.
  shard-router apply my-pkg --out out --dry-run

  # A rollout with a manual gate: the canary wave first, the rest after approval.
  shard-router apply my-pkg --out out --until-wave canary
  shard-router apply my-pkg --out out

  # A CI job: two clusters at a time, a report for the logs.
  shard-router apply my-pkg --out out --parallel 2 --reconcile-timeout 10m -o json > apply.json`

func newApplyCommand(s Streams) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:     "apply [PKG_DIR | -] --out OUT_DIR [--config FILE] [--name NAME] [--kubeconfig FILE] [--parallel N] [--reconcile-timeout DURATION] [--dry-run] [--allow-mass-prune] [--until-wave NAME] [--on-failure halt|rollback] [--rollback] [--lock-timeout DURATION] [--adopt-cluster-state] [--cluster-replaced CONTEXT] [--force-unlock CONTEXT[,CONTEXT...] | --force-unlock-held-by HOLDER] [--as USER [--as-group GROUP ...] [--as-uid UID]] [--server-side] [--force-conflicts] [--field-manager NAME] [--inventory-policy strict|adopt] [--prune-propagation-policy POLICY] [--prune-timeout DURATION] [-o text|json]",
		Short:   "Apply every context package to its cluster, with kpt's own live library",
		Long:    applyLong,
		Example: applyExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := "."
			if len(args) == 1 {
				src = args[0]
			}
			return runApply(cmd.Context(), s, f, src, f.strategy.options(cmd.Flags()))
		},
	}
	cmd.Flags().StringVar(&f.out, "out", "", "the output directory OUT_DIR: what each context last received, replaced per context once applied; required")
	cmd.Flags().StringVar(&f.config, "config", "", "the ShardConfig (or ConfigMap) file; default: the input's functionConfig or single ShardConfig")
	cmd.Flags().StringVar(&f.name, "name", "", "package name for the context packages and inventories, as split's --name")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; default: $KUBECONFIG, else ~/.kube/config")
	cmd.Flags().IntVar(&f.parallel, "parallel", apply.DefaultParallel, "apply at most N contexts at once, to bound memory and the load on the clusters (0: all)")
	cmd.Flags().DurationVar(&f.reconcileTimeout, "reconcile-timeout", apply.DefaultReconcileTimeout, "how long each context waits for its objects to be Current and its pruned objects gone")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "ask every cluster for a server-side dry run; change no cluster and no file")
	cmd.Flags().BoolVar(&f.allowMassPrune, "allow-mass-prune", false, "turn the mass-deletion guard's refusal into a warning")
	cmd.Flags().StringVar(&f.untilWave, "until-wave", "", "with spec.rollout: stop once this wave has baked (exit 0, the later waves Pending); the next apply resumes")
	cmd.Flags().StringVar(&f.onFailure, "on-failure", "", "with spec.rollout: what a halted rollout does, halt or rollback (default: spec.rollout.onFailure, else halt)")
	cmd.Flags().BoolVar(&f.rollback, "rollback", false, "roll OUT_DIR's unfinished rollout back: every context it changed gets its previous package again, newest wave first (reads no package)")
	cmd.Flags().DurationVar(&f.lockTimeout, "lock-timeout", 0, "wait up to this long for a context's lock that another run holds (default: refuse at once)")
	cmd.Flags().StringSliceVar(&f.forceUnlock, "force-unlock", nil, "break the locks runs hold on these contexts (their Leases), whoever holds them, say whose they were, and exit; applies nothing; repeat or comma-separate for several")
	cmd.Flags().StringVar(&f.forceUnlockBy, "force-unlock-held-by", "", "break every lock this run holds on OUT_DIR's contexts (or on the --force-unlock contexts), and no other, say where, and exit; applies nothing; HOLDER as lock errors and status name it, or its run id")
	cmd.Flags().BoolVar(&f.adoptCluster, "adopt-cluster-state", false, "where OUT_DIR is stale or does not own a context's inventory, take what the cluster's inventory holds as the previous state (every guard compares with it) instead of refusing")
	cmd.Flags().StringSliceVar(&f.clusterReplaced, "cluster-replaced", nil, "accept that this context now reaches another cluster (rebuilt or replaced on purpose); repeat or comma-separate for several")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "report format: text, html (one self-contained page, with the waves' gates) or json")
	addStrategyFlags(cmd.Flags(), &f.strategy, true)
	f.as.add(cmd.Flags(), "")
	return cmd
}

func runApply(ctx context.Context, s Streams, f *applyFlags, src string, strategy *v1alpha1.ApplyOptions) error {
	if err := output.Check(f.output, applyFormats...); err != nil {
		return err
	}
	if f.out == "" {
		return errors.New("apply needs --out OUT_DIR: where split writes the context packages and apply records what each cluster received")
	}
	if f.parallel < 0 || f.reconcileTimeout <= 0 {
		return errors.New("--parallel must be 0 or more, and --reconcile-timeout more than 0")
	}
	var onFailure v1alpha1.OnFailure
	switch f.onFailure {
	case "":
	case "halt", "Halt":
		onFailure = v1alpha1.OnFailureHalt
	case "rollback", "Rollback":
		onFailure = v1alpha1.OnFailureRollback
	default:
		return fmt.Errorf("--on-failure %q: want halt or rollback", f.onFailure)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if f.lockTimeout < 0 {
		return errors.New("--lock-timeout must be 0 or more")
	}
	if err := f.as.check(); err != nil {
		return err
	}
	if len(f.forceUnlock) > 0 || f.forceUnlockBy != "" {
		out, err := outdir.OpenExisting(f.out)
		if err != nil {
			return err
		}
		lines, err := apply.ForceUnlock(ctx, out, f.kubeconfig, f.as.impersonation(), f.forceUnlock, f.forceUnlockBy)
		for _, l := range lines {
			fmt.Fprintf(s.Err, "shard-router: apply: %s\n", l)
		}
		return err
	}
	if f.rollback && (f.dryRun || f.untilWave != "" || f.onFailure != "") {
		return errors.New("--rollback rolls the last unfinished rollout back: it takes no --dry-run, --until-wave or --on-failure")
	}
	if !f.dryRun {
		// apply replaces OUT_DIR's context directories: lock it before
		// reading what each cluster last received.
		lock, err := outdir.LockOutDir(f.out, false)
		if err != nil {
			return err
		}
		defer lock.Unlock()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	opts := apply.Options{Kubeconfig: f.kubeconfig, Parallel: f.parallel, ReconcileTimeout: f.reconcileTimeout,
		DryRun: f.dryRun, Progress: prefixed{s.Err}, UntilWave: f.untilWave, OnFailure: onFailure,
		LockTimeout: f.lockTimeout, AdoptClusterState: f.adoptCluster, ClusterReplaced: f.clusterReplaced, Strategy: strategy,
		Impersonate: f.as.impersonation()}
	var report *v1alpha1.ApplyReport
	if f.rollback {
		out, err := outdir.OpenExisting(f.out)
		if err != nil {
			return err
		}
		if report, err = apply.Rollback(ctx, out, opts); err != nil {
			return err
		}
	} else {
		out, in, cfg, err := readWithPrevious(s, src, f.out, f.config)
		if err != nil {
			return err
		}
		opts.Plan = plan.Options{Split: split.Options{PackageName: f.name, Out: out}, AllowMassPrune: f.allowMassPrune}
		report, err = apply.Run(ctx, in, cfg, opts)
		if err != nil && !errors.Is(err, apply.ErrRefused) {
			return err
		}
		report.Warnings = append(unusedConfigs(in, f.config), report.Warnings...)
	}
	p := output.Printer{Formats: applyFormats, Text: map[string]output.Renderer{
		"text": func(w io.Writer) error { return output.RenderApplyText(w, report) },
		"html": func(w io.Writer) error { return output.RenderApplyHTML(w, report) },
	}}
	if err := p.Print(s.Out, f.output, report); err != nil {
		return err
	}
	for _, e := range report.Errors {
		fmt.Fprintf(s.Err, "shard-router: error: %s\n", e)
	}
	failed := report.Failed()
	if f.rollback {
		// A rollback by hand succeeds when every context is back.
		failed = len(report.Errors) > 0 || len(report.HeldInBoth) > 0 ||
			slices.ContainsFunc(report.Contexts, func(c v1alpha1.ContextApply) bool { return c.Status == v1alpha1.ApplyFailed })
	}
	if failed {
		return errAlreadyReported{errors.New("apply failed")}
	}
	return nil
}

// prefixed writes progress lines as "shard-router: apply: <context>: ...".
type prefixed struct{ w io.Writer }

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, "shard-router: apply: "); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
