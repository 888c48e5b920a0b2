// Package plan decides whether a split may be written, and what it
// changes: it routes and lays out the input with package split, runs the
// mass-deletion guard on the new placement, and compares each context's new
// package with the previous split (what was last applied) into the plan
// data that the renderers of package output print (v1alpha1.SplitPlan).
// split, plan and apply all lay out through Build, so the guard never
// differs between them.
package plan

import (
	"errors"
	"fmt"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/split"
)

// Options tune Build and Preview.
type Options struct {
	// Split are the layout's options; Split.Out is the previous split.
	Split split.Options
	// AllowMassPrune turns the mass-deletion guard's refusal into a
	// warning, as spec.allowMassPrune does.
	AllowMassPrune bool
	// Diff adds a unified diff of every update to Preview's plan.
	Diff bool
}

// Build routes the input and lays out its context packages as split
// writes them, behind the mass-deletion guard: when it trips, the layout
// has an error result and no package.
func Build(in *input.Input, cfg *function.Engine, opts Options) (*split.Layout, error) {
	l, err := build(in, cfg, opts)
	out := opts.Split.Out
	if err != nil || l.Results.ExitCode() == 0 || out == nil || out.Mode() != outdir.ReadScanKeys {
		return l, err
	}
	// The errors are reported, and no Write checks the scanned files:
	// check them now, since the errors may stem from what they hold.
	switch err := out.ParseAllScanned(); {
	case err == nil:
		return l, nil
	case !errors.Is(err, outdir.ErrScanMismatch):
		return nil, err
	}
	if opts.Split.Out, err = out.Reparse(); err != nil {
		return nil, err
	}
	return build(in, cfg, opts)
}

// Split lays the input out (Build) and writes it to opts.Split.Out
// (split.Write), unless the layout has errors. When a file of the previous
// split that was scanned disagrees with what the scan read (Write changes
// nothing then), it reads the previous split again, parsing every file, and
// starts over: the layout returned is the one written, or the one whose
// errors refused it.
func Split(in *input.Input, cfg *function.Engine, opts Options) (*split.Layout, error) {
	l, err := Build(in, cfg, opts)
	if err != nil || l.Results.ExitCode() != 0 {
		return l, err
	}
	err = split.Write(opts.Split.Out, l)
	if !errors.Is(err, outdir.ErrScanMismatch) {
		return l, err
	}
	if opts.Split.Out, err = opts.Split.Out.Reparse(); err != nil {
		return nil, err
	}
	return Split(in, cfg, opts) // parsed: no scan to disagree with
}

// build is Build, trusting what the previous split was read to hold.
func build(in *input.Input, cfg *function.Engine, opts Options) (*split.Layout, error) {
	l, err := split.Route(in, cfg, opts.Split)
	if err != nil {
		return nil, err
	}
	if out := opts.Split.Out; out != nil && l.Placed() {
		counts := pruneCounts(cfg.Config.Names, out, func(ctx int) map[outdir.ObjKey]bool {
			return keysOf(l.Items(), l.Routed(ctx))
		})
		guard(l, cfg.Config.Policy, opts.AllowMassPrune, out, counts)
	}
	return l, l.Lay()
}

// Preview lays the input out as Build does (same engine, same refusals,
// same mass-deletion guard), writes nothing, and compares each context's
// new package with what the previous split in opts.Split.Out (opened with
// outdir.OpenPrevious) holds: what `kpt live apply` of each context would
// create, update and prune there. Objects are compared as data: formatting,
// comments, key order and kpt's bookkeeping annotations (which never reach
// a cluster, yamlio.Bookkeeping) are not changes. It returns the layout too, routed once, for apply to
// write; its Results are the plan's, and the plan's Errors and Warnings are
// left for the caller to fill from them.
func Preview(in *input.Input, cfg *function.Engine, opts Options) (*v1alpha1.SplitPlan, *split.Layout, error) {
	out := opts.Split.Out
	if out != nil && out.Mode() != outdir.ReadScan && out.Mode() != outdir.ReadDigests {
		return nil, nil, fmt.Errorf("internal error: Preview needs the previous split opened with outdir.OpenPrevious")
	}
	l, err := Build(in, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	doc := v1alpha1.NewSplitPlan()
	doc.OverrideChanges = append([]v1alpha1.OverrideChange{}, l.OverrideChanges...)
	if spec := &cfg.Config.Source.Spec; spec.Rollout != nil {
		for _, w := range spec.Waves() {
			pw := v1alpha1.PlanWave{Name: w.Name, Contexts: w.Contexts}
			for i := range w.Gates {
				pw.Gates = append(pw.Gates, w.Gates[i].Describe())
			}
			doc.Waves = append(doc.Waves, pw)
		}
	}
	if l.Outcome() == nil { // the packages could not even be named
		return doc, l, nil
	}
	pv := newComparison(l, cfg.Config, out, doc)
	if err := pv.settleScanned(); errors.Is(err, outdir.ErrScanMismatch) {
		// Never guess: read the previous split again, parsing every file,
		// and route again, since the previous placement may differ.
		if opts.Split.Out, err = out.Reparse(); err != nil {
			return nil, nil, err
		}
		return Preview(in, cfg, opts)
	} else if err != nil {
		return nil, nil, err
	}
	if err := pv.run(opts); err != nil {
		return nil, nil, err
	}
	return doc, l, nil
}

// run compares, guards where Build could not, and lists the moves,
// datastore changes and diffs.
func (pv *comparison) run(opts Options) error {
	if err := pv.digestNew(); err != nil {
		return err
	}
	pv.compare()
	pol := pv.cfg.Policy
	if !pv.l.Placed() && pv.out != nil {
		// Route stopped at an earlier error; run the guard on the plan's
		// own placement, so that its verdict is shown too.
		guard(pv.l, pol, opts.AllowMassPrune, pv.out, pruneCounts(pv.cfg.Names, pv.out, pv.placedKeys))
	}
	for k := range pv.doc.Contexts {
		if c := &pv.doc.Contexts[k]; c.State != v1alpha1.ContextDropped {
			c.MassPrune = MassPrune(pol, c.Previous, len(c.Prune))
		}
	}
	pv.movesAndDataStores()
	if opts.Diff {
		return pv.diffs()
	}
	return nil
}
