package function

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/route"
)

// placements reports each Namespace that spec.placement placed, so that a
// new placement is visible in review before it becomes sticky.
func (c *Config) placements(items []Item, out *Outcome) framework.Results {
	var res framework.Results
	for i, d := range out.Plan.Decisions {
		if d.Reason != route.Placed {
			continue
		}
		it := &items[i]
		msg := fmt.Sprintf("%s placed on context %q by spec.placement (%s); the context annotation keeps it there",
			describe(it), out.Contexts[i], c.Spec.Spec.Placement.Strategy)
		if d.Label != nil {
			msg += fmt.Sprintf(", and the label %s=%s records it", d.Label.Key, d.Label.Value)
		}
		res = append(res, itemResult(it, framework.Info, "", msg))
	}
	return res
}

// ApplyItem writes what the outcome decided for item i on its node: the two
// annotations, and the placement label if any. It touches the node only
// where a value differs, so a second run changes nothing.
func (o *Outcome) ApplyItem(i int, rn *yaml.RNode) error {
	if err := Apply(rn, o.Contexts[i], o.DataStores[i]); err != nil {
		return err
	}
	l := o.Plan.Decisions[i].Label
	if l == nil || o.Contexts[i] == "" {
		return nil
	}
	if v, ok := rn.GetLabels()[l.Key]; ok && v == l.Value {
		return nil
	}
	return rn.PipeE(yaml.SetLabel(l.Key, l.Value))
}
