package status

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// ObjectHealth is kstatus' verdict on one live object.
type ObjectHealth struct {
	Ref     v1alpha1.ObjectRef
	Status  string
	Message string
}

// HealthChecker reads a set of objects from one cluster with a Reader
// (batched lists and gets), and computes each one's kstatus: what apply
// polls while a wave bakes. The reads are grouped once, for every check.
type HealthChecker struct {
	reader  *Reader
	batches []*batch
	refs    []v1alpha1.ObjectRef
}

// NewHealthChecker prepares the reads of objs in the cluster of f.
func NewHealthChecker(f cmdutil.Factory, objs []*unstructured.Unstructured) (*HealthChecker, error) {
	r, err := NewReader(f)
	if err != nil {
		return nil, err
	}
	refs := make([]v1alpha1.ObjectRef, 0, len(objs))
	for _, u := range objs {
		refs = append(refs, refOf(u))
	}
	batches, _, err := groupReads(r.mapper, refs) // unserved kinds are never found: reported NotFound
	if err != nil {
		return nil, err
	}
	return &HealthChecker{reader: r, batches: splitSmall(batches, listMin), refs: refs}, nil
}

// Check reads every object once and returns those that are not Current
// (NotFound included), in the order they were given.
func (h *HealthChecker) Check(ctx context.Context) ([]ObjectHealth, error) {
	live, err := readLive(ctx, h.reader.dynamic, h.batches, readsPerContext)
	if err != nil {
		return nil, err
	}
	var bad []ObjectHealth
	for _, r := range h.refs {
		st, msg := health(live[r])
		if st != v1alpha1.StatusCurrent {
			bad = append(bad, ObjectHealth{Ref: r, Status: st, Message: msg})
		}
	}
	return bad, nil
}
