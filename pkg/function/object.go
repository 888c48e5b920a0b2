// Package function is shard-router's KRM function: it loads the function
// config, routes every item with package route, assigns datastores with
// package datastore, and annotates the items, reporting through results.
package function

import (
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/route"
)

// Item is what the function reads from one input resource.
type Item struct {
	route.Object
	// DataStore is the current datastore annotation; HasDataStore is false
	// when it is absent.
	DataStore    string
	HasDataStore bool
	// Path and Index locate the resource in the package, for results.
	Path  string
	Index int
	// HasIndex is false when kpt gave no index annotation.
	HasIndex bool
	// Size is the object's SerializedSize, for capacity.
	Size int64
}

// ItemOf reads the routing facts of one resource node.
func ItemOf(rn *yaml.RNode) Item {
	var it Item
	it.APIVersion = scalar(rn, "apiVersion")
	it.Kind = scalar(rn, "kind")
	it.List = isList(rn, it.Kind)
	it.Size = SerializedSize(rn)
	if m := mapping(rn, "metadata"); m != nil {
		it.Name = scalar(m, "name")
		it.Namespace = scalar(m, "namespace")
		it.Labels = stringMap(m, "labels")
		annos := stringMap(m, "annotations")
		if v, ok := annos[v1alpha1.ContextAnnotation]; ok {
			it.Previous = route.ParseContexts(v)
			it.HasPrevious = len(it.Previous) > 0
		}
		if v, ok := annos[v1alpha1.DataStoreAnnotation]; ok {
			it.DataStore, it.HasDataStore = v, true
		}
		if v, ok := annos[filters.LocalConfigAnnotation]; ok && v != "false" {
			it.LocalConfig = true
		}
		it.Path = firstOf(annos, string(kioutil.PathAnnotation), string(kioutil.LegacyPathAnnotation))
		if idx := firstOf(annos, string(kioutil.IndexAnnotation), string(kioutil.LegacyIndexAnnotation)); idx != "" {
			if n, err := strconv.Atoi(idx); err == nil {
				it.Index, it.HasIndex = n, true
			}
		}
	}
	if it.Kind == "CustomResourceDefinition" && it.Group() == "apiextensions.k8s.io" {
		if spec := mapping(rn, "spec"); spec != nil {
			crd := &route.CRD{Group: scalar(spec, "group"), Scope: scalar(spec, "scope")}
			if names := mapping(spec, "names"); names != nil {
				crd.Kind = scalar(names, "kind")
			}
			it.CRD = crd
		}
	}
	return it
}

func firstOf(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return ""
}

// lookup returns the value node of a mapping's key as a YAML 1.1 loader
// (kubectl's, kpt's) reads it, so that routing sees the object that reaches
// kube-apiserver: aliases are followed (a label map written as *anchor
// routes like the map it names), and merge keys (<<: *base) are expanded,
// explicit keys first, then each merged map in order. The common case, a
// mapping without merge keys, is one scan.
func lookup(n *yaml.Node, name string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	merges := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if isMergeKey(k) {
			merges = true
			continue
		}
		if k.Value == name {
			return deref(n.Content[i+1])
		}
	}
	if !merges {
		return nil
	}
	var found *yaml.Node
	mergedFields(n, 0, func(k, v *yaml.Node) bool {
		if k.Value == name {
			found = v
			return false
		}
		return true
	})
	return found
}

// maxMergeDepth bounds merges of merges, against pathological inputs.
const maxMergeDepth = 16

// isMergeKey reports a YAML 1.1 merge key: a plain <<, not a quoted one.
func isMergeKey(k *yaml.Node) bool {
	return k != nil && k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// hasMergeKey reports whether a mapping has a merge key of its own.
func hasMergeKey(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if isMergeKey(deref(m.Content[i])) {
			return true
		}
	}
	return false
}

// mergedFields calls yield for the fields of mapping m in YAML 1.1 merge
// order: its explicit keys, then those of each merged map (earlier maps of a
// merge sequence first, recursively). A key can come more than once; the
// first is the one that counts. It stops when yield returns false.
func mergedFields(m *yaml.Node, depth int, yield func(k, v *yaml.Node) bool) bool {
	m = deref(m)
	if m == nil || m.Kind != yaml.MappingNode || depth > maxMergeDepth {
		return true
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := deref(m.Content[i])
		if isMergeKey(k) {
			merges = append(merges, deref(m.Content[i+1]))
			continue
		}
		if k != nil && !yield(k, deref(m.Content[i+1])) {
			return false
		}
	}
	for _, v := range merges {
		if v != nil && v.Kind == yaml.SequenceNode {
			for _, e := range v.Content {
				if !mergedFields(e, depth+1, yield) {
					return false
				}
			}
		} else if !mergedFields(v, depth+1, yield) {
			return false
		}
	}
	return true
}

func deref(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode && depth < 16; depth++ {
		n = n.Alias
	}
	return n
}

func mapping(rn *yaml.RNode, name string) *yaml.RNode {
	if f := lookup(rn.YNode(), name); f != nil && f.Kind == yaml.MappingNode {
		return yaml.NewRNode(f)
	}
	return nil
}

// scalar returns a scalar field's value, "" when absent or not a scalar.
func scalar(rn *yaml.RNode, name string) string {
	if f := lookup(rn.YNode(), name); f != nil && f.Kind == yaml.ScalarNode {
		return f.Value
	}
	return ""
}

// stringMap reads a mapping of scalars (labels, annotations) as lookup
// does, merge keys expanded; entries that are not scalars are skipped.
func stringMap(rn *yaml.RNode, name string) map[string]string {
	f := lookup(rn.YNode(), name)
	if f == nil || f.Kind != yaml.MappingNode {
		return nil
	}
	out := make(map[string]string, len(f.Content)/2)
	add := func(k, v *yaml.Node) bool {
		if _, dup := out[k.Value]; !dup && v != nil && v.Kind == yaml.ScalarNode { // first wins, as in kyaml
			out[k.Value] = v.Value
		}
		return true
	}
	if !hasMergeKey(f) {
		for i := 0; i+1 < len(f.Content); i += 2 {
			add(deref(f.Content[i]), deref(f.Content[i+1]))
		}
		return out
	}
	mergedFields(f, 0, add)
	return out
}

// isList reports a list of resources: kind List, or a kind ending in List
// with top-level items (ConfigMapList, RoleBindingList, ...).
func isList(rn *yaml.RNode, kind string) bool {
	if kind != "List" && !strings.HasSuffix(kind, "List") {
		return false
	}
	items := lookup(rn.YNode(), "items")
	return kind == "List" || (items != nil && items.Kind == yaml.SequenceNode)
}
