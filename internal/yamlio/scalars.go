package yamlio

import (
	"bytes"
	"errors"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// yaml.v3's emitter (go.yaml.in/yaml/v3, as kyaml uses it) does not write
// every block scalar back with the value it was read with: a folded scalar
// (>, >-) gains a line break before each more-indented line on every pass
// (yaml_emitter_write_folded_scalar looks ahead from the start of the value
// instead of from the line break), and a block scalar that starts with a
// tab, or has a line that does, cannot be read back at all. KeepScalars
// runs before every write, on both paths, so that a value comes out exactly
// as it went in however many passes it makes.

// KeepScalars gives every scalar under n a style the encoder writes back
// with the same value: its own where it can, else literal (for a folded
// scalar), else double-quoted, which always can.
func KeepScalars(n *yaml.Node) {
	if n == nil || n.Kind == yaml.AliasNode {
		return // an alias's target is kept where it is anchored
	}
	if n.Kind == yaml.ScalarNode {
		keepScalar(n)
		return
	}
	for _, c := range n.Content {
		KeepScalars(c)
	}
}

// blockStyles are the styles written as block scalars; the emitter also
// writes a plain scalar with a line break as a literal one.
var blockStyles = yaml.LiteralStyle | yaml.FoldedStyle

func keepScalar(n *yaml.Node) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 ||
		n.Style&blockStyles == 0 && !strings.Contains(n.Value, "\n") {
		return
	}
	if !suspect(n.Value, n.Style&yaml.FoldedStyle != 0) || roundTrips(n.Value, n.Style) {
		return
	}
	rest := n.Style &^ blockStyles
	if n.Style&yaml.FoldedStyle != 0 && roundTrips(n.Value, rest|yaml.LiteralStyle) {
		n.Style = rest | yaml.LiteralStyle
		return
	}
	n.Style = rest | yaml.DoubleQuotedStyle
}

// suspect reports whether a block scalar's value may not round-trip, a
// cheap test that lets the common value skip roundTrips: every value the
// emitter gets wrong starts with a blank or a line break, or has a line
// that starts with a tab; in a folded scalar, also a line that starts with
// a space, or two line breaks at the end. TestSuspectCoversEveryFailure
// checks that no other value fails.
func suspect(v string, folded bool) bool {
	if v == "" {
		return false
	}
	if v[0] == ' ' || v[0] == '\t' || v[0] == '\n' || strings.Contains(v, "\n\t") {
		return true
	}
	return folded && (strings.Contains(v, "\n ") || strings.HasSuffix(v, "\n\n"))
}

// roundTrips reports whether a scalar of this value and style, encoded as
// a mapping value with kyaml's encoder, reads back with the same value.
func roundTrips(v string, style yaml.Style) bool {
	out, err := encodeScalar(v, style)
	if err != nil {
		return false
	}
	got, err := decodeScalar(out)
	return err == nil && got == v
}

func encodeScalar(v string, style yaml.Style) ([]byte, error) {
	var buf bytes.Buffer
	err := encodeNode(&buf, mappingNode(scalarNode("k"), &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: style}))
	return buf.Bytes(), err
}

var errNotScalar = errors.New("not a mapping of one scalar")

func decodeScalar(data []byte) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	if len(doc.Content) != 1 || len(doc.Content[0].Content) != 2 {
		return "", errNotScalar
	}
	return doc.Content[0].Content[1].Value, nil
}
