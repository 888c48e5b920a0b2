package function

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// SerializedSize is the size in bytes that capacity counts for one object:
// the length of its compact JSON encoding, as encoding/json writes it
// (HTML-safe escaping, no trailing newline; what kube-apiserver stores for a
// custom resource, give or take the newline: apimachinery's JSON serializer
// is encoding/json's Encoder with HTML escaping on, so "<" is stored as
// \u003c, as TestSerializedSizeIsWhatKubeAPIServerStores checks), of the
// object as written in the package, without
//   - kpt's local annotations (yamlio.Bookkeeping:
//     internal.config.kubernetes.io/*, and the legacy
//     config.kubernetes.io/path, config.kubernetes.io/index and
//     config.k8s.io/id), which never reach the cluster, and
//   - shard-router's own shardrouter.dev/context and shardrouter.dev/datastore,
//     so that the size is the same before and after the function runs;
//
// an annotations map left empty counts as absent. Scalars are typed as
// yaml.v3 resolves them (YAML 1.2: yes/no are strings), except that
// timestamps stay strings, as sigs.k8s.io/yaml converts them, and that an
// empty null in a flow collection ({a: b, c}) is "", as kyaml writes it
// into the package (an empty single-quoted string); mapping keys
// are strings; aliases count as what they name, merge keys (<<) as the keys
// they merge. It is an estimate of what etcd holds: built-in kinds are
// stored as protobuf (usually smaller), and the
// server adds metadata (uid, resourceVersion, managedFields, kpt's
// owning-inventory annotation) that the package does not carry.
//
// It walks the YAML tree without building the JSON, in linear time.
func SerializedSize(rn *yaml.RNode) int64 {
	if rn == nil {
		return 0
	}
	s := &sizer{}
	return s.nodeSize(rn.YNode(), 0, scopeTop)
}

// sizer remembers the size of each aliased node, so that an alias bomb
// ("billion laughs": aliases of aliases) is sized in linear time rather
// than by visiting every expansion.
type sizer struct {
	aliased map[aliasKey]int64
	// inFlow: the node being sized is inside a flow collection, where
	// yaml.v3's encoder writes an empty null as '' (see scalarSize);
	// anchoredInFlow records it for each anchored node, whose aliases
	// hold what its definition is written as.
	inFlow         bool
	anchoredInFlow map[*yaml.Node]bool
}

const maxAliasSize = 1 << 32

type aliasKey struct {
	n  *yaml.Node
	at sizeScope
}

// maxDepth bounds recursion, against pathological trees.
const maxDepth = 1000

// sizeScope tells the sizer which mapping it is in, to filter annotations.
type sizeScope int

const (
	scopeTop sizeScope = iota
	scopeMetadata
	scopeOther
)

// nodeSize is the length of n as JSON, n being in the mapping at.
func (s *sizer) nodeSize(n *yaml.Node, depth int, at sizeScope) int64 {
	if n != nil && n.Kind == yaml.AliasNode {
		return s.aliasSize(n, depth, at)
	}
	n = yamlio.Deref(n)
	if n == nil || depth > maxDepth {
		return 4 // null
	}
	s.noteAnchor(n)
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle != 0 && !s.inFlow {
		s.inFlow = true
		defer func() { s.inFlow = false }()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return 4
		}
		return s.nodeSize(n.Content[0], depth+1, at)
	case yaml.SequenceNode:
		return s.sequenceSize(n, depth)
	case yaml.MappingNode:
		return s.mappingSize(n, depth, at)
	case yaml.ScalarNode:
		if s.inFlow && n.Value == "" && n.ShortTag() == yaml.NodeTagNull && n.Style&yaml.TaggedStyle == 0 {
			// yaml.v3's encoder, so kyaml and kpt, write this null in a
			// flow collection ({a: b, c}) as '', a string: the package
			// holds "" once written (and a second run sizes that).
			return 2
		}
		return scalarSize(n)
	}
	return 4
}

// aliasSize sizes an alias as the node it names, once per node and scope.
func (s *sizer) aliasSize(n *yaml.Node, depth int, at sizeScope) int64 {
	k := aliasKey{n.Alias, at}
	if v, ok := s.aliased[k]; ok {
		return v
	}
	if s.aliased == nil {
		s.aliased = map[aliasKey]int64{}
	}
	// Capped, so that sums of aliases cannot overflow: any input has
	// fewer than 2^31 alias nodes. It is far beyond any object etcd takes.
	inFlow := s.inFlow
	if f, ok := s.anchoredInFlow[n.Alias]; ok {
		s.inFlow = f
	}
	v := min(s.nodeSize(n.Alias, depth+1, at), maxAliasSize)
	s.inFlow = inFlow
	s.aliased[k] = v
	return v
}

// noteAnchor records, for an anchored node seen the first time, whether
// its definition is inside a flow collection.
func (s *sizer) noteAnchor(n *yaml.Node) {
	if n.Anchor == "" {
		return
	}
	if s.anchoredInFlow == nil {
		s.anchoredInFlow = map[*yaml.Node]bool{}
	}
	if _, ok := s.anchoredInFlow[n]; !ok {
		s.anchoredInFlow[n] = s.inFlow
	}
}

// sequenceSize is a sequence's JSON length: [a,b].
func (s *sizer) sequenceSize(n *yaml.Node, depth int) int64 {
	size := int64(2) // []
	for i, c := range n.Content {
		if i > 0 {
			size++ // ,
		}
		size += s.nodeSize(c, depth+1, scopeOther)
	}
	return size
}

// mappingSize is a mapping's JSON length: {"k":v,...}, without the
// annotations SerializedSize leaves out (and without an annotations map
// left empty).
func (s *sizer) mappingSize(n *yaml.Node, depth int, at sizeScope) int64 {
	size := int64(2) // {}
	entries := 0
	content := resolvedContent(n)
	for i := 0; i+1 < len(content); i += 2 {
		key := yamlio.Deref(content[i])
		if key == nil {
			continue
		}
		v, kept := s.valueSize(key.Value, content[i+1], depth, at)
		if !kept {
			continue
		}
		if entries > 0 {
			size++ // ,
		}
		entries++
		size += jsonStringLen(key.Value) + 1 + v // "key":value
	}
	return size
}

// valueSize sizes the value of key in a mapping at scope at; kept is false
// for an annotations map of which nothing is kept.
func (s *sizer) valueSize(key string, value *yaml.Node, depth int, at sizeScope) (size int64, kept bool) {
	switch {
	case at == scopeTop && key == "metadata":
		return s.nodeSize(value, depth+1, scopeMetadata), true
	case at == scopeMetadata && key == "annotations":
		size, n := s.annotationsSize(value, depth+1)
		return size, n > 0
	default:
		return s.nodeSize(value, depth+1, scopeOther), true
	}
}

// annotationsSize sizes metadata.annotations without the annotations that
// SerializedSize leaves out, and returns how many it kept.
func (s *sizer) annotationsSize(n *yaml.Node, depth int) (int64, int) {
	n = yamlio.Deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return s.nodeSize(n, depth, scopeOther), 1
	}
	if n.Style&yaml.FlowStyle != 0 && !s.inFlow { // as nodeSize does
		s.inFlow = true
		defer func() { s.inFlow = false }()
	}
	size, kept := int64(2), 0
	content := resolvedContent(n)
	for i := 0; i+1 < len(content); i += 2 {
		key := yamlio.Deref(content[i])
		if key == nil || notStored(key.Value) {
			continue
		}
		if kept > 0 {
			size++
		}
		kept++
		size += jsonStringLen(key.Value) + 1 + s.nodeSize(content[i+1], depth+1, scopeOther)
	}
	return size, kept
}

// resolvedContent is a mapping's key/value nodes as the JSON holds them:
// as written, or, with merge keys (<<), each key once in YAML 1.1 merge
// order (explicit keys first).
func resolvedContent(m *yaml.Node) []*yaml.Node {
	if !yamlio.HasMergeKey(m) {
		return m.Content
	}
	var out []*yaml.Node
	seen := map[string]bool{}
	yamlio.MergedFields(m, 0, func(k, v *yaml.Node) bool {
		if !seen[k.Value] {
			seen[k.Value] = true
			out = append(out, k, v)
		}
		return true
	})
	return out
}

// notStored reports the annotations SerializedSize leaves out: kpt's and
// kyaml's bookkeeping (yamlio.Bookkeeping), and shard-router's own. Other
// config.kubernetes.io/* annotations are sized: kpt live apply sends them
// (it clears only the index annotations).
func notStored(key string) bool {
	return key == v1alpha1.ContextAnnotation || key == v1alpha1.DataStoreAnnotation || yamlio.Bookkeeping(key)
}

// scalarSize is the JSON length of a scalar as yaml.v3 would decode it.
func scalarSize(n *yaml.Node) int64 {
	tag := n.ShortTag()
	switch {
	case tag == yaml.NodeTagNull:
		return 4
	case tag == yaml.NodeTagBool && (n.Value == "true" || n.Value == "false"),
		tag == yaml.NodeTagInt && plainDecimal(n.Value):
		return int64(len(n.Value)) // JSON writes it as YAML does
	case tag == yaml.NodeTagBool || tag == yaml.NodeTagInt || tag == yaml.NodeTagFloat:
		var v any
		if err := n.Decode(&v); err == nil {
			if b, err := json.Marshal(v); err == nil {
				return int64(len(b))
			}
		}
	}
	// Strings, timestamps (kept as text, as sigs.k8s.io/yaml does), binary,
	// custom tags, and numbers JSON cannot hold (.inf, .nan).
	return jsonStringLen(n.Value)
}

// plainDecimal reports an integer that JSON writes as YAML does: an
// optional "-", then "0" or digits without a leading zero, at most 18 of
// them so that it fits an int64.
func plainDecimal(v string) bool {
	digits := strings.TrimPrefix(v, "-")
	if digits == "" || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || v == "-0")) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// jsonStringLen is the length of s as encoding/json quotes it: with HTML
// escaping, \u escapes for other control characters, U+2028 and U+2029,
// and U+FFFD (escaped) for each invalid UTF-8 byte.
func jsonStringLen(s string) int64 {
	size := int64(2)
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
				size += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				size += 6
			default:
				size++
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			size += 6
		case r == '\u2028' || r == '\u2029':
			size += 6
		default:
			size += int64(w)
		}
		i += w
	}
	return size
}
