package status

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
)

// ObjectHealth is kstatus' verdict on one live object.
type ObjectHealth struct {
	Ref     v1alpha1.ObjectRef
	Status  string
	Message string
}

// HealthChecker reads a set of objects from one cluster, as status reads
// them (batched lists and gets), and computes each one's kstatus: what
// apply polls while a wave bakes.
type HealthChecker struct {
	dynamic dynamic.Interface
	batches []*batch
	refs    []v1alpha1.ObjectRef
}

// NewHealthChecker prepares the reads of objs in the cluster of f.
func NewHealthChecker(f cmdutil.Factory, objs []*unstructured.Unstructured) (*HealthChecker, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	refs := make([]v1alpha1.ObjectRef, 0, len(objs))
	for _, u := range objs {
		refs = append(refs, refOf(u))
	}
	batches, unserved, err := groupReads(cluster.MemoMapper(mapper), refs)
	if err != nil {
		return nil, err
	}
	_ = unserved // never found: reported NotFound
	return &HealthChecker{dynamic: dyn, batches: splitSmall(batches, listMin), refs: refs}, nil
}

// Check reads every object once and returns those that are not Current
// (NotFound included), in the order they were given.
func (h *HealthChecker) Check(ctx context.Context) ([]ObjectHealth, error) {
	live, err := readLive(ctx, h.dynamic, h.batches, readsPerContext)
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
