// Package datastore decides, per context, which logical etcd datastore holds
// each resource, and renders the kube-apiserver --etcd-servers-overrides flag
// and Kamaji's dataStoreOverrides, all from the compiled config (pkg/config,
// which checks the overrides against kube-apiserver's storage).
package datastore

import (
	"fmt"
	"strings"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
)

// Assign returns the logical datastore that holds an apiVersion/kind in the
// context ctx: the override's datastore where that context declares it,
// otherwise "default".
func Assign(c *config.Config, ctx int, apiVersion, kind string) string {
	o, ok := c.Override(apiVersion, kind)
	if !ok {
		return v1alpha1.DefaultDataStore
	}
	if _, declared := c.DataStore(ctx, o.DataStore); declared {
		return o.DataStore
	}
	return v1alpha1.DefaultDataStore
}

// Ephemeral reports whether the kind's override is marked ephemeral.
func Ephemeral(c *config.Config, apiVersion, kind string) bool {
	o, ok := c.Override(apiVersion, kind)
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
