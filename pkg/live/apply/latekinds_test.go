package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/polling/engine"
	"sigs.k8s.io/cli-utils/pkg/kstatus/polling/event"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/cli-utils/pkg/kstatus/watcher"
	"sigs.k8s.io/cli-utils/pkg/object"
)

// scriptedReader is a status reader whose answers for each object are
// given in turn (the last one repeats), and that counts its reads.
type scriptedReader struct {
	mu      sync.Mutex
	answers map[object.ObjMetadata][]status.Status
	reads   map[object.ObjMetadata]int
}

func (r *scriptedReader) Supports(schema.GroupKind) bool { return true }

func (r *scriptedReader) ReadStatus(_ context.Context, _ engine.ClusterReader, id object.ObjMetadata) (*event.ResourceStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.answers[id]
	n := r.reads[id]
	r.reads[id]++
	return &event.ResourceStatus{Identifier: id, Status: a[min(n, len(a)-1)]}, nil
}

func (r *scriptedReader) ReadStatusForObject(context.Context, engine.ClusterReader, *unstructured.Unstructured) (*event.ResourceStatus, error) {
	panic("not used")
}

func (r *scriptedReader) readsOf(id object.ObjMetadata) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads[id]
}

var (
	gadgetA   = object.ObjMetadata{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Gadget"}, Namespace: "a", Name: "g"}
	gadgetB   = object.ObjMetadata{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Gadget"}, Namespace: "b", Name: "g"}
	configMap = object.ObjMetadata{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "a", Name: "c"}
)

// Only the objects of kinds the cluster does not serve are late.
func TestLateIDsAreTheUnservedKinds(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	w := &lateKindWatcher{DefaultStatusWatcher: &watcher.DefaultStatusWatcher{Mapper: mapper}}
	late := w.lateIDs(object.ObjMetadataSet{configMap, gadgetA, gadgetB})
	if got := slices.SortedFunc(maps.Keys(late), func(a, b object.ObjMetadata) int { return compareIDs(a, b) }); !slices.Equal(got, []object.ObjMetadata{gadgetA, gadgetB}) {
		t.Errorf("late ids %v, want the two Gadgets", got)
	}
}

func compareIDs(a, b object.ObjMetadata) int {
	switch {
	case a.String() < b.String():
		return -1
	case a.String() > b.String():
		return 1
	}
	return 0
}

// The watcher never reports gadgetA (its informer was stopped): its status
// is read and sent when it is news (NotFound before it was found is not;
// the same status twice is not). gadgetB is reported by the watcher: it is
// no longer read. Everything the watcher sends is relayed, and the relay
// ends when the watch does.
func TestLateKindsRelay(t *testing.T) {
	reader := &scriptedReader{reads: map[object.ObjMetadata]int{}, answers: map[object.ObjMetadata][]status.Status{
		gadgetA: {status.NotFoundStatus, status.InProgressStatus, status.InProgressStatus, status.CurrentStatus},
		gadgetB: {status.NotFoundStatus},
	}}
	w := &lateKindWatcher{DefaultStatusWatcher: &watcher.DefaultStatusWatcher{StatusReader: reader}, poll: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := make(chan event.Event)
	out := make(chan event.Event)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.relay(ctx, inner, out, map[object.ObjMetadata]bool{gadgetA: true, gadgetB: true})
	}()

	// A relay that stops relaying fails the test rather than hanging it.
	next := func() event.Event {
		select {
		case e := <-out:
			return e
		case <-time.After(time.Minute):
			t.Fatal("no event from the relay within a minute")
			return event.Event{}
		}
	}
	inner <- event.Event{Type: event.SyncEvent}
	if e := next(); e.Type != event.SyncEvent {
		t.Fatalf("first event %v, want the watcher's SyncEvent relayed", e.Type)
	}
	fromWatcher := event.Event{Type: event.ResourceUpdateEvent, Resource: &event.ResourceStatus{Identifier: gadgetB, Status: status.CurrentStatus}}
	inner <- fromWatcher
	var got []string
	for len(got) < 3 {
		e := next()
		if e.Type != event.ResourceUpdateEvent {
			t.Fatalf("event %v, want resource updates", e.Type)
		}
		got = append(got, e.Resource.Identifier.Namespace+":"+e.Resource.Status.String())
	}
	if want := []string{"b:Current", "a:InProgress", "a:Current"}; !slices.Equal(got, want) {
		t.Errorf("relayed %v, want %v", got, want)
	}
	// gadgetA is Current now and is still read (the watcher never reported
	// it); gadgetB is not read since the watcher reported it.
	// A relay blocked on sending a repeated status would read no more.
	readsB := reader.readsOf(gadgetB)
	for a, start := reader.readsOf(gadgetA), time.Now(); reader.readsOf(gadgetA) < a+5; {
		if time.Since(start) > time.Minute {
			t.Fatal("gadgetA is no longer read: the relay is stuck (sending a repeated status?)")
		}
		time.Sleep(time.Millisecond)
	}
	if n := reader.readsOf(gadgetB); n != readsB {
		t.Errorf("gadgetB read %d more times after the watcher reported it", n-readsB)
	}
	select {
	case e := <-out:
		t.Errorf("a repeated status was sent again: %v", e)
	default:
	}
	close(inner)
	if _, ok := <-out; ok {
		t.Error("the relay sent more after the watch ended")
	}
	<-done
}

// countingMapper counts the resets of its discovery.
type countingMapper struct {
	meta.RESTMapper
	resets atomic.Int32
}

func (m *countingMapper) Reset() { m.resets.Add(1) }

// While a late kind is not served, every poll resets the mapper once, for
// all its objects: not once per object, which would read the cluster's
// discovery again for each.
func TestLateKindsResetTheMapperOncePerPoll(t *testing.T) {
	noMatch := &meta.NoKindMatchError{GroupKind: gadgetA.GroupKind}
	reader := &unservedReader{scriptedReader: scriptedReader{reads: map[object.ObjMetadata]int{}}, err: noMatch}
	mapper := &countingMapper{RESTMapper: meta.NewDefaultRESTMapper(nil)}
	w := &lateKindWatcher{DefaultStatusWatcher: &watcher.DefaultStatusWatcher{StatusReader: reader, Mapper: mapper}, poll: time.Millisecond}
	inner := make(chan event.Event)
	out := make(chan event.Event)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.relay(context.Background(), inner, out, map[object.ObjMetadata]bool{gadgetA: true, gadgetB: true})
	}()
	for start := time.Now(); reader.readsOf(gadgetA) < 5; {
		if time.Since(start) > time.Minute {
			t.Fatal("the late objects are not read")
		}
		time.Sleep(time.Millisecond)
	}
	close(inner)
	if _, ok := <-out; ok {
		t.Error("an object of a kind not served was reported")
	}
	<-done
	a, b, resets := reader.readsOf(gadgetA), reader.readsOf(gadgetB), int(mapper.resets.Load())
	if a != b || resets != a {
		t.Errorf("polls: %d of one object, %d of the other; %d mapper resets: want one reset per poll", a, b, resets)
	}
}

// unservedReader answers as cli-utils' status reader does for a kind the
// mapper does not know: Unknown, with the mapper's error.
type unservedReader struct {
	scriptedReader
	err error
}

func (r *unservedReader) ReadStatus(_ context.Context, _ engine.ClusterReader, id object.ObjMetadata) (*event.ResourceStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads[id]++
	return &event.ResourceStatus{Identifier: id, Status: status.UnknownStatus, Error: r.err}, nil
}

// The watch is namespace by namespace up to namespaceScopeLimit
// namespaces, cli-utils' own choice past it, and an explicit choice stands.
func TestNamespaceScoped(t *testing.T) {
	ids := func(namespaces int) object.ObjMetadataSet {
		set := object.ObjMetadataSet{{GroupKind: schema.GroupKind{Kind: "Namespace"}, Name: "n"}}
		for i := range namespaces {
			set = append(set, object.ObjMetadata{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: fmt.Sprintf("ns-%d", i), Name: "c"})
		}
		return set
	}
	for _, tc := range []struct {
		namespaces int
		given      watcher.RESTScopeStrategy
		want       watcher.RESTScopeStrategy
	}{
		{0, watcher.RESTScopeAutomatic, watcher.RESTScopeNamespace},
		{2, watcher.RESTScopeAutomatic, watcher.RESTScopeNamespace},
		{namespaceScopeLimit, watcher.RESTScopeAutomatic, watcher.RESTScopeNamespace},
		{namespaceScopeLimit + 1, watcher.RESTScopeAutomatic, watcher.RESTScopeAutomatic},
		{2, watcher.RESTScopeRoot, watcher.RESTScopeRoot},
	} {
		if got := namespaceScoped(ids(tc.namespaces), watcher.Options{RESTScopeStrategy: tc.given}).RESTScopeStrategy; got != tc.want {
			t.Errorf("%d namespaces, %v given: %v, want %v", tc.namespaces, tc.given, got, tc.want)
		}
	}
}
