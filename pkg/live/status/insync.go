package status

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Mismatch says why an apply of pkg could still change an object of the
// cluster, "" when none: every object of the package exists, is not being
// deleted, is Current, and an apply would change nothing in it (Unchanged:
// kpt's client-side apply; with ssaManager set, a server-side apply by that
// field manager: AppliedUnchanged). It reads, never writes; when the local
// check cannot rule a change out it says so rather than ask the server for
// a dry run.
func (r *Reader) Mismatch(ctx context.Context, pkg *cluster.Package, ssaManager string) (string, error) {
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
		case ssaManager != "" && !AppliedUnchanged(l, want[ref], ssaManager):
			return fmt.Sprintf("%s: drifted, or field manager %s's server-side apply does not own exactly the package's fields", ref, ssaManager), nil
		case ssaManager != "":
		case !covers(l.Object, want[ref].Object):
			return fmt.Sprintf("%s: drifted (or the local check cannot tell)", ref), nil
		case !lastAppliedIs(l, want[ref]):
			return fmt.Sprintf("%s: its last-applied configuration is not the package's", ref), nil
		}
	}
	return "", nil
}

// Unchanged reports whether kpt's client-side apply of want would change
// nothing in live: live holds every field want sets, and its last-applied
// configuration is want, so that the three-way merge removes no field
// either.
func Unchanged(live, want *unstructured.Unstructured) bool {
	return covers(live.Object, want.Object) && lastAppliedIs(live, want)
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

// ReadEach is Read for a caller that must know, object by object, what it
// may not read: a list this identity may not make is read again one get
// per object, and an object whose get is forbidden is returned in
// forbidden with the cluster's answer instead of failing the read. Any
// other error fails it.
func (r *Reader) ReadEach(ctx context.Context, refs []v1alpha1.ObjectRef) (found map[v1alpha1.ObjectRef]*unstructured.Unstructured, forbidden map[v1alpha1.ObjectRef]error, err error) {
	batches, _, err := groupReads(r.mapper, refs)
	if err != nil {
		return nil, nil, err
	}
	found, forbidden = map[v1alpha1.ObjectRef]*unstructured.Unstructured{}, map[v1alpha1.ObjectRef]error{}
	batches = splitSmall(batches, listMin)
	q := newRequests(readsPerContext)
	for len(batches) > 0 {
		var mu sync.Mutex
		var again []*batch // lists that were forbidden: one get each
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(readsPerContext)
		for _, b := range batches {
			g.Go(func() error {
				objs, err := b.read(gctx, r.dynamic, q)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case apierrors.IsForbidden(err) && len(b.refs) > 1:
					again = append(again, splitSmall([]*batch{b}, len(b.refs)+1)...)
					return nil
				case apierrors.IsForbidden(err):
					forbidden[b.refs[0]] = err
					return nil
				case err != nil:
					return err
				}
				byName := make(map[string]*unstructured.Unstructured, len(objs))
				for i := range objs {
					byName[objs[i].GetName()] = &objs[i]
				}
				for _, ref := range b.refs {
					if u := byName[ref.Name]; u != nil {
						found[ref] = u
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, nil, err
		}
		batches = again
	}
	return found, forbidden, nil
}
