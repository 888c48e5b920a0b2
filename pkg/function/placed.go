package function

import (
	"fmt"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/route"
)

// placedNamespaces reports each Namespace that spec.placement placed, so that a
// new placement is visible in review before it becomes sticky.
func (c *Engine) placedNamespaces(items []Item, out *Outcome) framework.Results {
	var res framework.Results
	for i, d := range out.Routing.Decisions {
		if d.Reason != route.Placed {
			continue
		}
		it := &items[i]
		msg := fmt.Sprintf("%s placed on context %q by spec.placement (%s); the context annotation keeps it there",
			it.Describe(), out.Contexts[i], c.Config.Placement.Strategy)
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
	return o.apply(i, rn, o.Contexts[i], o.DataStores[i])
}

// ApplyItemIn is ApplyItem for the copy of item i that one context's
// package holds (split): its annotations name that context and its
// datastore there, and nothing else, so that what a cluster receives never
// depends on which other contexts exist. The item must be routed there.
func (o *Outcome) ApplyItemIn(i int, rn *yaml.RNode, context, dataStore string) error {
	if o.Contexts[i] == "" {
		return fmt.Errorf("item %d is not routed", i)
	}
	return o.apply(i, rn, context, dataStore)
}

func (o *Outcome) apply(i int, rn *yaml.RNode, contexts, dataStores string) error {
	l := o.Routing.Decisions[i].Label
	if contexts != "" && sharedMetadata(rn.YNode(), l != nil) {
		if err := deAnchor(rn); err != nil {
			return fmt.Errorf("cannot write its annotations without changing the places its YAML anchors are used, nor expand them: %w", err)
		}
	}
	if err := Apply(rn, contexts, dataStores); err != nil {
		return err
	}
	if l == nil || contexts == "" {
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
	if item.Anchor != "" || yamlio.HasMergeKey(item) {
		return true
	}
	meta := explicitField(item, "metadata")
	if meta == nil {
		return false
	}
	if meta.Kind == yaml.AliasNode || meta.Anchor != "" || (meta.Kind == yaml.MappingNode && yamlio.HasMergeKey(meta)) {
		return true
	}
	fields := []string{"annotations"}
	if labels {
		fields = append(fields, "labels")
	}
	for _, f := range fields {
		if v := explicitField(meta, f); v != nil && (yamlio.HasAnchors(v) || (v.Kind == yaml.MappingNode && yamlio.HasMergeKey(v))) {
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
		if k.Kind == yaml.AliasNode && yamlio.Deref(k) != nil && yamlio.Deref(k).Value == name {
			return &yaml.Node{Kind: yaml.AliasNode, Alias: yamlio.Deref(k)}
		}
		if k.Value == name {
			return m.Content[i+1]
		}
	}
	return nil
}

// deAnchor expands every alias and merge key of an item (kyaml's DeAnchor).
// kpt's and kyaml's bookkeeping annotations (path, index, ids) were written
// into the annotations map the item reads, which other places may share:
// they are taken out first and put back on metadata.annotations alone, so
// that no copy keeps them (kpt would strip them from metadata.annotations
// only, and a label map copied from the annotations would keep them).
func deAnchor(rn *yaml.RNode) error {
	taken := takeBookkeeping(rn.YNode())
	if err := rn.DeAnchor(); err != nil {
		taken.restore() // leave the item as it was
		return err
	}
	for _, kv := range taken.entries {
		if err := rn.PipeE(yaml.SetAnnotation(kv.key.Value, kv.value.Value)); err != nil {
			return err
		}
	}
	return nil
}

// bookkeeping is what takeBookkeeping removed from an annotations map.
type bookkeeping struct {
	annos   *yaml.Node
	entries []struct {
		at         int
		key, value *yaml.Node
	}
}

// takeBookkeeping removes kpt's and kyaml's local annotations (those
// SerializedSize leaves out but shard-router's own) from the annotations
// map the item reads, through aliases and merge keys.
func takeBookkeeping(item *yaml.Node) *bookkeeping {
	b := &bookkeeping{annos: yamlio.Lookup(yamlio.Lookup(item, "metadata"), "annotations")}
	if b.annos == nil || b.annos.Kind != yaml.MappingNode {
		b.annos = nil
		return b
	}
	kept := b.annos.Content[:0:0]
	for k := 0; k+1 < len(b.annos.Content); k += 2 {
		key, value := b.annos.Content[k], b.annos.Content[k+1]
		if key.Kind == yaml.ScalarNode && yamlio.Bookkeeping(key.Value) {
			b.entries = append(b.entries, struct {
				at         int
				key, value *yaml.Node
			}{k, key, value})
			continue
		}
		kept = append(kept, key, value)
	}
	if len(b.entries) > 0 {
		b.annos.Content = kept
	}
	return b
}

// restore puts the removed annotations back where they were.
func (b *bookkeeping) restore() {
	for _, e := range b.entries { // ascending positions
		b.annos.Content = slices.Insert(b.annos.Content, e.at, e.key, e.value)
	}
}
