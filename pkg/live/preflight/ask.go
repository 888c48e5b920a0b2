package preflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jonboulle/clockwork"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
	kubectlapply "k8s.io/kubectl/pkg/cmd/apply"
	"k8s.io/kubectl/pkg/util"
	"sigs.k8s.io/cli-utils/pkg/common"
	"sigs.k8s.io/cli-utils/pkg/inventory"
	"sigs.k8s.io/cli-utils/pkg/object"
	"sigs.k8s.io/cli-utils/pkg/object/mutation"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/status"
)

// apply asks about one object the run applies: nothing when an apply
// would leave it unchanged, else a dry run of the create or the update.
func (ck *checker) apply(ctx context.Context, u *unstructured.Unstructured, live map[v1alpha1.ObjectRef]*unstructured.Unstructured) error {
	want := status.AsApplied(u, ck.c.Inventory.ID())
	ref := refOfObject(want)
	gk := want.GroupVersionKind().GroupKind()
	mapping, err := ck.mapper.RESTMapping(gk, want.GroupVersionKind().Version)
	if meta.IsNoMatchError(err) {
		return ck.unserved(ctx, want, ref)
	}
	if err != nil {
		return fmt.Errorf("mapping kind %s: %w", gk, err)
	}
	if mutation.HasAnnotation(want) {
		// cli-utils fills it from other objects when it applies it: what
		// the dry run would send is not what the apply sends.
		verb := "update"
		if live[ref] == nil {
			verb = "create"
		}
		return ck.byRBAC(ctx, ref, verb, mapping.Resource.GroupResource(), want.GetNamespace())
	}
	cur := live[ref]
	if readErr := ck.forbidden[ref]; readErr != nil {
		// The create's answer says more (RBAC's "cannot create", a
		// policy); if the create would pass, the read still fails it.
		n := ck.refusals()
		if err := ck.create(ctx, want, ref, mapping); err != nil || ck.refusals() > n {
			return err
		}
		ck.refuse(ref, "get", "kpt's engine reads every object before it writes it, and this identity may not: "+readErr.Error())
		return nil
	}
	if cur == nil {
		return ck.create(ctx, want, ref, mapping)
	}
	if why := ck.policyPrevents(ctx, cur, ref); why != "" {
		ck.refuse(ref, "update", why)
		return nil
	}
	if ck.unchanged(cur, want) {
		ck.count(func(r *Result) { r.Unchanged++ })
		return nil
	}
	h, err := ck.helper(mapping)
	if err != nil {
		return err
	}
	if ck.s.ServerSide {
		return ck.serverSideApply(ctx, h, cur, want, ref)
	}
	// kubectl's three-way patch of the live object, as kpt's engine
	// computes it; an empty patch is sent by neither.
	modified, err := util.GetModifiedConfiguration(want, true, unstructured.UnstructuredJSONScheme)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	p := &kubectlapply.Patcher{Mapping: mapping, Helper: h, Overwrite: true, BackOff: clockwork.NewRealClock(), Retries: 5}
	patch, _, err := p.Patch(cur, modified, "", want.GetNamespace(), want.GetName(), io.Discard)
	if string(patch) == "{}" && err == nil {
		ck.count(func(r *Result) { r.Unchanged++ })
		return nil
	}
	ck.count(func(r *Result) { r.DryRuns++ })
	return ck.answer(ref, "update", err)
}

// unchanged: an apply with the run's strategy would change nothing.
func (ck *checker) unchanged(cur, want *unstructured.Unstructured) bool {
	if ck.s.ServerSide {
		return status.AppliedUnchanged(cur, want, ck.s.FieldManager)
	}
	return status.Unchanged(cur, want)
}

// create dry-runs the create of an object the cluster does not hold:
// kubectl's create with its last-applied annotation (client-side), or an
// apply patch (server-side). Its Namespace missing is a refusal, unless
// the run creates it: then RBAC alone judges, with no dry run where the
// read found that Namespace missing already.
func (ck *checker) create(ctx context.Context, want *unstructured.Unstructured, ref v1alpha1.ObjectRef, mapping *meta.RESTMapping) error {
	if ns := want.GetNamespace(); ns != "" && ck.absent[ns] && mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return ck.byRBAC(ctx, ref, "create", mapping.Resource.GroupResource(), ns)
	}
	h, err := ck.helper(mapping)
	if err != nil {
		return err
	}
	ck.count(func(r *Result) { r.DryRuns++ })
	if ck.s.ServerSide {
		err = ck.applyPatch(h, want, ck.s.ForceConflicts)
	} else {
		obj := want.DeepCopy()
		if err := util.CreateApplyAnnotation(obj, unstructured.UnstructuredJSONScheme); err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		_, err = h.Create(obj.GetNamespace(), true, obj)
	}
	if ns := want.GetNamespace(); ns != "" && namespaceNotFound(err, ns) {
		if !ck.c.Creates.Namespaces[ns] {
			ck.refuse(ref, "create", fmt.Sprintf("its Namespace %s does not exist in the cluster, and no package of this run creates it there", ns))
			return nil
		}
		return ck.byRBAC(ctx, ref, "create", mapping.Resource.GroupResource(), ns)
	}
	if apierrors.IsNotFound(err) {
		// The resource itself is not served, whatever a discovery
		// cache said: as a kind the cluster does not serve.
		return ck.unserved(ctx, want, ref)
	}
	return ck.answer(ref, "create", err)
}

// unserved judges an object of a kind the cluster does not serve: RBAC
// alone when the run installs its CRD, else a refusal (kpt's engine
// could not apply it).
func (ck *checker) unserved(ctx context.Context, want *unstructured.Unstructured, ref v1alpha1.ObjectRef) error {
	gk := want.GroupVersionKind().GroupKind()
	gr, ok := ck.c.Creates.Kinds[gk]
	if !ok {
		ck.refuse(ref, "create", fmt.Sprintf("the cluster does not serve kind %s, and no package of this run installs its CustomResourceDefinition there", gk))
		return nil
	}
	return ck.byRBAC(ctx, ref, "create", gr, want.GetNamespace())
}

// serverSideApply dry-runs an apply patch of an object the cluster holds.
// A conflict with the fleet's own client-side apply managers only is no
// refusal: those fields move to the field manager before the apply
// (Upgrade), and a forced dry run judges the rest.
func (ck *checker) serverSideApply(ctx context.Context, h *resource.Helper, cur, want *unstructured.Unstructured, ref v1alpha1.ObjectRef) error {
	ck.count(func(r *Result) { r.DryRuns++ })
	err := ck.applyPatch(h, want, ck.s.ForceConflicts)
	if !apierrors.IsConflict(err) {
		return ck.answer(ref, "update", err)
	}
	conflicts := conflictsOf(err)
	own := ck.ownClientSideManagers(cur)
	var others []conflict
	for _, c := range conflicts {
		if !slices.Contains(own, c.manager) {
			others = append(others, c)
		}
	}
	switch {
	case len(conflicts) == 0:
		ck.refuse(ref, "update", err.Error())
		return nil
	case len(others) > 0:
		ck.refuse(ref, "update", describeConflicts(ck.s.FieldManager, others))
		return nil
	}
	ck.count(func(r *Result) {
		r.Upgrades = append(r.Upgrades, Upgrade{ID: object.UnstructuredToObjMetadata(want), Managers: own})
		r.DryRuns++
	})
	return ck.answer(ref, "update", ck.applyPatch(h, want, true))
}

// applyPatch sends a dry-run apply patch of want, as kubectl's server-side
// apply sends it.
func (ck *checker) applyPatch(h *resource.Helper, want *unstructured.Unstructured, force bool) error {
	data, err := runtime.Encode(unstructured.UnstructuredJSONScheme, want)
	if err != nil {
		return err
	}
	_, err = h.Patch(want.GetNamespace(), want.GetName(), types.ApplyPatchType, data, &metav1.PatchOptions{Force: &force})
	return err
}

// prune dry-runs the delete of an object the apply prunes, unless kpt's
// engine would not delete it: gone already, kept (on-remove: keep),
// another inventory's or none (the inventory policy skips it), or a
// Namespace the package still uses.
func (ck *checker) prune(ctx context.Context, id object.ObjMetadata, live map[v1alpha1.ObjectRef]*unstructured.Unstructured) error {
	ref := refOf(id)
	if readErr := ck.forbidden[ref]; readErr != nil {
		ck.refuse(ref, "delete", "kpt's engine reads every object it prunes before it deletes it, and this identity may not: "+readErr.Error())
		return nil
	}
	cur := live[ref]
	if cur == nil || cur.GetDeletionTimestamp() != nil || keptOnRemove(cur) {
		return nil
	}
	if ok, _ := inventory.CanPrune(ck.c.Inventory, cur, ck.policy()); !ok {
		return nil
	}
	if id.GroupKind == (schema.GroupKind{Kind: "Namespace"}) && slices.ContainsFunc(ck.c.Apply, func(u *unstructured.Unstructured) bool { return u.GetNamespace() == id.Name }) {
		return nil
	}
	mapping, err := ck.mapper.RESTMapping(id.GroupKind)
	if err != nil {
		return fmt.Errorf("mapping kind %s: %w", id.GroupKind, err)
	}
	h, err := ck.helper(mapping)
	if err != nil {
		return err
	}
	ck.count(func(r *Result) { r.DryRuns++ })
	_, err = h.DeleteWithOptions(id.Namespace, id.Name, ck.deleteOptions())
	if apierrors.IsNotFound(err) {
		return nil
	}
	return ck.answer(ref, "delete", err)
}

// keptOnRemove: cli-utils drops the object from the inventory without
// deleting it.
func keptOnRemove(u *unstructured.Unstructured) bool {
	a := u.GetAnnotations()
	return a[common.OnRemoveAnnotation] == common.OnRemoveKeep || a[common.LifecycleDeleteAnnotation] == common.PreventDeletion
}

// inventory asks whether the run may write the context's ResourceGroup
// (kpt creates or updates it, then, with --status-policy all, its status)
// and, when it installs it, kpt's ResourceGroup CRD.
func (ck *checker) inventory(ctx context.Context) error {
	rg := schema.GroupResource{Group: "kpt.dev", Resource: "resourcegroups"}
	ref := v1alpha1.ObjectRef{Group: "kpt.dev", Kind: "ResourceGroup", Namespace: ck.c.Inventory.Namespace(), Name: ck.c.Inventory.Name()}
	asks := []access{{verb: "update", gr: rg, namespace: ref.Namespace, name: ref.Name}}
	if !ck.c.InventoryFound {
		asks[0] = access{verb: "create", gr: rg, namespace: ref.Namespace}
	}
	if ck.s.Status() == v1alpha1.StatusPolicyAll {
		asks = append(asks, access{verb: "update", gr: rg, subresource: "status", namespace: ref.Namespace, name: ref.Name})
	}
	if ck.c.InstallCRD {
		crd := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
		asks = append(asks, access{verb: "create", gr: crd}, access{verb: "update", gr: crd, name: "resourcegroups.kpt.dev"})
	}
	for _, a := range asks {
		allowed, why, err := ck.review(ctx, a)
		if err != nil {
			return err
		}
		if allowed {
			continue
		}
		what := ref
		reason := fmt.Sprintf("kpt writes the inventory with %s%s; RBAC does not allow it (SelfSubjectAccessReview%s)", a.verb, subOf(a), why)
		if a.gr.Resource == "customresourcedefinitions" {
			what = v1alpha1.ObjectRef{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "resourcegroups.kpt.dev"}
			reason = fmt.Sprintf("the cluster lacks kpt's ResourceGroup CRD (or an older one), which kpt installs, and RBAC does not allow this identity to %s it (SelfSubjectAccessReview%s): have the platform install it (kpt live install-resource-group)", a.verb, why)
		}
		ck.refuse(what, a.verb, reason)
		return nil
	}
	return nil
}

func subOf(a access) string {
	if a.subresource == "" {
		return ""
	}
	return " of its " + a.subresource
}

// policy is the run's inventory policy as cli-utils names it.
func (ck *checker) policy() inventory.Policy {
	if ck.s.InventoryPolicy == v1alpha1.InventoryPolicyAdopt {
		return inventory.PolicyAdoptIfNoInventory
	}
	return inventory.PolicyMustMatch
}

// policyPrevents says why the inventory policy keeps the run from
// applying an object the cluster holds, in shard-router's words; "" when
// it does not.
func (ck *checker) policyPrevents(ctx context.Context, cur *unstructured.Unstructured, ref v1alpha1.ObjectRef) string {
	if ok, _ := inventory.CanApply(ck.c.Inventory, cur, ck.policy()); ok {
		return ""
	}
	owner := cur.GetAnnotations()[inventory.OwningInventoryKey]
	if owner == "" {
		return "the cluster holds it, and it belongs to no inventory (no " + inventory.OwningInventoryKey + " annotation): --inventory-policy strict (the default) never takes such an object over; pass --inventory-policy adopt (or set spec.apply.inventoryPolicy: adopt) to adopt it, or remove it from the package"
	}
	return fmt.Sprintf("the cluster holds it, and it belongs to another inventory, %s: no inventory policy takes an object from another inventory; apply it from the package that owns it, or remove it from that package first", ck.describeInventory(ctx, owner))
}

// describeInventory names the inventory whose id is owner: its
// ResourceGroup, when this identity may find it.
func (ck *checker) describeInventory(ctx context.Context, owner string) string {
	desc := "id " + owner
	mapping, err := ck.mapper.RESTMapping(schema.GroupKind{Group: "kpt.dev", Kind: "ResourceGroup"})
	if err != nil {
		return desc
	}
	dyn, err := ck.c.Factory.DynamicClient()
	if err != nil {
		return desc
	}
	list, err := dyn.Resource(mapping.Resource).List(ctx, metav1.ListOptions{LabelSelector: common.InventoryLabel + "=" + owner})
	if err != nil || len(list.Items) == 0 {
		return desc
	}
	rg := list.Items[0]
	return fmt.Sprintf("ResourceGroup %s/%s (id %s)", rg.GetNamespace(), rg.GetName(), owner)
}

// helper is kubectl's helper for mapping, sending dry runs as the field
// manager.
func (ck *checker) helper(mapping *meta.RESTMapping) (*resource.Helper, error) {
	client, err := ck.c.Factory.UnstructuredClientForMapping(mapping)
	if err != nil {
		return nil, err
	}
	return resource.NewHelper(client, mapping).DryRun(true).WithFieldManager(ck.s.FieldManager), nil
}

// answer turns the answer of a dry run into a refusal, or an error when
// the cluster could not answer at all.
func (ck *checker) answer(ref v1alpha1.ObjectRef, verb string, err error) error {
	if err == nil {
		return nil
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		code := se.Status().Code
		if code >= 400 && code < 500 || apierrors.IsInternalError(err) {
			// 4xx: RBAC, admission, validation; 500 from a webhook that
			// fails: the write would fail the same way.
			ck.refuse(ref, verb, err.Error())
			return nil
		}
	}
	return fmt.Errorf("%s %s: %w", verb, ref, err)
}

// namespaceNotFound: err says that ns does not exist (the dry run of a
// create into it).
func namespaceNotFound(err error, ns string) bool {
	var se apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == ns || strings.Contains(se.Status().Message, fmt.Sprintf("namespaces %q not found", ns))
}
