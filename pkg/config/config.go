// Package config compiles a validated ShardConfig, once, into what every
// consumer needs: context names and their index, compiled label selectors
// and their index, placement weights and labels, and the dataStoreOverrides
// checked against kube-apiserver's storage. Routing (pkg/route), datastore
// assignment (pkg/datastore), the function, split and the commands all read
// the same *Config; none compiles its own.
package config

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/kinds"
)

// Config is a ShardConfig, validated and compiled.
type Config struct {
	// Source is the validated ShardConfig it was compiled from.
	Source *v1alpha1.ShardConfig
	// Names are the context names in declaration order; contexts are
	// referred to by their position in it.
	Names []string
	index map[string]int
	// NamespaceSelectors and ResourceSelectors are per context; nil where
	// the selector is absent (it matches nothing).
	NamespaceSelectors, ResourceSelectors []labels.Selector
	// NamespaceIndex and ResourceIndex find the selectors that match a
	// label set without evaluating them all.
	NamespaceIndex, ResourceIndex *SelectorIndex
	// DefaultContext is the index of spec.defaultContext, or -1.
	DefaultContext int
	// Placement is spec.placement, compiled; nil without it.
	Placement *Placement
	// Overrides are the dataStoreOverrides, in config order.
	Overrides []Override
	byGR      map[kinds.GroupResource]int
	// stores[ctx] maps each datastore a context declares to its entry.
	stores []map[string]v1alpha1.DataStore
	// Policy is what the spec allows, read once.
	Policy Policy
}

// Policy is what a ShardConfig allows: the allow* switches and the
// mass-deletion guard's limits (defaults applied).
type Policy struct {
	AllowMoves, AllowDataStoreChanges, AllowMassPrune bool
	// PruneMaxPercent and PruneMinObjects are spec.pruneGuard's maxPercent
	// and minObjects.
	PruneMaxPercent, PruneMinObjects int
}

// Contexts are spec.contexts, in declaration order.
func (c *Config) Contexts() []v1alpha1.Context { return c.Source.Spec.Contexts }

// Placement is spec.placement, compiled.
type Placement struct {
	// Strategy is spec.placement.strategy.
	Strategy v1alpha1.PlacementStrategy
	// Weights are per context; 0 never receives a new Namespace.
	Weights []uint32
	// Label is spec.placement.label; nil without it.
	Label *PlacementLabel
}

// PlacementLabel is spec.placement.label, compiled.
type PlacementLabel struct {
	Key string
	// Values are per context.
	Values  []string
	byValue map[string]int
}

// Context returns the context whose label value is v, if any.
func (l *PlacementLabel) Context(v string) (int, bool) {
	c, ok := l.byValue[v]
	return c, ok
}

// Override is one validated dataStoreOverrides entry.
type Override struct {
	// Resource is the canonical storage group/resource (after cohabitation).
	Resource  kinds.GroupResource
	DataStore string
	Ephemeral bool
}

// Notice is a warning about the config, such as a normalised override.
type Notice struct {
	Field   string
	Message string
}

// Load reads, validates (v1alpha1.Load: either form) and compiles a
// function config node.
func Load(node *yaml.RNode) (*Config, []Notice, field.ErrorList) {
	cfg, errs := v1alpha1.Load(node)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return Compile(cfg)
}

// Compile compiles a config that passed Validate. It checks what
// validation cannot without the table of built-in resources: each
// dataStoreOverrides resource must be one that kube-apiserver 1.34 stores
// under its core storage factory (and stricter: a built-in stored resource
// the core storage factory serves).
func Compile(cfg *v1alpha1.ShardConfig) (*Config, []Notice, field.ErrorList) {
	spec := &cfg.Spec
	n := len(spec.Contexts)
	c := &Config{
		Source:             cfg,
		Names:              make([]string, n),
		index:              make(map[string]int, n),
		NamespaceSelectors: make([]labels.Selector, n),
		ResourceSelectors:  make([]labels.Selector, n),
		DefaultContext:     -1,
		byGR:               map[kinds.GroupResource]int{},
		stores:             make([]map[string]v1alpha1.DataStore, n),
		Policy: Policy{AllowMoves: spec.AllowMoves, AllowDataStoreChanges: spec.AllowDataStoreChanges,
			AllowMassPrune: spec.AllowMassPrune},
	}
	c.Policy.PruneMaxPercent, c.Policy.PruneMinObjects = spec.PruneGuard.Limits()
	var errs field.ErrorList
	for i := range spec.Contexts {
		ctx := &spec.Contexts[i]
		p := field.NewPath("spec", "contexts").Index(i)
		c.Names[i] = ctx.Name
		c.index[ctx.Name] = i
		var err error
		if c.NamespaceSelectors[i], err = selector(ctx.NamespaceSelector); err != nil {
			errs = append(errs, field.Invalid(p.Child("namespaceSelector"), nil, err.Error()))
		}
		if c.ResourceSelectors[i], err = selector(ctx.ResourceSelector); err != nil {
			errs = append(errs, field.Invalid(p.Child("resourceSelector"), nil, err.Error()))
		}
		c.stores[i] = map[string]v1alpha1.DataStore{}
		for _, ds := range ctx.DataStores {
			c.stores[i][ds.Name] = ds
		}
	}
	c.NamespaceIndex, c.ResourceIndex = NewSelectorIndex(c.NamespaceSelectors), NewSelectorIndex(c.ResourceSelectors)
	if spec.DefaultContext != "" {
		c.DefaultContext = c.index[spec.DefaultContext]
	}
	if pl := spec.Placement; pl != nil {
		c.Placement = &Placement{Strategy: pl.Strategy, Weights: make([]uint32, n)}
		for i := range spec.Contexts {
			c.Placement.Weights[i] = uint32(max(spec.Contexts[i].PlacementWeight(), 0))
		}
		if l := pl.Label; l != nil {
			c.Placement.Label = &PlacementLabel{Key: l.Key, Values: make([]string, n), byValue: map[string]int{}}
			for i, name := range c.Names {
				c.Placement.Label.Values[i] = l.Values[name]
				c.Placement.Label.byValue[l.Values[name]] = i
			}
		}
	}
	notices, oerrs := c.compileOverrides(spec.DataStoreOverrides)
	if errs = append(errs, oerrs...); len(errs) > 0 {
		return nil, notices, errs
	}
	return c, notices, nil
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

func (c *Config) compileOverrides(overrides []v1alpha1.DataStoreOverride) ([]Notice, field.ErrorList) {
	var errs field.ErrorList
	var notices []Notice
	for i, o := range overrides {
		p := field.NewPath("spec", "dataStoreOverrides").Index(i).Child("resource")
		if o.Resource == "" {
			continue // Validate reported it
		}
		gr, err := ParseResource(o.Resource)
		if err != nil {
			errs = append(errs, field.Invalid(p, o.Resource, err.Error()))
			continue
		}
		canonical, normalised, ok := kinds.StoredResource(gr)
		if !ok {
			errs = append(errs, field.Invalid(p, o.Resource, notStoredReason(gr)))
			continue
		}
		if normalised {
			notices = append(notices, Notice{Field: p.String(), Message: fmt.Sprintf(
				"%q is stored by kube-apiserver as %q (cohabiting resources share one storage); using %q, which also covers %q",
				o.Resource, canonical.String(), canonical.String(), o.Resource)})
		}
		if j, dup := c.byGR[canonical]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (stored as %s, like spec.dataStoreOverrides[%d])", o.Resource, canonical, j)))
			continue
		}
		c.byGR[canonical] = len(c.Overrides)
		c.Overrides = append(c.Overrides, Override{Resource: canonical, DataStore: o.DataStore, Ephemeral: o.Ephemeral})
	}
	return notices, errs
}

// ParseResource reads an override's resource: "group/resource" exactly as
// the kube-apiserver flag writes it, with the core group empty.
func ParseResource(s string) (kinds.GroupResource, error) {
	if strings.HasPrefix(s, "/registry/") || strings.Count(s, "/") > 1 {
		return kinds.GroupResource{}, fmt.Errorf("looks like an etcd key path; write the storage group/resource instead, e.g. \"/events\" or \"coordination.k8s.io/leases\"")
	}
	return kinds.ParseGroupResource(s)
}

func notStoredReason(gr kinds.GroupResource) string {
	return fmt.Sprintf("%s is not a built-in resource that kube-apiserver %s stores under its core storage factory, so an override for it would do nothing (custom resources, CRDs, APIServices, aggregated and virtual resources are never overridden; check the group and the plural resource name)", gr, kinds.Release())
}

// Index returns the position of the named context, or -1.
func (c *Config) Index(name string) int {
	if i, ok := c.index[name]; ok {
		return i
	}
	return -1
}

// NamesOf maps context indexes to names.
func (c *Config) NamesOf(idx []int) []string {
	out := make([]string, len(idx))
	for i, k := range idx {
		out[i] = c.Names[k]
	}
	return out
}

// Override returns the override that applies to an apiVersion/kind, if any.
func (c *Config) Override(apiVersion, kind string) (Override, bool) {
	if len(c.Overrides) == 0 {
		return Override{}, false
	}
	// The same lookup gives routing its scope: one answer for both.
	k, ok := kinds.Resolve(apiVersion, kind)
	if !ok || !k.Stored {
		return Override{}, false
	}
	i, ok := c.byGR[k.Storage]
	if !ok {
		return Override{}, false
	}
	return c.Overrides[i], true
}

// DataStore returns the datastore named name that context ctx declares.
func (c *Config) DataStore(ctx int, name string) (v1alpha1.DataStore, bool) {
	ds, ok := c.stores[ctx][name]
	return ds, ok
}
