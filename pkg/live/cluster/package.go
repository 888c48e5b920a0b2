package cluster

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	kptfilev1 "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	rgfilev1alpha1 "github.com/kptdev/kpt/pkg/api/resourcegroup/v1alpha1"
	"github.com/kptdev/kpt/pkg/kptfile/kptfileutil"
	"github.com/kptdev/kpt/pkg/live"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/inventory"
	"sigs.k8s.io/cli-utils/pkg/manifestreader"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
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

// ReadPackage reads the package in dir for context as kpt live apply does
// (live.Load, then live.Flatten, then live.ToInventoryInfo), with the same
// objects and inventory, but parsing each file once: kpt parses the
// package twice (once more to find its inventory) and turns every object
// into YAML text and JSON text again (kpt's kyamlNodeToUnstructured),
// which was most of status' CPU time. Each object is converted directly
// (yamlio.JSONObject), or by kpt's conversion when that is not sure of it.
// A package holding a subpackage or a JSON file, where kpt's two parses
// read different files, is read by kpt's own loader. f is the context's
// factory: the loader asks its REST mapper whether each kind is
// namespaced, so reading a package can contact the apiserver.
func ReadPackage(f cmdutil.Factory, context, dir string) (*Package, error) {
	objs, inv, err := load(f, dir)
	if err == nil {
		objs, err = live.Flatten(objs)
	}
	if err != nil {
		return nil, fmt.Errorf("context %q: reading package %s: %w", context, dir, err)
	}
	info, err := live.ToInventoryInfo(inv)
	if err != nil {
		return nil, fmt.Errorf("context %q: package %s: %w", context, dir, err)
	}
	return &Package{Context: context, Dir: dir, Objects: objs, Inventory: info}, nil
}

// load is kpt's live.Load of a package directory, parsing it once.
func load(f cmdutil.Factory, dir string) ([]*unstructured.Unstructured, kptfilev1.Inventory, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, kptfilev1.Inventory{}, err
	}
	differ, err := readsDiffer(abs)
	if err != nil {
		return nil, kptfilev1.Inventory{}, err
	}
	if differ {
		return live.Load(f, abs, nil)
	}
	// kpt's ResourceGroupPathManifestReader's reader.
	nodes, err := (&kio.LocalPackageReader{PackagePath: abs, WrapBareSeqNode: true}).Read()
	if err != nil {
		return nil, kptfilev1.Inventory{}, err
	}
	inv, err := localInventory(abs, nodes)
	if err != nil {
		return nil, kptfilev1.Inventory{}, err
	}
	if !inv.IsValid() {
		return nil, kptfilev1.Inventory{}, fmt.Errorf("the provided ResourceGroup is not valid")
	}
	ns, enforce, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, kptfilev1.Inventory{}, err
	}
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, kptfilev1.Inventory{}, err
	}
	objs, err := toObjects(nodes)
	if err != nil {
		return nil, kptfilev1.Inventory{}, err
	}
	return objs, inv, manifestreader.SetNamespaces(MemoMapper(mapper), objs, ns, enforce)
}

// readsDiffer reports whether kpt's two reads of the package at abs read
// different files: the objects are read from every .yaml and .yml file of
// every directory, the inventory also from .json files, and not from a
// subdirectory with a Kptfile (a subpackage).
func readsDiffer(abs string) (bool, error) {
	found := false
	err := filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != abs:
			if _, err := os.Stat(filepath.Join(path, kptfilev1.KptFileName)); err == nil {
				found = true
			}
		case !d.IsDir() && strings.HasSuffix(d.Name(), ".json"):
			found = true
		}
		if found {
			return filepath.SkipAll
		}
		return nil
	})
	return found, err
}

// localInventory is kpt's Pkg.LocalInventory over the nodes already read:
// the one ResourceGroup, or the root Kptfile's inventory, never both.
func localInventory(abs string, nodes []*yaml.RNode) (kptfilev1.Inventory, error) {
	var rgs []*yaml.RNode
	for _, n := range nodes {
		if n.GetApiVersion() == rgfilev1alpha1.RGFileAPIVersion && n.GetKind() == rgfilev1alpha1.RGFileKind {
			rgs = append(rgs, n)
		}
	}
	if len(rgs) > 1 {
		return kptfilev1.Inventory{}, fmt.Errorf("multiple ResourceGroup objects found in package")
	}
	var kf *kptfilev1.KptFile
	if _, err := os.Stat(filepath.Join(abs, kptfilev1.KptFileName)); err == nil {
		if kf, err = kptfileutil.ReadKptfile(filesys.MakeFsOnDisk(), abs); err != nil {
			return kptfilev1.Inventory{}, err
		}
	}
	switch {
	case len(rgs) == 1 && kf != nil && kf.Inventory != nil:
		return kptfilev1.Inventory{}, fmt.Errorf("inventory was found in both Kptfile and ResourceGroup object")
	case len(rgs) == 1:
		return resourceGroupInventory(rgs[0]), nil
	case kf != nil && kf.Inventory != nil:
		return *kf.Inventory, nil
	}
	return kptfilev1.Inventory{}, fmt.Errorf("no ResourceGroup object was provided within the stream or package")
}

// resourceGroupInventory is the inventory kpt reads from a ResourceGroup:
// its name, namespace, inventory id, other labels, and annotations but
// kpt's and kyaml's own.
func resourceGroupInventory(rg *yaml.RNode) kptfilev1.Inventory {
	labels := rg.GetLabels()
	id := labels[rgfilev1alpha1.RGInventoryIDLabel]
	delete(labels, rgfilev1alpha1.RGInventoryIDLabel)
	ann := rg.GetAnnotations()
	for k := range ann {
		if strings.HasPrefix(k, "internal.config.kubernetes.io/") || strings.HasPrefix(k, "config.kubernetes.io/") {
			delete(ann, k)
		}
	}
	return kptfilev1.Inventory{Name: rg.GetName(), Namespace: rg.GetNamespace(), Annotations: ann, Labels: labels, InventoryID: id}
}

// toObjects converts the nodes as kpt's ResourceGroupPathManifestReader
// does, on every core: without the index annotations, ResourceGroups and
// local-config objects left out.
func toObjects(nodes []*yaml.RNode) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, len(nodes))
	errs := make([]error, len(nodes))
	_ = yamlio.Parallel(len(nodes), func(i int) error {
		objs[i], errs[i] = toObject(nodes[i])
		return nil
	})
	out := objs[:0]
	for i, u := range objs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if u.GroupVersionKind() == rgfilev1alpha1.ResourceGroupGVK() {
			continue
		}
		if v, found := u.GetAnnotations()[filters.LocalConfigAnnotation]; found && v != live.NoLocalConfigAnnoVal {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

func toObject(n *yaml.RNode) (*unstructured.Unstructured, error) {
	for _, a := range []kioutil.AnnotationKey{kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation} { //nolint:staticcheck // kpt clears both
		if err := n.PipeE(yaml.ClearAnnotation(a)); err != nil {
			return nil, err
		}
	}
	if m, ok := yamlio.JSONObject(n.YNode()); ok {
		return &unstructured.Unstructured{Object: m}, nil
	}
	m, err := yamlio.KptObject(n)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// ReadObjects reads the objects of a package that has no kpt inventory (a
// split for a GitOps engine), as ReadPackage reads them; Inventory is nil.
func ReadObjects(f cmdutil.Factory, context, dir string) (*Package, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	nodes, err := (&kio.LocalPackageReader{PackagePath: abs, WrapBareSeqNode: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("context %q: reading package %s: %w", context, dir, err)
	}
	ns, enforce, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	objs, err := toObjects(nodes)
	if err == nil {
		err = manifestreader.SetNamespaces(MemoMapper(mapper), objs, ns, enforce)
	}
	if err == nil {
		objs, err = live.Flatten(objs)
	}
	if err != nil {
		return nil, fmt.Errorf("context %q: reading package %s: %w", context, dir, err)
	}
	return &Package{Context: context, Dir: dir, Objects: objs}, nil
}
