package status

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

const (
	// listPageSize bounds one page of a list, and so the memory one read
	// holds.
	listPageSize = 500
	// listMin is the fewest objects of one resource in one namespace that
	// are read with a list; fewer are read with a get each, so that a few
	// objects never pull a whole namespace (or, for a cluster-scoped kind,
	// the whole cluster's).
	listMin = 16
	// listPerWanted bounds what a list reads: at most one page, or this
	// many objects for each one it looks for when that is more. What it
	// has not found by then is read with a get each, so that a read costs
	// what the package holds, never what the cluster holds (16 Namespaces
	// of a cluster of thousands).
	listPerWanted = 4
)

// batch is objects of one resource in one namespace ("" for a
// cluster-scoped resource): read with one list when there are several,
// with one get when there is one.
type batch struct {
	resource  schema.GroupVersionResource
	namespace string
	refs      []v1alpha1.ObjectRef
}

// requests bounds the requests one read has in flight to a cluster: a
// slot is held for each request, so that a batch's gets, sent at once,
// share the bound with every other batch's requests.
type requests chan struct{}

func newRequests(n int) requests { return make(requests, max(n, 1)) }

// do sends one request in a slot, waiting for one or for ctx.
func (q requests) do(ctx context.Context, send func() error) error {
	select {
	case q <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-q }()
	return send()
}

// liveObjects are the objects read from one cluster, by ref; a ref that is
// absent was not found.
type liveObjects map[v1alpha1.ObjectRef]*unstructured.Unstructured

// groupReads sorts refs into batches by resource and namespace. A ref
// whose kind the cluster does not serve goes to unserved: it cannot exist
// there. Any other mapping error is returned, naming the kind.
func groupReads(mapper meta.RESTMapper, refs []v1alpha1.ObjectRef) (batches []*batch, unserved []v1alpha1.ObjectRef, err error) {
	type key struct {
		resource  schema.GroupVersionResource
		namespace string
	}
	byKey := map[key]*batch{}
	for _, r := range refs {
		m, err := mapper.RESTMapping(schema.GroupKind{Group: r.Group, Kind: r.Kind})
		if meta.IsNoMatchError(err) {
			unserved = append(unserved, r)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("mapping kind %s: %w", schema.GroupKind{Group: r.Group, Kind: r.Kind}, err)
		}
		ns := r.Namespace
		if m.Scope.Name() == meta.RESTScopeNameRoot {
			ns = ""
		}
		k := key{m.Resource, ns}
		b := byKey[k]
		if b == nil {
			b = &batch{resource: m.Resource, namespace: ns}
			byKey[k] = b
			batches = append(batches, b)
		}
		b.refs = append(b.refs, r)
	}
	return batches, unserved, nil
}

// splitSmall turns each batch of fewer than min objects into batches of
// one object: one get each.
func splitSmall(batches []*batch, min int) []*batch {
	var out []*batch
	for _, b := range batches {
		if len(b.refs) >= min {
			out = append(out, b)
			continue
		}
		for _, r := range b.refs {
			out = append(out, &batch{resource: b.resource, namespace: b.namespace, refs: []v1alpha1.ObjectRef{r}})
		}
	}
	return out
}

// readLive reads every batch, at most parallel at once, and returns the
// objects found. The first error stops the reads.
func readLive(ctx context.Context, client dynamic.Interface, batches []*batch, parallel int) (liveObjects, error) {
	results := make([][]unstructured.Unstructured, len(batches))
	q := newRequests(parallel)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, b := range batches {
		g.Go(func() error {
			objs, err := b.read(ctx, client, q)
			results[i] = objs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	found := liveObjects{}
	for i, b := range batches {
		byName := make(map[string]*unstructured.Unstructured, len(results[i]))
		for j := range results[i] {
			byName[results[i][j].GetName()] = &results[i][j]
		}
		for _, r := range b.refs {
			if u := byName[r.Name]; u != nil {
				found[r] = u
			}
		}
	}
	return found, nil
}

// read gets the batch's one object, or lists its namespace page by page
// and keeps the objects it looks for. A list stops once it has found them
// all, or read its budget (listBudget): the rest are read with a get each
// (found, or not there). Each request takes a slot of q.
func (b *batch) read(ctx context.Context, client dynamic.Interface, q requests) ([]unstructured.Unstructured, error) {
	ri := b.client(client)
	if len(b.refs) == 1 {
		u, err := b.get(ctx, ri, q, b.refs[0].Name)
		if u == nil || err != nil {
			return nil, err
		}
		return []unstructured.Unstructured{*u}, nil
	}
	out, rest, err := b.list(ctx, ri, q, listBudget(len(b.refs)))
	if err != nil || len(rest) == 0 {
		return out, err
	}
	got := make([]*unstructured.Unstructured, len(rest))
	g, gctx := errgroup.WithContext(ctx)
	for i, name := range rest {
		g.Go(func() (err error) {
			got[i], err = b.get(gctx, ri, q, name)
			return err
		})
	}
	err = g.Wait()
	if apierrors.IsForbidden(err) {
		// An identity that may list these objects but not get them: the
		// whole list, as it may.
		out, _, err = b.list(ctx, ri, q, 0)
		return out, err
	}
	if err != nil {
		return nil, err
	}
	for _, u := range got {
		if u != nil {
			out = append(out, *u)
		}
	}
	return out, nil
}

// listBudget is how many objects a list may read to find wanted objects:
// one page, or listPerWanted for each when that is more. A namespace (or,
// for a cluster-scoped kind, a cluster) of one page is read whole, as it
// always was.
func listBudget(wanted int) int64 {
	return max(listPageSize, int64(listPerWanted*wanted))
}

// list reads the batch's namespace page by page, keeping the objects the
// batch looks for, until it has found them all, read the whole namespace,
// or read budget objects (0: no bound). rest are the ones it did not find
// before the budget cut it short, sorted: nil when it read to the end.
func (b *batch) list(ctx context.Context, ri dynamic.ResourceInterface, q requests, budget int64) (found []unstructured.Unstructured, rest []string, err error) {
	missing := make(map[string]bool, len(b.refs))
	for _, r := range b.refs {
		missing[r.Name] = true
	}
	opts := metav1.ListOptions{Limit: listPageSize}
	for read := int64(0); ; {
		var list *unstructured.UnstructuredList
		err := q.do(ctx, func() (err error) {
			list, err = ri.List(ctx, opts)
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s%s: %w", b.resource.GroupResource(), b.in(), err)
		}
		for _, u := range list.Items {
			if missing[u.GetName()] {
				delete(missing, u.GetName())
				found = append(found, u)
			}
		}
		read += int64(len(list.Items))
		if opts.Continue = list.GetContinue(); opts.Continue == "" || len(missing) == 0 {
			return found, nil, nil
		}
		if budget > 0 {
			if read >= budget {
				break
			}
			opts.Limit = min(listPageSize, budget-read)
		}
	}
	for name := range missing {
		rest = append(rest, name)
	}
	slices.Sort(rest)
	return found, rest, nil
}

// get reads one object of the batch: nil when it is not there.
func (b *batch) get(ctx context.Context, ri dynamic.ResourceInterface, q requests, name string) (*unstructured.Unstructured, error) {
	var u *unstructured.Unstructured
	err := q.do(ctx, func() (err error) {
		u, err = ri.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s %s: %w", b.resource.GroupResource(), b.where(name), err)
	}
	return u, nil
}

// client is the batch's resource in its namespace.
func (b *batch) client(client dynamic.Interface) dynamic.ResourceInterface {
	if b.namespace == "" {
		return client.Resource(b.resource)
	}
	return client.Resource(b.resource).Namespace(b.namespace)
}

func (b *batch) where(name string) string {
	if b.namespace == "" {
		return name
	}
	return b.namespace + "/" + name
}

func (b *batch) in() string {
	if b.namespace == "" {
		return ""
	}
	return " in namespace " + b.namespace
}
