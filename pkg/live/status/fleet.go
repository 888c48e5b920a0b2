package status

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// fleet is OUT_DIR and the kubeconfig.
type fleet struct {
	outDir string
	names  []string
	rules  *clientcmd.ClientConfigLoadingRules
}

func openFleet(outDir, kubeconfig string) (*fleet, error) {
	entries, err := os.ReadDir(outDir)
	if err != nil {
		return nil, fmt.Errorf("reading OUT_DIR: %w", err)
	}
	fl := &fleet{outDir: outDir, rules: clientcmd.NewDefaultClientConfigLoadingRules()}
	fl.rules.ExplicitPath = kubeconfig
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(outDir, e.Name(), "resourcegroup.yaml")); e.IsDir() && err == nil {
			fl.names = append(fl.names, e.Name())
		}
	}
	slices.Sort(fl.names)
	return fl, nil
}

func (fl *fleet) contexts() []string { return fl.names }

func (fl *fleet) require(names []string) error {
	for _, n := range names {
		if !slices.Contains(fl.names, n) {
			return fmt.Errorf("context %q has no package in %s (it holds %v)", n, fl.outDir, fl.names)
		}
	}
	return nil
}

// conn is one context's cluster and package.
type conn struct {
	name, dir string
	dynamic   dynamic.Interface
	mapper    meta.RESTMapper
}

func (fl *fleet) connect(ctx context.Context, name string) (*conn, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(fl.rules, &clientcmd.ConfigOverrides{CurrentContext: name}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, -1
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &conn{name: name, dir: filepath.Join(fl.outDir, name), dynamic: dyn,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// contextPackage is one context's package: its objects and its inventory.
type contextPackage struct {
	objects   []*unstructured.Unstructured
	inventory inventoryRef
}

// inventoryRef names a package's ResourceGroup.
type inventoryRef struct {
	Namespace, Name, ID string
}

func (c *conn) readPackage() (*contextPackage, error) {
	nodes, err := (&kio.LocalPackageReader{PackagePath: c.dir, OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, err
	}
	pkg := &contextPackage{}
	for _, n := range nodes {
		switch {
		case n.GetKind() == "ResourceGroup":
			pkg.inventory = inventoryRef{Namespace: n.GetNamespace(), Name: n.GetName(), ID: n.GetLabels()["cli-utils.sigs.k8s.io/inventory-id"]}
		case n.GetAnnotations()["config.kubernetes.io/local-config"] == "true":
		default:
			u, err := toUnstructured(n)
			if err != nil {
				return nil, err
			}
			pkg.objects = append(pkg.objects, u)
		}
	}
	return pkg, nil
}

func toUnstructured(n *yaml.RNode) (*unstructured.Unstructured, error) {
	data, err := n.MarshalJSON()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(data)
}
