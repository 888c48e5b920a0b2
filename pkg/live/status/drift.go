package status

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// driftCheck is one object whose drift the local check could not rule out.
type driftCheck struct {
	ref      v1alpha1.ObjectRef
	resource dynamic.ResourceInterface
	want     *unstructured.Unstructured
	live     *unstructured.Unstructured
}

// drift returns the fields of the package that an apply would change in
// the live object: none when the live object already holds every field the
// package sets, else the fields where a server-side dry-run apply of the
// package (as fieldManager, forced, as an apply would be) differs from the
// live object. Fields the package does not set, such as a Deployment's
// defaults or a Service's clusterIP, are never drift.
func (c driftCheck) drift(ctx context.Context, fieldManager string) (v1alpha1.Drift, error) {
	if covers(c.live.Object, c.want.Object) {
		return nil, nil
	}
	after, err := c.resource.Apply(ctx, c.want.GetName(), c.want, metav1.ApplyOptions{
		FieldManager: fieldManager, Force: true, DryRun: []string{metav1.DryRunAll},
	})
	if err != nil {
		return nil, fmt.Errorf("server-side dry-run apply: %w", err)
	}
	live := c.live
	if after.GetResourceVersion() != live.GetResourceVersion() {
		// The object changed since it was read: compare with what the
		// dry-run saw, not with a change made in between.
		if live, err = c.resource.Get(ctx, c.want.GetName(), metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("reading it again after the dry-run: %w", err)
		}
	}
	return changedFields(live.Object, after.Object), nil
}
