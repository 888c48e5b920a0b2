package status

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
)

// Reader reads objects from one cluster as status does: in batches, one
// list per kind and namespace, and only reads.
type Reader struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
}

// NewReader builds a Reader on the client factory of one context.
func NewReader(f cmdutil.Factory) (*Reader, error) {
	dyn, err := f.DynamicClient()
	if err != nil {
		return nil, err
	}
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	return &Reader{dynamic: dyn, mapper: cluster.MemoMapper(mapper)}, nil
}

// Read returns the live objects of refs that exist; a ref whose kind the
// cluster does not serve does not exist there.
func (r *Reader) Read(ctx context.Context, refs []v1alpha1.ObjectRef) (map[v1alpha1.ObjectRef]*unstructured.Unstructured, error) {
	batches, _, err := groupReads(r.mapper, refs)
	if err != nil {
		return nil, err
	}
	return readLive(ctx, r.dynamic, splitSmall(batches, listMin), readsPerContext)
}

// Current reports whether a live object exists, is not being deleted and
// is Current as kstatus (and so kpt live apply's wait) computes it.
func Current(live *unstructured.Unstructured) bool {
	if live == nil || live.GetDeletionTimestamp() != nil {
		return false
	}
	st, _ := health(live)
	return st == v1alpha1.StatusCurrent
}

// Mismatch says why an apply of pkg with kpt's client-side apply could
// still change an object of the cluster, "" when none: every object of the
// package exists, is not being deleted, is Current, holds every field the
// package sets (status' local drift check, on the object as cli-utils
// sends it), and its last-applied configuration is that object, so that
// the three-way merge removes no field either. It reads, never writes;
// when the local check cannot rule drift out it says so rather than ask
// the server for a dry run.
func (r *Reader) Mismatch(ctx context.Context, pkg *cluster.Package) (string, error) {
	want := make(map[v1alpha1.ObjectRef]*unstructured.Unstructured, len(pkg.Objects))
	refs := make([]v1alpha1.ObjectRef, 0, len(pkg.Objects))
	for _, u := range pkg.Objects {
		ref := refOf(u)
		want[ref] = asApplied(u, pkg.Inventory.ID())
		refs = append(refs, ref)
	}
	batches, unserved, err := groupReads(r.mapper, refs)
	if err != nil {
		return "", err
	}
	if len(unserved) > 0 {
		return fmt.Sprintf("%s: the cluster does not serve its kind", unserved[0]), nil
	}
	live, err := readLive(ctx, r.dynamic, splitSmall(batches, listMin), readsPerContext)
	if err != nil {
		return "", err
	}
	for _, ref := range refs {
		l := live[ref]
		switch {
		case l == nil:
			return fmt.Sprintf("%s: not found", ref), nil
		case l.GetDeletionTimestamp() != nil:
			return fmt.Sprintf("%s: being deleted", ref), nil
		case !Current(l):
			st, msg := health(l)
			return fmt.Sprintf("%s: %s %s", ref, st, msg), nil
		case !covers(l.Object, want[ref].Object):
			return fmt.Sprintf("%s: drifted (or the local check cannot tell)", ref), nil
		case !lastAppliedIs(l, want[ref]):
			return fmt.Sprintf("%s: its last-applied configuration is not the package's", ref), nil
		}
	}
	return "", nil
}

// lastAppliedIs reports whether live's last-applied configuration is want
// (without that annotation), as client-side apply records it.
func lastAppliedIs(live, want *unstructured.Unstructured) bool {
	text, ok := live.GetAnnotations()[lastAppliedAnnotation]
	if !ok {
		return false
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(text), &last); err != nil {
		return false
	}
	w := want.DeepCopy()
	ann := w.GetAnnotations()
	delete(ann, lastAppliedAnnotation)
	w.SetAnnotations(ann)
	// No annotations and an empty map of them are the same configuration.
	for _, obj := range []map[string]any{w.Object, last} {
		if meta, ok := obj["metadata"].(map[string]any); ok {
			if a, ok := meta["annotations"].(map[string]any); ok && len(a) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	// Equal both ways: the same fields with the same values.
	return coversValue(last, w.Object) && coversValue(w.Object, last)
}
