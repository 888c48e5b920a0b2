// Package kinds is the table of the kinds built in to kube-apiserver 1.34: for
// each, its scope (namespaced or cluster-scoped) and the storage
// group/resource, after cohabitation, under which --etcd-servers-overrides
// keys it.
//
// The table is generated from the discovery documents that the kubernetes
// repository checks in (api/discovery/), see gen/main.go; plurals are never
// guessed. The kinds older releases served and 1.34 serves in no version
// are generated from the k8s.io/api module of those releases
// (zz_generated_legacy.go), a few by hand (legacy.go).
package kinds

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

//go:generate sh gen/gen.sh

// Kind describes one built-in kind served by kube-apiserver 1.34.
type Kind struct {
	Group, Version, Kind string // as served (e.g. "events.k8s.io", "v1", "Event")
	Resource             string // plural resource as served ("events"); "" for generated legacy kinds, whose plural the source lacks
	Namespaced           bool
	// Stored is false for virtual kinds (reviews, bindings, componentstatuses),
	// which are never in etcd, and for the legacy PodSecurityPolicy, which
	// 1.34 no longer has.
	Stored bool
	// Storage is the storage group/resource after cohabitation (events.k8s.io
	// Events are stored as "/events"); zero when !Stored. Whether an
	// --etcd-servers-overrides entry for it takes effect is StoredResource's
	// answer: CustomResourceDefinitions and APIServices are in etcd, but not
	// under the core storage factory that honours overrides.
	Storage GroupResource
	// Legacy marks the hand-written kinds that 1.34 serves in no version
	// (legacy.go); they are kept so that old manifests still resolve.
	Legacy bool
}

// APIVersion returns the kind's apiVersion as written in manifests: "v1" for
// the core group, "group/version" otherwise.
func (k Kind) APIVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

// String returns e.g. "apps/v1 Deployment (deployments)".
func (k Kind) String() string {
	return fmt.Sprintf("%s %s (%s)", k.APIVersion(), k.Kind, k.Resource)
}

type gvk struct{ group, version, kind string }

type gk struct{ group, kind string }

// table is servedKinds followed by legacyKinds, with Storage filled in.
var table, byGVK, byGK = buildTable()

func buildTable() ([]Kind, map[gvk]int, map[gk]int) {
	all := make([]Kind, 0, len(servedKinds)+len(legacyKinds)+len(generatedLegacyKinds))
	all = append(all, servedKinds...)
	all = append(all, legacyKinds...)
	for _, k := range generatedLegacyKinds {
		// A hand-kept row (legacy.go) wins over its generated one.
		if !slices.ContainsFunc(legacyKinds, func(l Kind) bool { return l.Group == k.Group && l.Version == k.Version && l.Kind == k.Kind }) {
			all = append(all, k)
		}
	}
	byGVK := make(map[gvk]int, len(all))
	byGK := make(map[gk]int, len(all))
	for i := range all {
		k := &all[i]
		if k.Stored {
			k.Storage = cohabit(GroupResource{Group: k.Group, Resource: k.Resource})
		}
		key := gvk{k.Group, k.Version, k.Kind}
		if _, dup := byGVK[key]; dup {
			panic(fmt.Sprintf("kinds: %s is listed twice", k))
		}
		byGVK[key] = i
		// The table lists each group's kinds preferred version first.
		if _, seen := byGK[gk{k.Group, k.Kind}]; !seen {
			byGK[gk{k.Group, k.Kind}] = i
		}
	}
	return all, byGVK, byGK
}

// Lookup finds a built-in kind by apiVersion ("v1", "apps/v1",
// "extensions/v1beta1", ...) and kind. ok is false for anything not built in
// (CRDs, aggregated APIs like metrics.k8s.io) and for malformed apiVersions.
func Lookup(apiVersion, kind string) (Kind, bool) {
	group, version, ok := splitAPIVersion(apiVersion)
	if !ok {
		return Kind{}, false
	}
	i, ok := byGVK[gvk{group, version, kind}]
	if !ok {
		return Kind{}, false
	}
	return table[i], true
}

// Resolved is a built-in kind as a manifest names it, whatever its version.
type Resolved struct {
	// Kind is the kind's row: the version 1.34 prefers when it serves the
	// kind, else the legacy row. Its scope and storage are the kind's in
	// every version: kube-apiserver never changes a kind's scope, and all
	// versions of a resource share one storage.
	Kind
	// Served is true when 1.34 serves the manifest's own apiVersion.
	Served bool
	// Instead is the apiVersion 1.34 serves the kind in ("batch/v1"), when
	// !Served; "" when it serves the kind in no version (PodSecurityPolicy).
	Instead string
}

// Resolve finds a built-in kind by the group of apiVersion and kind, so that
// a manifest of a version 1.34 no longer serves (batch/v1beta1 CronJob,
// extensions/v1beta1 Ingress) gets the same scope and storage as the served
// version: one lookup answers both. ok is false for anything not built in
// and for malformed apiVersions.
func Resolve(apiVersion, kind string) (Resolved, bool) {
	group, version, ok := splitAPIVersion(apiVersion)
	if !ok {
		return Resolved{}, false
	}
	// One map lookup for what is not built in and for preferred versions.
	i, ok := byGK[gk{group, kind}]
	if !ok {
		return Resolved{}, false
	}
	if k := &table[i]; k.Version == version && !k.Legacy {
		return Resolved{Kind: *k, Served: true}, true
	}
	if j, ok := byGVK[gvk{group, version, kind}]; ok && !table[j].Legacy {
		return Resolved{Kind: table[j], Served: true}, true
	}
	r := Resolved{Kind: table[i]}
	switch {
	case !r.Legacy:
		r.Instead = r.APIVersion()
	case r.Stored:
		// extensions kinds moved to the group they cohabit with.
		if j, ok := byGK[gk{r.Storage.Group, kind}]; ok && !table[j].Legacy {
			r.Instead = table[j].APIVersion()
		}
	}
	return r, true
}

// Release is the Kubernetes minor release of the table, e.g. "1.34".
func Release() string {
	v := strings.TrimPrefix(KubernetesVersion, "v")
	if i := strings.LastIndexByte(v, '.'); i > 0 {
		v = v[:i]
	}
	return v
}

// splitAPIVersion parses apiVersion as kube-apiserver does, and also
// refuses what schema.ParseGroupVersion lets through: "", "/v1" and "apps/"
// name no version of a group.
func splitAPIVersion(apiVersion string) (group, version string, ok bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" || strings.HasPrefix(apiVersion, "/") {
		return "", "", false
	}
	return gv.Group, gv.Version, true
}

// LookupGroupKind ignores the version (first served version wins). The core
// group is "". Resolve is the lookup for manifests.
func LookupGroupKind(group, kind string) (Kind, bool) {
	i, ok := byGK[gk{group, kind}]
	if !ok {
		return Kind{}, false
	}
	return table[i], true
}

// All returns a copy of the table: the served kinds sorted by group, kind and
// version (preferred first), then the legacy kinds.
func All() []Kind {
	return append([]Kind(nil), table...)
}
