package input

import (
	"bytes"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/filters"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/route"
)

// scanFile reads what a file of a previous context directory holds (as
// readFile does) without parsing it as YAML: split writes block-style files
// whose identifying fields are top-level and two-space-indented lines. It
// takes only the layout it is sure of: anything else (tabs, flow style,
// anchors, tags, quoted keys, escapes, multi-line or block scalars in the
// fields it reads, document markers other than "---", duplicate keys)
// returns ok false, and the caller parses the file. plan checks every file
// it scanned against the new split or against a parse, and starts over
// with parsing when one differs.
func scanFile(data []byte, ctx string) (out []HeldResource, ok bool) {
	if bytes.ContainsAny(data, "\t\r") {
		return nil, false
	}
	for len(data) > 0 {
		var doc []byte
		if i := bytes.Index(data, []byte("\n---\n")); i >= 0 {
			doc, data = data[:i+1], data[i+5:]
		} else {
			doc, data = data, nil
		}
		h, skip, ok := scanDocument(doc, ctx)
		if !ok {
			return nil, false
		}
		if !skip {
			out = append(out, h)
		}
	}
	return out, true
}

// scanDocument reads one document. skip is set for what readFile skips:
// empty documents, local config, unnamed resources and kpt's own files.
func scanDocument(doc []byte, ctx string) (h HeldResource, skip, ok bool) {
	s := &docScan{lines: strings.Split(string(doc), "\n"), annos: map[string]string{}, top: map[string]bool{}, meta: map[string]bool{}}
	for n := range s.lines {
		if !s.line(n) {
			return h, false, false
		}
	}
	if len(s.top) == 0 {
		return h, true, true // an empty document
	}
	return s.held(ctx)
}

// docScan is what scanDocument has read of a document so far.
type docScan struct {
	lines                             []string
	apiVersion, kind, name, namespace string
	annos                             map[string]string
	top, meta                         map[string]bool // the keys seen, to refuse duplicates
	section                           string          // the top-level key whose block the lines are in
	metaKey                           string          // the metadata key whose block the lines are in
}

// line reads line n; false when it is not a layout scanFile is sure of.
func (s *docScan) line(n int) bool {
	line := s.lines[n]
	trimmed := strings.TrimLeft(line, " ")
	indent := len(line) - len(trimmed)
	switch {
	case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		return true
	case indent == 0 && (strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...") || strings.HasPrefix(line, "%")):
		return n == 0 && line == "---" // a file may start with a separator
	case indent == 0 && strings.HasPrefix(line, "- ") || line == "-":
		return s.section != "" // a compact sequence under a top-level key, not a bare sequence
	case indent == 0:
		return s.topKey(line, n)
	case s.section != "metadata":
		return true
	case indent == 2 && !strings.HasPrefix(trimmed, "- "):
		return s.metadataKey(trimmed, n)
	case indent == 4 && s.metaKey == "annotations":
		return s.annotation(trimmed, n)
	case indent < 2:
		return false
	}
	return true
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
	case "apiVersion", "kind":
		v, ok := scanScalar(value, s.lines, n, 0)
		if !ok {
			return false
		}
		if key == "apiVersion" {
			s.apiVersion = v
		} else {
			s.kind = v
		}
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
	s.meta[key], s.metaKey = true, key
	switch key {
	case "name", "namespace":
		v, ok := scanScalar(value, s.lines, n, 2)
		if !ok {
			return false
		}
		if key == "name" {
			s.name = v
		} else {
			s.namespace = v
		}
	case "annotations", "labels":
		return value == "" // not flow style
	}
	return true
}

// annotation reads an annotation: the values of those readFile looks at.
func (s *docScan) annotation(trimmed string, n int) bool {
	key, value, ok := scanKeyValue(trimmed)
	if !ok {
		return false
	}
	if _, dup := s.annos[key]; dup {
		return false
	}
	s.annos[key] = ""
	switch key {
	case v1alpha1.ContextAnnotation, v1alpha1.DataStoreAnnotation, filters.LocalConfigAnnotation:
		v, ok := scanScalar(value, s.lines, n, 4)
		if !ok {
			return false
		}
		s.annos[key] = v
	}
	return true
}

// held is the resource read, as readFile gives it, with its datastore in
// context ctx.
func (s *docScan) held(ctx string) (h HeldResource, skip, ok bool) {
	// Copies: the values are substrings of the whole document.
	o := route.Object{APIVersion: strings.Clone(s.apiVersion), Kind: strings.Clone(s.kind), Name: strings.Clone(s.name), Namespace: strings.Clone(s.namespace)}
	if v, ok := s.annos[filters.LocalConfigAnnotation]; ok && v != "false" {
		return h, true, true
	}
	if o.Name == "" || isKptInternal(&o) {
		return h, true, true
	}
	h.Key = KeyOf(&o)
	h.Desc = o.Kind + " " + o.Name
	if o.Namespace != "" {
		h.Desc = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	if ds, ok := s.annos[v1alpha1.DataStoreAnnotation]; ok {
		if prev := route.ParseContexts(s.annos[v1alpha1.ContextAnnotation]); len(prev) > 0 {
			if m, err := datastore.ParseAnnotation(ds, prev); err == nil {
				h.DataStore = strings.Clone(m[ctx])
			}
		}
	}
	return h, false, true
}

// scanKeyValue splits "key: value" or "key:" where key is a plain scalar.
func scanKeyValue(s string) (key, value string, ok bool) {
	i := strings.Index(s, ":")
	if i <= 0 {
		return "", "", false
	}
	key, rest := s[:i], s[i+1:]
	if strings.ContainsAny(key, `'"{}[]&*!|>%@#,`+"`") || strings.HasPrefix(key, "- ") || strings.HasPrefix(key, "? ") || strings.TrimSpace(key) != key {
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
		return "", false // not a string (readFile reads "" or the text; be sure)
	}
	return value, true
}
