package yamlio

import (
	"bytes"
	"path"
	"slices"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// A package file is written as kio.ByteWriter writes it, with the reader
// and internal annotations cleared (encodeReference). That writer copies
// every node and reads its metadata again for each annotation it clears;
// for the resources a package holds (metadata and annotations mappings with
// unique keys and string values) encode does the same edits directly on
// the nodes, which the caller owns, and encodes them with the same encoder
// settings. Anything else goes to encodeReference; the differential suite
// compares the two.

// Encode writes the nodes of one file (at least one) as kpt writes a
// package file: in index order, comments and sequence indentation kept,
// reader and internal annotations removed (see ClearedAnnotations). It may
// change the nodes. opts.Reference writes them with kio.ByteWriter alone.
//
// The bytes are a fixed point: read back and written again as kpt would,
// they do not change (settleComments).
func Encode(nodes []*yaml.RNode, opts Options) ([]byte, error) {
	if err := checkResources(nodes, "resource"); err != nil {
		return nil, err // kio.ByteWriter would panic on some
	}
	settle := hasFootComments(nodes)
	var out []byte
	var err error
	if opts.Reference {
		out, err = encodeReference(nodes)
	} else {
		out, err = encode(nodes)
	}
	if err != nil || !settle {
		return out, err
	}
	return settleComments(out), nil
}

// ClearedAnnotations are the annotations a written package file never
// carries: kpt's internal ones and the legacy reader annotations. Nodes
// CheckResource refuses are skipped (Encode refuses them).
func ClearedAnnotations(nodes []*yaml.RNode) []string {
	clear := slices.Clone(legacyBookkeeping)
	for _, n := range nodes {
		if CheckResource(n.YNode()) != nil {
			continue // GetAnnotations could panic
		}
		for k := range n.GetAnnotations() {
			if Bookkeeping(k) && !slices.Contains(clear, k) {
				clear = append(clear, k)
			}
		}
	}
	sort.Strings(clear)
	return clear
}

// encode is Encode's fast path.
func encode(nodes []*yaml.RNode) ([]byte, error) {
	annos := make([]*yaml.Node, len(nodes))
	for i, n := range nodes {
		a, ok := plainAnnotations(n.YNode())
		if !ok {
			return encodeReference(nodes)
		}
		annos[i] = a
	}
	if len(nodes) == 1 && isJSONPath(annos[0]) {
		return encodeReference(nodes) // kio.ByteWriter writes it as JSON
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf) // kyaml's settings, as kio.ByteWriter's
	for i, n := range nodes {
		wide := annotation(annos[i], kioutil.SeqIndentAnnotation) == string(yaml.WideSequenceStyle)
		if a := annos[i]; a != nil {
			a.Content = withoutKeys(a.Content, Bookkeeping) // all kio.ByteWriter clears (ClearedAnnotations)
			if len(a.Content) == 0 {
				removeField(n.YNode(), yaml.MetadataField, yaml.AnnotationsField)
			}
		}
		KeepScalars(n.YNode())
		if wide {
			enc.DefaultSeqIndent()
		} else {
			enc.CompactSeqIndent()
		}
		if err := enc.Encode(n.Document()); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeReference is encode by kio.ByteWriter.
func encodeReference(nodes []*yaml.RNode) ([]byte, error) {
	for _, n := range nodes {
		KeepScalars(n.YNode())
	}
	var buf bytes.Buffer
	if err := (kio.ByteWriter{Writer: &buf, ClearAnnotations: ClearedAnnotations(nodes)}).Write(nodes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plainAnnotations returns a resource's annotations mapping (nil when it
// has none) when encode may edit it directly: the resource is a mapping
// with unique keys, no bare-sequence wrapper, and a metadata mapping with
// unique keys that is not empty; its annotations, if any, are a mapping of
// unique string keys to string values.
func plainAnnotations(n *yaml.Node) (*yaml.Node, bool) {
	if n == nil || n.Kind != yaml.MappingNode || !uniqueScalarKeys(n) || field(n, yaml.BareSeqNodeWrappingKey) != nil {
		return nil, false
	}
	meta := field(n, yaml.MetadataField)
	if meta == nil {
		return nil, true
	}
	if meta.Kind != yaml.MappingNode || len(meta.Content) == 0 || !uniqueScalarKeys(meta) {
		return nil, false
	}
	a := field(meta, yaml.AnnotationsField)
	if a == nil {
		return nil, true
	}
	if a.Kind != yaml.MappingNode || len(a.Content) == 0 || !uniqueScalarKeys(a) {
		return nil, false
	}
	for k := 1; k < len(a.Content); k += 2 {
		if v := a.Content[k]; v.Kind != yaml.ScalarNode || v.Tag != "!!str" && v.Tag != "" {
			return nil, false
		}
	}
	return a, true
}

func uniqueScalarKeys(m *yaml.Node) bool {
	if len(m.Content)%2 != 0 {
		return false
	}
	seen := make(map[string]bool, len(m.Content)/2)
	for k := 0; k < len(m.Content); k += 2 {
		key := m.Content[k]
		if key.Kind != yaml.ScalarNode || seen[key.Value] {
			return false
		}
		seen[key.Value] = true
	}
	return true
}

func field(m *yaml.Node, name string) *yaml.Node {
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == name {
			return m.Content[k+1]
		}
	}
	return nil
}

func annotation(a *yaml.Node, key string) string {
	if a == nil {
		return ""
	}
	if v := field(a, key); v != nil {
		return v.Value
	}
	return ""
}

// isJSONPath reports whether the path annotation (kioutil.GetFileAnnotations'
// choice) names a JSON file.
func isJSONPath(a *yaml.Node) bool {
	p := annotation(a, kioutil.PathAnnotation)
	if a == nil || field(a, kioutil.PathAnnotation) == nil {
		p = annotation(a, kioutil.LegacyPathAnnotation)
	}
	if p == "" {
		return false
	}
	for _, g := range kio.JSONMatch {
		if ok, _ := path.Match(g, path.Base(p)); ok {
			return true
		}
	}
	return false
}

// withoutKeys returns a mapping's content without the pairs whose key
// drop reports, reusing its array (the node is split's own copy).
func withoutKeys(content []*yaml.Node, drop func(key string) bool) []*yaml.Node {
	out := content[:0]
	for k := 0; k+1 < len(content); k += 2 {
		if !drop(content[k].Value) {
			out = append(out, content[k], content[k+1])
		}
	}
	clear(content[len(out):])
	return out
}

// removeField removes the field at the path (a mapping key under mapping
// keys), and then its parent when that is left empty, as
// yaml.ClearEmptyAnnotations does for metadata.annotations.
func removeField(n *yaml.Node, parent, name string) {
	p := field(n, parent)
	for k := 0; k+1 < len(p.Content); k += 2 {
		if p.Content[k].Value == name {
			p.Content = slices.Delete(p.Content, k, k+2)
			break
		}
	}
	if len(p.Content) == 0 {
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == parent {
				n.Content = slices.Delete(n.Content, k, k+2)
				break
			}
		}
	}
}
