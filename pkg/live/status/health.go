package status

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// health is kstatus' verdict on a live object, as `kpt live status` and
// `kpt live apply`'s wait compute it; NotFound for an object not found.
func health(live *unstructured.Unstructured) (status, message string) {
	if live == nil {
		return v1alpha1.StatusNotFound, ""
	}
	res, err := kstatus.Compute(live)
	if err != nil {
		return v1alpha1.StatusUnknown, err.Error()
	}
	return res.Status.String(), res.Message
}
