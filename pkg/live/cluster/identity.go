package cluster

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// Identity is which cluster a kube context reaches: the UID of its
// kube-system Namespace (OpenTelemetry's k8s.cluster.uid: it changes only
// when the cluster is rebuilt) and the server URL the kubeconfig gives.
type Identity struct {
	UID    string
	Server string
}

// ReadIdentity asks the context's cluster who it is (one GET).
func ReadIdentity(ctx context.Context, f cmdutil.Factory) (Identity, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return Identity{}, err
	}
	cs, err := f.KubernetesClientSet()
	if err != nil {
		return Identity{}, err
	}
	return IdentityOf(ctx, cs, cfg.Host)
}

// IdentityOf is ReadIdentity with clients already built for server.
func IdentityOf(ctx context.Context, cs kubernetes.Interface, server string) (Identity, error) {
	return IdentityFrom(ctx, cs.CoreV1(), server)
}

// IdentityFrom is IdentityOf with only the Namespaces client.
func IdentityFrom(ctx context.Context, namespaces corev1.NamespacesGetter, server string) (Identity, error) {
	ns, err := namespaces.Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return Identity{Server: server}, fmt.Errorf("reading the cluster's identity (Namespace %s) at %s: %w", metav1.NamespaceSystem, server, err)
	}
	return Identity{UID: string(ns.UID), Server: server}, nil
}

// SharedIdentity is the identity of a context's cluster as read reads it,
// read once in a run for all the contexts that name the same cluster and
// user entries of the kubeconfig: they send the same request to the same
// server with the same credentials (as they share one discovery), and a
// fleet of many contexts on one cluster asks who it is once, not once per
// context. A read that fails is not kept: the contexts that waited for it
// get its error, and the next one asks again.
func (k *Kubeconfig) SharedIdentity(ctx context.Context, context string, read func() (Identity, error)) (Identity, error) {
	return sharedRead(ctx, k, "identity", context, read)
}

// SharedProbe is probe, asked once in a run as SharedIdentity is, for the
// contexts that name the same cluster and user entries: whether their
// server answers (status' probe).
func (k *Kubeconfig) SharedProbe(ctx context.Context, context string, probe func() error) error {
	_, err := sharedRead(ctx, k, "probe", context, func() (struct{}, error) { return struct{}{}, probe() })
	return err
}

// sharedRead is read, answered once for the contexts that name the same
// cluster and user entries as context.
func sharedRead[T any](ctx context.Context, k *Kubeconfig, what, context string, read func() (T, error)) (T, error) {
	key, ok := k.Entries(context)
	if !ok {
		return read()
	}
	v, _ := k.shared.LoadOrStore(what+"\x00"+key, &shared[T]{})
	return v.(*shared[T]).get(ctx, read)
}

// shared is the answer of one read for a cluster and user entry: known
// once a read succeeded; reading, while one is in flight.
type shared[T any] struct {
	mu      sync.Mutex
	known   bool
	value   T
	reading *inFlight[T]
}

// inFlight is a read in flight; done is closed when it ended.
type inFlight[T any] struct {
	done  chan struct{}
	value T
	err   error
}

func (s *shared[T]) get(ctx context.Context, read func() (T, error)) (T, error) {
	s.mu.Lock()
	if s.known {
		s.mu.Unlock()
		return s.value, nil
	}
	if r := s.reading; r != nil {
		s.mu.Unlock()
		select {
		case <-r.done:
			return r.value, r.err
		case <-ctx.Done():
			return read() // this context's own time is up
		}
	}
	r := &inFlight[T]{done: make(chan struct{})}
	s.reading = r
	s.mu.Unlock()
	r.value, r.err = read()
	s.mu.Lock()
	s.reading = nil
	if r.err == nil {
		s.known, s.value = true, r.value
	}
	s.mu.Unlock()
	close(r.done)
	return r.value, r.err
}
