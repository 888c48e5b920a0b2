package yamlio_test

import (
	"reflect"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/yamlio"
)

// TestPackRoundTrip: every item of the streaming cases, of the golden inputs
// and of a generated package comes back from packItem/unpackItem equal,
// field for field, to what the parser built; and a corrupt packed item is
// an error, not a panic.
func TestPackRoundTrip(t *testing.T) {
	inputs := [][]byte{gen.Bytes(gen.Options{Items: 200, Contexts: 4, Seed: 2})}
	for _, tc := range streamCases {
		inputs = append(inputs, []byte(tc.input))
	}
	for _, g := range goldenInputs(t) {
		inputs = append(inputs, g)
	}
	packed := 0
	for _, input := range inputs {
		items, _, err := yamlio.SplitResourceList(input)
		if err != nil {
			continue
		}
		for _, r := range items {
			var doc yaml.Node
			if yaml.Unmarshal(input[r[0]:r[1]], &doc) != nil || len(doc.Content) != 1 || len(doc.Content[0].Content) != 1 {
				continue
			}
			want := doc.Content[0].Content[0]
			if yamlio.HasAnchors(want) {
				continue
			}
			p := yamlio.PackItem(nil, want)
			got, err := yamlio.UnpackItem(p)
			if err != nil {
				t.Fatalf("unpack: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip differs:\ngot:  %#v\nwant: %#v", got, want)
			}
			packed++
			for cut := 0; cut < len(p); cut += 1 + len(p)/17 {
				if _, err := yamlio.UnpackItem(p[:cut]); err == nil {
					t.Errorf("a packed item cut at %d of %d unpacked", cut, len(p))
				}
			}
		}
	}
	if packed < 200 {
		t.Errorf("only %d items packed", packed)
	}
}

// TestUnpackedContentIsCapped: kyaml appends to Content slices; an append
// must not overwrite the next node's children.
func TestUnpackedContentIsCapped(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a:\n  b: c\nd:\n  e: f\n"), &doc); err != nil {
		t.Fatal(err)
	}
	root, err := yamlio.UnpackItem(yamlio.PackItem(nil, doc.Content[0]))
	if err != nil {
		t.Fatal(err)
	}
	a := root.Content[1]
	a.Content = append(a.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "x"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "y"})
	if got := root.Content[3].Content[0].Value; got != "e" {
		t.Errorf("appending to a's content changed d's: %q", got)
	}
}
