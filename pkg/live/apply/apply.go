// Package apply applies every context package of a split to its cluster,
// in-process, with kpt's own live library: cli-utils' applier and kpt's
// ResourceGroup inventory, the field manager, apply strategy, inventory
// policy and ResourceGroup CRD installation of `kpt live apply`, so that a
// following `kpt live apply OUT_DIR/<ctx> --context <ctx>` changes nothing.
//
// A run plans first and refuses before any cluster write (the refusals of
// split and plan, the mass-deletion guard on each cluster's live
// inventory, depends-on across contexts), applies the contexts in
// parallel with a finite reconcile timeout, records a context in OUT_DIR
// only once its cluster took it and reconciled, and hands a moving object
// off: its new contexts get it first, its old one prunes it only once
// every new copy is Current. With spec.rollout the contexts are applied
// wave by wave (waves.go), and a halted rollout can be rolled back
// (rollback.go).
package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/split"
)

// DefaultReconcileTimeout bounds the wait for a context's objects to
// become Current (kpt's own default is to wait forever).
const DefaultReconcileTimeout = 5 * time.Minute

// DefaultParallel is how many contexts apply works on at once unless told
// otherwise, as status reads them. A context in progress holds its
// client, its discovery and its status watcher's informers; all at once,
// the memory of a run grows with the fleet (about 6 MB a context, 1 GB at
// 128 contexts), bounded, it stays what 16 contexts hold at any fleet
// size. It bounds the load on the clusters and on this machine too.
const DefaultParallel = 16

// leaseFactor: the steps that write a context's Lease and nothing else
// (taking its lock, noting a rollout's progress, settling a record,
// releasing the lock) work on leaseFactor times --parallel contexts at
// once. Each is one small write that waits on its round trip, with
// nothing of the context's applier in memory: at --parallel at a time,
// taking 256 contexts' locks and releasing them kept the benchmark's
// fleet waiting 0.7 s each, with four times as many at once 0.5 and 0.6
// s (medians of eight first applies). --parallel still bounds them
// (--parallel 2: 8 at once; 0: all).
const leaseFactor = 4

// leaseGroup is a group for the Lease writes of many contexts (see
// leaseFactor).
func (r *run) leaseGroup() *errgroup.Group {
	return groupOf(r.opts.Parallel * leaseFactor)
}

// groupOf is a group that runs at most limit at once (0: all).
func groupOf(limit int) *errgroup.Group {
	g := &errgroup.Group{}
	if limit > 0 {
		g.SetLimit(limit)
	}
	return g
}

// Options tune Run.
type Options struct {
	// Plan are the plan's options; Plan.Split.Out (opened with
	// outdir.OpenPrevious) is required: what each context last received.
	Plan plan.Options
	// Kubeconfig is the kubeconfig file; "" follows kubectl's rules.
	Kubeconfig string
	// Parallel bounds how many contexts are applied at once; 0: all (the
	// CLI's default is DefaultParallel).
	Parallel int
	// ReconcileTimeout bounds each context's wait for Current (and for
	// pruned objects to be gone); 0: DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// DryRun asks every cluster for a server-side dry run and changes
	// neither clusters nor files.
	DryRun bool
	// Progress receives one line per step of each context; nil: none.
	Progress io.Writer
	// UntilWave, with spec.rollout, stops the run once that wave has
	// baked: the later waves are Pending (ApplyReport.Paused).
	UntilWave string
	// OnFailure, when set, overrides spec.rollout.onFailure.
	OnFailure v1alpha1.OnFailure
	// LockTimeout is how long to wait for a context's lock that another
	// run holds; 0: refuse at once.
	LockTimeout time.Duration
	// AdoptClusterState takes each cluster's inventory as the previous
	// state where OUT_DIR is stale or does not own it, instead of
	// refusing: every guard then compares with what the cluster holds.
	AdoptClusterState bool
	// ClusterReplaced names the contexts whose cluster was rebuilt or
	// replaced on purpose: their new identity is accepted.
	ClusterReplaced []string
	// CheckOnly stops once every check that reads the clusters ran (plan
	// --live), the preflight included: nothing is applied, staged in
	// OUT_DIR or locked.
	CheckOnly bool
	// Strategy are kpt live apply's flags given on the command line
	// (--server-side, --field-manager, ...; nil fields: not given); they
	// win over spec.apply (a rollback: over what the rollout recorded).
	Strategy *v1alpha1.ApplyOptions
	// Impersonate is who every request acts as (--as, --as-group,
	// --as-uid); zero: the kubeconfig's user entries, with their as:.
	Impersonate cluster.Impersonation
}

// ErrRefused is returned when the run stopped before applying anything.
var ErrRefused = errors.New("apply refused; nothing was applied")

// Run routes and plans the input exactly as plan does, then applies every
// context. It returns the report, also when contexts failed (see
// ApplyReport.Failed); an error means the run could not start (bad
// kubeconfig, unreadable output directory, ErrRefused with the report's
// Errors filled).
func Run(ctx context.Context, in *input.Input, cfg *function.Engine, opts Options) (*v1alpha1.ApplyReport, error) {
	if opts.Plan.Split.Out == nil {
		return nil, errors.New("apply needs the output directory")
	}
	if opts.ReconcileTimeout <= 0 {
		opts.ReconcileTimeout = DefaultReconcileTimeout
	}
	if opts.CheckOnly {
		opts.DryRun = true
	}
	r := &run{opts: opts, cfg: cfg, log: &progress{w: opts.Progress}, report: newReport(opts.DryRun),
		waved: cfg.Config.Source.Spec.Rollout != nil}
	if err := r.resolveStrategy(cfg.Config.Source.Spec.Apply); err != nil {
		return r.report, err
	}
	if err := r.plan(in); err != nil {
		return r.report, err
	}
	if err := r.checkRolloutOptions(); err != nil {
		return r.report, err
	}
	kc, err := cluster.LoadKubeconfig(opts.Kubeconfig)
	if err != nil {
		return r.report, err
	}
	kc.Impersonate(opts.Impersonate)
	if err := kc.Require(r.contextNames()); err != nil {
		return r.report, err
	}
	if err := r.stage(); err != nil {
		return r.report, err
	}
	defer r.staged.Close()
	if err := r.buildWaves(); err != nil {
		return r.report, err
	}
	r.warnExpiring(kc)
	if r.fleet, err = newFleet(r.outDir()); err != nil {
		return r.report, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.fleet.lost = cancel
	if !opts.DryRun {
		// Without spec.rollout nothing is recorded, but a completed apply
		// ends an unfinished rollout's record too.
		if r.record, err = outdir.OpenRollout(r.outDir()); err != nil {
			return r.report, err
		}
	}
	r.prepareAll(ctx, kc)
	if r.refuseCredentials(r.targets) {
		r.refused()
		return r.report, ErrRefused
	}
	if r.refuse(ctx) {
		return r.report, ErrRefused
	}
	r.findUpToDate(ctx)
	if r.preflight(ctx, r.targets) {
		r.refused()
		return r.report, ErrRefused
	}
	if opts.CheckOnly {
		r.finishReport()
		return r.report, nil
	}
	if !opts.DryRun {
		defer r.unlockAll()
		if !r.lockAll(ctx, r.targets) {
			r.refused()
			return r.report, ErrRefused
		}
	}
	r.runWaves(ctx)
	if r.halted != nil && r.record != nil && r.onFailure() == v1alpha1.OnFailureRollback {
		r.rollBackAfterHalt(ctx, kc)
	}
	r.reportWaves()
	if err := r.recordGates(); err != nil {
		// The run's own report still has them; only status would miss them.
		r.report.Warnings = append(r.report.Warnings, err.Error())
	}
	r.heldInBoth()
	r.sayMassPrunes()
	r.settleAll(ctx)
	if !opts.DryRun && !r.report.Failed() && !r.paused {
		if err := r.staged.Finish(); err != nil {
			return r.report, err
		}
		if r.record != nil && r.record.Exists() {
			// The rollout completed: nothing is left to roll back.
			if err := r.record.Remove(); err != nil {
				return r.report, err
			}
		}
	}
	r.finishReport()
	return r.report, nil
}

// run is one apply.
type run struct {
	opts      Options
	cfg       *function.Engine
	log       *progress
	report    *v1alpha1.ApplyReport
	splitPlan *v1alpha1.SplitPlan
	layout    *split.Layout
	staged    *split.Staged
	// targets are the contexts of the config, in config order.
	targets []*target
	// waves are the rollout's waves (one without spec.rollout); paused is
	// set once --until-wave's wave has baked.
	waves  []*wave
	paused bool
	// halted is the wave that halted the rollout.
	halted *wave
	// waved is set with spec.rollout (and for a rollback): progress
	// lines per wave.
	waved bool
	// record keeps the previous packages of what a rollout changes;
	// rollingBack is set for a run that applies them again, rollbackHeld
	// are the handoffs a rollback after a halt left unfinished.
	record       *outdir.RolloutRecord
	rollingBack  bool
	rollbackHeld []v1alpha1.Handoff
	// afterHalt: the rollback a halt started, after this run wrote.
	afterHalt bool
	// massWarned indexes, by context, the plan's mass-deletion warnings
	// in the report's Warnings: the guard on the live inventory replaces
	// the one of its context, so that a context is warned once.
	massWarned map[string]int
	// liveMassWarned indexes, by context, the live guard's warnings,
	// worded by what happened once the run is over (sayMassPrunes).
	liveMassWarned map[string]int
	// fleet are the checks and locks of the fleet (fleet.go); held the
	// contexts whose lock this run took.
	fleet *fleet
	held  []*target
	// crdMatched holds the clusters (by identity) whose ResourceGroup CRD
	// is the one kpt installs.
	crdMatched sync.Map
	// strategy is how the run writes: kpt live apply's flags, resolved.
	strategy v1alpha1.ApplyStrategy
}

// resolveStrategy resolves kpt live apply's flags: the command line's
// over base (spec.apply, or a rollout's record), over kpt's defaults.
func (r *run) resolveStrategy(base *v1alpha1.ApplyOptions) error {
	merged := base.Over(r.opts.Strategy)
	if err := merged.Check(); err != nil {
		return err
	}
	r.strategy = v1alpha1.ResolveStrategy(merged, r.opts.ReconcileTimeout)
	r.report.Apply = &r.strategy
	return nil
}

// outDir is OUT_DIR, what each context last received.
func (r *run) outDir() *outdir.OutDir { return r.opts.Plan.Split.Out }

func (r *run) contextNames() []string {
	names := make([]string, len(r.layout.Packages))
	for i, pkg := range r.layout.Packages {
		names[i] = pkg.Context
	}
	return names
}

// plan routes and plans as `shard-router plan` does; its errors refuse.
func (r *run) plan(in *input.Input) error {
	doc, layout, err := plan.Preview(in, r.cfg, r.opts.Plan)
	if err != nil {
		return err
	}
	r.splitPlan, r.layout = doc, layout // routed once: apply writes what it planned
	r.massWarned = map[string]int{}
	seen := map[string]bool{}
	for _, res := range layout.Results {
		msg := res.Message
		if res.File != nil && res.File.Path != "" {
			msg = res.File.Path + ": " + msg
		}
		if seen[msg] {
			continue
		}
		seen[msg] = true
		switch res.Severity {
		case framework.Error:
			r.report.Errors = append(r.report.Errors, msg)
		case framework.Warning:
			if ctx, ok := massPruneContext(res); ok {
				r.massWarned[ctx] = len(r.report.Warnings)
			}
			r.report.Warnings = append(r.report.Warnings, msg)
		}
	}
	if len(r.report.Errors) > 0 || len(layout.Packages) == 0 {
		if len(r.report.Errors) == 0 {
			r.report.Errors = append(r.report.Errors, "the split has no context package to apply")
		}
		r.skipAll("the run was refused")
		return ErrRefused
	}
	return nil
}

// massPruneContext is the context of the plan's mass-deletion warning
// (plan's guard on OUT_DIR), if res is one.
func massPruneContext(res *framework.Result) (string, bool) {
	if res.Field == nil || res.Field.Path != "spec.pruneGuard" || res.File == nil {
		return "", false
	}
	return path.Base(res.File.Path), true
}

// stage writes the new packages where kpt's loader reads them: a staging
// directory inside OUT_DIR, or a temporary one for a dry run.
func (r *run) stage() error {
	var err error
	if r.opts.DryRun {
		r.staged, err = r.layout.StageTemp()
	} else {
		r.staged, err = split.Stage(r.outDir(), r.layout)
	}
	if err != nil {
		return fmt.Errorf("staging the context packages: %w", err)
	}
	for _, pkg := range r.layout.Packages {
		r.targets = append(r.targets, &target{name: pkg.Context, dir: r.staged.Dir(pkg.Context),
			report: v1alpha1.ContextApply{Name: pkg.Context}})
	}
	return nil
}

// skipAll reports every context of the plan as skipped.
func (r *run) skipAll(why string) {
	r.report.Contexts = r.report.Contexts[:0]
	for _, c := range r.splitPlan.Contexts {
		r.report.Contexts = append(r.report.Contexts, v1alpha1.ContextApply{Name: c.Name, Status: v1alpha1.ApplySkipped, Error: why})
	}
}

// finishReport lists the contexts in config order, then the dropped ones.
func (r *run) finishReport() {
	r.report.Contexts = r.report.Contexts[:0]
	for _, t := range r.targets {
		if t.report.PrunedObjects == nil {
			t.report.PrunedObjects = []v1alpha1.ObjectRef{}
		}
		sort.Slice(t.report.PrunedObjects, func(a, b int) bool { return t.report.PrunedObjects[a].Less(t.report.PrunedObjects[b]) })
		r.report.Contexts = append(r.report.Contexts, t.report)
	}
	for _, c := range r.splitPlan.Contexts {
		if c.State == v1alpha1.ContextDropped {
			r.report.Contexts = append(r.report.Contexts, v1alpha1.ContextApply{Name: c.Name, Status: v1alpha1.ApplySkipped,
				Error: fmt.Sprintf("no longer in the config: not applied; its cluster keeps the %d object(s) its inventory holds (kpt live destroy removes them)", c.Previous)})
		}
	}
	sortHandoffs(r.report.Handoffs)
	sortHandoffs(r.report.HeldInBoth)
}

func sortHandoffs(hs []v1alpha1.Handoff) {
	sort.SliceStable(hs, func(a, b int) bool {
		if hs[a].From != hs[b].From {
			return hs[a].From < hs[b].From
		}
		return hs[a].Ref.Less(hs[b].Ref)
	})
}

// progress writes one line at a time from every context.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progress) printf(context, format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s: "+format+"\n", append([]any{context}, args...)...)
}
