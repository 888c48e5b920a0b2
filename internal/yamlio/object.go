package yamlio

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// KptObject is kpt's conversion of a package's resource to the object
// kpt live apply sends (kpt pkg/live's kyamlNodeToUnstructured, which is
// private): metadata.labels and metadata.annotations must hold strings,
// then the node is encoded to YAML, decoded by yaml.v3, encoded to JSON and
// decoded by encoding/json. Every number is a float64 and the value of a
// folded scalar is what the YAML encoder writes back. It is the reference
// JSONObject must match.
func KptObject(n *yaml.RNode) (map[string]any, error) {
	if err := kptStringMaps(n.YNode()); err != nil {
		return nil, err
	}
	b, err := n.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// kptStringMaps is kpt's validateMetadataStringMaps: a label or an
// annotation that is not a string is refused, in kpt's words.
func kptStringMaps(n *yaml.Node) error {
	md := kptField(n, yaml.MetadataField)
	for _, f := range []struct{ field, what string }{{yaml.AnnotationsField, "annotation"}, {yaml.LabelsField, "label"}} {
		m := kptField(md, f.field)
		if m == nil || m.Tag == yaml.NodeTagNull {
			continue
		}
		if m.Kind != yaml.MappingNode {
			return fmt.Errorf("metadata.%s must be a string map", f.field)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if v := m.Content[i+1]; v.Kind != yaml.ScalarNode || v.Tag != yaml.NodeTagString {
				return fmt.Errorf("%s %q must be a string, got %s", f.what, m.Content[i].Value, kptTypeName(v))
			}
		}
	}
	return nil
}

// kptField is kyaml's RNode.Field as kpt uses it: the value of the first
// key of that name in mapping m, nil when m is not a mapping.
func kptField(m *yaml.Node, name string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	return field(m, name)
}

// kptTypeName is kpt's yamlTagToType.
func kptTypeName(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return "non-scalar"
	}
	switch n.Tag {
	case yaml.NodeTagBool:
		return "boolean"
	case yaml.NodeTagInt:
		return "integer"
	case yaml.NodeTagFloat:
		return "number"
	case yaml.NodeTagNull:
		return "null"
	case yaml.NodeTagString:
		return "string"
	case yaml.NodeTagEmpty:
		return "unknown"
	}
	return n.Tag
}

// JSONObject converts a resource's mapping node directly to the object
// KptObject makes of it, without encoding anything. ok is false when the
// tree holds anything whose conversion it is not sure of: anchors and
// aliases, merge keys, explicit tags, block scalars (the encoder can
// change a folded scalar's value, and kpt applies the changed value),
// strings with line breaks or control characters, a value that is not a
// string which the encoder would quote (kpt then reads a string), keys
// that are not plain strings or repeat, numbers JSON cannot hold, a label
// or an annotation that is not a string. The caller then takes KptObject, which reads the
// same node as kpt does, or refuses it in kpt's words.
func JSONObject(n *yaml.Node) (map[string]any, bool) {
	if n == nil || n.Kind != yaml.MappingNode || kptStringMaps(n) != nil {
		return nil, false
	}
	v, ok := jsonValue(n, false, 0)
	if !ok {
		return nil, false
	}
	return v.(map[string]any), true
}

// jsonValue converts one node as yaml.v3 then encoding/json would; flow
// says whether the node is inside a flow collection ([...] or {...}).
func jsonValue(n *yaml.Node, flow bool, depth int) (any, bool) {
	if n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 || depth > maxDepth {
		return nil, false
	}
	flow = flow || n.Style&yaml.FlowStyle != 0
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || tagOf(k) != yaml.NodeTagString || k.Anchor != "" || !plainString(k) {
				return nil, false
			}
			if _, dup := m[k.Value]; dup {
				return nil, false
			}
			v, ok := jsonValue(n.Content[i+1], flow, depth+1)
			if !ok {
				return nil, false
			}
			m[k.Value] = v
		}
		return m, true
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, ok := jsonValue(c, flow, depth+1)
			if !ok {
				return nil, false
			}
			s[i] = v
		}
		return s, true
	case yaml.ScalarNode:
		return jsonScalar(n, flow)
	}
	return nil, false // aliases, documents
}

// jsonScalar converts a scalar: a string as it is, any other value as
// yaml.v3 decodes it into an interface{}, numbers made float64 as
// encoding/json decodes them. A value that is not a string is converted
// only when the encoder writes it plain, as it is: where it would quote it
// (an empty null in a flow collection, a timestamp's ':' there), kpt reads
// a string.
func jsonScalar(n *yaml.Node, flow bool) (any, bool) {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return nil, false
	}
	tag := tagOf(n)
	if tag == yaml.NodeTagString {
		return n.Value, plainString(n)
	}
	if !writtenPlain(n.Value, flow) {
		return nil, false
	}
	switch tag {
	case yaml.NodeTagNull:
		return nil, true
	case yaml.NodeTagBool:
		switch n.Value {
		case "true", "True", "TRUE":
			return true, true
		case "false", "False", "FALSE":
			return false, true
		}
	case yaml.NodeTagInt:
		if f, ok := decimal(n.Value); ok {
			return f, true
		}
	case yaml.NodeTagFloat, "!!timestamp":
	default:
		return nil, false
	}
	if n.Style != 0 { // a quoted scalar with another tag: only made so in code
		return nil, false
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, false
	}
	switch v := v.(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, !math.IsInf(v, 0) && !math.IsNaN(v)
	case bool:
		return v, true
	case time.Time: // as encoding/json writes it: RFC 3339
		b, err := v.MarshalJSON()
		var s string
		return s, err == nil && json.Unmarshal(b, &s) == nil
	}
	return nil, false
}

// tagOf is the tag a scalar is read again with after kyaml writes it:
// its own, or for a node made in code without one (kyaml's reader
// annotations' keys), the one its value and style give; "" for the
// non-specific tag "!".
func tagOf(n *yaml.Node) string {
	if n.Tag == "!" {
		return ""
	}
	return n.ShortTag()
}

// decimal reads a plain decimal integer of up to 15 digits (a float64
// holds it exactly), without a leading zero, which yaml.v3 reads as
// octal.
func decimal(s string) (float64, bool) {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return float64(i), err == nil
}

// writtenPlain reports whether the encoder surely writes a value that is
// not a string as it is, unquoted: letters, digits and .+-_~ only, and
// empty only outside flow collections.
func writtenPlain(v string, flow bool) bool {
	if v == "" {
		return !flow
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '+' || c == '-' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// plainString reports whether a string scalar's value is written back
// and read again as it is: valid UTF-8 without line breaks, control
// characters or a byte order mark, in no block style.
func plainString(n *yaml.Node) bool {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || !utf8.ValidString(n.Value) {
		return false
	}
	for _, r := range n.Value {
		if r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff {
			return false
		}
	}
	return true
}
