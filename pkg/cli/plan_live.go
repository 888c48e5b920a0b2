//go:build !nolive

package cli

import (
	"context"
	"errors"
	"slices"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/live/apply"
	"github.com/shard-router/shard-router/pkg/plan"
)

// checkLive adds to doc the refusals and warnings apply would give
// against the clusters (plan --live): the identity, ownership and
// staleness checks, the guards on each cluster's live inventory. It
// writes nothing to a cluster or to OUT_DIR.
func checkLive(ctx context.Context, f *planFlags, in *input.Input, cfg *function.Engine, opts plan.Options, doc *v1alpha1.SplitPlan) error {
	report, err := apply.Run(ctx, in, cfg, apply.Options{Plan: opts, Kubeconfig: f.kubeconfig, CheckOnly: true,
		AdoptClusterState: f.adoptCluster, ClusterReplaced: f.clusterReplaced, Strategy: f.strategyGiven, Impersonate: f.as.impersonation()})
	if err != nil && !errors.Is(err, apply.ErrRefused) {
		return err
	}
	for _, e := range report.Errors {
		if !slices.Contains(doc.Errors, e) {
			doc.Errors = append(doc.Errors, e)
		}
	}
	for _, w := range report.Warnings {
		if !slices.Contains(doc.Warnings, w) {
			doc.Warnings = append(doc.Warnings, w)
		}
	}
	return nil
}
