package cluster

import (
	"fmt"

	kptfilev1 "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"github.com/kptdev/kpt/pkg/live"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/inventory"
)

// Package is one context's package as kpt live apply reads it.
type Package struct {
	// Context is the kube context the package is for.
	Context string
	// Dir is the directory it was read from.
	Dir string
	// Objects are the resources to apply: local-config objects, the
	// Kptfile and the ResourceGroup left out, List kinds flattened,
	// namespaces defaulted from the kube context as kpt does.
	Objects []*unstructured.Unstructured
	// Inventory is the package's ResourceGroup (resourcegroup.yaml): the
	// name, namespace and inventory id split wrote.
	Inventory inventory.Info
}

// ReadPackage reads the package in dir for context with kpt's loader
// (live.Load, then live.Flatten, then live.ToInventoryInfo). f is the
// context's factory: the loader asks its REST mapper whether each kind is
// namespaced, so reading a package can contact the apiserver.
func ReadPackage(f cmdutil.Factory, context, dir string) (*Package, error) {
	objs, inv, err := live.Load(f, dir, nil)
	if err != nil {
		return nil, fmt.Errorf("context %q: reading package %s: %w", context, dir, err)
	}
	objs, err = live.Flatten(objs)
	if err != nil {
		return nil, fmt.Errorf("context %q: reading package %s: %w", context, dir, err)
	}
	info, err := live.ToInventoryInfo(inv)
	if err != nil {
		return nil, fmt.Errorf("context %q: package %s: %w", context, dir, err)
	}
	return &Package{Context: context, Dir: dir, Objects: objs, Inventory: info}, nil
}

// InventoryInfo returns the inventory a ResourceGroup with this name,
// namespace and inventory id stands for, as kpt reads it from a
// resourcegroup.yaml.
func InventoryInfo(name, namespace, id string) (inventory.Info, error) {
	return live.ToInventoryInfo(kptfilev1.Inventory{Name: name, Namespace: namespace, InventoryID: id})
}
