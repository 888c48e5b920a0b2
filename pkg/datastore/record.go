package datastore

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/kinds"
)

// localConfig is kpt's annotation for what is never applied.
const localConfig = "config.kubernetes.io/local-config"

// Record is context ctx's overrides as split records them in its package
// (v1alpha1.EtcdOverrides), local config that never reaches the cluster.
// It is written field by field, in a fixed order, each value quoted as a
// JSON string (which YAML reads as is).
func Record(c *config.Config, ctx int) []byte {
	entries := Entries(c, ctx)
	var b strings.Builder
	b.WriteString("# The --etcd-servers-overrides of this cluster's kube-apiserver when split wrote this package: local\n")
	b.WriteString("# config, never applied. plan and split compare the next split's with it.\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  annotations:\n    %s: \"true\"\n",
		v1alpha1.APIVersion, v1alpha1.EtcdOverridesKind, quote(c.Names[ctx]), localConfig)
	fmt.Fprintf(&b, "flag: %s\n", quote(FormatFlag(entries)))
	if len(entries) == 0 {
		b.WriteString("overrides: []\n")
	} else {
		b.WriteString("overrides:\n")
	}
	for _, e := range entries {
		servers := make([]string, len(e.Servers))
		for i, s := range e.Servers {
			servers[i] = quote(s)
		}
		fmt.Fprintf(&b, "- resource: %s\n  dataStore: %s\n  servers: [%s]\n", quote(e.Resource.String()), quote(e.DataStore), strings.Join(servers, ", "))
		if e.Ephemeral {
			b.WriteString("  ephemeral: true\n")
		}
	}
	return []byte(b.String())
}

// quote writes s as a JSON string, which YAML reads as the same string.
func quote(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}

// ReadRecord reads what Record wrote.
func ReadRecord(data []byte) ([]Entry, error) {
	var doc v1alpha1.EtcdOverrides
	if err := sigsyaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, err
	}
	if doc.APIVersion != v1alpha1.APIVersion || doc.Kind != v1alpha1.EtcdOverridesKind {
		return nil, fmt.Errorf("expected apiVersion %s, kind %s; found %q, %q", v1alpha1.APIVersion, v1alpha1.EtcdOverridesKind, doc.APIVersion, doc.Kind)
	}
	out := make([]Entry, 0, len(doc.Overrides))
	for _, o := range doc.Overrides {
		group, resource, ok := strings.Cut(o.Resource, "/")
		if !ok || resource == "" || len(o.Servers) == 0 {
			return nil, fmt.Errorf("override %q: expected group/resource and its servers", o.Resource)
		}
		out = append(out, Entry{Resource: kinds.GroupResource{Group: group, Resource: resource}, DataStore: o.DataStore,
			Servers: o.Servers, Ephemeral: o.Ephemeral})
	}
	return out, nil
}

// Report compares one context's overrides before and after and judges each
// change with Judge: the one report of `overrides --previous`, split and
// plan. Refused changes have Severity error.
func Report(context string, before, after []Entry, allowDataStoreChanges bool) []v1alpha1.OverrideChange {
	var out []v1alpha1.OverrideChange
	for _, ch := range Diff(context, before, after) {
		r := v1alpha1.OverrideChange{Context: context, Resource: ch.Resource.String(), Ephemeral: ch.Ephemeral,
			From: v1alpha1.OverrideLocation{DataStore: ch.From.DataStore, Servers: ch.From.Servers},
			To:   v1alpha1.OverrideLocation{DataStore: ch.To.DataStore, Servers: ch.To.Servers}}
		r.Message = fmt.Sprintf("context %q: %s moves from %s to %s", context, ch.Resource, ch.From, ch.To)
		switch Judge(ch.Ephemeral, allowDataStoreChanges) {
		case AllowedEphemeral:
			r.Allowed, r.Severity = true, framework.Warning
			r.Message += ": allowed, its override is ephemeral (its objects are lost)"
		case AllowedByConfig:
			r.Allowed, r.Severity = true, framework.Warning
			r.Message += ": allowed by allowDataStoreChanges (copy its data first)"
		default:
			r.Severity = framework.Error
			r.Message += ": refused"
		}
		out = append(out, r)
	}
	return out
}

// RefusedAdvice says why a refused change of the overrides is refused and
// what to do.
const RefusedAdvice = "kube-apiserver does not migrate data when --etcd-servers-overrides changes, so their objects would vanish from the API; copy the data first (see the README), then set spec.allowDataStoreChanges: true, or mark the override ephemeral: true if its objects may be lost"
