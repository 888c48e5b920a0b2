package apply

import (
	"context"
	"fmt"

	kptcmdutil "github.com/kptdev/kpt/pkg/lib/util/cmdutil"

	"github.com/shard-router/shard-router/pkg/live/preflight"
)

// Before its first write a run asks every context it will write, at once
// and for every wave, whether each write would be accepted (package
// preflight): RBAC, admission, server-side apply conflicts, the inventory
// policy. One refusal anywhere refuses the run: no object is written in
// any cluster. A context with nothing to write (upToDate) is not asked,
// so a no-change apply sends no request for it.

// preflight asks the contexts of targets that will be written; it reports
// whether anything was refused (the refusals are the report's errors). A
// context that could not be asked fails alone, as one that could not be
// read: nothing is written there.
func (r *run) preflight(ctx context.Context, targets []*target) bool {
	var asked []*target
	for _, t := range targets {
		if t.failed || t.hold != "" || t.pkg == nil || (t.upToDate && !r.rollingBack) {
			continue
		}
		asked = append(asked, t)
	}
	if len(asked) == 0 {
		return false
	}
	creates := r.createsByCluster()
	// The contexts reaching one cluster as one identity share the answers
	// of their access reviews.
	reviews, byKey := make([]*preflight.Reviews, len(asked)), map[string]*preflight.Reviews{}
	for i, t := range asked {
		key := reviewsKey(t)
		if byKey[key] == nil {
			byKey[key] = &preflight.Reviews{}
		}
		reviews[i] = byKey[key]
	}
	results := make([]*preflight.Result, len(asked))
	g := groupOf(r.opts.Parallel)
	for i, t := range asked {
		g.Go(func() error {
			c := preflight.Context{Name: t.name, Factory: t.factory, Inventory: t.pkg.Inventory, InventoryFound: t.live.Found,
				Apply: t.applied(), Prune: t.leaving(),
				InstallCRD: !r.opts.DryRun && r.installsCRD(t), Creates: creates[t.identity.UID], Reviews: reviews[i]}
			if t.identity.UID == "" {
				preflight.CreatesOf(c.Apply, &c.Creates)
			}
			res, err := preflight.Check(ctx, c, r.strategy)
			if err != nil {
				r.fail(t, fmt.Errorf("could not ask its cluster before writing, so it is not written: %w", err))
				return nil
			}
			results[i] = res
			r.log.printf(t.name, "asked before any write: %s", res.Summary())
			if n := len(res.ByRBAC); n > 0 {
				r.log.printf(t.name, "%d object(s) judged by RBAC alone (their Namespace or CRD is created by this run; admission judges them when they are applied), such as %s", n, res.ByRBAC[0])
			}
			t.upgrades = res.Upgrades
			return nil
		})
	}
	_ = g.Wait()
	refused := false
	for _, res := range results {
		if res == nil {
			continue
		}
		for _, ref := range res.Refusals {
			r.report.Errors = append(r.report.Errors, ref.String())
			refused = true
		}
	}
	return refused
}

// reviewsKey is whose access reviews t shares: those of the contexts
// naming its cluster and user entries.
func reviewsKey(t *target) string {
	if t.kc != nil {
		if key, ok := t.kc.Entries(t.name); ok {
			return key
		}
	}
	return "\x00" + t.name
}

// installsCRD: the apply installs or updates kpt's ResourceGroup CRD in
// t's cluster (installResourceGroupCRD).
func (r *run) installsCRD(t *target) bool {
	return kptcmdutil.VerifyResourceGroupCRD(t.factory) != nil || !r.resourceGroupCRDMatched(t)
}

// createsByCluster collects, per cluster identity, the Namespaces and CRDs
// the run's packages create: contexts that reach one cluster create them
// for each other.
func (r *run) createsByCluster() map[string]preflight.Creates {
	out := map[string]preflight.Creates{}
	for _, t := range r.targets {
		if t.pkg == nil || t.identity.UID == "" {
			continue
		}
		c := out[t.identity.UID]
		preflight.CreatesOf(t.pkg.Objects, &c)
		out[t.identity.UID] = c
	}
	return out
}
