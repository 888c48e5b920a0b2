package datastore

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/kinds"
)

// Entry is one --etcd-servers-overrides entry as one context's
// kube-apiserver sees it.
type Entry struct {
	Resource kinds.GroupResource
	// DataStore is the logical datastore; "" when the entry was read from a
	// flag value, which names servers only.
	DataStore string
	Servers   []string
	Ephemeral bool
}

// Entries returns the overrides that apply in context ctx, in
// dataStoreOverrides order: those whose datastore the context declares.
// Others leave the resource in the main etcd, as Assign does.
func Entries(c *config.Config, ctx int) []Entry {
	var out []Entry
	for _, o := range c.Overrides {
		ds, ok := c.DataStore(ctx, o.DataStore)
		if !ok {
			continue
		}
		out = append(out, Entry{Resource: o.Resource, DataStore: o.DataStore,
			Servers: slices.Clone(ds.Endpoints), Ephemeral: o.Ephemeral})
	}
	return out
}

// FormatFlag renders entries as the value of kube-apiserver's
// --etcd-servers-overrides: "group/resource#url;url" joined by ",". It is
// "" when there are none (then the flag should be left out). The value is
// one CSV record, written as pflag writes a StringSlice, so that an entry
// holding a ',' or a '"' (read from a quoted flag) comes back whole;
// entries of a validated config never need quoting.
func FormatFlag(entries []Entry) string {
	if len(entries) == 0 {
		return ""
	}
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = e.Resource.String() + "#" + strings.Join(e.Servers, ";")
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(parts) // a strings.Builder never fails
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// ParseFlag reads an --etcd-servers-overrides value as kube-apiserver 1.34
// does: one CSV record (pflag's StringSlice), each entry
// "group/resource#servers" with servers split on ";". Resources are
// normalised to their storage group/resource, and a resource given twice
// keeps its last servers, as kube-apiserver's storage factory does.
func ParseFlag(value string) ([]Entry, error) {
	if value == "" {
		return nil, nil
	}
	record, err := csv.NewReader(strings.NewReader(value)).Read()
	if err != nil {
		return nil, fmt.Errorf("%q is not what kube-apiserver reads (its flag is parsed as CSV): %v", value, err)
	}
	var out []Entry
	index := map[kinds.GroupResource]int{}
	for _, entry := range record {
		resource, servers, ok := strings.Cut(entry, "#")
		if !ok || strings.Contains(servers, "#") {
			return nil, fmt.Errorf("entry %q: must be group/resource#servers with exactly one '#'", entry)
		}
		group, name, ok := strings.Cut(resource, "/")
		if !ok || strings.Contains(name, "/") {
			return nil, fmt.Errorf("entry %q: %q must be group/resource with exactly one '/' (the core group is empty: \"/events\")", entry, resource)
		}
		list := strings.Split(servers, ";")
		if slices.Contains(list, "") {
			return nil, fmt.Errorf("entry %q: servers must be URLs separated by ';', none empty", entry)
		}
		gr, _, _ := kinds.StoredResource(kinds.GroupResource{Group: group, Resource: name})
		if i, dup := index[gr]; dup {
			out[i].Servers = list
			continue
		}
		index[gr] = len(out)
		out = append(out, Entry{Resource: gr, Servers: list})
	}
	return out, nil
}

// FormatJSON renders one value per context as a JSON object keyed by
// context, in the given order.
func FormatJSON(contexts, values []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{")
	for i, ctx := range contexts {
		k, err := json.Marshal(ctx)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(values[i])
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  %s: %s", k, v)
	}
	if len(contexts) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// Previous is what `overrides --previous` compares against: overrides per
// context, or one bare flag value that names no context.
type Previous struct {
	// ByContext holds the entries of each context the previous input names.
	ByContext map[string][]Entry
	// Bare is set when the input was one flag value without a context.
	Bare   []Entry
	IsBare bool
	// FromConfig is set when the input was a config, so that entries name
	// their logical datastores and say whether they are ephemeral.
	FromConfig bool
}

// ParsePrevious reads a previous configuration: a ShardConfig (or
// ConfigMap function config), the JSON object that `overrides -o json`
// prints, "context<TAB>value" lines as `overrides` prints them, or one bare
// flag value.
func ParsePrevious(data []byte) (*Previous, error) {
	if node, err := yaml.Parse(string(data)); err == nil && node.YNode().Kind == yaml.MappingNode {
		if node.GetKind() != "" || node.GetApiVersion() != "" {
			return previousFromConfig(node)
		}
		return previousFromJSON(node)
	}
	prev := &Previous{ByContext: map[string][]Entry{}}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	tabbed := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "\t") })
	if !tabbed {
		if len(lines) > 1 {
			return nil, fmt.Errorf("expected one flag value or context<TAB>value lines, found %d lines without a tab", len(lines))
		}
		prev.IsBare = true
		if len(lines) == 1 {
			entries, err := ParseFlag(strings.TrimSpace(lines[0]))
			if err != nil {
				return nil, err
			}
			prev.Bare = entries
		}
		return prev, nil
	}
	for n, l := range lines {
		ctx, value, ok := strings.Cut(l, "\t")
		if !ok || ctx == "" {
			return nil, fmt.Errorf("line %d: expected context<TAB>value", n+1)
		}
		if _, dup := prev.ByContext[ctx]; dup {
			return nil, fmt.Errorf("line %d: context %q given twice", n+1, ctx)
		}
		entries, err := ParseFlag(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("line %d (context %q): %w", n+1, ctx, err)
		}
		prev.ByContext[ctx] = entries
	}
	return prev, nil
}

func previousFromConfig(node *yaml.RNode) (*Previous, error) {
	c, _, errs := config.Load(node)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	prev := &Previous{ByContext: map[string][]Entry{}, FromConfig: true}
	for i, name := range c.Names {
		prev.ByContext[name] = Entries(c, i)
	}
	return prev, nil
}

func previousFromJSON(node *yaml.RNode) (*Previous, error) {
	prev := &Previous{ByContext: map[string][]Entry{}}
	content := node.YNode().Content
	for i := 0; i+1 < len(content); i += 2 {
		ctx, v := content[i].Value, content[i+1]
		if v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("context %q: expected a flag value string", ctx)
		}
		entries, err := ParseFlag(v.Value)
		if err != nil {
			return nil, fmt.Errorf("context %q: %w", ctx, err)
		}
		prev.ByContext[ctx] = entries
	}
	return prev, nil
}

// Location is where one resource is stored in one cluster.
type Location struct {
	// DataStore is the logical datastore: "default" for the main etcd, ""
	// when only the servers are known.
	DataStore string
	// Servers are the override's etcd servers; nil for the main etcd.
	Servers []string
}

// Main reports whether the location is the main etcd (--etcd-servers).
func (l Location) Main() bool { return len(l.Servers) == 0 }

func (l Location) String() string {
	switch {
	case l.Main():
		return "the main etcd (--etcd-servers)"
	case l.DataStore != "":
		return fmt.Sprintf("datastore %q (%s)", l.DataStore, strings.Join(l.Servers, ";"))
	}
	return strings.Join(l.Servers, ";")
}

// Change is a resource whose datastore changes in one context: it gains,
// loses, or changes the servers of its override.
type Change struct {
	Context   string
	Resource  kinds.GroupResource
	From, To  Location
	Ephemeral bool
}

// Diff compares the overrides of one context before and after. Server
// lists are compared as sets: their order does not move data, any other
// difference does. A change is Ephemeral when either side's override says so.
func Diff(context string, before, after []Entry) []Change {
	var out []Change
	old := map[kinds.GroupResource]Entry{}
	for _, e := range before {
		old[e.Resource] = e
	}
	seen := map[kinds.GroupResource]bool{}
	for _, e := range after {
		seen[e.Resource] = true
		was, ok := old[e.Resource]
		if ok && sameServers(was.Servers, e.Servers) {
			continue
		}
		c := Change{Context: context, Resource: e.Resource, To: locationOf(e), Ephemeral: e.Ephemeral || was.Ephemeral}
		if ok {
			c.From = locationOf(was)
		} else {
			c.From = Location{DataStore: v1alpha1.DefaultDataStore}
		}
		out = append(out, c)
	}
	for _, e := range before {
		if seen[e.Resource] {
			continue
		}
		out = append(out, Change{Context: context, Resource: e.Resource, From: locationOf(e),
			To: Location{DataStore: v1alpha1.DefaultDataStore}, Ephemeral: e.Ephemeral})
	}
	return out
}

func locationOf(e Entry) Location {
	return Location{DataStore: e.DataStore, Servers: slices.Clone(e.Servers)}
}

func sameServers(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
