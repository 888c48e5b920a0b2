package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	kptcmdutil "github.com/kptdev/kpt/pkg/lib/util/cmdutil"
	"github.com/kptdev/kpt/pkg/live"
	"github.com/kptdev/kpt/pkg/printer"
	kptstatus "github.com/kptdev/kpt/pkg/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/apply"
	"sigs.k8s.io/cli-utils/pkg/apply/event"
	"sigs.k8s.io/cli-utils/pkg/common"
	"sigs.k8s.io/cli-utils/pkg/inventory"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/preflight"
)

// applierOptions are kpt live apply's options (commands/live/apply at the
// release shard-router builds kpt from) as the run's strategy resolves its
// flags; kpt's defaults are client-side apply with cli-utils' field
// manager, inventory policy strict (must-match), Background prune
// propagation. Only the waits are bounded.
func (r *run) applierOptions() apply.ApplierOptions {
	s := r.strategy
	policy := inventory.PolicyMustMatch
	if s.InventoryPolicy == v1alpha1.InventoryPolicyAdopt {
		policy = inventory.PolicyAdoptIfNoInventory
	}
	pruneTimeout, err := time.ParseDuration(s.PruneTimeout)
	if err != nil {
		pruneTimeout = r.opts.ReconcileTimeout
	}
	o := apply.ApplierOptions{
		ServerSideOptions:      common.ServerSideOptions{ServerSideApply: s.ServerSide, ForceConflicts: s.ForceConflicts, FieldManager: s.FieldManager},
		ReconcileTimeout:       r.opts.ReconcileTimeout,
		EmitStatusEvents:       true,
		DryRunStrategy:         common.DryRunNone,
		PrunePropagationPolicy: metav1.DeletionPropagation(s.PrunePropagationPolicy),
		PruneTimeout:           pruneTimeout,
		InventoryPolicy:        policy,
	}
	if r.opts.DryRun {
		o.DryRunStrategy = common.DryRunServer
	}
	return o
}

// statusPolicy is the run's --status-policy as cli-utils names it.
func (r *run) statusPolicy() inventory.StatusPolicy {
	if r.strategy.Status() == v1alpha1.StatusPolicyNone {
		return inventory.StatusPolicyNone
	}
	return inventory.StatusPolicyAll
}

// applyContext runs kpt's applier on one context and folds its events
// into the context's report. Any failed apply, reconcile or prune fails
// the context.
func (r *run) applyContext(ctx context.Context, t *target, objs []*unstructured.Unstructured) error {
	if !r.opts.DryRun {
		r.writing(t)
	}
	if r.opts.DryRun {
		// As kpt live apply --dry-run: nothing is installed.
		if err := kptcmdutil.VerifyResourceGroupCRD(t.factory); err != nil {
			return fmt.Errorf("context %q: the cluster has no kpt ResourceGroup CRD, and a dry run installs nothing: apply once without --dry-run (or run kpt live install-resource-group)", t.name)
		}
	} else if err := r.installResourceGroupCRD(ctx, t); err != nil {
		return fmt.Errorf("context %q: installing kpt's ResourceGroup CRD: %w", t.name, err)
	}
	if !r.opts.DryRun && r.strategy.ServerSide && len(t.upgrades) > 0 {
		if err := r.upgradeOwnership(ctx, t); err != nil {
			return fmt.Errorf("context %q: %w", t.name, err)
		}
	}
	invClient, err := cluster.NewApplierInventoryClient(t.factory, r.statusPolicy(), r.absentInventory(t))
	if err != nil {
		return fmt.Errorf("context %q: %w", t.name, err)
	}
	kptWatcher, err := kptstatus.NewStatusWatcher(t.factory)
	if err != nil {
		return fmt.Errorf("context %q: %w", t.name, err)
	}
	watcher, err := withLateKinds(kptWatcher)
	if err != nil {
		return fmt.Errorf("context %q: %w", t.name, err)
	}
	applier, err := apply.NewApplierBuilder().WithFactory(t.factory).WithInventoryClient(invClient).WithStatusWatcher(watcher).Build()
	if err != nil {
		return fmt.Errorf("context %q: %w", t.name, err)
	}
	c := newCollector(r, t)
	events := applier.Run(ctx, t.pkg.Inventory, objs, r.applierOptions())
	tick := time.NewTicker(waitingEvery)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case e, ok := <-events:
			if done = !ok; ok {
				c.event(e)
			}
		case <-tick.C:
			c.waiting()
		}
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		c.errs = append(c.errs, cause.Error()) // a lock taken away
	}
	if len(c.errs) > 0 {
		return fmt.Errorf("context %q: %s", t.name, strings.Join(c.errs, "; "))
	}
	return ctx.Err()
}

// absentInventory is t's inventory when load read it missing and kpt's
// engine has not run on t since (see cluster.NewApplierInventoryClient),
// nil otherwise; it marks the engine as run.
func (r *run) absentInventory(t *target) inventory.Info {
	first := !t.engineRan
	t.engineRan = true
	if !first || t.live.Found {
		return nil
	}
	return t.pkg.Inventory
}

// installResourceGroupCRD installs or updates kpt's ResourceGroup CRD as
// kpt live apply does (--install-resource-group, its default).
func (r *run) installResourceGroupCRD(ctx context.Context, t *target) error {
	install := kptcmdutil.VerifyResourceGroupCRD(t.factory) != nil || !r.resourceGroupCRDMatched(t)
	if !install {
		return nil
	}
	r.log.printf(t.name, "installing kpt's ResourceGroup CRD")
	var out strings.Builder
	if err := kptcmdutil.InstallResourceGroupCRD(printer.WithContext(ctx, printer.New(&out, &out)), t.factory); err != nil {
		return err
	}
	return waitResourceGroupServed(ctx, t)
}

// resourceGroupCRDMatched reports whether the cluster's ResourceGroup CRD
// is the one kpt installs (live.ResourceGroupCRDMatched), asked once per
// cluster in a run: kpt parses its embedded CRD and reads the cluster's
// on every call, 15% of a no-change apply's CPU at 256 contexts on 4
// clusters. Only a match is kept, per cluster identity; a context whose
// identity is unknown asks for itself.
func (r *run) resourceGroupCRDMatched(t *target) bool {
	uid := t.identity.UID
	if _, ok := r.crdMatched.Load(uid); ok && uid != "" {
		return true
	}
	if !live.ResourceGroupCRDMatched(t.factory) {
		return false
	}
	if uid != "" {
		r.crdMatched.Store(uid, true)
	}
	return true
}

// rgServedTimeout bounds the wait for a ResourceGroup CRD another client
// created to be served.
const rgServedTimeout = time.Minute

// waitResourceGroupServed waits until the context's REST mapper knows
// kpt's ResourceGroup kind. kpt's installer waits for the CRD it creates
// and resets the mapper, but returns at once when the create finds the CRD
// already there: created a moment ago by another client, such as another
// context of this run on the same cluster (contexts that share a cluster,
// as in a dense local fleet), or another runner. Without the wait, the
// mapper keeps its discovery from before the CRD, and the apply fails
// with `no matches for kind "ResourceGroup"`.
func waitResourceGroupServed(ctx context.Context, t *target) error {
	mapper, err := t.factory.ToRESTMapper()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, rgServedTimeout)
	defer cancel()
	for {
		if kptcmdutil.VerifyResourceGroupCRD(t.factory) == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the ResourceGroup CRD is not served after %s: %w", rgServedTimeout, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
		meta.MaybeResetRESTMapper(mapper)
	}
}

// waitingEvery is how often a context waiting for its objects says which.
const waitingEvery = 10 * time.Second

// collector folds the applier's events of one phase into a context's
// report and progress lines: at most one line per step of the phase
// (applied and waiting, pruning), however many groups kpt splits it into,
// plus a line per object that fails.
type collector struct {
	r    *run
	t    *target
	errs []string
	// status is the last status seen of each object, for the message of
	// a wait that times out.
	status map[object.ObjMetadata]string
	// pending are the applied objects not yet reconciled.
	pending map[object.ObjMetadata]bool
	// applyGroups are the apply groups kpt planned (its InitEvent) and
	// applyDone those finished; toApply and toPrune are the objects of
	// its apply and prune groups, applied those this phase applied.
	applyGroups, applyDone int
	toApply, toPrune       int
	applied                int
	pruning                bool
}

// newCollector is the collector of one phase of t.
func newCollector(r *run, t *target) *collector {
	return &collector{r: r, t: t, status: map[object.ObjMetadata]string{}, pending: map[object.ObjMetadata]bool{}}
}

// tally holds each object once: what the report counts of a context,
// however many phases applied it.
type tally map[object.ObjMetadata]bool

// add reports whether id is new to the tally.
func (tl *tally) add(id object.ObjMetadata) bool {
	if *tl == nil {
		*tl = tally{}
	}
	if (*tl)[id] {
		return false
	}
	(*tl)[id] = true
	return true
}

// waiting says which objects the context still waits for.
func (c *collector) waiting() {
	if len(c.pending) == 0 {
		return
	}
	ids := make(object.ObjMetadataSet, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return refOf(ids[a]).Less(refOf(ids[b])) })
	c.r.log.printf(c.t.name, "still waiting for %d object(s) to be Current, such as %s (%s)", len(ids), describe(ids[0]), c.lastStatus(ids[0]))
}

func (c *collector) fail(id object.ObjMetadata, what string, err error) {
	msg := fmt.Sprintf("%s: %s", describe(id), what)
	if err != nil {
		msg += ": " + err.Error()
	}
	if c.t.counted.failed.add(id) {
		c.t.report.Failed++
	}
	c.t.report.Failures = append(c.t.report.Failures, msg)
	c.errs = append(c.errs, msg)
	c.r.log.printf(c.t.name, "%s", msg)
}

func (c *collector) event(e event.Event) {
	switch e.Type {
	case event.InitType:
		c.init(e.InitEvent)
	case event.ErrorType:
		c.errs = append(c.errs, e.ErrorEvent.Err.Error())
		c.r.log.printf(c.t.name, "error: %v", e.ErrorEvent.Err)
	case event.ValidationType:
		var ids []string
		for _, id := range e.ValidationEvent.Identifiers {
			ids = append(ids, describe(id))
		}
		c.errs = append(c.errs, fmt.Sprintf("invalid %s: %v", strings.Join(ids, ", "), e.ValidationEvent.Error))
	case event.ActionGroupType:
		c.actionGroup(e.ActionGroupEvent)
	case event.ApplyType:
		c.applyEvent(e.ApplyEvent)
	case event.StatusType:
		if s := e.StatusEvent.PollResourceInfo; s != nil {
			msg := s.Status.String()
			if s.Message != "" {
				msg += ": " + s.Message
			}
			c.status[e.StatusEvent.Identifier] = msg
		}
	case event.WaitType:
		c.waitEvent(e.WaitEvent)
	case event.PruneType:
		c.pruneEvent(e.PruneEvent)
	}
}

// init reads how many apply groups and objects kpt plans for the phase.
func (c *collector) init(ie event.InitEvent) {
	for _, g := range ie.ActionGroups {
		switch g.Action {
		case event.ApplyAction:
			c.applyGroups++
			c.toApply += len(g.Identifiers)
		case event.PruneAction:
			c.toPrune += len(g.Identifiers)
		}
	}
}

// applyEvent counts an applied object of the package (the copies a
// context keeps of what it hands off are not its package's), pending
// until reconciled.
func (c *collector) applyEvent(ae event.ApplyEvent) {
	switch ae.Status {
	case event.ApplySuccessful:
		c.applied++
		if c.t.objects.Contains(ae.Identifier) && c.t.counted.applied.add(ae.Identifier) {
			c.t.report.Applied++
		}
		if !c.r.opts.DryRun {
			c.pending[ae.Identifier] = true
		}
	case event.ApplyFailed:
		c.fail(ae.Identifier, "apply failed", ae.Error)
	case event.ApplySkipped:
		c.fail(ae.Identifier, "apply skipped", ae.Error)
	}
}

// waitEvent settles a pending object: reconciled, or failed.
func (c *collector) waitEvent(we event.WaitEvent) {
	if we.Status != event.ReconcilePending {
		delete(c.pending, we.Identifier)
	}
	switch we.Status {
	case event.ReconcileSuccessful:
		// Also sent for a pruned object once it is gone: only the
		// package's objects count as reconciled.
		if c.t.objects.Contains(we.Identifier) && c.t.counted.reconciled.add(we.Identifier) {
			c.t.report.Reconciled++
		}
	case event.ReconcileTimeout:
		if !c.t.objects.Contains(we.Identifier) && c.pruning {
			c.fail(we.Identifier, fmt.Sprintf("pruned, but not gone within --prune-timeout %s (last status %s)", c.r.strategy.PruneTimeout, c.lastStatus(we.Identifier)), nil)
			break
		}
		c.fail(we.Identifier, fmt.Sprintf("not Current within --reconcile-timeout %s (last status %s)", c.r.opts.ReconcileTimeout, c.lastStatus(we.Identifier)), nil)
	case event.ReconcileFailed:
		c.fail(we.Identifier, fmt.Sprintf("reconcile failed (%s)", c.lastStatus(we.Identifier)), nil)
	}
}

// pruneEvent records a pruned object, or why it was not.
func (c *collector) pruneEvent(pe event.PruneEvent) {
	rep := &c.t.report
	switch pe.Status {
	case event.PruneSuccessful:
		if c.t.counted.pruned.add(pe.Identifier) {
			rep.Pruned++
			rep.PrunedObjects = append(rep.PrunedObjects, refOf(pe.Identifier))
		}
	case event.PruneFailed:
		c.fail(pe.Identifier, "prune failed", pe.Error)
	case event.PruneSkipped:
		why := "kept"
		if pe.Error != nil {
			why = pe.Error.Error()
		}
		c.r.log.printf(c.t.name, "prune of %s skipped: %s", describe(pe.Identifier), why)
	}
}

func (c *collector) lastStatus(id object.ObjMetadata) string {
	if s, ok := c.status[id]; ok {
		return s
	}
	return "unknown"
}

// actionGroup reports where a context is, once per step of the phase:
// applied (and waiting for Current) once its last apply group finished,
// pruning when its first prune group starts.
func (c *collector) actionGroup(e event.ActionGroupEvent) {
	name := c.t.name
	switch {
	case e.Status == event.Finished && e.Action == event.ApplyAction:
		c.applyDone++
		if c.applyDone != c.applyGroups || c.toApply == 0 {
			return
		}
		if c.r.opts.DryRun {
			c.r.log.printf(name, "%d of %d object(s) applied (server-side dry run)", c.applied, c.toApply)
			return
		}
		c.r.log.printf(name, "waiting for the objects to be Current (at most %s): %d of %d object(s) applied", c.r.opts.ReconcileTimeout, c.applied, c.toApply)
	case e.Status == event.Started && e.Action == event.PruneAction && !c.pruning:
		c.pruning = true
		c.r.log.printf(name, "pruning %d object(s)", c.toPrune)
	}
}

// upgradeOwnership moves the fields that the fleet's own client-side
// applies own to the field manager, on each object the preflight found,
// before the server-side apply: kpt's engine (kubectl's apply) does it
// only after a successful server-side patch, so a first server-side apply
// that also changes a value would conflict with the fleet's own past. The
// patch (client-go's csaupgrade) changes managedFields only, under the
// object's resourceVersion; a conflict reads the object again.
func (r *run) upgradeOwnership(ctx context.Context, t *target) error {
	dyn, err := t.factory.DynamicClient()
	if err != nil {
		return err
	}
	mapper, err := t.factory.ToRESTMapper()
	if err != nil {
		return err
	}
	moved := 0
	for _, u := range t.upgrades {
		mapping, err := mapper.RESTMapping(u.ID.GroupKind)
		if err != nil {
			return fmt.Errorf("%s: %w", describe(u.ID), err)
		}
		ri := dyn.Resource(mapping.Resource).Namespace(u.ID.Namespace)
		for attempt := 0; ; attempt++ {
			cur, err := ri.Get(ctx, u.ID.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: reading it to move its client-side apply fields to field manager %s: %w", describe(u.ID), r.strategy.FieldManager, err)
			}
			patch, err := preflight.UpgradePatch(cur, u.Managers, r.strategy.FieldManager)
			if err != nil {
				return fmt.Errorf("%s: %w", describe(u.ID), err)
			}
			if patch == nil {
				break
			}
			_, err = ri.Patch(ctx, u.ID.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
			if err == nil {
				moved++
				break
			}
			if !apierrors.IsConflict(err) || attempt == 4 {
				return fmt.Errorf("%s: moving its client-side apply fields (%s) to field manager %s: %w", describe(u.ID), strings.Join(u.Managers, ", "), r.strategy.FieldManager, err)
			}
		}
	}
	if moved > 0 {
		r.log.printf(t.name, "moved the fields of %d object(s) from the fleet's client-side apply to field manager %s before its server-side apply", moved, r.strategy.FieldManager)
	}
	return nil
}
