package datastore

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// KamajiOverride is one entry of a Kamaji TenantControlPlane's
// spec.dataStoreOverrides: the storage group/resource in the flag's syntax
// and the name of a cluster-scoped Kamaji DataStore.
type KamajiOverride struct {
	Resource  string `json:"resource" yaml:"resource"`
	DataStore string `json:"dataStore" yaml:"dataStore"`
}

// Kamaji returns context ctx's overrides in Kamaji's shape, in
// dataStoreOverrides order; the DataStore is the context's kamajiDataStore
// for the logical datastore, else its logical name.
func (t *Table) Kamaji(ctx int) []KamajiOverride {
	out := []KamajiOverride{}
	for _, e := range t.Entries(ctx) {
		name := e.DataStore
		if k := t.stores[ctx][e.DataStore].KamajiDataStore; k != "" {
			name = k
		}
		out = append(out, KamajiOverride{Resource: e.Resource.String(), DataStore: name})
	}
	return out
}

// KamajiFragment renders `dataStoreOverrides: [...]`, the fragment of a
// TenantControlPlane spec for one context.
func KamajiFragment(overrides []KamajiOverride) *yaml.RNode {
	list := yaml.NewListRNode()
	for _, o := range overrides {
		list.YNode().Content = append(list.YNode().Content, yaml.NewMapRNode(nil).YNode())
		item := yaml.NewRNode(list.YNode().Content[len(list.YNode().Content)-1])
		// Fields in Kamaji's order, which a map would lose.
		item.YNode().Content = append(item.YNode().Content,
			yaml.NewStringRNode("resource").YNode(), yaml.NewStringRNode(o.Resource).YNode(),
			yaml.NewStringRNode("dataStore").YNode(), yaml.NewStringRNode(o.DataStore).YNode())
	}
	if len(overrides) == 0 {
		list.YNode().Style = yaml.FlowStyle
	}
	frag := yaml.NewMapRNode(nil)
	frag.YNode().Content = append(frag.YNode().Content, yaml.NewStringRNode("dataStoreOverrides").YNode(), list.YNode())
	return frag
}

// FormatKamaji renders the fragments of several contexts as one YAML
// mapping keyed by context, in the given order.
func FormatKamaji(contexts []string, overrides [][]KamajiOverride) (string, error) {
	doc := yaml.NewMapRNode(nil)
	for i, ctx := range contexts {
		doc.YNode().Content = append(doc.YNode().Content, yaml.NewStringRNode(ctx).YNode(), KamajiFragment(overrides[i]).YNode())
	}
	return doc.String()
}
