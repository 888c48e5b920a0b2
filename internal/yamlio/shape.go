package yamlio

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// kyaml's readers hand on whatever a ResourceList's items hold (a scalar, a
// sequence, each key and value of an items mapping), and its metadata
// helpers (GetAnnotations, GetLabels, GetName, ...) then index such nodes as
// mappings and panic; kube-apiserver would reject every such object anyway.
// So every reader and encoder of this package, fast and reference alike,
// hands on or writes only nodes CheckResource accepts, and refuses the
// others with an error that names the resource and the field.

// CheckResource reports why n (a resource, or its document) cannot be a
// Kubernetes object, or nil: it must be a mapping; its metadata, when set,
// a mapping; metadata.labels and metadata.annotations, when set, mappings
// of strings to strings; and every key at those levels a scalar (a complex
// key, such as [a] or {a: b}, names no field). Aliases and merge keys are
// followed as in Lookup.
func CheckResource(n *yaml.Node) error {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	n = Deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return fmt.Errorf("it is %s, not a mapping (an object)", describeKind(n))
	}
	if err := scalarKeys(n, "the object"); err != nil {
		return err
	}
	meta := Lookup(n, yaml.MetadataField)
	if isNull(meta) {
		return nil
	}
	if meta.Kind != yaml.MappingNode {
		return fmt.Errorf("metadata is %s, not a mapping", describeKind(meta))
	}
	if err := scalarKeys(meta, "metadata"); err != nil {
		return err
	}
	for _, name := range []string{yaml.LabelsField, yaml.AnnotationsField} {
		if err := checkStringMap(Lookup(meta, name), "metadata."+name); err != nil {
			return err
		}
	}
	return nil
}

// checkStringMap checks labels or annotations: null, or a mapping whose
// keys are scalars and whose values are strings. A value that YAML reads as
// something else (00, true, 1.5, null, 2001-12-14) is refused too: routing
// matches a label's text, while kube-apiserver rejects a number or a
// boolean and reads null as "", so the object would be routed by a value it
// never holds; and kpt live apply refuses every such value (its
// validateMetadataStringMaps), so split would write a package no cluster
// can take.
func checkStringMap(m *yaml.Node, field string) error {
	if isNull(m) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("%s is %s, not a mapping", field, describeKind(m))
	}
	var err error
	MergedFields(m, 0, func(k, v *yaml.Node) bool {
		switch {
		case k.Kind != yaml.ScalarNode:
			err = fmt.Errorf("%s has a key that is %s, not a string", field, describeKind(k))
		case v != nil && v.Kind != yaml.ScalarNode:
			err = fmt.Errorf("%s[%s] is %s, not a string", field, k.Value, describeKind(v))
		case v != nil && v.ShortTag() != "!!str":
			err = fmt.Errorf("%s[%s] is %q, which YAML reads as %s, not a string: quote it (%s: %q)",
				field, k.Value, v.Value, strings.TrimPrefix(v.ShortTag(), "!!"), k.Value, v.Value)
		}
		return err == nil
	})
	return err
}

// scalarKeys checks that every key of mapping m, merged keys included, is
// a scalar.
func scalarKeys(m *yaml.Node, what string) error {
	var err error
	MergedFields(m, 0, func(k, _ *yaml.Node) bool {
		if k.Kind != yaml.ScalarNode {
			err = fmt.Errorf("%s has a key that is %s, not a string", what, describeKind(k))
		}
		return err == nil
	})
	return err
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describeKind(n *yaml.Node) string {
	switch {
	case n == nil:
		return "empty"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a sequence"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	case n.ShortTag() == "!!null":
		return "null"
	case n.Kind == yaml.ScalarNode:
		return "a scalar"
	}
	return "not an object"
}

// CheckItems returns an error naming the first item of a ResourceList
// that CheckResource refuses, nil when there is none.
func CheckItems(items []*yaml.RNode) error { return checkResources(items, "item") }

// checkResources returns an error naming the first of the nodes (what:
// "item" of a ResourceList, or "resource") that CheckResource refuses.
func checkResources(nodes []*yaml.RNode, what string) error {
	for i, n := range nodes {
		if err := CheckResource(n.YNode()); err != nil {
			return resourceError(what, i, n.YNode(), err)
		}
	}
	return nil
}

// resourceError names resource i: its kind, name and file when it has them.
func resourceError(what string, i int, n *yaml.Node, err error) error {
	var about []string
	if kind := scalarField(n, yaml.KindField); kind != "" {
		about = append(about, kind)
	}
	meta := Lookup(n, yaml.MetadataField)
	if name := scalarField(meta, yaml.NameField); name != "" {
		about = append(about, name)
	}
	annos := Lookup(meta, yaml.AnnotationsField)
	for _, key := range []string{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation} {
		if p := scalarField(annos, key); p != "" {
			about = append(about, "in "+p)
			break
		}
	}
	if len(about) > 0 {
		return fmt.Errorf("%s %d (%s): %w", what, i, strings.Join(about, " "), err)
	}
	return fmt.Errorf("%s %d: %w", what, i, err)
}

func scalarField(m *yaml.Node, name string) string {
	if n := Lookup(m, name); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// explainReadError returns, for an input on which a kyaml reader failed,
// an error naming the first resource that CheckResource refuses (kyaml
// fails on some of them in words that name neither the resource nor the
// field), or nil when there is none. It reads the documents as kyaml's
// reader does, a bare sequence being a resource of its own and the items
// of a lone ResourceList or List being checked after the list itself.
func explainReadError(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				break
			}
			return nil
		}
		if len(doc.Content) == 1 && !isNull(doc.Content[0]) {
			docs = append(docs, doc.Content[0])
		}
	}
	for i, n := range docs {
		if n.Kind == yaml.SequenceNode {
			continue // the reader wraps it
		}
		if err := CheckResource(n); err != nil {
			return resourceError("resource", i, n, err)
		}
	}
	if len(docs) != 1 {
		return nil
	}
	if kind := scalarField(docs[0], yaml.KindField); kind == kio.ResourceListKind || kind == "List" {
		if items := Lookup(docs[0], "items"); items != nil {
			for i, n := range items.Content {
				if err := CheckResource(n); err != nil {
					return resourceError("item", i, n, err)
				}
			}
		}
	}
	return nil
}
