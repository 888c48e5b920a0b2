package function

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/route"
)

// Engine is what routes a package: a function config, loaded and
// compiled, with its router (config.Config is the compiled ShardConfig
// alone).
type Engine struct {
	// Config is the one compiled config that routing, datastores and
	// every command read.
	Config *config.Config
	Router *route.Router
	// Notices are warnings about the config itself.
	Notices []config.Notice
	// Ref and File identify the config node, for results.
	Ref  *yaml.ResourceIdentifier
	File *framework.File
}

// LoadConfig loads, validates and compiles a function config node. On error
// it returns error results that name the config's file and field.
func LoadConfig(node *yaml.RNode) (*Engine, framework.Results) {
	c := &Engine{}
	if node != nil && !node.IsNilOrEmpty() && node.YNode().Kind == yaml.MappingNode {
		it := ItemOf(node)
		c.Ref = &yaml.ResourceIdentifier{TypeMeta: yaml.TypeMeta{APIVersion: it.APIVersion, Kind: it.Kind},
			NameMeta: yaml.NameMeta{Name: it.Name, Namespace: it.Namespace}}
		if it.Path != "" {
			c.File = &framework.File{Path: it.Path, Index: it.Index}
		}
	}
	compiled, notices, errs := config.Load(node)
	if len(errs) > 0 {
		return nil, c.fieldResults(errs)
	}
	c.Config, c.Notices = compiled, notices
	c.Router = route.New(compiled)
	if c.Ref != nil {
		c.Router.WithConfigRef(route.Ref{APIVersion: c.Ref.APIVersion, Kind: c.Ref.Kind, Namespace: c.Ref.Namespace, Name: c.Ref.Name})
	}
	return c, nil
}

func (c *Engine) fieldResults(errs field.ErrorList) framework.Results {
	var out framework.Results
	for _, e := range errs {
		// e.Error() would print a nil path as "<nil>: ".
		msg := e.ErrorBody()
		if e.Field != "" && e.Field != "<nil>" {
			msg = e.Field + ": " + msg
		}
		r := &framework.Result{Severity: framework.Error, ResourceRef: c.Ref, File: c.File,
			Message: "function config: " + msg}
		if e.Field != "" && e.Field != "<nil>" {
			r.Field = &framework.Field{Path: e.Field}
		}
		out = append(out, r)
	}
	return out
}

// Outcome is the routing of a whole package: what to annotate, and results.
type Outcome struct {
	Routing *route.Routing
	// Contexts and DataStores are the annotation values per item ("" for an
	// item that is not routed).
	Contexts, DataStores []string
	Results              framework.Results
	// Stores[i][k] is the datastore of routed item i in its k-th context
	// (Routing.Decisions[i].Contexts[k]): datastore.Assign, run once per
	// object and context, for every reader.
	Stores [][]string
	// StoreChanges[i] are routed item i's datastore changes
	// (datastore.Changes), for the plan.
	StoreChanges [][]datastore.StoreChange
	// Capacity is what each context and datastore would hold.
	Capacity *Capacity
}

// StoreIn is the datastore of routed item i in context ctx; ok is false
// when the item does not go there.
func (o *Outcome) StoreIn(i, ctx int) (string, bool) {
	for k, c := range o.Routing.Decisions[i].Contexts {
		if c == ctx && o.Stores[i] != nil {
			return o.Stores[i][k], true
		}
	}
	return "", false
}

// Decide routes the items and assigns their datastores. It never changes
// the items; Apply does.
func (c *Engine) Decide(items []Item) *Outcome {
	objs := make([]route.Object, len(items))
	for i := range items {
		objs[i] = items[i].Object
	}
	routing := c.Router.Route(objs)
	out := &Outcome{Routing: routing, Contexts: make([]string, len(items)), DataStores: make([]string, len(items)),
		Stores: make([][]string, len(items)), StoreChanges: make([][]datastore.StoreChange, len(items))}
	for _, n := range c.Notices {
		out.Results = append(out.Results, &framework.Result{Severity: framework.Warning, ResourceRef: c.Ref, File: c.File,
			Field: &framework.Field{Path: n.Field}, Message: "function config: " + n.Message})
	}
	for _, pr := range routing.Problems {
		msg := pr.Message
		if len(pr.Related) > 0 {
			msg += "; in " + filesOf(items, append([]int{pr.Object}, pr.Related...))
		}
		out.Results = append(out.Results, itemResult(&items[pr.Object], severity(pr.Severity), pr.Field, msg))
	}
	changes := &storeChanges{}
	for i, d := range routing.Decisions {
		if !d.Routed() {
			continue
		}
		it := &items[i]
		names := c.Config.NamesOf(d.Contexts)
		stores := make([]string, len(d.Contexts))
		for k, ctx := range d.Contexts {
			stores[k] = datastore.Assign(c.Config, ctx, it.APIVersion, it.Kind)
		}
		out.Contexts[i] = strings.Join(names, ",")
		out.DataStores[i], out.Stores[i] = datastore.FormatAnnotation(names, stores), stores
		c.checkDataStoreChange(out, changes, i, it, d.Contexts)
	}
	out.Results = append(out.Results, changes.results(items)...)
	// One info result per context and per datastore (objects and bytes),
	// after the placements.
	capacity := c.capacity(items, out)
	out.Results = append(out.Results, c.placedNamespaces(items, out)...)
	out.Results = append(out.Results, capacity...)
	return out
}

// checkDataStoreChange refuses a change of datastore for a resource that
// already lives somewhere: kube-apiserver never migrates data when
// --etcd-servers-overrides changes, so the objects would vanish from the API.
// The changes are collected, so that each cause is reported once.
func (c *Engine) checkDataStoreChange(out *Outcome, changes *storeChanges, i int, it *Item, contexts []int) {
	if !it.HasDataStore || !it.HasPrevious {
		return
	}
	chs, err := datastore.Changes(c.Config, it.APIVersion, it.Kind, it.DataStore, it.Previous, contexts, out.Stores[i])
	if err != nil {
		out.Results = append(out.Results, itemResult(it, framework.Error, dataStoreField, fmt.Sprintf("%s: cannot read its %s annotation: %v", it.Describe(), v1alpha1.DataStoreAnnotation, err)))
		return
	}
	out.StoreChanges[i] = chs
	for _, ch := range chs {
		changes.add(storeChange{group: it.Group(), kind: it.Kind, context: ch.Context, from: ch.From, to: ch.To, verdict: ch.Verdict}, i)
	}
}

var dataStoreField = "metadata.annotations[" + v1alpha1.DataStoreAnnotation + "]"

// storeChange is one cause of datastore changes: the objects of one kind
// whose datastore in one context changes from one datastore to another.
type storeChange struct {
	group, kind, context, from, to string
	verdict                        datastore.Verdict
}

// storeChanges are the datastore changes by cause, in package order.
type storeChanges struct {
	order   []storeChange
	objects map[storeChange][]int
}

func (s *storeChanges) add(c storeChange, i int) {
	if s.objects == nil {
		s.objects = map[storeChange][]int{}
	}
	if s.objects[c] == nil {
		s.order = append(s.order, c)
	}
	s.objects[c] = append(s.objects[c], i)
}

// results gives one result per cause, on its first object, counting and
// naming them all.
func (s *storeChanges) results(items []Item) framework.Results {
	var out framework.Results
	for _, c := range s.order {
		idx := s.objects[c]
		names := make([]string, len(idx))
		for k, i := range idx {
			names[k] = items[i].Describe()
		}
		msg := fmt.Sprintf("%s would change datastore in context %q from %q to %q: kube-apiserver does not migrate data, so %s would vanish from the API until copied",
			route.DescribeList(names), c.context, c.from, c.to, pronoun(len(idx)))
		it := &items[idx[0]]
		switch c.verdict {
		case datastore.AllowedEphemeral:
			out = append(out, itemResult(it, framework.Warning, dataStoreField, msg+" (allowed: its override is ephemeral)"))
		case datastore.AllowedByConfig:
			out = append(out, itemResult(it, framework.Warning, dataStoreField, msg+" (allowDataStoreChanges)"))
		default:
			out = append(out, itemResult(it, framework.Error, dataStoreField, msg+"; copy the data first and set spec.allowDataStoreChanges: true (see the README)"))
		}
	}
	return out
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "they"
}

func severity(s route.Severity) framework.Severity {
	if s == route.Warning {
		return framework.Warning
	}
	return framework.Error
}

func itemResult(it *Item, sev framework.Severity, fieldPath, msg string) *framework.Result {
	r := &framework.Result{Severity: sev, Message: msg,
		ResourceRef: &yaml.ResourceIdentifier{TypeMeta: yaml.TypeMeta{APIVersion: it.APIVersion, Kind: it.Kind},
			NameMeta: yaml.NameMeta{Name: it.Name, Namespace: it.Namespace}}}
	if fieldPath != "" {
		r.Field = &framework.Field{Path: fieldPath}
	}
	if it.Path != "" {
		r.File = &framework.File{Path: it.Path, Index: it.Index}
	}
	return r
}

// filesOf names the files of items, for a result about several of them:
// "a.yaml[0] and b.yaml[2]", or "item 3" for one read without a path.
func filesOf(items []Item, idx []int) string {
	parts := make([]string, len(idx))
	for k, i := range idx {
		it := &items[i]
		switch {
		case it.Path == "":
			parts[k] = fmt.Sprintf("item %d", i)
		case it.HasIndex:
			parts[k] = fmt.Sprintf("%s[%d]", it.Path, it.Index)
		default:
			parts[k] = it.Path
		}
	}
	return strings.Join(parts, " and ")
}
