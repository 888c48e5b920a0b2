package kinds

import (
	"fmt"
	"strings"
	"unicode"
)

// GroupResource is kube-apiserver's storage key for --etcd-servers-overrides:
// "group/resource", with the core group empty ("/events").
type GroupResource struct{ Group, Resource string }

// String returns the key as the flag writes it: "apps/deployments", "/events".
func (gr GroupResource) String() string { return gr.Group + "/" + gr.Resource }

// ParseGroupResource parses the group/resource half of an
// --etcd-servers-overrides entry: exactly one '/', a non-empty resource, an
// empty group for the core group ("/events"). kube-apiserver trims nothing,
// so whitespace anywhere is an error, and so are the flag's own separators
// ('#', ',', ';', '"'). All problems are reported at once.
func ParseGroupResource(s string) (GroupResource, error) {
	if s == "" {
		return GroupResource{}, fmt.Errorf("empty group/resource: expected \"group/resource\", e.g. \"/events\" for the core group or \"coordination.k8s.io/leases\"")
	}
	var problems []string
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		problems = append(problems, fmt.Sprintf("it contains whitespace at byte %d, which kube-apiserver does not trim, so the override would silently match nothing", i))
	}
	if i := strings.IndexAny(s, "#,;\""); i >= 0 {
		problems = append(problems, fmt.Sprintf("it contains %q, a separator of the --etcd-servers-overrides flag: give only group/resource, without servers", s[i]))
	}
	switch n := strings.Count(s, "/"); {
	case n == 0:
		problems = append(problems, "it has no '/': write the core group as empty, e.g. \"/events\", and others as \"group/resource\"")
	case n > 1 && strings.HasPrefix(s, "/registry/"):
		problems = append(problems, "it looks like an etcd key path: overrides are keyed by storage group/resource, e.g. \"/events\", not \"/registry/events\"")
	case n > 1:
		problems = append(problems, fmt.Sprintf("it has %d '/' but needs exactly one, between group and resource (subresources and versions have no storage of their own)", n))
	default:
		if strings.HasSuffix(s, "/") {
			problems = append(problems, "its resource is empty")
		}
	}
	if len(problems) > 0 {
		return GroupResource{}, fmt.Errorf("invalid group/resource %q: %s", s, strings.Join(problems, "; "))
	}
	group, resource, _ := strings.Cut(s, "/")
	return GroupResource{Group: group, Resource: resource}, nil
}

// StoredResource reports whether gr is a storage group/resource that
// kube-apiserver 1.34's core storage factory stores, so that an
// --etcd-servers-overrides entry for it takes effect, and returns the
// canonical storage key after cohabitation.
//
// canonical is gr with the cohabitation rules applied, whatever ok says:
// "events.k8s.io/events" gives "/events" and "extensions/deployments" gives
// "apps/deployments", with normalised true. An override keyed by the
// non-canonical form is silently ignored by kube-apiserver, so write canonical.
//
// ok is false for
//   - virtual resources, which are never stored (tokenreviews, bindings,
//     componentstatuses, ...), and subresources;
//   - resources stored outside the core storage factory:
//     apiextensions.k8s.io/customresourcedefinitions (apiextensions-apiserver),
//     apiregistration.k8s.io/apiservices (kube-aggregator), custom resources
//     and aggregated APIs such as metrics.k8s.io;
//   - resources 1.34 does not have (policy/podsecuritypolicies, typos, upper
//     case) and the undocumented "group/*" wildcard.
//
// Resources of alpha and beta versions that are off by default (for example
// storagemigration.k8s.io/storageversionmigrations) are ok: the override takes
// effect once the API is enabled with --runtime-config.
func StoredResource(gr GroupResource) (canonical GroupResource, normalised bool, ok bool) {
	canonical = cohabit(gr)
	_, ok = storedByCoreFactory[canonical]
	return canonical, canonical != gr, ok
}

// separateStorage lists the groups that kube-apiserver serves from delegated
// servers with their own storage, which ignore --etcd-servers-overrides
// (kubernetes v1.34.4 pkg/controlplane/apiserver/apiextensions.go and
// aggregator.go set RESTOptionsGetter to nil and apply the plain etcd
// options; only config.go builds the storage factory that takes overrides).
var separateStorage = map[string]string{
	"apiextensions.k8s.io":   "apiextensions-apiserver",
	"apiregistration.k8s.io": "kube-aggregator",
}

// storedByCoreFactory is the set of canonical storage keys that the core
// storage factory stores.
var storedByCoreFactory = func() map[GroupResource]struct{} {
	m := map[GroupResource]struct{}{}
	for _, k := range table {
		if _, separate := separateStorage[k.Group]; k.Stored && !k.Legacy && !separate {
			m[k.Storage] = struct{}{}
		}
	}
	return m
}()
