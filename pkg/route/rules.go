package route

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/gitops"
)

// route decides one object: the rules, in this order, until one decides;
// then the checks, in this order, on what it decided. Namespaced and
// cluster-scoped objects, Namespaces included, go through the same list.
// Adding a rule is one method below, one case here, one Reason (reason.go)
// and one section in TestRoute; docs/concepts/routing.md lists the same
// rules and checks in the same order. The datastore-change check comes
// last, where datastores are assigned (datastore.Judge, in the function).
//
// The rules are direct calls rather than a slice of functions so that the
// subject stays on the stack: an indirect call makes it escape, which costs
// an allocation or write barriers per object.
func (r *Router) route(p *Routing, s *subject) Decision {
	switch {
	case r.neverRouted(s): // NotRouted
		return s.d
	case r.namespaceFailed(s): // Failed
	case r.selected(s): // Selected
	case r.followsNamespace(s): // FollowsNamespace
	case r.broadcast(s): // Broadcast
	case r.placed(p, s): // Placed, or Sticky for a placed Namespace
	case r.sticky(p, s): // Sticky
	case r.defaultContext(s): // Default
	case r.noContext(p, s): // Failed
	}
	r.moves(p, s)
	r.placementLabel(p, s)
	r.namespaceConsistency(p, s)
	return s.d
}

// subject is one object on its way through the rules.
type subject struct {
	i int
	o *Object
	// namespaced is the object's scope; known is false when that scope is a
	// guess (see namespaced).
	namespaced, known bool
	// ns is the object's Namespace when it is namespaced and its Namespace
	// is in the package, else nil.
	ns *nsState
	// nsSel are the contexts whose namespaceSelector matches its Namespace
	// (for a Namespace, itself).
	nsSel []int
	// d is the decision: the rule that decides sets it (returning true),
	// the checks may refuse it.
	d Decision
	// refusedMove is the error that refuses its move, nil when none does.
	refusedMove *refusedMove
}

// refusedMove is an error that refuses a move: the index of the problem
// and what it says.
type refusedMove struct {
	problem           int
	from, to, dropped string
	// engine is who applies the split: its words for the deletion.
	engine gitops.Engine
}

// nsState caches what routing knows of one Namespace of the package.
type nsState struct {
	object   int   // index of the Namespace object
	contexts []int // its decision; nil when it failed
	byNsSel  []int // contexts whose namespaceSelector matches its labels
	refused  []int // where a refused move would have taken it
	// refusedMove is the error that refuses its move, nil when none does;
	// movers are its objects whose own moves that error reports (one
	// refusal per cause).
	refusedMove *refusedMove
	movers      []int
}

// failed reports whether the Namespace could not be routed.
func (ns *nsState) failed() bool { return ns.contexts == nil }

// neverRouted: local config, the Kptfile, the function config and the
// inventory are never routed nor changed.
func (r *Router) neverRouted(s *subject) bool {
	s.d = Decision{Reason: NotRouted}
	return r.skipped(s.o)
}

func (r *Router) skipped(o *Object) bool {
	if o.LocalConfig || kptInternal(o) {
		return true
	}
	if o.APIVersion == v1alpha1.APIVersion && o.Kind == v1alpha1.Kind {
		return true
	}
	c := r.ref
	return c.Kind != "" && o.APIVersion == c.APIVersion && o.Kind == c.Kind && o.Name == c.Name && o.Namespace == c.Namespace
}

// namespaceFailed: a resource whose Namespace failed fails too, and the
// Namespace's error explains it. When the Namespace's move was refused, the
// resource goes on through the rules, following where the Namespace would
// have gone, so that each of its own refused moves is reported and recorded
// (namespaceConsistency then fails it).
func (r *Router) namespaceFailed(s *subject) bool {
	s.d = Decision{Reason: Failed}
	return s.ns != nil && s.ns.failed() && s.ns.refused == nil
}

// selected: every context whose resourceSelector matches the object's
// labels, or whose namespaceSelector matches its Namespace's labels.
func (r *Router) selected(s *subject) bool {
	s.d = Decision{Reason: Selected, Contexts: union(r.cfg.ResourceIndex.Match(s.o.Labels), s.nsSel)}
	return len(s.d.Contexts) > 0
}

// followsNamespace: a namespaced object goes where its Namespace goes (or
// would go, when its move was refused).
func (r *Router) followsNamespace(s *subject) bool {
	if s.ns == nil {
		return false
	}
	to := s.ns.contexts
	if s.ns.failed() {
		to = s.ns.refused
	}
	s.d = Decision{Reason: FollowsNamespace, Contexts: to}
	return to != nil
}

// broadcast: a cluster-scoped object other than a Namespace goes to every
// context (CRDs and ClusterRoles must exist wherever they are used).
func (r *Router) broadcast(s *subject) bool {
	if s.namespaced || isNamespace(s.o) {
		return false
	}
	s.d = Decision{Reason: Broadcast, Contexts: all(len(r.cfg.Names))}
	return true
}

// namespaced gives an object's scope: the built-in table (by group and
// kind, whatever the version, as the datastore lookup does), then the
// package's CRDs, then whether metadata.namespace is set. known is false
// when the scope is that last guess.
func (r *Router) namespaced(o *Object, builtin builtinScope, crdScope map[[2]string]string) (namespaced, known bool) {
	if builtin != notBuiltin {
		return builtin == namespacedScope, true
	}
	if scope, ok := crdScope[[2]string{o.Group(), o.Kind}]; ok {
		return scope != "Cluster", true
	}
	return o.Namespace != "", o.Namespace != ""
}

// placed: a Namespace under spec.placement (placement.go).
func (r *Router) placed(p *Routing, s *subject) bool {
	if r.cfg.Placement == nil || !isNamespace(s.o) {
		return false
	}
	s.d = r.place(p, s.i, s.o)
	return true
}

// sticky: an object that carries a context annotation keeps it; those
// contexts must be declared.
func (r *Router) sticky(p *Routing, s *subject) bool {
	o := s.o
	if !o.HasPrevious {
		return false
	}
	var ctx []int
	for _, name := range o.Previous {
		c := r.cfg.Index(name)
		if c < 0 {
			p.errorf(s.i, "metadata.annotations["+v1alpha1.ContextAnnotation+"]",
				"%s is pinned to context %q, which the config does not declare (contexts: %s)", o.Describe(), name, quoteList(r.cfg.Names))
			s.d = Decision{Reason: Failed}
			return true
		}
		ctx = append(ctx, c)
	}
	slices.Sort(ctx)
	s.d = Decision{Reason: Sticky, Contexts: slices.Compact(ctx)}
	return true
}

// defaultContext: spec.defaultContext, when the config has one.
func (r *Router) defaultContext(s *subject) bool {
	if r.cfg.DefaultContext < 0 {
		return false
	}
	s.d = Decision{Reason: Default, Contexts: []int{r.cfg.DefaultContext}}
	return true
}

// noContext: nothing decided, an error naming the resource.
func (r *Router) noContext(p *Routing, s *subject) bool {
	o := s.o
	what, fieldPath := "no resourceSelector matches its labels", "metadata.labels"
	switch {
	case o.Kind == "Namespace":
		what = "no selector matches its labels"
	case o.Namespace == "":
		what += ", it is namespaced but has no metadata.namespace (so no Namespace to follow)"
		fieldPath = "metadata.namespace"
	default:
		what += fmt.Sprintf(", its Namespace %q is not in the package", o.Namespace)
		fieldPath = "metadata.namespace" // the Namespace it names would decide
	}
	p.errorf(s.i, fieldPath, "%s has no context: %s, it carries no %s annotation, and the config has no defaultContext",
		o.Describe(), what, v1alpha1.ContextAnnotation)
	s.d = Decision{Reason: Failed}
	return true
}

// moves: dropping a context the resource already carries would make kpt
// live apply prune it from that cluster. Refused unless allowMoves, which
// makes it a warning and records the dropped contexts.
func (r *Router) moves(p *Routing, s *subject) {
	d := &s.d
	o := s.o
	if !d.Routed() || !o.HasPrevious {
		return
	}
	var dropped []string
	for _, name := range o.Previous {
		if c := r.cfg.Index(name); c < 0 || !slices.Contains(d.Contexts, c) {
			if !slices.Contains(dropped, name) {
				dropped = append(dropped, name)
			}
		}
	}
	if len(dropped) == 0 {
		return
	}
	newNames := strings.Join(r.cfg.NamesOf(d.Contexts), ",")
	old := strings.Join(o.Previous, ",")
	field := "metadata.annotations[" + v1alpha1.ContextAnnotation + "]"
	if r.cfg.Policy.AllowMoves {
		msg := fmt.Sprintf("%s moves from %q to %q (allowMoves): kpt live apply --context %s will prune it unless its live object carries cli-utils.sigs.k8s.io/on-remove: keep",
			o.Describe(), old, newNames, strings.Join(dropped, ","))
		if r.engine.Pulls() {
			from := strings.Join(dropped, ",")
			msg = fmt.Sprintf("%s moves from %q to %q (allowMoves): with --engine %s the move is handed off in two commits: split keeps it in %s as well (a pending hand-off recorded in OUT_DIR/%s) until --handoff-status shows it Current in %s, and only then drops it from %s, so the engine prunes the old copy only after the new one exists",
				o.Describe(), old, newNames, r.engine, from, gitops.Dir, newNames, from)
		}
		p.Problems = append(p.Problems, Problem{Object: s.i, Severity: Warning, Field: field, Message: msg})
		d.Dropped = dropped
		return
	}
	if ns := s.ns; ns != nil && ns.refusedMove != nil {
		ns.movers = append(ns.movers, s.i) // reported with its Namespace's move
	} else {
		m := &refusedMove{problem: len(p.Problems), from: old, to: newNames, dropped: strings.Join(dropped, ","), engine: r.engine}
		p.errorf(s.i, field, "%s", m.message(o.Describe(), ""))
		s.refusedMove = m
	}
	refused := d.Contexts
	*d = Decision{Reason: Failed, Refused: refused}
}

// message says what the refused move of what would do, with the objects
// that would move with it (with: "" or "3 objects (...)").
func (m *refusedMove) message(what, with string) string {
	move, pronoun := fmt.Sprintf("%s would move from %q to %q", what, m.from, m.to), "it"
	if with != "" {
		move, pronoun = move+" with "+with+" in it", "them"
	}
	if m.engine.Pulls() {
		return fmt.Sprintf("%s: %s's %s would prune %s there once it syncs; set spec.allowMoves: true to move %s on purpose (split then hands the move off in two commits: the old copies stay until the new ones are Current)",
			move, m.dropped, m.engine, pronoun, pronoun)
	}
	return fmt.Sprintf("%s: kpt live apply --context %s would delete %s there; set spec.allowMoves: true to move %s on purpose",
		move, m.dropped, pronoun, pronoun)
}

// placementLabel: a Namespace that placement decided carries
// spec.placement.label (placement.go). On an allowed move the label still
// names the old context, so it is replaced.
func (r *Router) placementLabel(p *Routing, s *subject) {
	d := &s.d
	if r.cfg.Placement == nil || !isNamespace(s.o) || (d.Reason != Placed && d.Reason != Sticky) {
		return
	}
	*d = r.withLabel(p, s.i, s.o, *d, d.Reason == Placed && s.o.HasPrevious)
}

// namespaceConsistency: a namespaced resource cannot live in a cluster
// without its Namespace. When its Namespace failed, so does the resource,
// recording where it would have gone so that a preview can show the whole
// refused move.
func (r *Router) namespaceConsistency(p *Routing, s *subject) {
	d := &s.d
	ns := s.ns
	if ns == nil {
		return
	}
	if ns.failed() {
		refused := d.Refused
		if d.Routed() {
			refused = d.Contexts
		}
		*d = Decision{Reason: Failed, Refused: refused}
		return
	}
	if !d.Routed() {
		return
	}
	if extra := minus(d.Contexts, ns.contexts); len(extra) > 0 {
		p.errorf(s.i, "metadata.labels", "%s would go to %s, but its Namespace %q goes only to %s: a namespaced resource cannot live in a cluster without its Namespace",
			s.o.Describe(), quoteList(r.cfg.NamesOf(extra)), s.o.Namespace, quoteList(r.cfg.NamesOf(ns.contexts)))
		*d = Decision{Reason: Failed}
	}
}
