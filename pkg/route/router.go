package route

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/kinds"
)

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

// Routing is what Route decided for a whole package: a Decision per
// object, and every problem.
type Routing struct {
	Decisions []Decision
	Problems  []Problem
}

// Router routes objects by a compiled config.
type Router struct {
	cfg *config.Config
	// ref identifies the function config, which is never routed.
	ref Ref
	// engine is who applies the split (ForEngine); "" and kpt: kpt live
	// apply.
	engine gitops.Engine
}

// Ref identifies an object by apiVersion, kind, namespace and name.
type Ref struct{ APIVersion, Kind, Namespace, Name string }

// New returns the router of a compiled config.
func New(cfg *config.Config) *Router {
	s := cfg.Source
	return &Router{cfg: cfg, ref: Ref{APIVersion: s.APIVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}}
}

// ForEngine says who applies the split (split and plan --engine), for the
// move messages: under a pulling engine a move is handed off in two
// commits, not pruned by kpt live apply. Routing itself is the same.
func (r *Router) ForEngine(e gitops.Engine) *Router {
	r.engine = e
	return r
}

// WithConfigRef sets the identity of the function config as kpt passed it,
// so that its copy among the items (kpt fn render's configPath) is skipped
// whatever its kind.
func (r *Router) WithConfigRef(ref Ref) *Router {
	r.ref = ref
	return r
}

// objKey identifies a stored object: by group and kind, or for built-in
// kinds by storage group and resource, so that one object served by two
// groups is one key. The two cannot collide: custom resources cannot use
// the built-in groups (a CRD's group needs a dot, and the k8s.io ones need
// approval), nor the empty core group.
type objKey struct{ group, kind, namespace, name string }

// Route decides every object. Decisions are index-aligned with objs; every
// error and warning is collected, never just the first. Pass 1 admits the
// objects (identity, duplicates, CRD scopes); then every admitted object
// goes through the rules (rules.go), Namespaces first since their resources
// follow them.
func (r *Router) Route(objs []Object) *Routing {
	run := &routeRun{
		r: r, objs: objs, p: &Routing{Decisions: make([]Decision, len(objs))},
		crdScope:   r.crdScopes(objs),
		namespaces: map[string]*nsState{},
		seen:       make(map[objKey]int, len(objs)), // sized once: it holds every object
		guessed:    map[[2]string]*guess{},
		scope:      make([]builtinScope, len(objs)),
	}
	// Pass 1: check identities and collect Namespaces. Objects that are
	// never routed are left to the first rule.
	for i := range objs {
		if !r.skipped(&objs[i]) && !run.admit(i) {
			run.p.Decisions[i].Reason = Failed
		}
	}
	run.old.warn(run.p, objs)
	run.routeNamespaces()
	run.routeOthers()
	reportMovers(run.p, objs, run.nsOrder)
	run.warnGuesses()
	return run.p
}

// routeRun is one Route call's state.
type routeRun struct {
	r          *Router
	objs       []Object
	p          *Routing
	crdScope   map[[2]string]string
	namespaces map[string]*nsState
	nsOrder    []*nsState           // package order, so results are deterministic
	seen       map[objKey]int       // each stored object's first item
	guessed    map[[2]string]*guess // custom kinds broadcast on a guessed scope
	guessOrder [][2]string
	scope      []builtinScope // pass 1's lookup, for the rules
	old        oldVersions
}

// admit checks object i's identity (pass 1): false when it fails.
func (run *routeRun) admit(i int) bool {
	o, p := &run.objs[i], run.p
	if !run.r.checkIdentity(p, i, o) {
		return false
	}
	builtin, isBuiltin := kinds.Resolve(o.APIVersion, o.Kind)
	if isBuiltin && !builtin.Served {
		run.old.add(i, o, builtin)
	}
	key := objKey{o.Group(), o.Kind, o.Namespace, o.Name}
	if isBuiltin {
		// One stored object, whichever group serves it (v1 and
		// events.k8s.io/v1 Events, extensions and apps Deployments).
		key.group, key.kind = builtin.Storage.Group, builtin.Storage.Resource
		run.scope[i] = clusterScoped
		if builtin.Namespaced {
			run.scope[i] = namespacedScope
		}
		if !builtin.Stored {
			key.group, key.kind = builtin.Group, builtin.Resource
			if key.kind == "" { // a generated legacy kind: no plural known
				key.kind = builtin.Kind.Kind
			}
		}
	}
	cluster := run.scope[i] == clusterScoped || !isBuiltin && run.crdScope[[2]string{o.Group(), o.Kind}] == "Cluster"
	if cluster {
		key.namespace = "" // kube-apiserver ignores it: one object
	}
	if first, dup := run.seen[key]; dup {
		run.duplicate(i, first, key)
		return false
	}
	run.seen[key] = i
	if cluster && o.Namespace != "" {
		p.errorf(i, "metadata.namespace", "%s is cluster-scoped but has metadata.namespace %q: kpt live apply refuses it; remove metadata.namespace",
			o.Describe(), o.Namespace)
		return false
	}
	if isNamespace(o) {
		run.namespaces[o.Name] = &nsState{object: i}
		run.nsOrder = append(run.nsOrder, run.namespaces[o.Name])
	}
	return true
}

// duplicate refuses object i, stored as the object first is.
func (run *routeRun) duplicate(i, first int, key objKey) {
	o, f := &run.objs[i], &run.objs[first]
	if f.APIVersion != o.APIVersion || f.Kind != o.Kind {
		run.p.Problems = append(run.p.Problems, Problem{Object: i, Severity: Error, Field: "apiVersion", Related: []int{first},
			Message: fmt.Sprintf("%s %s and %s %s (item %d) are one object: kube-apiserver stores both as %s/%s, so the cluster would keep only the last one applied; keep one of them",
				o.APIVersion, o.Describe(), f.APIVersion, f.Describe(), first, key.group, key.kind)})
		return
	}
	run.p.Problems = append(run.p.Problems, Problem{Object: i, Severity: Error, Field: "metadata.name", Related: []int{first},
		Message: fmt.Sprintf("%s is in the package twice (first at item %d): kpt live apply would keep only one", o.Describe(), first)})
}

// routeNamespaces is pass 2: Namespaces, matched by both selectors against
// their own labels.
func (run *routeRun) routeNamespaces() {
	for _, ns := range run.nsOrder {
		o := &run.objs[ns.object]
		ns.byNsSel = run.r.cfg.NamespaceIndex.Match(o.Labels)
		s := subject{i: ns.object, o: o, nsSel: ns.byNsSel}
		d := run.r.route(run.p, &s)
		run.p.Decisions[ns.object] = d
		if d.Routed() {
			ns.contexts = d.Contexts
		}
		ns.refused, ns.refusedMove = d.Refused, s.refusedMove
	}
}

// routeOthers is pass 3: everything else.
func (run *routeRun) routeOthers() {
	for i := range run.objs {
		o := &run.objs[i]
		if run.p.Decisions[i].Reason != NotRouted || isNamespace(o) {
			continue // failed in pass 1, or a Namespace of pass 2
		}
		s := subject{i: i, o: o}
		s.namespaced, s.known = run.r.namespaced(o, run.scope[i], run.crdScope)
		if s.namespaced {
			// Without metadata.namespace there is no Namespace to follow,
			// but selectors, sticky and defaultContext still apply.
			if s.ns = run.namespaces[o.Namespace]; s.ns != nil {
				s.nsSel = s.ns.byNsSel
			}
		}
		d := run.r.route(run.p, &s)
		run.p.Decisions[i] = d
		if d.Reason == Broadcast && !s.known {
			gk := [2]string{o.Group(), o.Kind}
			if g := run.guessed[gk]; g != nil {
				g.more++
			} else {
				run.guessed[gk] = &guess{first: i}
				run.guessOrder = append(run.guessOrder, gk)
			}
		}
	}
}

// warnGuesses warns once per custom kind broadcast on a guessed scope.
func (run *routeRun) warnGuesses() {
	for _, gk := range run.guessOrder {
		g := run.guessed[gk]
		o := &run.objs[g.first]
		more := ""
		if g.more > 0 {
			more = fmt.Sprintf(" (and %d more %s)", g.more, o.Kind)
		}
		run.p.Problems = append(run.p.Problems, Problem{Object: g.first, Severity: Warning, Field: "metadata.namespace",
			Message: fmt.Sprintf("%s%s is sent to every context as cluster-scoped, a guess: %s %s is no built-in kind, the package has no CustomResourceDefinition for it, and it has no metadata.namespace; if the kind is namespaced it belongs where its Namespace goes. Make it certain: add the kind's CustomResourceDefinition to the package, set metadata.namespace, or pin it with a resourceSelector",
				o.Describe(), more, o.APIVersion, o.Kind)})
	}
}

// reportMovers names, in each refused move of a Namespace, the objects
// that would move with it (one refusal per cause).
func reportMovers(p *Routing, objs []Object, nsOrder []*nsState) {
	for _, ns := range nsOrder {
		if m := ns.refusedMove; m != nil && len(ns.movers) > 0 {
			p.Problems[m.problem].Message = m.message(objs[ns.object].Describe(), describeObjects(objs, ns.movers))
		}
	}
}

// crdScopes are the scopes (spec.scope) of the package's CRDs, by group
// and kind.
func (r *Router) crdScopes(objs []Object) map[[2]string]string {
	scopes := map[[2]string]string{}
	for i := range objs {
		if o := &objs[i]; o.CRD != nil && o.CRD.Kind != "" && !r.skipped(o) {
			scopes[[2]string{o.CRD.Group, o.CRD.Kind}] = o.CRD.Scope
		}
	}
	return scopes
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

// oldVersions are the objects of built-in kinds written in an apiVersion
// that the table's release does not serve, by apiVersion and kind, in
// package order.
type oldVersions struct {
	order   [][2]string
	objects map[[2]string][]int
	kinds   map[[2]string]kinds.Resolved
}

func (v *oldVersions) add(i int, o *Object, k kinds.Resolved) {
	key := [2]string{o.APIVersion, o.Kind}
	if v.objects == nil {
		v.objects, v.kinds = map[[2]string][]int{}, map[[2]string]kinds.Resolved{}
	}
	if v.objects[key] == nil {
		v.order = append(v.order, key)
		v.kinds[key] = k
	}
	v.objects[key] = append(v.objects[key], i)
}

// warn gives one warning per apiVersion and kind, on its first object,
// counting and naming them all. Each is routed by its group and kind,
// which give the same scope and storage in every version, so the route is
// right; but kpt live apply against that release fails on it.
func (v *oldVersions) warn(p *Routing, objs []Object) {
	rel := kinds.Release()
	for _, key := range v.order {
		idx, k := v.objects[key], v.kinds[key]
		apiVersion, kind := key[0], key[1]
		msg := fmt.Sprintf("%s: Kubernetes %s does not serve %s %s; ", describeObjects(objs, idx), rel, apiVersion, kind)
		if k.Instead != "" {
			msg += fmt.Sprintf("write apiVersion: %s (routed as %s %s, which has the same scope and storage; kpt live apply against a %s cluster fails on the old version)", k.Instead, k.Instead, kind, rel)
		} else {
			msg += fmt.Sprintf("no version of %s exists any more, so kpt live apply against a %s cluster fails on it (routed by its former scope); remove it", kind, rel)
		}
		p.Problems = append(p.Problems, Problem{Object: idx[0], Severity: Warning, Field: "apiVersion", Message: msg})
	}
}

// maxNamed is how many objects a message about many names.
const maxNamed = 10

// describeObjects names the objects of a message about several (see
// DescribeList).
func describeObjects(objs []Object, idx []int) string {
	names := make([]string, len(idx))
	for k, i := range idx {
		names[k] = objs[i].Describe()
	}
	return DescribeList(names)
}

// DescribeList names the objects of one message, each as Describe names
// it: "Kind ns/a", or "3 objects (Kind ns/a, Kind ns/b, Kind c)", the first
// maxNamed of them and how many more.
func DescribeList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	more := ""
	if len(names) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(names)-maxNamed)
	}
	return fmt.Sprintf("%d objects (%s%s)", len(names), strings.Join(names[:min(len(names), maxNamed)], ", "), more)
}

func (r *Router) checkIdentity(p *Routing, i int, o *Object) bool {
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

func nameSuffix(o *Object) string {
	if o.Name == "" {
		return ""
	}
	return " " + o.Name
}

func isNamespace(o *Object) bool { return o.APIVersion == "v1" && o.Kind == "Namespace" }

func (p *Routing) errorf(i int, field, format string, args ...any) {
	p.Problems = append(p.Problems, Problem{Object: i, Severity: Error, Field: field, Message: fmt.Sprintf(format, args...)})
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
