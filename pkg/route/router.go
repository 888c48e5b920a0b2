package route

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/kinds"
)

// Reason says which rule placed a resource.
type Reason int

const (
	// NotRouted: local config, the Kptfile, the function config or the inventory.
	NotRouted Reason = iota
	// Selected: a resourceSelector or namespaceSelector matched.
	Selected
	// FollowsNamespace: no selector matched; the resource goes where its Namespace goes.
	FollowsNamespace
	// Broadcast: a cluster-scoped resource no selector matched goes everywhere.
	Broadcast
	// Sticky: nothing decided, so the resource keeps its context annotation.
	Sticky
	// Default: nothing decided and no annotation, so defaultContext.
	Default
	// Failed: an error result explains why the resource could not be routed.
	Failed
	// Placed: a new Namespace no selector matched, placed by spec.placement.
	Placed
)

var reasonNames = [...]string{"not routed", "selected", "follows its namespace", "broadcast", "sticky", "default context", "failed", "placed"}

func (r Reason) String() string { return reasonNames[r] }

// Decision is the placement of one object.
type Decision struct {
	Reason Reason
	// Contexts are indexes into the config's contexts, ascending.
	Contexts []int
	// Dropped are contexts of the previous annotation that the new placement
	// drops (a move), when moves are allowed.
	Dropped []string
	// Refused are the contexts a refused move would have given (Reason
	// Failed), so that the objects of a Namespace whose move is refused can
	// report their own moves.
	Refused []int
	// Label is the spec.placement.label to stamp on a Namespace, or nil.
	Label *Label
}

// Routed reports whether the object gets annotations.
func (d Decision) Routed() bool { return d.Reason != NotRouted && d.Reason != Failed }

// Severity of a Problem.
type Severity int

const (
	Error Severity = iota
	Warning
)

// Problem is a routing error or warning about one object (Object >= 0).
type Problem struct {
	Object   int
	Severity Severity
	// Field is the path of the field at fault, e.g. "metadata.namespace".
	Field   string
	Message string
	// Related are other objects the problem is about (the first copy of a
	// duplicate), so that results can name their files.
	Related []int
}

// Plan is the routing of a whole package.
type Plan struct {
	Decisions []Decision
	Problems  []Problem
}

// HasErrors reports whether any problem is an error.
func (p *Plan) HasErrors() bool {
	for _, pr := range p.Problems {
		if pr.Severity == Error {
			return true
		}
	}
	return false
}

// Router routes objects by a validated ShardConfig.
type Router struct {
	names     []string
	index     map[string]int
	namespace []labels.Selector // nil: absent selector, matches nothing
	resource  []labels.Selector
	// nsIndex and resIndex index namespace and resource (index.go).
	nsIndex, resIndex *selectorIndex
	defaultCtx        int // -1 when unset
	// placement is nil without spec.placement.
	placement  *placer
	allowMoves bool
	// config identifies the function config, which is never routed.
	config Ref
}

// Ref identifies an object by apiVersion, kind, namespace and name.
type Ref struct{ APIVersion, Kind, Namespace, Name string }

// New compiles the selectors of a config that passed Validate.
func New(cfg *v1alpha1.ShardConfig) (*Router, error) {
	spec := &cfg.Spec
	r := &Router{
		names:      spec.ContextNames(),
		index:      map[string]int{},
		namespace:  make([]labels.Selector, len(spec.Contexts)),
		resource:   make([]labels.Selector, len(spec.Contexts)),
		defaultCtx: -1,
		allowMoves: spec.AllowMoves,
		config:     Ref{APIVersion: cfg.APIVersion, Kind: cfg.Kind, Namespace: cfg.Namespace, Name: cfg.Name},
	}
	for i, c := range spec.Contexts {
		r.index[c.Name] = i
		var err error
		if r.namespace[i], err = selector(c.NamespaceSelector); err != nil {
			return nil, fmt.Errorf("spec.contexts[%d].namespaceSelector: %w", i, err)
		}
		if r.resource[i], err = selector(c.ResourceSelector); err != nil {
			return nil, fmt.Errorf("spec.contexts[%d].resourceSelector: %w", i, err)
		}
	}
	if spec.DefaultContext != "" {
		r.defaultCtx = r.index[spec.DefaultContext]
	}
	var err error
	if r.placement, err = newPlacer(spec); err != nil {
		return nil, err
	}
	r.nsIndex, r.resIndex = newSelectorIndex(r.namespace), newSelectorIndex(r.resource)
	return r, nil
}

// WithConfigRef sets the identity of the function config as kpt passed it,
// so that its copy among the items (kpt fn render's configPath) is skipped
// whatever its kind.
func (r *Router) WithConfigRef(ref Ref) *Router {
	r.config = ref
	return r
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// Names returns the context names in config order.
func (r *Router) Names() []string { return r.names }

// NamesOf maps context indexes to names.
func (r *Router) NamesOf(idx []int) []string {
	out := make([]string, len(idx))
	for i, c := range idx {
		out[i] = r.names[c]
	}
	return out
}

// skipped reports rule 1: objects that are never routed nor changed.
func (r *Router) skipped(o *Object) bool {
	if o.LocalConfig || kptInternal(o) {
		return true
	}
	if o.APIVersion == v1alpha1.APIVersion && o.Kind == v1alpha1.Kind {
		return true
	}
	c := r.config
	return c.Kind != "" && o.APIVersion == c.APIVersion && o.Kind == c.Kind && o.Name == c.Name && o.Namespace == c.Namespace
}

// objKey identifies a stored object: by group and kind, or for built-in
// kinds by storage group and resource, so that one object served by two
// groups is one key. The two cannot collide: custom resources cannot use
// the built-in groups (a CRD's group needs a dot, and the k8s.io ones need
// approval), nor the empty core group.
type objKey struct{ group, kind, namespace, name string }

// nsState caches what routing knows of one Namespace of the package.
type nsState struct {
	object   int   // index of the Namespace object
	contexts []int // its decision; nil when it failed
	byNsSel  []int // contexts whose namespaceSelector matches its labels
	refused  []int // where a refused move would have taken it
}

// Route decides every object. Decisions are index-aligned with objs; every
// error and warning is collected, never just the first.
func (r *Router) Route(objs []Object) *Plan {
	p := &Plan{Decisions: make([]Decision, len(objs))}
	crdScope := map[[2]string]string{}
	namespaces := map[string]*nsState{}
	var nsOrder []*nsState                  // package order, so results are deterministic
	seen := make(map[objKey]int, len(objs)) // sized once: it holds every object
	guessed := map[[2]string]*guess{}       // custom kinds broadcast on a guessed scope
	var guessOrder [][2]string
	scope := make([]builtinScope, len(objs)) // pass 1's lookup, for pass 3

	// Pass 1: check identities, collect CRD scopes and Namespaces.
	for i := range objs {
		o := &objs[i]
		if r.skipped(o) {
			p.Decisions[i].Reason = NotRouted
			continue
		}
		if !r.checkIdentity(p, i, o) {
			p.Decisions[i].Reason = Failed
			continue
		}
		builtin, isBuiltin := kinds.Resolve(o.APIVersion, o.Kind)
		if isBuiltin && !builtin.Served {
			r.warnVersion(p, i, o, builtin)
		}
		key := objKey{o.Group(), o.Kind, o.Namespace, o.Name}
		if isBuiltin {
			// One stored object, whichever group serves it (v1 and
			// events.k8s.io/v1 Events, extensions and apps Deployments).
			key.group, key.kind = builtin.Storage.Group, builtin.Storage.Resource
			scope[i] = clusterScoped
			if builtin.Namespaced {
				scope[i] = namespacedScope
			}
			if !builtin.Stored {
				key.group, key.kind = builtin.Group, builtin.Resource
			}
		}
		if first, dup := seen[key]; dup {
			if f := &objs[first]; f.APIVersion != o.APIVersion || f.Kind != o.Kind {
				p.Problems = append(p.Problems, Problem{Object: i, Severity: Error, Field: "apiVersion", Related: []int{first},
					Message: fmt.Sprintf("%s %s and %s %s (item %d) are one object: kube-apiserver stores both as %s/%s, so the cluster would keep only the last one applied; keep one of them",
						o.APIVersion, describe(o), f.APIVersion, describe(f), first, key.group, key.kind)})
			} else {
				p.Problems = append(p.Problems, Problem{Object: i, Severity: Error, Field: "metadata.name", Related: []int{first},
					Message: fmt.Sprintf("%s is in the package twice (first at item %d): kpt live apply would keep only one", describe(o), first)})
			}
			p.Decisions[i].Reason = Failed
			continue
		}
		seen[key] = i
		if o.CRD != nil && o.CRD.Kind != "" {
			crdScope[[2]string{o.CRD.Group, o.CRD.Kind}] = o.CRD.Scope
		}
		if isNamespace(o) {
			namespaces[o.Name] = &nsState{object: i}
			nsOrder = append(nsOrder, namespaces[o.Name])
		}
	}

	// Pass 2: Namespaces first, since their resources follow them.
	for _, ns := range nsOrder {
		o := &objs[ns.object]
		ns.byNsSel = r.nsIndex.match(o.Labels)
		matched := union(r.resIndex.match(o.Labels), ns.byNsSel)
		d := r.decide(p, ns.object, o, matched, nil)
		p.Decisions[ns.object] = d
		if d.Routed() {
			ns.contexts = d.Contexts
		}
		ns.refused = d.Refused
	}

	// Pass 3: everything else.
	for i := range objs {
		o := &objs[i]
		if p.Decisions[i].Reason != NotRouted || r.skipped(o) || isNamespace(o) {
			continue
		}
		namespaced, known := r.namespaced(o, scope[i], crdScope)
		if !namespaced {
			matched := r.resIndex.match(o.Labels)
			if len(matched) == 0 {
				matched = all(len(r.names))
				p.Decisions[i] = r.withMoves(p, i, o, Decision{Reason: Broadcast, Contexts: matched})
				if !known && p.Decisions[i].Routed() {
					gk := [2]string{o.Group(), o.Kind}
					if g := guessed[gk]; g != nil {
						g.more++
					} else {
						guessed[gk] = &guess{first: i}
						guessOrder = append(guessOrder, gk)
					}
				}
				continue
			}
			p.Decisions[i] = r.withMoves(p, i, o, Decision{Reason: Selected, Contexts: matched})
			continue
		}
		// Without metadata.namespace there is no Namespace to follow, but
		// rules 2 and 5 (resourceSelector, sticky, defaultContext) still apply.
		ns := namespaces[o.Namespace]
		if ns != nil && ns.contexts == nil {
			// The Namespace failed; its error explains this object too. When
			// its move was refused, each of its objects that would move too
			// is reported: every refused move is, not just the first.
			if ns.refused != nil {
				// Refused records where it would have gone, as for the
				// Namespace, so that a preview can show the whole move.
				d := r.decide(p, i, o, union(r.resIndex.match(o.Labels), ns.byNsSel), ns.refused)
				if d.Routed() {
					d.Refused = d.Contexts
				}
				p.Decisions[i] = Decision{Reason: Failed, Refused: d.Refused}
				continue
			}
			p.Decisions[i] = Decision{Reason: Failed}
			continue
		}
		var byNs []int
		if ns != nil {
			byNs = ns.byNsSel
		}
		matched := union(r.resIndex.match(o.Labels), byNs)
		var nsContexts []int
		if ns != nil {
			nsContexts = ns.contexts
		}
		p.Decisions[i] = r.decide(p, i, o, matched, nsContexts)
		if d := p.Decisions[i]; d.Routed() && ns != nil {
			if extra := minus(d.Contexts, ns.contexts); len(extra) > 0 {
				p.errorf(i, "metadata.labels", "%s would go to %s, but its Namespace %q goes only to %s: a namespaced resource cannot live in a cluster without its Namespace",
					describe(o), quoteList(r.NamesOf(extra)), o.Namespace, quoteList(r.NamesOf(ns.contexts)))
				p.Decisions[i] = Decision{Reason: Failed}
			}
		}
	}
	for _, gk := range guessOrder {
		g := guessed[gk]
		o := &objs[g.first]
		more := ""
		if g.more > 0 {
			more = fmt.Sprintf(" (and %d more %s)", g.more, o.Kind)
		}
		p.Problems = append(p.Problems, Problem{Object: g.first, Severity: Warning, Field: "metadata.namespace",
			Message: fmt.Sprintf("%s%s is sent to every context as cluster-scoped, a guess: %s %s is no built-in kind, the package has no CustomResourceDefinition for it, and it has no metadata.namespace; if the kind is namespaced it belongs where its Namespace goes. Make it certain: add the kind's CustomResourceDefinition to the package, set metadata.namespace, or pin it with a resourceSelector",
				describe(o), more, o.APIVersion, o.Kind)})
	}
	return p
}

// builtinScope is the scope of a built-in kind, by kinds.Resolve.
type builtinScope uint8

const (
	notBuiltin builtinScope = iota
	namespacedScope
	clusterScoped
)

// guess counts the objects of one custom kind broadcast on a guessed scope.
type guess struct{ first, more int }

// warnVersion reports a built-in kind written in an apiVersion that the
// table's release does not serve. It is routed by its group and kind, which
// give the same scope and storage in every version, so the route is right;
// but kpt live apply against that release fails on it.
func (r *Router) warnVersion(p *Plan, i int, o *Object, k kinds.Resolved) {
	rel := kinds.Release()
	msg := fmt.Sprintf("%s: Kubernetes %s does not serve %s %s; ", describe(o), rel, o.APIVersion, o.Kind)
	if k.Instead != "" {
		msg += fmt.Sprintf("write apiVersion: %s (routed as %s %s, which has the same scope and storage; kpt live apply against a %s cluster fails on the old version)", k.Instead, k.Instead, o.Kind, rel)
	} else {
		msg += fmt.Sprintf("no version of %s exists any more, so kpt live apply against a %s cluster fails on it (routed by its former scope); remove it", o.Kind, rel)
	}
	p.Problems = append(p.Problems, Problem{Object: i, Severity: Warning, Field: "apiVersion", Message: msg})
}

// decide applies rules 2, 3 and 5 to one object: selectors, then its
// Namespace (nsContexts, nil when not in the package), then sticky
// placement, then defaultContext.
func (r *Router) decide(p *Plan, i int, o *Object, matched, nsContexts []int) Decision {
	switch {
	case len(matched) > 0:
		return r.withMoves(p, i, o, Decision{Reason: Selected, Contexts: matched})
	case nsContexts != nil:
		return r.withMoves(p, i, o, Decision{Reason: FollowsNamespace, Contexts: nsContexts})
	case r.placement != nil && isNamespace(o):
		return r.place(p, i, o)
	case o.HasPrevious:
		var ctx []int
		for _, name := range o.Previous {
			c, ok := r.index[name]
			if !ok {
				p.errorf(i, "metadata.annotations["+v1alpha1.ContextAnnotation+"]",
					"%s is pinned to context %q, which the config does not declare (contexts: %s)", describe(o), name, quoteList(r.names))
				return Decision{Reason: Failed}
			}
			ctx = append(ctx, c)
		}
		slices.Sort(ctx)
		return Decision{Reason: Sticky, Contexts: slices.Compact(ctx)}
	case r.defaultCtx >= 0:
		return Decision{Reason: Default, Contexts: []int{r.defaultCtx}}
	}
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
	p.errorf(i, fieldPath, "%s has no context: %s, it carries no %s annotation, and the config has no defaultContext",
		describe(o), what, v1alpha1.ContextAnnotation)
	return Decision{Reason: Failed}
}

// withMoves applies rule 6: dropping a context the resource already carries
// would make kpt live apply prune it from that cluster.
func (r *Router) withMoves(p *Plan, i int, o *Object, d Decision) Decision {
	if !o.HasPrevious {
		return d
	}
	var dropped []string
	for _, name := range o.Previous {
		if c, ok := r.index[name]; !ok || !slices.Contains(d.Contexts, c) {
			if !slices.Contains(dropped, name) {
				dropped = append(dropped, name)
			}
		}
	}
	if len(dropped) == 0 {
		return d
	}
	newNames := strings.Join(r.NamesOf(d.Contexts), ",")
	old := strings.Join(o.Previous, ",")
	field := "metadata.annotations[" + v1alpha1.ContextAnnotation + "]"
	if r.allowMoves {
		p.Problems = append(p.Problems, Problem{Object: i, Severity: Warning, Field: field,
			Message: fmt.Sprintf("%s moves from %q to %q (allowMoves): kpt live apply --context %s will prune it unless its live object carries cli-utils.sigs.k8s.io/on-remove: keep",
				describe(o), old, newNames, strings.Join(dropped, ","))})
		d.Dropped = dropped
		return d
	}
	p.errorf(i, field, "%s would move from %q to %q: kpt live apply --context %s would delete it there; set spec.allowMoves: true to move it on purpose",
		describe(o), old, newNames, strings.Join(dropped, ","))
	return Decision{Reason: Failed, Refused: d.Contexts}
}

func (r *Router) checkIdentity(p *Plan, i int, o *Object) bool {
	if o.List {
		p.errorf(i, "kind", "item %s %s%s is a list of resources, not a resource: kpt does not unwrap Lists (kubectl does), so kpt live apply would send it whole and fail, and shard-router cannot route its items one by one; "+
			"write each entry of its items as a resource of its own (a YAML document after ---), then run again", o.APIVersion, o.Kind, nameSuffix(o))
		return false
	}
	ok := true
	if o.APIVersion == "" {
		p.errorf(i, "apiVersion", "item has no apiVersion")
		ok = false
	}
	if o.Kind == "" {
		p.errorf(i, "kind", "item has no kind")
		ok = false
	}
	if o.Name == "" {
		p.errorf(i, "metadata.name", "item %s %s has no metadata.name", o.APIVersion, o.Kind)
		ok = false
	}
	return ok
}

// namespaced applies rule 4's order: the built-in table (by group and kind,
// whatever the version, as the datastore lookup does), then the package's
// CRDs, then whether metadata.namespace is set. known is false when the
// scope is that last guess.
func (r *Router) namespaced(o *Object, builtin builtinScope, crdScope map[[2]string]string) (namespaced, known bool) {
	if builtin != notBuiltin {
		return builtin == namespacedScope, true
	}
	if scope, ok := crdScope[[2]string{o.Group(), o.Kind}]; ok {
		return scope != "Cluster", true
	}
	return o.Namespace != "", o.Namespace != ""
}

func nameSuffix(o *Object) string {
	if o.Name == "" {
		return ""
	}
	return " " + o.Name
}

func isNamespace(o *Object) bool { return o.APIVersion == "v1" && o.Kind == "Namespace" }

func (p *Plan) errorf(i int, field, format string, args ...any) {
	p.Problems = append(p.Problems, Problem{Object: i, Severity: Error, Field: field, Message: fmt.Sprintf(format, args...)})
}

func describe(o *Object) string {
	if o.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name)
	}
	return fmt.Sprintf("%s %s", o.Kind, o.Name)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// union merges two ascending index lists.
func union(a, b []int) []int {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := append(append([]int(nil), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// minus returns the elements of a not in b.
func minus(a, b []int) []int {
	var out []int
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
