package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	ns, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return Identity{Server: server}, fmt.Errorf("reading the cluster's identity (Namespace %s) at %s: %w", metav1.NamespaceSystem, server, err)
	}
	return Identity{UID: string(ns.UID), Server: server}, nil
}
