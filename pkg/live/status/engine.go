package status

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/gitops"
)

// kustomizations is Flux's Kustomization resource.
var kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

// fluxTargets reads the Kustomizations that split --engine flux wrote to
// OUT_DIR/_gitops (gitops.FluxManagementFile): the context each applies
// (the last element of its path) and its name. Nil when OUT_DIR is not a
// split for Flux.
func fluxTargets(outDir string) (map[string]types.NamespacedName, error) {
	p := filepath.Join(outDir, gitops.Dir, filepath.FromSlash(gitops.FluxManagementFile))
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	out := map[string]types.NamespacedName{}
	for _, n := range nodes {
		if n.GetKind() != "Kustomization" {
			continue
		}
		dir, err := n.GetString("spec.path")
		if err != nil {
			return nil, fmt.Errorf("%s: Kustomization %s: %w", p, n.GetName(), err)
		}
		out[path.Base(dir)] = types.NamespacedName{Namespace: n.GetNamespace(), Name: n.GetName()}
	}
	return out, nil
}

// readKustomization reads context name's Kustomization from the cluster
// of fluxContext ("": the context's own): its Ready condition and revision,
// and its inventory as the context's; found is false when it is missing.
func (fl *fleet) readKustomization(ctx context.Context, name, fluxContext string) (*v1alpha1.EngineStatus, []v1alpha1.ObjectRef, bool, error) {
	nn, ok := fl.flux[name]
	if !ok {
		return nil, nil, false, fmt.Errorf("%s names no Kustomization for context %q", filepath.Join(fl.outDir, gitops.Dir, gitops.FluxManagementFile), name)
	}
	es := &v1alpha1.EngineStatus{Engine: string(gitops.Flux), Kind: "Kustomization", Namespace: nn.Namespace, Name: nn.Name}
	if fluxContext == "" {
		fluxContext = name
	}
	c, err := fl.connect(ctx, fluxContext)
	if err != nil {
		return es, nil, false, fmt.Errorf("reading Kustomization %s from context %s: %w", nn, fluxContext, err)
	}
	u, err := c.dynamic.Resource(kustomizations).Namespace(nn.Namespace).Get(ctx, nn.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return es, nil, false, nil
	}
	if err != nil {
		return es, nil, false, fmt.Errorf("reading Kustomization %s from context %s: %w", nn, fluxContext, err)
	}
	es.Revision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			es.Ready, _ = m["status"].(string)
			es.Reason, _ = m["reason"].(string)
			es.Message, _ = m["message"].(string)
		}
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
	var refs []v1alpha1.ObjectRef
	for _, e := range entries {
		m, _ := e.(map[string]any)
		id, _ := m["id"].(string)
		// Flux's object id: namespace_name_group_kind.
		parts := strings.Split(id, "_")
		if len(parts) != 4 {
			continue
		}
		refs = append(refs, v1alpha1.ObjectRef{Namespace: parts[0], Name: parts[1], Group: parts[2], Kind: parts[3]})
	}
	return es, refs, true, nil
}

// untracked is the inventory of one context of a split for an engine
// whose inventory shard-router cannot read without the engine: Argo CD
// tracks what it applied by an annotation (or label) on each live object
// and keeps the list in its Application, on the Argo CD cluster; Config
// Sync keeps a ResourceGroup of its own, named after the RootSync, that
// only its reconciler maintains.
type untracked struct {
	engine          gitops.Engine
	namespace, name string
}

// note says, for the output, why the context's extras are not known.
func (u untracked) note() string {
	switch u.engine {
	case gitops.ArgoCD:
		return fmt.Sprintf("inventory extras not known for argocd: Argo CD keeps what it applied in Application %s/%s (on the Argo CD cluster) and a tracking annotation on each object; shard-router does not read them, so objects the cluster holds beyond OUT_DIR are not reported", u.namespace, u.name)
	default:
		return fmt.Sprintf("inventory extras not known for configsync: Config Sync keeps what it applied in its own ResourceGroup %s/%s, maintained by its reconciler; shard-router does not read it, so objects the cluster holds beyond OUT_DIR are not reported", u.namespace, u.name)
	}
}

// untrackedTargets reads, for a split for Argo CD or Config Sync, the
// engine's object of each context: the Application the ApplicationSet's
// list generator names for it, or the context's RootSync. Nil when OUT_DIR
// is not a split for either.
func untrackedTargets(outDir string) (map[string]untracked, error) {
	dir := filepath.Join(outDir, gitops.Dir)
	argo := filepath.Join(dir, filepath.FromSlash(gitops.ArgoCDFile))
	data, err := os.ReadFile(argo)
	switch {
	case err == nil:
		return argoTargets(argo, data)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(dir, gitops.ConfigSyncDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]untracked{}
	for _, e := range entries {
		ctx, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok || e.IsDir() {
			continue
		}
		p := filepath.Join(dir, gitops.ConfigSyncDir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		nodes, err := kio.FromBytes(data)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		for _, n := range nodes {
			if n.GetKind() == "RootSync" {
				out[ctx] = untracked{engine: gitops.ConfigSync, namespace: n.GetNamespace(), name: n.GetName()}
			}
		}
	}
	return out, nil
}

// argoTargets reads the ApplicationSet's list elements: each context's
// Application name.
func argoTargets(p string, data []byte) (map[string]untracked, error) {
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	out := map[string]untracked{}
	for _, n := range nodes {
		if n.GetKind() != "ApplicationSet" {
			continue
		}
		elems, err := n.Pipe(yaml.Lookup("spec", "generators", "0", "list", "elements"))
		if err != nil || elems == nil {
			return nil, fmt.Errorf("%s: ApplicationSet %s has no list generator elements", p, n.GetName())
		}
		list, err := elems.Elements()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, el := range list {
			ctx, _ := el.GetString("context")
			name, _ := el.GetString("name")
			if ctx != "" {
				out[ctx] = untracked{engine: gitops.ArgoCD, namespace: n.GetNamespace(), name: name}
			}
		}
	}
	return out, nil
}
