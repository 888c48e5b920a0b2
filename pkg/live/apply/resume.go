package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/status"
)

// owningInventory is cli-utils' record of the inventory that applied an
// object.
const owningInventory = "config.k8s.io/owning-inventory"

// prunedBefore returns, of the objects moving out of context t (each
// with the contexts it moves to), those whose prune an earlier run already
// began: t's copy is gone or being deleted (or its namespace is), and every
// new context holds its own copy, applied under its inventory, Current.
// Applying such an object in t again would fight the prune: a Namespace
// being deleted cannot be re-created, nor any object created in it, and
// the apply would wait for it until the reconcile timeout. So it is
// pruned, not kept: the new copies already are what never-zero-copies
// waits for. A cluster that cannot be read proves nothing: the object is
// then kept, as any handoff.
func (r *run) prunedBefore(ctx context.Context, t *target, moves map[object.ObjMetadata][]string) map[object.ObjMetadata]bool {
	if len(moves) == 0 {
		return nil
	}
	seen := map[v1alpha1.ObjectRef]bool{}
	var here []v1alpha1.ObjectRef
	for id := range moves {
		for _, ref := range []v1alpha1.ObjectRef{refOf(id), {Kind: "Namespace", Name: id.Namespace}} {
			if ref.Name != "" && !seen[ref] {
				seen[ref] = true
				here = append(here, ref)
			}
		}
	}
	old := readRefs(ctx, t, here)
	if old == nil {
		return nil
	}
	leaving := func(ref v1alpha1.ObjectRef) bool {
		u := old[ref]
		return u == nil || u.GetDeletionTimestamp() != nil
	}
	candidates := map[string][]v1alpha1.ObjectRef{}
	for id, to := range moves {
		ref := refOf(id)
		if !leaving(ref) && (id.Namespace == "" || !leaving(v1alpha1.ObjectRef{Kind: "Namespace", Name: id.Namespace})) {
			continue
		}
		for _, c := range to {
			candidates[c] = append(candidates[c], ref)
		}
	}
	current := map[v1alpha1.ObjectRef]int{} // how many new contexts hold it Current
	for c, refs := range candidates {
		o := r.target(c)
		if o == nil || o.failed || o.pkg == nil {
			continue
		}
		live := readRefs(ctx, o, refs)
		for _, ref := range refs {
			if u := live[ref]; status.Current(u) && u.GetAnnotations()[owningInventory] == o.pkg.Inventory.ID() {
				current[ref]++
			}
		}
	}
	out := map[object.ObjMetadata]bool{}
	for id, to := range moves {
		if n, ok := current[refOf(id)]; ok && n == len(to) {
			out[id] = true
		}
	}
	return out
}

// readRefs reads refs from t's cluster; nil when it cannot.
func readRefs(ctx context.Context, t *target, refs []v1alpha1.ObjectRef) map[v1alpha1.ObjectRef]*unstructured.Unstructured {
	if t.factory == nil {
		return nil
	}
	reader, err := status.NewReader(t.factory)
	if err != nil {
		return nil
	}
	live, err := reader.Read(ctx, refs)
	if err != nil {
		return nil
	}
	return live
}
