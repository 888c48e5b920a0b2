package cluster

import (
	"errors"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// ReadClients are the clients of the reads apply and status make of a
// context before its objects: its cluster's identity (core), its Lease
// (coordination) and status' probe (discovery).
type ReadClients struct {
	CoreV1         corev1.CoreV1Interface
	CoordinationV1 coordinationv1.CoordinationV1Interface
	Discovery      discovery.DiscoveryInterface
	// Server is the server they reach, as the kubeconfig gives it.
	Server string
}

// NewReadClients builds them on cfg as kubernetes.NewForConfig builds a
// clientset (one HTTP client and one rate limiter for all, the default
// user agent), without the clients of the other groups: a clientset makes
// about fifty, which cost a context more than the reads themselves.
func NewReadClients(cfg *rest.Config) (*ReadClients, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			// kubernetes.NewForConfigAndClient's own refusal.
			return nil, errBurst
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	rc := &ReadClients{Server: cfg.Host}
	if rc.CoreV1, err = corev1.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if rc.CoordinationV1, err = coordinationv1.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if rc.Discovery, err = discovery.NewDiscoveryClientForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	return rc, nil
}

var errBurst = errors.New("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")

// ReadFactory is f, its DynamicClient made once, for the reads of one
// context (its live inventory, status' object reader): each asked f for a
// new dynamic client, made again from its config. Applying keeps f.
func ReadFactory(f cmdutil.Factory) cmdutil.Factory {
	dyn, err := f.DynamicClient()
	return WithDynamic(f, dyn, err)
}

// WithDynamic is f, whose DynamicClient returns dyn and err.
func WithDynamic(f cmdutil.Factory, dyn dynamic.Interface, err error) cmdutil.Factory {
	return withDynamic{Factory: f, dyn: dyn, err: err}
}

type withDynamic struct {
	cmdutil.Factory
	dyn dynamic.Interface
	err error
}

func (f withDynamic) DynamicClient() (dynamic.Interface, error) { return f.dyn, f.err }
