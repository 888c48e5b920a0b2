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

// Lookup returns the value node of a mapping's key as a YAML 1.1 loader
// (kubectl's, kpt's) reads it, so that routing sees the object that reaches
// kube-apiserver: aliases are followed (a label map written as *anchor
// routes like the map it names), and merge keys (<<: *base) are expanded,
// explicit keys first, then each merged map in order. The common case, a
// mapping without merge keys, is one scan.
func Lookup(n *yaml.Node, name string) *yaml.Node {
	n = Deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	merges := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := Deref(n.Content[i])
		if IsMergeKey(k) {
			merges = true
			continue
		}
		if k.Value == name {
			return Deref(n.Content[i+1])
		}
	}
	if !merges {
		return nil
	}
	var found *yaml.Node
	MergedFields(n, 0, func(k, v *yaml.Node) bool {
		if k.Value == name {
			found = v
			return false
		}
		return true
	})
	return found
}

// maxMergeDepth bounds merges of merges, against pathological inputs.
const maxMergeDepth = 16

// IsMergeKey reports a YAML 1.1 merge key: a plain <<, not a quoted one.
func IsMergeKey(k *yaml.Node) bool {
	return k != nil && k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// HasMergeKey reports whether a mapping has a merge key of its own.
func HasMergeKey(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if IsMergeKey(Deref(m.Content[i])) {
			return true
		}
	}
	return false
}

// MergedFields calls yield for the fields of mapping m in YAML 1.1 merge
// order: its explicit keys, then those of each merged map (earlier maps of a
// merge sequence first, recursively). A key can come more than once; the
// first is the one that counts. It stops when yield returns false.
func MergedFields(m *yaml.Node, depth int, yield func(k, v *yaml.Node) bool) bool {
	m = Deref(m)
	if m == nil || m.Kind != yaml.MappingNode || depth > maxMergeDepth {
		return true
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := Deref(m.Content[i])
		if IsMergeKey(k) {
			merges = append(merges, Deref(m.Content[i+1]))
			continue
		}
		if k != nil && !yield(k, Deref(m.Content[i+1])) {
			return false
		}
	}
	for _, v := range merges {
		if v != nil && v.Kind == yaml.SequenceNode {
			for _, e := range v.Content {
				if !MergedFields(e, depth+1, yield) {
					return false
				}
			}
		} else if !MergedFields(v, depth+1, yield) {
			return false
		}
	}
	return true
}

// Deref follows aliases (up to 16) to the node they name.
func Deref(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode && depth < 16; depth++ {
		n = n.Alias
	}
	return n
}
