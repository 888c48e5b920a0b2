package yamlio_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
)

func parse(t *testing.T, s string) *yaml.Node {
	t.Helper()
	n, err := yaml.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return n.YNode()
}

// An Apart annotation is left out of Base, returned with its value, and
// counted by WithApart: Of is Base then WithApart, and only the Apart
// values tell two objects apart that differ in nothing else.
func TestDigesterApart(t *testing.T) {
	d := yamlio.Digester{Skip: func(k string) bool { return strings.HasPrefix(k, "skip/") }, Apart: []string{"x/ctx"}}
	obj := func(ctx string) *yaml.Node {
		return parse(t, "kind: A\nmetadata:\n  name: a\n  annotations:\n    skip/me: '1'\n    x/ctx: "+ctx+"\n")
	}
	baseA, apartA := d.Base(obj("a"))
	baseB, apartB := d.Base(obj("b"))
	if baseA != baseB {
		t.Error("the Apart annotation changed the base digest")
	}
	if len(apartA) != 1 || apartA[0] != (yamlio.Annotation{Value: "a", Set: true}) || apartB[0].Value != "b" {
		t.Errorf("Apart values %+v and %+v, want a and b", apartA, apartB)
	}
	if d.Of(obj("a")) != yamlio.WithApart(baseA, apartA) {
		t.Error("Of is not Base then WithApart")
	}
	if d.Of(obj("a")) == d.Of(obj("b")) {
		t.Error("objects that differ in an Apart annotation have the same digest")
	}
	// Skipped and Apart annotations only: the mapping counts as absent.
	bare := parse(t, "kind: A\nmetadata:\n  name: a\n")
	if b, _ := d.Base(bare); b != baseA {
		t.Error("an annotations mapping holding only left-out annotations changed the base digest")
	}
}
