package localfleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dense is a fleet for measuring the cost of a context rather than of a
// cluster process: Contexts kube contexts mapped onto Clusters local
// clusters, context i on cluster i % Clusters, each context with
// Namespaces of its own and its own inventory (the package DensePackage
// writes). It is a measuring device: a real fleet has one context per
// cluster, and there the clusters' own costs (their processes, their
// watch caches) are not shared.
type Dense struct {
	// Contexts is the number of kube contexts (at least 1).
	Contexts int
	// Clusters is the number of clusters they share (at least 1, at most
	// Contexts).
	Clusters int
}

// Validate says what is wrong with d, every problem at once.
func (d Dense) Validate() error {
	var errs []error
	if d.Contexts < 1 {
		errs = append(errs, fmt.Errorf("%d contexts: a dense fleet needs at least 1", d.Contexts))
	}
	if d.Clusters < 1 {
		errs = append(errs, fmt.Errorf("%d clusters: a dense fleet needs at least 1", d.Clusters))
	} else if d.Contexts >= 1 && d.Clusters > d.Contexts {
		errs = append(errs, fmt.Errorf("%d clusters for %d contexts: a cluster would have no context", d.Clusters, d.Contexts))
	}
	return errors.Join(errs...)
}

// ContextName is the name of context i: ctx-000, ctx-001, ... (wider
// when there are more than 1,000).
func (d Dense) ContextName(i int) string {
	return fmt.Sprintf("ctx-%0*d", max(3, len(fmt.Sprint(d.Contexts-1))), i)
}

// ContextNames are the names of every context, in order.
func (d Dense) ContextNames() []string {
	names := make([]string, d.Contexts)
	for i := range names {
		names[i] = d.ContextName(i)
	}
	return names
}

// ClusterOf is the index of the cluster context i is on.
func (d Dense) ClusterOf(i int) int { return i % d.Clusters }

// ClusterName is the name of cluster j (its processes' files and its
// kubeconfig cluster entry): cluster-0, cluster-1, ...
func (d Dense) ClusterName(j int) string { return fmt.Sprintf("cluster-%d", j) }

// KubeContext is one context of a kubeconfig: its name and the server
// it reaches.
type KubeContext struct {
	Name   string
	Server *APIServer
}

// KubeContexts maps every context onto its server: servers[j] is cluster j.
func (d Dense) KubeContexts(servers []*APIServer) []KubeContext {
	out := make([]KubeContext, d.Contexts)
	for i := range out {
		out[i] = KubeContext{Name: d.ContextName(i), Server: servers[d.ClusterOf(i)]}
	}
	return out
}

// WriteKubeconfigContexts writes a kubeconfig with the given contexts, as
// creds' user, and one cluster entry per server they reach (named after
// it); the first context is the current one.
func WriteKubeconfigContexts(path string, creds *Creds, contexts []KubeContext) error {
	if len(contexts) == 0 {
		return errors.New("a kubeconfig needs at least one context")
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + contexts[0].Name + "\nclusters:\n")
	seen := map[*APIServer]bool{}
	for _, c := range contexts {
		if seen[c.Server] {
			continue
		}
		seen[c.Server] = true
		fmt.Fprintf(&b, "- name: %s\n  cluster:\n    server: %s\n    certificate-authority: %s\n", c.Server.Name, c.Server.URL, c.Server.CAFile)
	}
	b.WriteString("users:\n- name: " + creds.User + "\n  user:\n    token: " + creds.Token + "\ncontexts:\n")
	for _, c := range contexts {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: %s\n    user: %s\n", c.Name, c.Server.Name, creds.User)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}
