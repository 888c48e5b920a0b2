package function

import (
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/route"
)

// Report is `shard-router report`'s document: the capacity, the
// Namespaces placed, and the errors and warnings.
func (out *Outcome) Report(items []Item) *v1alpha1.CapacityReport {
	r := &v1alpha1.CapacityReport{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.CapacityReportKind), Capacity: out.Capacity,
		Placed: []v1alpha1.PlacedNamespace{}, Results: framework.Results{}}
	for i, d := range out.Routing.Decisions {
		if d.Reason != route.Placed {
			continue
		}
		p := v1alpha1.PlacedNamespace{Namespace: items[i].Name, Context: out.Contexts[i]}
		if d.Label != nil {
			p.Label = d.Label.Key + "=" + d.Label.Value
		}
		r.Placed = append(r.Placed, p)
	}
	for _, res := range out.Results {
		if res.Severity == framework.Error || res.Severity == framework.Warning {
			r.Results = append(r.Results, res)
		}
	}
	return r
}
