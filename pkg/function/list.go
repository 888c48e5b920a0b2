package function

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// List is a ResourceList read for streaming by other commands (split): the
// same splitting and per-item parsing as the streaming path, without
// kyaml's function-mode bookkeeping. Item i is the node kio.ByteReader
// gives for it when it reads the whole list.
type List struct{ s *streamRun }

// ReadList splits a ResourceList laid out as kpt writes it. It returns an
// error for which IsFallback is true when the input needs kyaml's
// whole-tree reader; nothing is lost by then reading it that way.
func ReadList(data []byte) (*List, error) {
	s, err := newStreamRun(data)
	if err != nil {
		return nil, err
	}
	return &List{s}, nil
}

// IsFallback reports whether err is a refusal of ReadList or List.Item.
func IsFallback(err error) bool {
	var f fallback
	return errors.As(err, &f)
}

// Len is the number of items.
func (l *List) Len() int { return len(l.s.layout.items) }

// FunctionConfig is the list's functionConfig, nil when absent or empty.
func (l *List) FunctionConfig() *yaml.RNode {
	if fc := l.s.functionConfig; fc != nil && !fc.IsNilOrEmpty() {
		return fc
	}
	return nil
}

// WrappingKind is the list's kind (ResourceList).
func (l *List) WrappingKind() string { return l.s.wrapKind }

// Item parses item i alone; it may be called from several goroutines. A
// fallback error means the whole list must be read by kyaml instead.
func (l *List) Item(i int) (*yaml.RNode, error) { return l.s.readItem(i) }

// ReadInput reads all of r: a regular file is mapped into memory (release
// unmaps it; nothing read from it may be used after that), anything else
// is read in blocks (release does nothing).
func ReadInput(r io.Reader) (data []byte, release func(), err error) {
	if f, ok := r.(*os.File); ok {
		if data, unmap := mapInput(f); data != nil {
			return data, sync.OnceFunc(unmap), nil
		}
	}
	data, err = readAll(r)
	return data, func() {}, err
}

// Pack returns a compact copy of the tree under n, which Unpack rebuilds,
// and true; or false when the tree has anchors or aliases, which the
// packed form does not keep.
func Pack(n *yaml.Node) ([]byte, bool) {
	if hasAnchors(n) {
		return nil, false
	}
	buf, _ := packScratch.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	*buf = packItem((*buf)[:0], n)
	out := bytes.Clone(*buf) // exactly sized: the packed items are kept
	packScratch.Put(buf)
	return out, true
}

var packScratch sync.Pool

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

// Unpack rebuilds a tree packed by Pack.
func Unpack(p []byte) (*yaml.Node, error) { return unpackItem(p) }

// Parallel calls f(i) for i in [0, n) on GOMAXPROCS workers, in batches,
// and returns one of the errors, stopping early after the first.
func Parallel(n int, f func(i int) error) error { return parallel(n, f) }

// ForEach calls f(i) for i in [0, n) on the given number of workers, one
// index at a time (for work that waits, such as creating files), and
// returns one of the errors, stopping early after the first.
func ForEach(workers, n int, f func(i int) error) error { return forEach(workers, 1, n, f) }
