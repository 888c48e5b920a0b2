package yamlio

import (
	"bytes"
	"fmt"
	"io"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// maxDepth bounds recursion, against pathological trees.
const maxDepth = 1000

// HasAnchors reports whether the tree under n has an anchor or an alias.
func HasAnchors(n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if HasAnchors(c) {
			return true
		}
	}
	return false
}

// CopyNode returns a deep copy of the tree under n in which every alias to
// a node of the tree names that node's copy. kyaml's Copy keeps aliases
// pointing into the original tree, so de-anchoring or annotating a copy
// would change the original, and the copy would be written with aliases to
// anchors it does not hold.
func CopyNode(n *yaml.Node) *yaml.Node {
	copies := map[*yaml.Node]*yaml.Node{}
	var cp func(n *yaml.Node, depth int) *yaml.Node
	cp = func(n *yaml.Node, depth int) *yaml.Node {
		if n == nil {
			return nil
		}
		c := *n
		copies[n] = &c
		if len(n.Content) > 0 && depth < maxDepth {
			c.Content = make([]*yaml.Node, len(n.Content))
			for i, child := range n.Content {
				c.Content[i] = cp(child, depth+1)
			}
		}
		return &c
	}
	root := cp(n, 0)
	for _, c := range copies {
		if c.Kind == yaml.AliasNode {
			if target, ok := copies[c.Alias]; ok {
				c.Alias = target
			}
		}
	}
	return root
}

// uniqueKeys reports whether no key of a mapping repeats.
func uniqueKeys(m *yaml.Node) bool {
	c := m.Content
	if len(c) > 64 {
		seen := make(map[string]bool, len(c)/2)
		for k := 0; k < len(c); k += 2 {
			if seen[c[k].Value] {
				return false
			}
			seen[c[k].Value] = true
		}
		return true
	}
	for k := 0; k < len(c); k += 2 {
		for j := k + 2; j < len(c); j += 2 {
			if c[j].Value == c[k].Value {
				return false
			}
		}
	}
	return true
}

// uniqueField returns the value of a mapping's key when the key appears
// exactly once, nil otherwise.
func uniqueField(m *yaml.Node, name string) *yaml.Node {
	var v *yaml.Node
	for k := 0; k+1 < len(m.Content); k += 2 {
		if key := m.Content[k]; key.Kind == yaml.ScalarNode && key.Value == name {
			if v != nil {
				return nil
			}
			v = m.Content[k+1]
		}
	}
	return v
}

// encodeItem appends n as the reference encoder writes it as an entry of
// the top-level `items:` sequence.
func encodeItem(buf *bytes.Buffer, n *yaml.Node) error { return encodeEntries(buf, "items", n) }

// encodeEntries appends nodes as the reference encoder writes them as
// entries of the top-level sequence `key:`: it encodes `key: [nodes...]`
// with kyaml's encoder settings and drops the key line, so the entries are
// emitted in exactly the same context as in the whole list.
func encodeEntries(buf *bytes.Buffer, key string, nodes ...*yaml.Node) error {
	start := buf.Len()
	doc := mappingNode(scalarNode(key), &yaml.Node{Kind: yaml.SequenceNode, Content: nodes})
	if err := encodeNode(buf, doc); err != nil {
		return err
	}
	b := buf.Bytes()
	keyLine := len(key) + len(":\n")
	if len(b)-start < keyLine || string(b[start:start+keyLine]) != key+":\n" {
		return fmt.Errorf("internal error: unexpected encoding of %s entries: %.40q", key, b[start:])
	}
	copy(b[start:], b[start+keyLine:])
	buf.Truncate(len(b) - keyLine)
	return nil
}

func encodeNode(w io.Writer, n *yaml.Node) error {
	enc := yaml.NewEncoder(w) // kyaml's settings: indent 2, compact sequences
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}); err != nil {
		return err
	}
	return enc.Close()
}

func mappingNode(content ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: content}
}

func scalarNode(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }
