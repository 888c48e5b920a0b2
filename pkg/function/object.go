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

	"github.com/shard-router/shard-router/internal/yamlio"
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
	// ShardConfig is, in function mode, the node of a ShardConfig item,
	// which is the function config when kpt passes none (withConfig).
	ShardConfig *yaml.RNode
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

// withConfig is a function mode item: ShardConfig set when it is one.
func withConfig(it Item, rn *yaml.RNode) Item {
	if it.APIVersion == v1alpha1.APIVersion && it.Kind == v1alpha1.Kind {
		it.ShardConfig = rn
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

func mapping(rn *yaml.RNode, name string) *yaml.RNode {
	if f := yamlio.Lookup(rn.YNode(), name); f != nil && f.Kind == yaml.MappingNode {
		return yaml.NewRNode(f)
	}
	return nil
}

// scalar returns a scalar field's value, "" when absent or not a scalar.
func scalar(rn *yaml.RNode, name string) string {
	if f := yamlio.Lookup(rn.YNode(), name); f != nil && f.Kind == yaml.ScalarNode {
		return f.Value
	}
	return ""
}

// stringMap reads a mapping of scalars (labels, annotations) as lookup
// does, merge keys expanded; entries that are not scalars are skipped.
func stringMap(rn *yaml.RNode, name string) map[string]string {
	f := yamlio.Lookup(rn.YNode(), name)
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
	if !yamlio.HasMergeKey(f) {
		for i := 0; i+1 < len(f.Content); i += 2 {
			add(yamlio.Deref(f.Content[i]), yamlio.Deref(f.Content[i+1]))
		}
		return out
	}
	yamlio.MergedFields(f, 0, add)
	return out
}

// isList reports a list of resources: kind List, or a kind ending in List
// with top-level items (ConfigMapList, RoleBindingList, ...).
func isList(rn *yaml.RNode, kind string) bool {
	if kind != "List" && !strings.HasSuffix(kind, "List") {
		return false
	}
	items := yamlio.Lookup(rn.YNode(), "items")
	return kind == "List" || (items != nil && items.Kind == yaml.SequenceNode)
}
