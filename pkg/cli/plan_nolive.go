//go:build nolive

package cli

import (
	"context"
	"errors"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/plan"
)

// checkLive needs the live commands, which this build leaves out.
func checkLive(context.Context, *planFlags, *input.Input, *function.Engine, plan.Options, *v1alpha1.SplitPlan) error {
	return errors.New("plan --live reads the clusters: this shard-router is built without the live commands (-tags nolive); use the full binary")
}
