package route

//go:generate go run golang.org/x/tools/cmd/stringer@v0.26.0 -type=Reason -linecomment

// Reason names the rule that decided an object (see rules in rules.go).
// Its String, from the line comments, appears in outputs: keep it stable.
type Reason int

const (
	// NotRouted: local config, the Kptfile, the function config or the inventory.
	NotRouted Reason = iota // not routed
	// Selected: a resourceSelector or namespaceSelector matched.
	Selected // selected
	// FollowsNamespace: no selector matched; the resource goes where its Namespace goes.
	FollowsNamespace // follows its namespace
	// Broadcast: a cluster-scoped resource no selector matched goes everywhere.
	Broadcast // broadcast
	// Placed: a new Namespace no selector matched, placed by spec.placement.
	Placed // placed
	// Sticky: nothing decided, so the resource keeps its context annotation.
	Sticky // sticky
	// Default: nothing decided and no annotation, so defaultContext.
	Default // default context
	// Failed: an error result explains why the resource could not be routed.
	Failed // failed
)
