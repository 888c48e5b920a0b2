package apply

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/polling/event"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/cli-utils/pkg/kstatus/watcher"
	"sigs.k8s.io/cli-utils/pkg/object"
)

// lateKindWatcher is kpt's status watcher, with one repair for the kinds
// the cluster does not serve yet when the watch starts: custom resources
// whose CRD the same apply creates.
//
// cli-utils v0.37's watcher starts an informer for such a kind when the
// CRD is added or updated. But should the informer's first list answer
// NotFound (the CRD is Established, its endpoint not served yet), it
// stops every informer of the kind for good, and unless the CRD changes
// again no event of those objects ever comes: the apply waits out
// --reconcile-timeout on objects that are Current ("last status unknown"),
// as kpt live apply does. For the objects of those kinds that the watcher
// has not reported, this one reads their status every lateKindPoll with
// the watcher's own status reader (a GET and kstatus, as kpt live status
// reads it) and sends it as the watcher would. It stops reading an object
// once the watcher reports it: the informer is alive, and its events are
// the newer ones. Nothing is written.
type lateKindWatcher struct {
	*watcher.DefaultStatusWatcher
	poll time.Duration
}

// lateKindPoll is how often an unreported object of a late kind is read.
const lateKindPoll = 2 * time.Second

// withLateKinds wraps kpt's status watcher.
func withLateKinds(w watcher.StatusWatcher) (watcher.StatusWatcher, error) {
	d, ok := w.(*watcher.DefaultStatusWatcher)
	if !ok {
		return nil, fmt.Errorf("kpt's status watcher is a %T, where shard-router expects cli-utils' *watcher.DefaultStatusWatcher", w)
	}
	return &lateKindWatcher{DefaultStatusWatcher: d, poll: lateKindPoll}, nil
}

// Watch starts kpt's watch; when some ids are of kinds the cluster does
// not serve yet, it relays the watch's events and adds those ids' status.
func (w *lateKindWatcher) Watch(ctx context.Context, ids object.ObjMetadataSet, opts watcher.Options) <-chan event.Event {
	late := w.lateIDs(ids)
	opts = namespaceScoped(ids, opts)
	inner := watchingOne(w.DefaultStatusWatcher, ids, opts).Watch(ctx, ids, opts)
	if len(late) == 0 {
		return inner
	}
	out := make(chan event.Event)
	go w.relay(ctx, inner, out, late)
	return out
}

// lateIDs are the ids of kinds the cluster does not serve (yet).
func (w *lateKindWatcher) lateIDs(ids object.ObjMetadataSet) map[object.ObjMetadata]bool {
	late := map[object.ObjMetadata]bool{}
	served := map[schema.GroupKind]bool{}
	for _, id := range ids {
		ok, seen := served[id.GroupKind]
		if !seen {
			_, err := w.Mapper.RESTMapping(id.GroupKind)
			ok = !meta.IsNoMatchError(err)
			served[id.GroupKind] = ok
		}
		if !ok {
			late[id] = true
		}
	}
	return late
}

// relay forwards inner's events to out, and every poll reads the ids of
// late that inner has not reported. It closes out once inner is closed
// (the watch's context is done).
func (w *lateKindWatcher) relay(ctx context.Context, inner <-chan event.Event, out chan<- event.Event, late map[object.ObjMetadata]bool) {
	defer close(out)
	sent := map[object.ObjMetadata]*event.ResourceStatus{}
	send := func(e event.Event) {
		select {
		case out <- e:
		case <-ctx.Done():
		}
	}
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-inner:
			if !ok {
				return
			}
			if e.Type == event.ResourceUpdateEvent && e.Resource != nil {
				delete(late, e.Resource.Identifier)
			}
			send(e)
		case <-tick.C:
			unserved := false
			for id := range late {
				rs, noMatch := w.read(ctx, id, sent[id])
				unserved = unserved || noMatch
				if rs != nil {
					sent[id] = rs
					send(event.Event{Type: event.ResourceUpdateEvent, Resource: rs})
				}
			}
			// A kind still not served: the mapper's discovery is read
			// again for the next poll (as the watcher does when a CRD is
			// added), once for all the ids that found it stale.
			if unserved {
				meta.MaybeResetRESTMapper(w.Mapper)
			}
		}
	}
}

// read returns id's status when it is news: the object found, or gone
// after it was found, and not what was sent last. noMatch reports a kind
// the cluster still does not serve.
func (w *lateKindWatcher) read(ctx context.Context, id object.ObjMetadata, last *event.ResourceStatus) (rs *event.ResourceStatus, noMatch bool) {
	rs, err := w.StatusReader.ReadStatus(ctx, w.ClusterReader, id)
	switch {
	case err != nil || rs == nil:
		return nil, false
	case rs.Status == status.UnknownStatus:
		return nil, meta.IsNoMatchError(rs.Error)
	case rs.Status == status.NotFoundStatus && last == nil:
		return nil, false
	case last != nil && event.ResourceStatusEqual(rs, last):
		return nil, false
	}
	return rs, false
}

// namespaceScopeLimit is the most namespaces whose objects are watched
// namespace by namespace (see namespaceScoped).
const namespaceScopeLimit = 64

// namespaceScoped watches the objects namespace by namespace, where
// cli-utils (as kpt live apply runs it) watches every namespace as soon as
// the objects span two: an informer per kind that lists and caches every
// object of that kind in the cluster, and receives every change to one.
// On a cluster many teams share, that is every ConfigMap of every team,
// per context and per run; on a fleet where one cluster serves many
// contexts, every context lists the others' objects too (at 128 contexts
// on one cluster, 3.5 GB). Per namespace, each informer lists and watches
// only the namespaces the package uses; the status it computes is the
// same, from the same events. Past namespaceScopeLimit namespaces the
// watches would outnumber what the cluster-wide informer costs, and
// cli-utils' own choice stands. Cluster-scoped objects are watched
// cluster-wide either way.
func namespaceScoped(ids object.ObjMetadataSet, opts watcher.Options) watcher.Options {
	if opts.RESTScopeStrategy != watcher.RESTScopeAutomatic {
		return opts
	}
	namespaces := map[string]bool{}
	for _, id := range ids {
		if id.Namespace != "" {
			namespaces[id.Namespace] = true
		}
	}
	if len(namespaces) <= namespaceScopeLimit {
		opts.RESTScopeStrategy = watcher.RESTScopeNamespace
	}
	return opts
}
