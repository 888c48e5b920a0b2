package yamlio_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// randomScalar is a value with what block scalars are sensitive to: line
// breaks, leading and trailing spaces and tabs, more-indented lines.
func randomScalar(r *rand.Rand, tabs bool) string {
	parts := []string{"word", "two words", " ", "  ", "\n", "\n\n", "\n  more", "# not a comment", ": colon"}
	if tabs {
		parts = append(parts, "\t", "\n\tx")
	}
	var b strings.Builder
	for n := r.IntN(8); n >= 0; n-- {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

var scalarStyles = []yaml.Style{yaml.FoldedStyle, yaml.LiteralStyle, 0, yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle}

// configMapWith is a ConfigMap whose data holds each value with its
// style, as a decoded package holds it.
func configMapWith(values []string, style yaml.Style) *yaml.RNode {
	n := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    config.kubernetes.io/path: c.yaml\ndata: {}\n")
	data := n.Field("data").Value.YNode()
	data.Style = 0
	for i, v := range values {
		data.Content = append(data.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint("k", i)},
			&yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: style})
	}
	return n
}

// dataValues decodes a written ConfigMap's data.
func dataValues(t *testing.T, written []byte) []string {
	t.Helper()
	n, err := yaml.Parse(string(written))
	if err != nil {
		t.Fatalf("the output cannot be read back: %v\n%s", err, written)
	}
	var out []string
	content := n.Field("data").Value.YNode().Content
	for k := 1; k < len(content); k += 2 {
		out = append(out, content[k].Value)
	}
	return out
}

// TestEncodeKeepsEveryValue: whatever a value and its style, Encode (fast
// and reference) writes it so that it reads back the same, and a second
// pass writes the bytes of the first.
func TestEncodeKeepsEveryValue(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 8))
	values := []string{"folded\n  more\nback\n", "a\n\n", "x\n \ty", "\tlead", " lead\nb", "a\n\tb\n"}
	for range 400 {
		values = append(values, randomScalar(r, true))
	}
	for _, style := range scalarStyles {
		for _, opts := range []yamlio.Options{{}, {Reference: true}} {
			name := fmt.Sprintf("style %v, reference %v", style, opts.Reference)
			pass1, err := yamlio.Encode([]*yaml.RNode{configMapWith(values, style)}, opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := dataValues(t, pass1)
			for i := range values {
				if got[i] != values[i] {
					t.Errorf("%s: %q came back as %q", name, values[i], got[i])
				}
			}
			pass2, err := yamlio.Encode([]*yaml.RNode{yaml.MustParse(string(pass1))}, opts)
			if err != nil || !bytes.Equal(pass1, pass2) {
				t.Errorf("%s: a second pass changes the bytes (%v):\n%s", name, err, firstDiff(string(pass2), string(pass1)))
			}
		}
	}
}

// TestEncodeKeepsStyles: a block scalar keeps its style where the library
// writes it back right; a folded one that it cannot becomes literal.
func TestEncodeKeepsStyles(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n" +
		"  folded: >\n    one\n    line\n" +
		"  literal: |\n    line 1\n      indented\n" +
		"  moreIndented: >-\n    A description\n      with an indented example\n    and more.\n"
	want := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n" +
		"  folded: >\n    one line\n\n" + // the library's spelling of the same value
		"  literal: |\n    line 1\n      indented\n" +
		"  moreIndented: |-\n    A description\n      with an indented example\n    and more.\n"
	for _, opts := range []yamlio.Options{{}, {Reference: true}} {
		got, err := yamlio.Encode([]*yaml.RNode{yaml.MustParse(in)}, opts)
		if err != nil || string(got) != want {
			t.Errorf("reference %v (%v):\n%s", opts.Reference, err, firstDiff(string(got), want))
		}
	}
}

// TestFunctionKeepsEveryValue: function mode, on both paths, writes every
// value back as it read it, and running it on its own output changes
// nothing.
func TestFunctionKeepsEveryValue(t *testing.T) {
	for _, tabs := range []bool{false, true} {
		t.Run(fmt.Sprint("tabs=", tabs), func(t *testing.T) { functionKeepsEveryValue(t, tabs) })
	}
}

// functionKeepsEveryValue runs a ConfigMap of random values through
// function mode twice. Without tabs the streaming path takes it; with
// them, the reference path.
func functionKeepsEveryValue(t *testing.T, tabs bool) {
	r := rand.New(rand.NewPCG(20, 9))
	var data strings.Builder
	want := map[string]string{}
	for i := range 200 {
		k := fmt.Sprint("k", i)
		style := scalarStyles[i%len(scalarStyles)]
		n := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: k}, {Kind: yaml.ScalarNode, Value: randomScalar(r, tabs), Style: style}}}
		s, err := yaml.NewRNode(n).String()
		if err != nil {
			t.Fatal(err)
		}
		// The input holds what the library wrote; the value is what it reads.
		read, err := yaml.Parse(s)
		if err != nil {
			continue
		}
		want[k] = read.Field(k).Value.YNode().Value
		for _, line := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
			data.WriteString("    " + strings.TrimSuffix(line, "\n") + "\n")
		}
	}
	input := []byte(resourceList(nsEast, cm("a", "  data:\n"+data.String())))
	fast, ref, streamed, refusal := runBoth(t, input)
	if streamed == tabs {
		t.Fatalf("streamed: %v (%s)", streamed, refusal)
	}
	if streamed {
		requireSame(t, "pass 1", fast, ref)
	}
	if ref.Err != "" {
		t.Fatalf("pass 1 fails: %s", ref.Err)
	}
	list := yaml.MustParse(ref.Out)
	item := list.Field("items").Value.YNode().Content[1]
	got := yaml.NewRNode(item).Field("data").Value
	for k, v := range want {
		if g := got.Field(k).Value.YNode().Value; g != v {
			t.Errorf("%s: %q came back as %q", k, v, g)
		}
	}
	// The output holds results, which the streaming path leaves to the
	// reference path.
	fast2, ref2, streamed, _ := runBoth(t, []byte(ref.Out))
	if streamed {
		requireSame(t, "pass 2", fast2, ref2)
	}
	if ref2.Out != ref.Out {
		t.Errorf("a second pass changes the output:\n%s", firstDiff(ref2.Out, ref.Out))
	}
}
