// Package route decides which kube contexts each resource of a package goes
// to. It is pure: it reads Objects and returns a Routing, with no I/O and no
// kyaml types, so the function, split and the benchmarks share it. The
// rules, in order, and the checks after them are in rules.go; each rule
// names the Reason it gives (reason.go).
package route

import (
	"strings"
)

// Object is what routing needs to know about one resource.
type Object struct {
	APIVersion, Kind, Namespace, Name string
	Labels                            map[string]string
	// Previous is the resource's current context annotation, split on ",";
	// HasPrevious is false when the annotation is absent or empty.
	Previous    []string
	HasPrevious bool
	// LocalConfig is true when config.kubernetes.io/local-config is set to
	// anything but "false": kpt never applies such a resource.
	LocalConfig bool
	// CRD describes a CustomResourceDefinition, so that the scope of its
	// custom resources is known.
	CRD *CRD
	// List is true for a list of resources (kind List, or any kind ending in
	// List with top-level items), which is no resource of its own.
	List bool
}

// CRD is the part of a CustomResourceDefinition that gives its kind's scope.
type CRD struct {
	Group, Kind string
	// Scope is spec.scope: "Namespaced" or "Cluster".
	Scope string
}

// Group returns the API group of the object's apiVersion ("" for core).
func (o *Object) Group() string {
	if i := strings.IndexByte(o.APIVersion, '/'); i >= 0 {
		return o.APIVersion[:i]
	}
	return ""
}

// Describe names the object in messages: "Kind namespace/name", or
// "Kind name" for a cluster-scoped one. Every message about a resource
// names it this way.
func (o *Object) Describe() string {
	if o.Namespace != "" {
		return o.Kind + " " + o.Namespace + "/" + o.Name
	}
	return o.Kind + " " + o.Name
}

// ParseContexts splits a context annotation value. Blank entries are kept
// as written so that a malformed annotation is reported, not ignored.
func ParseContexts(value string) []string {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	parts := strings.Split(value, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// kptInternal reports the kpt objects that are never routed: the Kptfile and
// the inventory ResourceGroup written by kpt live init (which carries no
// local-config annotation).
func kptInternal(o *Object) bool {
	return (o.Kind == "Kptfile" && strings.HasPrefix(o.APIVersion, "kpt.dev/")) ||
		(o.Kind == "ResourceGroup" && o.APIVersion == "kpt.dev/v1alpha1")
}
