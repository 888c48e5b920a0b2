package yamlio

import (
	"bytes"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
)

// ScannedObject is what ScanObjects reads of one resource: the fields that
// identify it and the annotations asked for.
type ScannedObject struct {
	APIVersion, Kind, Name, Namespace string
	// Annotations are the values of the annotations asked for, in the
	// order asked.
	Annotations []Annotation
}

// ScanObjects reads the identifying fields of every resource of a file
// split wrote, and the values of the given annotations, without parsing it
// as YAML: split writes block-style files whose identifying fields are
// top-level and two-space-indented lines. It takes only the layout it is
// sure of: anything else (tabs, flow style, anchors, tags, quoted keys,
// escapes, multi-line or block scalars in the fields it reads, document
// markers other than "---", duplicate keys) returns ok false, and the
// caller parses the file. Empty documents are left out. So is every
// document kio.ByteReader reads as something other than itself: a bare
// sequence (which it wraps) and a wrapper it unwraps (see wrapperKinds).
//
// Where kio.ByteReader reads the file without an error, what ScanObjects
// takes is what the reader reads (scanReference in the tests; the
// differential tests and FuzzScanMatchesReference check it); it does not
// check that the rest of a document is valid YAML, so its caller compares
// every file it scanned with the bytes it writes, or parses it.
func ScanObjects(data []byte, annotations []string) (out []ScannedObject, ok bool) {
	for _, r := range refusedBytes {
		if bytes.Contains(data, r) {
			return nil, false
		}
	}
	for len(data) > 0 {
		var doc []byte
		if i := bytes.Index(data, []byte("\n---\n")); i >= 0 {
			doc, data = data[:i+1], data[i+5:]
		} else {
			doc, data = data, nil
		}
		o, empty, ok := scanDocument(doc, annotations)
		if !ok {
			return nil, false
		}
		if !empty {
			out = append(out, o)
		}
	}
	return out, true
}

// refusedBytes are tabs, and what YAML reads as a byte order mark or a
// line break: each is searched for on its own (bytes.ContainsAny with
// runes that are not ASCII takes a slow path). The bytes 0xFE and 0xFF,
// never in UTF-8, are the UTF-16 byte order marks (FE FF, FF FE) that make
// the parser read a document as UTF-16.
var refusedBytes = [][]byte{[]byte("\t"), []byte("\r"), []byte("\ufeff"), []byte("\u0085"), []byte("\u2028"), []byte("\u2029"), {0xfe}, {0xff}}

// wrapperKinds are the kinds whose document kio.ByteReader unwraps into
// the objects of its items (and its functionConfig and results into
// fields of its own) when the document is the file's only one and has
// items or functionConfig. ScanObjects refuses a document of these kinds
// whatever its keys and the documents around it: the parser decides.
var wrapperKinds = map[string]bool{kio.ResourceListKind: true, "List": true}

// scanDocument reads one document; empty for a document without keys.
func scanDocument(doc []byte, annotations []string) (o ScannedObject, empty, ok bool) {
	s := &docScan{lines: strings.Split(string(doc), "\n"), want: annotations,
		annos: map[string]bool{}, top: map[string]bool{}, meta: map[string]bool{}}
	s.obj.Annotations = make([]Annotation, len(annotations))
	for n := range s.lines {
		if !s.line(n) {
			return o, false, false
		}
	}
	if len(s.top) == 0 {
		return o, true, true
	}
	if wrapperKinds[s.obj.Kind] {
		return o, false, false
	}
	// Copies: the values are substrings of the whole document.
	o = s.obj
	o.APIVersion, o.Kind = strings.Clone(o.APIVersion), strings.Clone(o.Kind)
	o.Name, o.Namespace = strings.Clone(o.Name), strings.Clone(o.Namespace)
	for i := range o.Annotations {
		o.Annotations[i].Value = strings.Clone(o.Annotations[i].Value)
	}
	return o, false, true
}

// docScan is what scanDocument has read of a document so far.
type docScan struct {
	lines     []string
	want      []string
	obj       ScannedObject
	annos     map[string]bool
	top, meta map[string]bool // the keys seen, to refuse duplicates
	section   string          // the top-level key whose block the lines are in
	metaKey   string          // the metadata key whose block the lines are in
	annoKey   bool            // an annotation's key was read in metaKey's block
}

// line reads line n; false when it is not a layout ScanObjects is sure of.
func (s *docScan) line(n int) bool {
	line := s.lines[n]
	trimmed := strings.TrimLeft(line, " ")
	indent := len(line) - len(trimmed)
	switch {
	case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		return true
	case continuesOnNextLine(trimmed):
		return false
	case indent == 0 && (strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...") || strings.HasPrefix(line, "%")):
		return n == 0 && line == "---" // a file may start with a separator
	case indent == 0 && strings.HasPrefix(line, "- ") || line == "-":
		return s.section != "" // a compact sequence under a top-level key, not a bare sequence
	case indent == 0:
		return s.topKey(line, n)
	case s.section == "":
		return false // indented before any top-level key: not a mapping of ours
	case s.section != "metadata":
		return true
	case indent == 2 && !strings.HasPrefix(trimmed, "- "):
		return s.metadataKey(trimmed, n)
	case s.metaKey == "":
		return false // metadata's keys are not at column 2: another layout
	case indent == 4 && s.metaKey == "annotations":
		return s.annotation(trimmed, n)
	case s.metaKey == "annotations" && !s.annoKey:
		return false // the annotations' keys are not at column 4
	case indent < 2:
		return false
	}
	return true
}

// continuesOnNextLine reports whether a line (from its first non-space)
// opens a quoted scalar or a flow collection that it does not close: the
// parser reads the lines that follow as part of that value, whatever their
// indentation, so no line of the document can be read on its own. A value
// starts the line, follows "- " or follows ": "; inside a block scalar
// this may refuse a line that is only text, which costs a parse.
func continuesOnNextLine(t string) bool {
	depth := 0 // flow collections open
	valueStart := true
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '\'' || c == '"':
			if !valueStart && depth == 0 {
				valueStart = false
				continue // a quote inside a plain scalar is text
			}
			end := closingQuote(t, i)
			if end < 0 {
				return true
			}
			i, valueStart = end, false
			continue
		case c == '#' && (i == 0 || t[i-1] == ' '):
			return depth > 0
		case (c == '[' || c == '{') && (valueStart || depth > 0):
			depth++
			valueStart = true
			continue
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case c == ',' && depth > 0:
			valueStart = true
			continue
		case c == ' ':
			continue // keeps valueStart
		case c == '-' && valueStart && (i+1 == len(t) || t[i+1] == ' '):
			continue // a sequence entry: its value follows
		case c == ':' && (i+1 == len(t) || t[i+1] == ' ' || depth > 0):
			valueStart = true
			continue
		case c == '?' && valueStart && (i+1 == len(t) || t[i+1] == ' '):
			continue
		}
		valueStart = false
	}
	return depth > 0
}

// closingQuote returns the index of the quote that closes the quoted
// scalar opened at t[open], or -1 when the line does not close it.
func closingQuote(t string, open int) int {
	q := t[open]
	for i := open + 1; i < len(t); i++ {
		switch {
		case q == '"' && t[i] == '\\':
			i++ // an escape: the next byte is not the end
		case t[i] == q && q == '\'' && i+1 < len(t) && t[i+1] == '\'':
			i++ // '' is a quote inside single quotes
		case t[i] == q:
			return i
		}
	}
	return -1
}

// topKey reads a top-level key: apiVersion and kind, and where metadata
// starts.
func (s *docScan) topKey(line string, n int) bool {
	key, value, ok := scanKeyValue(line)
	if !ok || s.top[key] {
		return false
	}
	s.top[key], s.section, s.metaKey = true, key, ""
	switch key {
	case "apiVersion":
		s.obj.APIVersion, ok = scanScalar(value, s.lines, n, 0)
		return ok
	case "kind":
		s.obj.Kind, ok = scanScalar(value, s.lines, n, 0)
		return ok
	case "metadata":
		return value == "" // not flow style
	}
	return true
}

// metadataKey reads a key of metadata: name and namespace, and where
// annotations and labels start.
func (s *docScan) metadataKey(trimmed string, n int) bool {
	key, value, ok := scanKeyValue(trimmed)
	if !ok || s.meta[key] {
		return false
	}
	s.meta[key], s.metaKey, s.annoKey = true, key, false
	switch key {
	case "name":
		s.obj.Name, ok = scanScalar(value, s.lines, n, 2)
		return ok
	case "namespace":
		s.obj.Namespace, ok = scanScalar(value, s.lines, n, 2)
		return ok
	case "annotations", "labels":
		return value == "" // not flow style
	}
	return true
}

// annotation reads an annotation: the values of those asked for.
func (s *docScan) annotation(trimmed string, n int) bool {
	key, value, ok := scanKeyValue(trimmed)
	if !ok || s.annos[key] {
		return false
	}
	s.annos[key], s.annoKey = true, true
	for i, k := range s.want {
		if k == key {
			v, ok := scanScalar(value, s.lines, n, 4)
			if !ok {
				return false
			}
			s.obj.Annotations[i] = Annotation{Value: v, Set: true}
		}
	}
	return true
}

// scanKeyValue splits "key: value" or "key:" where key is a plain scalar
// (never a merge key, "<<", which would bring in keys from elsewhere).
func scanKeyValue(s string) (key, value string, ok bool) {
	i := strings.Index(s, ":")
	if i <= 0 {
		return "", "", false
	}
	key, rest := s[:i], s[i+1:]
	if strings.ContainsAny(key, `'"{}[]&*!|>%@#,<`+"`") || strings.HasPrefix(key, "- ") || strings.HasPrefix(key, "? ") || strings.TrimSpace(key) != key {
		return "", "", false
	}
	if rest != "" && rest[0] != ' ' {
		return "", "", false // "a:b" is a plain scalar, not a key
	}
	return key, strings.TrimSpace(rest), true
}

// scanScalar reads a single-line scalar value of the key on line n (with
// the key's indent): plain, or quoted without escapes. A value continued on
// the next lines is refused.
func scanScalar(value string, lines []string, n, indent int) (string, bool) {
	for _, next := range lines[n+1:] {
		t := strings.TrimLeft(next, " ")
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(next)-len(t) > indent {
			return "", false // a continuation, or a nested value
		}
		break
	}
	switch {
	case value == "":
		return "", false // null or a nested value: not a string
	case value[0] == '\'':
		if len(value) < 2 || value[len(value)-1] != '\'' {
			return "", false
		}
		inner := value[1 : len(value)-1]
		if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
			return "", false
		}
		return strings.ReplaceAll(inner, "''", "'"), true
	case value[0] == '"':
		if len(value) < 2 || value[len(value)-1] != '"' || strings.ContainsAny(value[1:len(value)-1], `"\`) {
			return "", false
		}
		return value[1 : len(value)-1], true
	case strings.ContainsAny(value[:1], "&*!|>{[@`%#?-:,]}") || strings.Contains(value, " #") || strings.Contains(value, ": "):
		return "", false
	}
	switch value {
	case "null", "Null", "NULL", "~", "true", "True", "TRUE", "false", "False", "FALSE":
		return "", false // not a string (the reader reads "" or the text; be sure)
	}
	return value, true
}
