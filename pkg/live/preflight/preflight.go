// Package preflight asks each cluster a run will write, before the run's
// first write anywhere, whether every write the run would make there would
// be accepted. A server-side dry run (dryRun=All) of the write itself asks
// authentication, RBAC and every admission stage (webhooks,
// ValidatingAdmissionPolicy) at once, and, for a server-side apply, field
// conflicts; it persists nothing. So each object the run would create,
// update or prune is dry-run exactly as kpt's engine will send it: kubectl's
// create with its last-applied annotation, kubectl's three-way patch
// (client-side apply) or an apply patch (server-side), a delete with the
// prune's propagation policy.
//
// What cannot be dry-run yet is judged by RBAC alone, with a
// SelfSubjectAccessReview, and left to the apply for admission: an object
// in a Namespace that a package of the same run creates (a dry run would
// answer that the Namespace is not found: none is sent where the read
// found it missing), and an object of a kind whose CRD the run installs
// (the cluster does not serve the kind yet). The
// inventory (kpt's ResourceGroup) and kpt's ResourceGroup CRD are asked
// with access reviews too: kpt writes them with an update of a whole object
// that a dry run cannot reproduce. Objects an apply would leave unchanged
// cost no request beyond the batched read of the live objects; a context
// with nothing to write is not asked at all (the caller skips it).
package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/inventory"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/status"
)

// inFlight bounds the requests in flight to one cluster, as status reads.
const inFlight = 16

// Context is one context the run will write, and what it will write there.
type Context struct {
	Name    string
	Factory cmdutil.Factory
	// Inventory is the context's inventory; InventoryFound says whether
	// the cluster holds its ResourceGroup already.
	Inventory      inventory.Info
	InventoryFound bool
	// Apply are the objects the run applies (the package, and the copies
	// of the objects it hands off, which it keeps applying meanwhile).
	Apply []*unstructured.Unstructured
	// Prune are the objects its apply prunes, now or once a handoff ends.
	Prune object.ObjMetadataSet
	// InstallCRD is set when the run installs or updates kpt's
	// ResourceGroup CRD in the cluster.
	InstallCRD bool
	// Creates are the Namespaces and CRDs that the run's packages create
	// in the cluster (this context's and those of contexts reaching the
	// same cluster).
	Creates Creates
	// Reviews are the access reviews' answers the context shares with the
	// others reaching its cluster as the same identity; nil: its own.
	Reviews *Reviews
}

// Creates are the Namespaces (by name) and the kinds of the CRDs (with
// their resource) that a run creates in one cluster.
type Creates struct {
	Namespaces map[string]bool
	Kinds      map[schema.GroupKind]schema.GroupResource
}

// CreatesOf collects what objs create: their Namespaces and CRDs.
func CreatesOf(objs []*unstructured.Unstructured, into *Creates) {
	if into.Namespaces == nil {
		into.Namespaces, into.Kinds = map[string]bool{}, map[schema.GroupKind]schema.GroupResource{}
	}
	for _, u := range objs {
		gk := u.GroupVersionKind().GroupKind()
		switch gk {
		case schema.GroupKind{Kind: "Namespace"}:
			into.Namespaces[u.GetName()] = true
		case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
			if kind != "" && plural != "" {
				into.Kinds[schema.GroupKind{Group: group, Kind: kind}] = schema.GroupResource{Group: group, Resource: plural}
			}
		}
	}
}

// Refusal is one write a cluster would refuse.
type Refusal struct {
	Context string
	// Object is the object refused; for the inventory or kpt's CRD, that
	// object.
	Object v1alpha1.ObjectRef
	// Verb is what the run would do: create, update, delete.
	Verb string
	// Reason is the cluster's own answer, verbatim where it gave one.
	Reason string
}

func (r Refusal) String() string {
	return fmt.Sprintf("context %q: %s %s refused: %s", r.Context, r.Verb, r.Object, r.Reason)
}

// Upgrade is an object whose fields the run's own client-side applies own
// (managers Update of the last-applied annotation): before its first
// server-side apply they become the field manager's (client-go's
// csaupgrade), so that the switch never conflicts with the fleet's own past.
type Upgrade struct {
	ID       object.ObjMetadata
	Managers []string
}

// Result is what one context answered.
type Result struct {
	Context  string
	Refusals []Refusal
	// ByRBAC are the writes judged by SelfSubjectAccessReview alone: their
	// Namespace or kind does not exist yet.
	ByRBAC []v1alpha1.ObjectRef
	// Upgrades are the objects whose client-side apply ownership moves to
	// the field manager before the server-side apply.
	Upgrades []Upgrade
	// Counts: objects an apply leaves unchanged (no request), dry runs and
	// access reviews sent.
	Unchanged, DryRuns, Reviews int
}

// Check asks c's cluster about every write of the run there. An error
// means the cluster could not be asked (not a refusal).
func Check(ctx context.Context, c Context, s v1alpha1.ApplyStrategy) (*Result, error) {
	ck, err := newChecker(c, s)
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", c.Name, err)
	}
	live, forbidden, err := ck.readLive(ctx)
	if err != nil {
		return nil, fmt.Errorf("context %q: reading the objects it writes: %w", c.Name, err)
	}
	ck.forbidden = forbidden
	ck.absent = absentNamespaces(c.Apply, live, forbidden)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for _, u := range c.Apply {
		g.Go(func() error { return ck.apply(gctx, u, live) })
	}
	applied := object.UnstructuredSetToObjMetadataSet(c.Apply)
	for _, id := range c.Prune {
		if applied.Contains(id) {
			continue
		}
		g.Go(func() error { return ck.prune(gctx, id, live) })
	}
	g.Go(func() error { return ck.inventory(gctx) })
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("context %q: %w", c.Name, err)
	}
	return ck.result(), nil
}

// checker is one context's preflight.
type checker struct {
	c      Context
	s      v1alpha1.ApplyStrategy
	mapper meta.RESTMapper
	reader *status.Reader
	// reviews remembers each access review's answer: RBAC for a create
	// does not depend on the object, so one review serves every object of
	// a resource and namespace (of every context sharing c.Reviews).
	reviews *Reviews
	// forbidden are the objects this identity may not read, with the
	// cluster's answer: kpt's engine reads each object before it writes
	// or prunes it.
	forbidden map[v1alpha1.ObjectRef]error
	// absent are the Namespaces the context creates that the cluster
	// does not hold: a dry run of an object in one would only answer
	// that it is not found.
	absent map[string]bool
	// accessReviews is the client of the access reviews, made once (see
	// newAccessReviews).
	accessReviews func() (authorizationv1.SelfSubjectAccessReviewInterface, error)

	mu  sync.Mutex
	res Result
}

func newChecker(c Context, s v1alpha1.ApplyStrategy) (*checker, error) {
	mapper, err := c.Factory.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	reader, err := status.NewReader(c.Factory)
	if err != nil {
		return nil, err
	}
	reviews := c.Reviews
	if reviews == nil {
		reviews = &Reviews{}
	}
	return &checker{c: c, s: s, mapper: cluster.MemoMapper(mapper), reader: reader, reviews: reviews, res: Result{Context: c.Name},
		accessReviews: newAccessReviews(c.Factory)}, nil
}

// newAccessReviews makes f's client of access reviews on first use: the
// authorization group's client alone (a clientset makes about fifty).
func newAccessReviews(f cmdutil.Factory) func() (authorizationv1.SelfSubjectAccessReviewInterface, error) {
	return sync.OnceValues(func() (authorizationv1.SelfSubjectAccessReviewInterface, error) {
		cfg, err := f.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		client, err := authorizationv1.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return client.SelfSubjectAccessReviews(), nil
	})
}

// readLive reads every object the context applies or prunes, in
// batches; forbidden are those this identity may not read.
func (ck *checker) readLive(ctx context.Context) (live map[v1alpha1.ObjectRef]*unstructured.Unstructured, forbidden map[v1alpha1.ObjectRef]error, err error) {
	refs := make([]v1alpha1.ObjectRef, 0, len(ck.c.Apply)+len(ck.c.Prune))
	for _, u := range ck.c.Apply {
		refs = append(refs, refOfObject(u))
	}
	for _, id := range ck.c.Prune {
		refs = append(refs, refOf(id))
	}
	return ck.reader.ReadEach(ctx, refs)
}

// absentNamespaces are the Namespaces among objs that the read found
// missing: neither in live nor forbidden to read.
func absentNamespaces(objs []*unstructured.Unstructured, live map[v1alpha1.ObjectRef]*unstructured.Unstructured, forbidden map[v1alpha1.ObjectRef]error) map[string]bool {
	absent := map[string]bool{}
	for _, u := range objs {
		if u.GroupVersionKind().GroupKind() != (schema.GroupKind{Kind: "Namespace"}) {
			continue
		}
		if ref := refOfObject(u); live[ref] == nil && forbidden[ref] == nil {
			absent[u.GetName()] = true
		}
	}
	return absent
}

func (ck *checker) refuse(ref v1alpha1.ObjectRef, verb, reason string) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	ck.res.Refusals = append(ck.res.Refusals, Refusal{Context: ck.c.Name, Object: ref, Verb: verb, Reason: reason})
}

// refusals counts the refusals so far.
func (ck *checker) refusals() int {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	return len(ck.res.Refusals)
}

func (ck *checker) count(f func(*Result)) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	f(&ck.res)
}

// result is the context's answers, in a stable order.
func (ck *checker) result() *Result {
	r := ck.res
	sort.Slice(r.Refusals, func(a, b int) bool {
		if r.Refusals[a].Object != r.Refusals[b].Object {
			return r.Refusals[a].Object.Less(r.Refusals[b].Object)
		}
		return r.Refusals[a].Verb < r.Refusals[b].Verb
	})
	sort.Slice(r.ByRBAC, func(a, b int) bool { return r.ByRBAC[a].Less(r.ByRBAC[b]) })
	sort.Slice(r.Upgrades, func(a, b int) bool { return refOf(r.Upgrades[a].ID).Less(refOf(r.Upgrades[b].ID)) })
	return &r
}

func refOf(id object.ObjMetadata) v1alpha1.ObjectRef {
	return v1alpha1.ObjectRef{Group: id.GroupKind.Group, Kind: id.GroupKind.Kind, Namespace: id.Namespace, Name: id.Name}
}

func refOfObject(u *unstructured.Unstructured) v1alpha1.ObjectRef {
	return refOf(object.UnstructuredToObjMetadata(u))
}

// Summary says in one line what a context's preflight asked.
func (r *Result) Summary() string {
	parts := []string{fmt.Sprintf("%d unchanged", r.Unchanged), fmt.Sprintf("%d dry run(s)", r.DryRuns)}
	if r.Reviews > 0 {
		parts = append(parts, fmt.Sprintf("%d access review(s)", r.Reviews))
	}
	if n := len(r.Refusals); n > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", n))
	}
	return strings.Join(parts, ", ")
}

// metaDelete is the DeleteOptions of a prune.
func (ck *checker) deleteOptions() *metav1.DeleteOptions {
	pp := metav1.DeletionPropagation(ck.s.PrunePropagationPolicy)
	return &metav1.DeleteOptions{PropagationPolicy: &pp}
}
