package yamlio

import (
	"bytes"
	"errors"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// layout is a ResourceList split without parsing it: the byte ranges of the
// items of its block-style `items:` sequence, and the rest of the document
// (the skeleton), which is small and is parsed whole.
type layout struct {
	// items are [start, end) offsets of each item's lines, in order.
	items [][2]int
	// skeleton is the document with the items' lines cut out, so that
	// `items:` is null in it.
	skeleton []byte
}

// fallback is why a fast reader refused an input; the reference path then
// runs on the same bytes.
type fallback string

func (f fallback) Error() string { return "streaming refused: " + string(f) }

// IsFallback reports whether err is a fast reader's refusal of an input,
// which only the reference path may read.
func IsFallback(err error) bool {
	var f fallback
	return errors.As(err, &f)
}

// List is a ResourceList read for streaming: split without parsing the
// items (see splitResourceList), everything but the items read as kyaml's
// reader reads it, and each item parsed alone on request. Item i is the
// node kio.ByteReader gives for it when it reads the whole list.
type List struct {
	data   []byte
	layout *layout
	// wrapAPIVersion and wrapKind are the ResourceList's.
	wrapAPIVersion, wrapKind string
	functionConfig           *yaml.RNode
}

// ReadList splits a ResourceList laid out as kpt writes it. It returns an
// error for which IsFallback is true when the input needs kyaml's
// whole-tree reader; nothing is lost by then reading it that way.
func ReadList(data []byte) (*List, error) {
	l, err := splitResourceList(data)
	if err != nil {
		return nil, err
	}
	s := &List{data: data, layout: l}
	// The skeleton is small: read it as the reference does.
	br := &kio.ByteReader{Reader: bytes.NewReader(l.skeleton)}
	rest, err := br.Read()
	switch {
	case err != nil:
		return nil, fallback("cannot read the ResourceList: " + err.Error())
	case len(rest) != 0 || br.WrappingKind != kio.ResourceListKind:
		return nil, fallback("not a ResourceList")
	case br.Results != nil:
		return nil, fallback("results in the input")
	}
	s.wrapAPIVersion, s.wrapKind, s.functionConfig = br.WrappingAPIVersion, br.WrappingKind, br.FunctionConfig
	return s, nil
}

// Len is the number of items.
func (l *List) Len() int { return len(l.layout.items) }

// FunctionConfig is the list's functionConfig, nil when absent or empty.
func (l *List) FunctionConfig() *yaml.RNode {
	if fc := l.functionConfig; fc != nil && !fc.IsNilOrEmpty() {
		return fc
	}
	return nil
}

// WrappingKind is the list's kind (ResourceList).
func (l *List) WrappingKind() string { return l.wrapKind }

// Item decodes item i alone; it may be called from several goroutines. Its
// lines are a one-entry block sequence, so the item is parsed in the same
// context as inside the whole list. A fallback error means the whole list
// must be read by kyaml instead.
func (l *List) Item(i int) (*yaml.RNode, error) {
	r := l.layout.items[i]
	chunk := l.data[r[0]:r[1]]
	var doc yaml.Node
	// Unmarshal parses the bytes in place; the ByteReader's Decoder would
	// copy them through a reader first. Both run the same parser.
	if err := yaml.Unmarshal(chunk, &doc); err != nil {
		return nil, fallback(fmt.Sprintf("item %d does not parse alone: %v", i, err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode ||
		len(doc.Content[0].Content) != 1 {
		return nil, fallback(fmt.Sprintf("item %d is not one sequence entry", i))
	}
	item := doc.Content[0].Content[0]
	if item.Kind != yaml.MappingNode {
		return nil, fallback(fmt.Sprintf("item %d is not a mapping", i))
	}
	if bytes.ContainsAny(chunk, "&*") && HasAnchors(item) {
		return nil, fallback(fmt.Sprintf("item %d has anchors or aliases", i))
	}
	return yaml.NewRNode(item), nil
}

// splitResourceList finds the items of a ResourceList laid out as kpt and
// kyaml write it:
//
//	apiVersion: config.kubernetes.io/v1
//	kind: ResourceList
//	items:
//	- apiVersion: v1
//	  ...
//	functionConfig:
//	  ...
//
// Every line at column 0 must be one of those top-level keys (each once), a
// comment outside the items, or the "- " that starts an item; the items may
// also be indented ("  - "). Anything else (flow style, comments at column 0
// among the items or ending an item, document markers, tabs, carriage
// returns, a `results` field, zero items, any other key) is refused with a
// reason: only the reference path may read it.
func splitResourceList(data []byte) (*layout, error) {
	if err := refuseBytes(data); err != nil {
		return nil, err
	}
	s := listSplitter{data: data, seen: map[string]bool{}, indent: -1, regionHi: -1, itemStart: -1}
	for pos := 0; pos < len(data); {
		line, lineStart, next := lineAt(data, pos)
		pos = next
		if err := s.line(line, lineStart, next); err != nil {
			return nil, err
		}
	}
	return s.finish()
}

// refuseBytes refuses, before any line is read, what the line splitter
// cannot see: an empty input, a byte order mark, carriage returns and tabs.
func refuseBytes(data []byte) error {
	switch {
	case len(data) == 0:
		return fallback("empty input")
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		return fallback("byte order mark")
	case bytes.IndexByte(data, '\r') >= 0:
		return fallback("carriage return")
	case bytes.IndexByte(data, '\t') >= 0:
		return fallback("tab")
	}
	return nil
}

// lineAt returns the line that starts at pos (without its newline), its
// start, and where the next line starts.
func lineAt(data []byte, pos int) (line []byte, start, next int) {
	eol := bytes.IndexByte(data[pos:], '\n')
	if eol < 0 {
		return data[pos:], pos, len(data)
	}
	return data[pos : pos+eol], pos, pos + eol + 1
}

// listSplitter is splitResourceList's state, line by line.
type listSplitter struct {
	data      []byte
	l         layout
	seen      map[string]bool // top-level keys read
	inItems   bool            // between `items:` and the next top-level key
	indent    int             // column of the items' "- ", once known (else -1)
	regionLo  int             // where the items' lines begin (after `items:`)
	regionHi  int             // where they end (-1 until known)
	itemStart int             // where the current item begins (-1: none)
	// lastComment: the last non-blank line of the current item is a
	// comment.
	lastComment bool
}

// line reads one line that starts at lineStart; next is where the
// following line starts.
func (s *listSplitter) line(line []byte, lineStart, next int) error {
	lead := 0
	for lead < len(line) && line[lead] == ' ' {
		lead++
	}
	if lead == len(line) {
		return nil // blank: belongs to whatever it is in
	}
	comment := line[lead] == '#'
	if s.inItems {
		if done, err := s.itemLine(line, lead, lineStart, comment); done || err != nil {
			return err
		}
	}
	if lead > 0 {
		return nil // inside a top-level value other than items
	}
	if comment {
		return nil // outside the items: parsed with the skeleton
	}
	return s.topLevelKey(line, next)
}

// itemLine reads a line among the items. It reports done unless the line
// is at column 0 and so ends the items: a top-level key, read next.
func (s *listSplitter) itemLine(line []byte, lead, lineStart int, comment bool) (done bool, err error) {
	if s.indent < 0 {
		if line[lead] != '-' {
			if lead == 0 && !comment {
				return true, fallback("no items")
			}
			return true, fallback("unexpected line before the first item")
		}
		s.indent = lead
	}
	switch {
	case lead == s.indent && isSeqEntry(line[lead:]):
		if err := s.closeItem(lineStart); err != nil {
			return true, err
		}
		s.itemStart, s.lastComment = lineStart, false
		return true, nil
	case lead > s.indent:
		if s.itemStart < 0 {
			return true, fallback("unexpected line before the first item")
		}
		// A comment that ends an item may be attached by yaml.v3 to
		// what follows it; only the reference parse knows.
		s.lastComment = comment
		return true, nil
	case lead > 0:
		return true, fallback("line indented less than the items")
	}
	// A line at column 0 ends the items (or is refused below).
	if line[0] == '-' || comment {
		return true, fallback("unexpected line at column 0 among the items")
	}
	if err := s.closeItem(lineStart); err != nil {
		return true, err
	}
	s.inItems, s.regionHi = false, lineStart
	return false, nil
}

// topLevelKey reads a line at column 0 outside the items: one of the
// ResourceList's keys, each once; `items:` opens the items at next.
func (s *listSplitter) topLevelKey(line []byte, next int) error {
	key, rest, ok := bytes.Cut(line, []byte(":"))
	if !ok || (len(rest) > 0 && rest[0] != ' ') {
		return fallback("unexpected line at column 0")
	}
	k := string(key)
	if s.seen[k] {
		return fallback("top-level key given twice: " + k)
	}
	s.seen[k] = true
	switch k {
	case "apiVersion", "kind", "functionConfig":
	case "items":
		if len(bytes.TrimRight(rest, " ")) > 0 {
			return fallback("items not a block sequence")
		}
		s.inItems, s.regionLo = true, next
	default:
		return fallback("top-level key " + k)
	}
	return nil
}

// closeItem ends the current item, if any, at end.
func (s *listSplitter) closeItem(end int) error {
	if s.itemStart < 0 {
		return nil
	}
	if s.lastComment {
		return fallback("comment at the end of an item")
	}
	s.l.items = append(s.l.items, [2]int{s.itemStart, end})
	s.itemStart = -1
	return nil
}

// finish closes the items at the end of the input and cuts them out of
// the skeleton.
func (s *listSplitter) finish() (*layout, error) {
	if s.inItems {
		if err := s.closeItem(len(s.data)); err != nil {
			return nil, err
		}
		s.regionHi = len(s.data)
	}
	if len(s.l.items) == 0 {
		return nil, fallback("no items")
	}
	s.l.skeleton = make([]byte, 0, s.regionLo+len(s.data)-s.regionHi)
	s.l.skeleton = append(append(s.l.skeleton, s.data[:s.regionLo]...), s.data[s.regionHi:]...)
	return &s.l, nil
}

// isSeqEntry reports whether a line (from its first non-space) starts a
// block sequence entry: "-" followed by a space. A bare "-" (the item on
// the next lines) is refused, as is "---".
func isSeqEntry(s []byte) bool {
	return len(s) >= 2 && s[0] == '-' && s[1] == ' '
}
