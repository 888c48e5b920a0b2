package datastore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/config"
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
//
// A Kamaji DataStore holds bare host:port endpoints and Kamaji always
// connects with https://, so an endpoint that is http://, or carries a path,
// a query or user information, has no Kamaji form: the flag Kamaji would
// build would differ from `overrides -o flag`. Kamaji then returns an error
// naming each such endpoint, and no overrides.
func Kamaji(c *config.Config, ctx int) ([]KamajiOverride, error) {
	var errs []error
	for _, e := range Entries(c, ctx) {
		for _, ep := range e.Servers {
			if why := notKamaji(ep); why != "" {
				errs = append(errs, fmt.Errorf("context %q, datastore %q: endpoint %q has no Kamaji form: %s; a Kamaji DataStore takes bare host:port endpoints and always connects with https://, so the flag Kamaji builds would differ from `overrides -o flag` (use https://host:port endpoints, or -o flag)",
					c.Names[ctx], e.DataStore, ep, why))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := []KamajiOverride{}
	for _, e := range Entries(c, ctx) {
		name := e.DataStore
		if ds, _ := c.DataStore(ctx, e.DataStore); ds.KamajiDataStore != "" {
			name = ds.KamajiDataStore
		}
		out = append(out, KamajiOverride{Resource: e.Resource.String(), DataStore: name})
	}
	return out, nil
}

// notKamaji says why an endpoint (validated as an http or https URL with a
// host) cannot be written as a Kamaji DataStore endpoint, "" when it can.
func notKamaji(ep string) string {
	u, err := url.Parse(ep)
	if err != nil {
		return err.Error()
	}
	var why []string
	if u.Scheme != "https" {
		why = append(why, fmt.Sprintf("it is %s://, not https://", u.Scheme))
	}
	if u.User != nil {
		why = append(why, "it carries user information")
	}
	if u.Path != "" || u.RawPath != "" {
		why = append(why, fmt.Sprintf("it has a path (%q)", u.Path))
	}
	if u.RawQuery != "" || u.ForceQuery {
		why = append(why, "it has a query")
	}
	return strings.Join(why, ", ")
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
