package yamlio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Pack returns a compact copy of the tree under n, which Unpack rebuilds,
// and true; or false when the tree has anchors or aliases, which the
// packed form does not keep.
func Pack(n *yaml.Node) ([]byte, bool) {
	if HasAnchors(n) {
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

// Unpack rebuilds a tree packed by Pack.
func Unpack(p []byte) (*yaml.Node, error) { return unpackItem(p) }

// Function mode's first pass keeps the items it parsed in a packed form:
// the fields of each yaml.Node in pre-order. Rebuilding a tree from it in
// the second pass takes three allocations and a linear read, where parsing
// the YAML again took most of the time; and the packed items, about the
// size of the input, replace the input, which the second pass no longer
// needs. Split's readers keep every resource packed the same way.
//
// A packed item is a uvarint node count, then per node, in pre-order:
//
//	uvarint  kind | style<<5
//	byte     flags: tag code (bits 0-3; 0: the tag follows as a string),
//	         value (bit 4), anchor (bit 5) and comments (bit 6) follow
//	uvarint  line, column, len(content)
//	strings  tag, value, anchor, head/line/foot comments, as flagged: each
//	         a uvarint length and the bytes
//
// Aliases are not packed: the streaming path refuses items with anchors or
// aliases.

// commonTags are the tags the parser resolves most scalars and collections
// to; a node with one of them packs it in four bits.
var commonTags = [...]string{1: "!!str", 2: "!!map", 3: "!!seq", 4: "!!int", 5: "!!bool", 6: "!!null", 7: "!!float", 8: "!!timestamp", 9: "!!binary"}

const (
	packValue    = 1 << 4
	packAnchor   = 1 << 5
	packComments = 1 << 6
)

// packItem appends the packed form of the tree under n to buf.
func packItem(buf []byte, n *yaml.Node) []byte {
	buf = binary.AppendUvarint(buf, uint64(countNodes(n)))
	return packNode(buf, n)
}

func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

func packNode(buf []byte, n *yaml.Node) []byte {
	buf = binary.AppendUvarint(buf, uint64(n.Kind)|uint64(n.Style)<<5)
	var flags byte
	for code, tag := range commonTags {
		if code > 0 && n.Tag == tag {
			flags = byte(code)
			break
		}
	}
	if n.Value != "" {
		flags |= packValue
	}
	if n.Anchor != "" {
		flags |= packAnchor
	}
	if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
		flags |= packComments
	}
	buf = append(buf, flags)
	buf = binary.AppendUvarint(buf, uint64(n.Line))
	buf = binary.AppendUvarint(buf, uint64(n.Column))
	buf = binary.AppendUvarint(buf, uint64(len(n.Content)))
	if flags&0xf == 0 {
		buf = appendString(buf, n.Tag)
	}
	if flags&packValue != 0 {
		buf = appendString(buf, n.Value)
	}
	if flags&packAnchor != 0 {
		buf = appendString(buf, n.Anchor)
	}
	if flags&packComments != 0 {
		buf = appendString(appendString(appendString(buf, n.HeadComment), n.LineComment), n.FootComment)
	}
	for _, c := range n.Content {
		buf = packNode(buf, c)
	}
	return buf
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

var errPacked = errors.New("internal error: corrupt packed item")

// unpackItem rebuilds the tree packItem packed. All nodes share one slice,
// all content pointers another, all strings one string; each Content slice
// is capped so that appending to it (as kyaml does) cannot overwrite a
// neighbour's.
func unpackItem(p []byte) (*yaml.Node, error) {
	count, n := binary.Uvarint(p)
	if n <= 0 || count == 0 || count > uint64(len(p)) {
		return nil, errPacked
	}
	u := unpacker{s: string(p), pos: n, nodes: make([]yaml.Node, count), ptrs: make([]*yaml.Node, count-1)}
	root := u.node()
	if u.err != nil || u.pos != len(u.s) || len(u.nodes) != 0 {
		return nil, errPacked
	}
	return root, nil
}

type unpacker struct {
	s     string
	pos   int
	nodes []yaml.Node
	ptrs  []*yaml.Node
	err   error
}

func (u *unpacker) uint() uint64 {
	var v uint64
	for shift := uint(0); u.pos < len(u.s) && shift < 64; shift += 7 {
		b := u.s[u.pos]
		u.pos++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
	u.err = errPacked
	return 0
}

func (u *unpacker) str() string {
	l := u.uint()
	if l > uint64(len(u.s)-u.pos) {
		u.err = errPacked
		return ""
	}
	s := u.s[u.pos : u.pos+int(l)]
	u.pos += int(l)
	return s
}

func (u *unpacker) node() *yaml.Node {
	if len(u.nodes) == 0 || u.pos >= len(u.s) || u.err != nil {
		u.err = errPacked
		return nil
	}
	n := &u.nodes[0]
	u.nodes = u.nodes[1:]
	ks := u.uint()
	n.Kind, n.Style = yaml.Kind(ks&0x1f), yaml.Style(ks>>5)
	if u.pos >= len(u.s) {
		u.err = errPacked
		return nil
	}
	flags := u.s[u.pos]
	u.pos++
	n.Line = int(u.uint())
	n.Column = int(u.uint())
	children := u.uint()
	if code := flags & 0xf; code == 0 {
		n.Tag = u.str()
	} else if int(code) < len(commonTags) {
		n.Tag = commonTags[code]
	} else {
		u.err = errPacked
	}
	if flags&packValue != 0 {
		n.Value = u.str()
	}
	if flags&packAnchor != 0 {
		n.Anchor = u.str()
	}
	if flags&packComments != 0 {
		n.HeadComment, n.LineComment, n.FootComment = u.str(), u.str(), u.str()
	}
	if children > 0 && u.err == nil {
		if children > uint64(len(u.ptrs)) {
			u.err = errPacked
			return nil
		}
		c := int(children)
		n.Content = u.ptrs[:c:c]
		u.ptrs = u.ptrs[c:]
		for i := range n.Content {
			if n.Content[i] = u.node(); u.err != nil {
				return nil
			}
		}
	}
	return n
}
