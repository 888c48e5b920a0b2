package function

import (
	"fmt"
	"io"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// Run is function mode: it reads a ResourceList from in and writes the
// routed ResourceList to out (see yamlio.RunFunction: the streaming path,
// or kyaml's framework path, which opts.Reference forces).
func Run(in io.Reader, out io.Writer, opts yamlio.Options) error {
	return yamlio.RunFunction(in, out, Processor{}, opts)
}

var _ yamlio.Function[Item] = Processor{}

// ReadItem is ItemOf: the streaming path gives items without anchors.
func (Processor) ReadItem(rn *yaml.RNode) Item { return withConfig(ItemOf(rn), rn) }

// Decide is Process for the streaming path, on the items already read.
func (Processor) Decide(config *yaml.RNode, items []Item) (yamlio.Edit, framework.Results, error) {
	out, results := LoadAndDecide(config, items)
	if out == nil {
		return nil, results, results
	}
	// Preprocessing succeeded on every node, so the metadata.annotations
	// mapping exists and setting annotations cannot fail; an error here is
	// a bug.
	edit := func(i int, rn *yaml.RNode) error {
		if err := out.ApplyItem(i, rn); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		return nil
	}
	return edit, results, nil
}
