package status

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// resourceGroupKind is kpt's inventory kind.
var resourceGroupKind = schema.GroupKind{Group: "kpt.dev", Kind: "ResourceGroup"}

// readInventory reads the objects the live ResourceGroup lists. found is
// false when the cluster has no such ResourceGroup, or not even its CRD.
func (cl *conn) readInventory(ctx context.Context, inv inventoryRef) (refs []v1alpha1.ObjectRef, found bool, err error) {
	m, err := cl.mapper.RESTMapping(resourceGroupKind)
	if meta.IsNoMatchError(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	u, err := cl.dynamic.Resource(m.Resource).Namespace(inv.Namespace).Get(ctx, inv.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	refs, err = inventoryRefs(u)
	return refs, true, err
}

// inventoryRefs reads spec.resources: {group, kind, namespace, name}.
func inventoryRefs(rg *unstructured.Unstructured) ([]v1alpha1.ObjectRef, error) {
	items, _, err := unstructured.NestedSlice(rg.Object, "spec", "resources")
	if err != nil {
		return nil, fmt.Errorf("spec.resources: %w", err)
	}
	refs := make([]v1alpha1.ObjectRef, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.resources[%d]: not an object", i)
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		refs = append(refs, v1alpha1.ObjectRef{Group: s("group"), Kind: s("kind"), Namespace: s("namespace"), Name: s("name")})
	}
	return refs, nil
}
