package function

import (
	"fmt"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
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
	l := o.Plan.Decisions[i].Label
	if o.Contexts[i] != "" && sharedMetadata(rn.YNode(), l != nil) {
		if err := deAnchor(rn); err != nil {
			return fmt.Errorf("cannot write its annotations without changing the places its YAML anchors are used, nor expand them: %w", err)
		}
	}
	if err := Apply(rn, o.Contexts[i], o.DataStores[i]); err != nil {
		return err
	}
	if l == nil || o.Contexts[i] == "" {
		return nil
	}
	if v, ok := rn.GetLabels()[l.Key]; ok && v == l.Value {
		return nil
	}
	return rn.PipeE(yaml.SetLabel(l.Key, l.Value))
}

// sharedMetadata reports whether writing metadata.annotations (and, with
// labels, metadata.labels) of an item could change another place or miss
// what the object holds: the item, metadata or the map written to is an
// alias, carries an anchor, has anchors or aliases inside, or is built with
// merge keys. kyaml would write into the anchored map, so the annotations
// would leak to every place that uses it (a label map also used as a
// selector). Such an item is de-anchored before it is written: the object
// is the same, spelled without aliases and merge keys.
func sharedMetadata(item *yaml.Node, labels bool) bool {
	if item == nil || item.Kind != yaml.MappingNode {
		return false
	}
	if item.Anchor != "" || hasMergeKey(item) {
		return true
	}
	meta := explicitField(item, "metadata")
	if meta == nil {
		return false
	}
	if meta.Kind == yaml.AliasNode || meta.Anchor != "" || (meta.Kind == yaml.MappingNode && hasMergeKey(meta)) {
		return true
	}
	fields := []string{"annotations"}
	if labels {
		fields = append(fields, "labels")
	}
	for _, f := range fields {
		if v := explicitField(meta, f); v != nil && (hasAnchors(v) || (v.Kind == yaml.MappingNode && hasMergeKey(v))) {
			return true
		}
	}
	return false
}

// explicitField returns the value node of a mapping's key as written (no
// alias followed), nil when absent; a key spelled as an alias counts as
// the field, so that it is de-anchored too.
func explicitField(m *yaml.Node, name string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind == yaml.AliasNode && deref(k) != nil && deref(k).Value == name {
			return &yaml.Node{Kind: yaml.AliasNode, Alias: deref(k)}
		}
		if k.Value == name {
			return m.Content[i+1]
		}
	}
	return nil
}

// deAnchor expands every alias and merge key of an item (kyaml's DeAnchor).
// kyaml's bookkeeping may have written its resource id into a shared
// annotations map before the function runs; it is taken out first and put
// back on metadata.annotations alone, so that no copy keeps it.
func deAnchor(rn *yaml.RNode) error {
	annos, k, key, value := takeResourceID(rn.YNode())
	if err := rn.DeAnchor(); err != nil {
		if annos != nil { // leave the item as it was
			annos.Content = slices.Insert(annos.Content, k, key, value)
		}
		return err
	}
	if annos != nil {
		return rn.PipeE(yaml.SetAnnotation(key.Value, value.Value))
	}
	return nil
}

// takeResourceID removes kyaml's resource id annotation from the
// annotations map the item reads (through aliases and merge keys), and
// returns where it was; annos is nil when there was none.
func takeResourceID(item *yaml.Node) (annos *yaml.Node, k int, key, value *yaml.Node) {
	annos = lookup(lookup(item, "metadata"), "annotations")
	if annos == nil || annos.Kind != yaml.MappingNode {
		return nil, 0, nil, nil
	}
	for k = 0; k+1 < len(annos.Content); k += 2 {
		if annos.Content[k].Value == kioutil.InternalAnnotationsMigrationResourceIDAnnotation {
			key, value = annos.Content[k], annos.Content[k+1]
			annos.Content = slices.Delete(annos.Content, k, k+2)
			return annos, k, key, value
		}
	}
	return nil, 0, nil, nil
}
