// Package datastore decides, per context, which logical etcd datastore holds
// each resource, and renders the kube-apiserver --etcd-servers-overrides flag
// and Kamaji's dataStoreOverrides from the same ShardConfig.
package datastore

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/kinds"
)

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

// Table assigns datastores for one ShardConfig.
type Table struct {
	names     []string
	overrides []Override
	byGR      map[kinds.GroupResource]int
	// stores[ctx] maps a declared logical datastore to its config entry.
	stores []map[string]v1alpha1.DataStore
}

// Compile validates dataStoreOverrides as kube-apiserver 1.34 would honour
// them (and stricter: the resource must be a built-in stored resource that
// the core storage factory serves) and builds the table.
func Compile(spec *v1alpha1.ShardConfigSpec) (*Table, []Notice, field.ErrorList) {
	t := &Table{
		names:  spec.ContextNames(),
		byGR:   map[kinds.GroupResource]int{},
		stores: make([]map[string]v1alpha1.DataStore, len(spec.Contexts)),
	}
	for i, c := range spec.Contexts {
		t.stores[i] = map[string]v1alpha1.DataStore{}
		for _, ds := range c.DataStores {
			t.stores[i][ds.Name] = ds
		}
	}
	var errs field.ErrorList
	var notices []Notice
	for i, o := range spec.DataStoreOverrides {
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
		if j, dup := t.byGR[canonical]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (stored as %s, like spec.dataStoreOverrides[%d])", o.Resource, canonical, j)))
			continue
		}
		t.byGR[canonical] = len(t.overrides)
		t.overrides = append(t.overrides, Override{Resource: canonical, DataStore: o.DataStore, Ephemeral: o.Ephemeral})
	}
	if len(errs) > 0 {
		return nil, notices, errs
	}
	return t, notices, nil
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

// Overrides returns the validated overrides in config order.
func (t *Table) Overrides() []Override { return t.overrides }

// override returns the override that applies to an apiVersion/kind, if any.
func (t *Table) override(apiVersion, kind string) (Override, bool) {
	if len(t.overrides) == 0 {
		return Override{}, false
	}
	// The same lookup gives routing its scope: one answer for both.
	k, ok := kinds.Resolve(apiVersion, kind)
	if !ok {
		return Override{}, false
	}
	if !k.Stored {
		return Override{}, false
	}
	i, ok := t.byGR[k.Storage]
	if !ok {
		return Override{}, false
	}
	return t.overrides[i], true
}

// Assign returns the logical datastore that holds an apiVersion/kind in the
// context ctx: the override's datastore where that context declares it,
// otherwise "default".
func (t *Table) Assign(ctx int, apiVersion, kind string) string {
	o, ok := t.override(apiVersion, kind)
	if !ok {
		return v1alpha1.DefaultDataStore
	}
	if _, declared := t.stores[ctx][o.DataStore]; declared {
		return o.DataStore
	}
	return v1alpha1.DefaultDataStore
}

// Ephemeral reports whether the kind's override is marked ephemeral.
func (t *Table) Ephemeral(apiVersion, kind string) bool {
	o, ok := t.override(apiVersion, kind)
	return ok && o.Ephemeral
}

// FormatAnnotation renders the datastore annotation: one name when every
// context agrees, else "ctx=datastore" pairs in context order.
func FormatAnnotation(contexts, stores []string) string {
	if len(stores) == 0 {
		return ""
	}
	same := true
	for _, s := range stores[1:] {
		if s != stores[0] {
			same = false
			break
		}
	}
	if same {
		return stores[0]
	}
	pairs := make([]string, len(contexts))
	for i := range contexts {
		pairs[i] = contexts[i] + "=" + stores[i]
	}
	return strings.Join(pairs, ",")
}

// ParseAnnotation reads a datastore annotation written for the given
// contexts (those of the context annotation beside it) into context ->
// datastore.
func ParseAnnotation(value string, contexts []string) (map[string]string, error) {
	out := map[string]string{}
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, fmt.Errorf("empty value")
	}
	if !strings.Contains(value, "=") {
		if strings.Contains(value, ",") {
			return nil, fmt.Errorf("%q: several datastores must be written as ctx=datastore pairs", value)
		}
		for _, c := range contexts {
			out[c] = value
		}
		return out, nil
	}
	for _, pair := range strings.Split(value, ",") {
		ctx, ds, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || ctx == "" || ds == "" {
			return nil, fmt.Errorf("%q: %q is not a ctx=datastore pair", value, pair)
		}
		out[ctx] = ds
	}
	return out, nil
}
