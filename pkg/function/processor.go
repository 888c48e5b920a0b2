package function

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// Processor is the KRM function. It keeps every item, in order; it changes
// only the two annotations it owns, and only when every item could be
// routed, so that an error leaves the package untouched.
type Processor struct{}

var _ framework.ResourceListProcessor = Processor{}

// Process implements framework.ResourceListProcessor. It returns the
// results as the error when any is an error, so the process exits non-zero
// (kpt judges a function by its exit code alone).
func (Processor) Process(rl *framework.ResourceList) error {
	// RunFunction refuses these first; kyaml's framework alone does not.
	if err := yamlio.CheckItems(rl.Items); err != nil {
		return err
	}
	items := make([]Item, len(rl.Items))
	for i, rn := range rl.Items {
		items[i] = withConfig(ItemOfShared(rn), rn)
	}
	out, results := LoadAndDecide(rl.FunctionConfig, items)
	rl.Results = append(rl.Results, results...)
	if out == nil {
		return rl.Results
	}
	out.deAnchorShared(rl.Items)
	for i, rn := range rl.Items {
		if err := out.ApplyItem(i, rn); err != nil {
			rl.Results = append(rl.Results, itemResult(&items[i], framework.Error, "metadata.annotations", err.Error()))
			return rl.Results
		}
	}
	return nil
}

// LoadAndDecide loads the function config and decides the items, as both the
// reference and the streaming path do. It returns the outcome only when
// the items may be annotated (no error result), and the results always.
func LoadAndDecide(config *yaml.RNode, items []Item) (*Outcome, framework.Results) {
	if noConfig(config) {
		among, errs := configAmong(items)
		if len(errs) > 0 {
			return nil, errs
		}
		if among != nil {
			config = among
		}
	}
	cfg, errs := LoadConfig(config)
	if len(errs) > 0 {
		return nil, errs
	}
	out := cfg.Decide(items)
	if out.Results.ExitCode() != 0 {
		return nil, out.Results
	}
	return out, out.Results
}

// noConfig reports a function config that gives none: absent, or the
// empty ConfigMap kpt fn eval sends without --fn-config or arguments.
func noConfig(config *yaml.RNode) bool {
	if config.IsNilOrEmpty() {
		return true
	}
	if config.GetKind() != "ConfigMap" || config.GetApiVersion() != "v1" {
		return false
	}
	data := config.Field("data")
	return config.Field("binaryData") == nil && (data == nil || data.Value.IsNilOrEmpty() || len(data.Value.YNode().Content) == 0)
}

// configAmong is the function config when kpt passes none, as split and
// plan choose it: the items' single ShardConfig (nil when they hold none,
// which LoadConfig reports). Several are an error that names each.
func configAmong(items []Item) (*yaml.RNode, framework.Results) {
	var found []int
	for i := range items {
		if items[i].ShardConfig != nil {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil // LoadConfig reports what config gives
	case 1:
		return items[found[0]].ShardConfig, nil
	}
	names := make([]string, len(found))
	for k, i := range found {
		names[k] = items[i].Describe()
	}
	it := &items[found[0]]
	return nil, framework.Results{itemResult(it, framework.Error, "",
		fmt.Sprintf("no function config was given, and the items hold %d %s resources (%s; in %s): keep one, or give one with --fn-config",
			len(found), v1alpha1.Kind, strings.Join(names, ", "), filesOf(items, found)))}
}

// Apply writes the two annotations on a routed item ("" means not routed),
// touching the node only where a value differs, so that a second run is a
// byte-for-byte no-op.
func Apply(rn *yaml.RNode, contexts, datastores string) error {
	if contexts == "" {
		return nil
	}
	annos := rn.GetAnnotations()
	for _, kv := range [][2]string{{v1alpha1.ContextAnnotation, contexts}, {v1alpha1.DataStoreAnnotation, datastores}} {
		if v, ok := annos[kv[0]]; ok && v == kv[1] {
			continue
		}
		if err := rn.PipeE(yaml.SetAnnotation(kv[0], kv[1])); err != nil {
			return err
		}
	}
	return nil
}

// deAnchorShared de-anchors, before any is annotated, the items ApplyItem
// would de-anchor, and the other items that alias a node outside
// themselves: a ResourceList is one YAML document, so such an alias may
// name an anchor of a de-anchored item, which would vanish under it. Other
// items, routed or not, keep their bytes. The streaming path never meets
// this: it leaves inputs with anchors or aliases to this path.
func (o *Outcome) deAnchorShared(items []*yaml.RNode) {
	need := make([]bool, len(items))
	anyNeed := false
	for i, rn := range items {
		if o.Contexts[i] != "" && sharedMetadata(rn.YNode(), o.Routing.Decisions[i].Label != nil) {
			need[i], anyNeed = true, true
		}
	}
	if !anyNeed {
		return
	}
	for i, rn := range items {
		if need[i] || (yamlio.HasAnchors(rn.YNode()) && aliasesOutside(rn.YNode())) {
			_ = deAnchor(rn) // an error is reported by ApplyItem's own attempt
		}
	}
}

// aliasesOutside reports whether a tree has an alias to a node outside it.
func aliasesOutside(n *yaml.Node) bool {
	inside := map[*yaml.Node]bool{}
	var aliases []*yaml.Node
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || inside[n] || depth > maxDepth {
			return
		}
		inside[n] = true
		if n.Kind == yaml.AliasNode {
			aliases = append(aliases, n)
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	for _, a := range aliases {
		if !inside[a.Alias] {
			return true
		}
	}
	return false
}

// ItemOfShared is ItemOf for an item that may have anchors, read by a kyaml
// reader or framework that has written its bookkeeping annotations (path,
// index, ids) into metadata.annotations: when that map is anchored, they
// show through every alias of it (labels aliased to the annotations), so
// they are taken out while the item is read. Items without anchors are
// read by ItemOf alone (the streaming readers leave anchored items to the
// reference readers).
func ItemOfShared(rn *yaml.RNode) Item {
	if !yamlio.HasAnchors(rn.YNode()) {
		return ItemOf(rn)
	}
	full := ItemOf(rn) // where the item comes from
	taken := takeBookkeeping(rn.YNode())
	it := ItemOf(rn)
	taken.restore()
	it.Path, it.Index, it.HasIndex = full.Path, full.Index, full.HasIndex
	return it
}
