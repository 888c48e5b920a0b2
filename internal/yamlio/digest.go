package yamlio

import (
	"crypto/sha256"
	"hash"
	"io"
	"sort"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Digest identifies an object's data.
type Digest [sha256.Size]byte

// Digester digests an object as data, as the API server would read it:
// mapping keys sorted, scalars by their resolved value (quoting, block
// style, comments and key order are formatting), without the annotations
// Skip matches (an annotations mapping left empty counts as absent). It
// walks the node instead of decoding it: plan digests every object of both
// the new and the previous split.
type Digester struct {
	// Skip reports the annotations left out of the digest.
	Skip func(key string) bool
	// Apart are the annotations digested apart: Base returns their values
	// and WithApart adds them, so that one walk serves several values.
	Apart []string
}

// Annotation is the value of an annotation, and whether it is set.
type Annotation struct {
	Value string
	Set   bool
}

// Of digests the object with its Apart annotations.
func (d Digester) Of(n *yaml.Node) Digest {
	base, apart := d.Base(n)
	return WithApart(base, apart)
}

// Base digests the object without its Apart annotations, and returns
// those (the first of a duplicated key, as kyaml reads it), in Apart's
// order.
func (d Digester) Base(n *yaml.Node) (Digest, []Annotation) {
	h := sha256.New()
	w := &digester{h: h, d: d, apart: make([]Annotation, len(d.Apart))}
	w.node(n, 0, rootPath)
	var sum Digest
	h.Sum(sum[:0])
	return sum, w.apart
}

// WithApart adds the values of the Apart annotations to a base digest.
func WithApart(base Digest, apart []Annotation) Digest {
	h := sha256.New()
	w := &digester{h: h}
	h.Write(base[:])
	for i, a := range apart {
		if a.Set {
			w.write('a', strconv.Itoa(i))
			w.write('v', a.Value)
		}
	}
	var sum Digest
	h.Sum(sum[:0])
	return sum
}

// Where the walk is, to find metadata.annotations.
const (
	rootPath = iota
	metadataPath
	annotationsPath
	otherPath
)

type digester struct {
	h     hash.Hash
	buf   []byte
	d     Digester
	apart []Annotation
}

func (w *digester) write(tag byte, s string) {
	w.buf = append(w.buf[:0], tag)
	w.buf = strconv.AppendInt(w.buf, int64(len(s)), 10)
	w.buf = append(w.buf, ':')
	w.h.Write(w.buf)
	io.WriteString(w.h, s)
}

// left reports an annotation the digest leaves out.
func (w *digester) left(key string) bool {
	if w.d.Skip != nil && w.d.Skip(key) {
		return true
	}
	for _, a := range w.d.Apart {
		if key == a {
			return true
		}
	}
	return false
}

func (w *digester) node(n *yaml.Node, depth, where int) {
	n = Deref(n)
	if n == nil || depth > 512 {
		w.write('~', "")
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			w.node(c, depth+1, where)
		}
	case yaml.SequenceNode:
		w.write('[', "")
		for _, c := range n.Content {
			w.node(c, depth+1, otherPath)
		}
		w.write(']', "")
	case yaml.MappingNode:
		w.mapping(n, depth, where)
	default:
		w.write('s', scalarValue(n))
	}
}

type digestPair struct {
	key string
	val *yaml.Node
}

func (w *digester) mapping(n *yaml.Node, depth, where int) {
	pairs := make([]digestPair, 0, len(n.Content)/2)
	for k := 0; k+1 < len(n.Content); k += 2 {
		key := keyText(n.Content[k])
		if where == annotationsPath && w.left(key) {
			continue
		}
		pairs = append(pairs, digestPair{key, n.Content[k+1]})
	}
	sort.SliceStable(pairs, func(a, b int) bool { return pairs[a].key < pairs[b].key })
	w.write('{', "")
	for _, p := range pairs {
		next := otherPath
		switch {
		case where == rootPath && p.key == "metadata":
			next = metadataPath
		case where == metadataPath && p.key == "annotations":
			next = annotationsPath
			v := Deref(p.val)
			if v != nil && v.Kind == yaml.MappingNode {
				w.readApart(v)
				if w.emptyAfterStrip(v) {
					continue // an annotations mapping with nothing else that reaches the cluster
				}
			}
		}
		w.write('k', p.key)
		w.node(p.val, depth+1, next)
	}
	w.write('}', "")
}

// keyText is a mapping key as JSON would name it: its text (every key of a
// Kubernetes object is a string).
func keyText(n *yaml.Node) string {
	if n = Deref(n); n == nil || n.Kind != yaml.ScalarNode {
		return "!!node"
	}
	return n.Value
}

func (w *digester) emptyAfterStrip(m *yaml.Node) bool {
	for k := 0; k+1 < len(m.Content); k += 2 {
		if !w.left(keyText(m.Content[k])) {
			return false
		}
	}
	return true
}

// readApart records the Apart annotations of an annotations mapping (the
// first of a duplicated key, as kyaml reads it).
func (w *digester) readApart(m *yaml.Node) {
	for k := 0; k+1 < len(m.Content); k += 2 {
		v := "!!node" // not a string: never what split writes
		if n := Deref(m.Content[k+1]); n != nil && n.Kind == yaml.ScalarNode {
			v = n.Value
		}
		key := keyText(m.Content[k])
		for i, a := range w.d.Apart {
			if key == a && !w.apart[i].Set {
				w.apart[i] = Annotation{Value: v, Set: true}
			}
		}
	}
}

// scalarValue is a scalar's resolved value with its type: "!!str:x",
// "!!int:2" (as 02, 0x2 and 2 all read), "!!bool:true", "!!null:".
func scalarValue(n *yaml.Node) string {
	n = Deref(n)
	if n == nil {
		return "!!null:"
	}
	if n.Kind != yaml.ScalarNode {
		return "!!node"
	}
	tag := n.ShortTag()
	switch tag {
	case "!!null":
		return "!!null:"
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return tag + ":" + strconv.FormatBool(b)
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return tag + ":" + strconv.FormatInt(i, 10)
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			return tag + ":" + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return tag + ":" + n.Value
}
