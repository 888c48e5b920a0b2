package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FuzzConfigMapSelector loads a ConfigMap function config whose one context
// has an arbitrary selector string. Load must never panic; a selector it
// accepts must mean what kubectl -l means by the same string: it matches
// exactly the label sets labels.Parse's selector matches, tried on every
// combination of the values it names (and absence), and it survives a
// round trip through its own String form.
func FuzzConfigMapSelector(f *testing.F) {
	for _, seed := range []string{
		"a=b", "a==b", "a!=b", "a in (x,y)", "a notin (x)", "!a", "a", "a,b=c,!d",
		"example.com/shard=00", "a in ()", "a in (x,", "a=b=c", "a = b", "a>1", "a<2",
		"", " ", "!", "a!=", "a in (x) , b notin (y,z)", "Ä=1", "a=\x00", "a=(b)",
		"app.kubernetes.io/name in (web, api)", "x,x", "-a=b", "a=-b", strings63("k") + "=v",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cm := yaml.NewMapRNode(nil)
		if err := cm.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("v1"))); err != nil {
			t.Fatal(err)
		}
		_ = cm.PipeE(yaml.SetField("kind", yaml.NewStringRNode("ConfigMap")))
		_ = cm.PipeE(yaml.SetField("metadata", yaml.NewMapRNode(&map[string]string{"name": "shards"})))
		_ = cm.PipeE(yaml.SetField("data", yaml.NewMapRNode(&map[string]string{"ctx": s})))
		cfg, errs := Load(cm)
		if len(errs) > 0 {
			for _, e := range errs {
				if e.Field != "data[ctx]" {
					t.Errorf("error about %s, want data[ctx]: %v", e.Field, e)
				}
			}
			return
		}
		if len(cfg.Spec.Contexts) != 1 {
			t.Fatalf("%d contexts from one data key", len(cfg.Spec.Contexts))
		}
		c := cfg.Spec.Contexts[0]
		ours, err := metav1.LabelSelectorAsSelector(c.NamespaceSelector)
		if err != nil {
			t.Fatalf("accepted %q, but its selector does not compile: %v", s, err)
		}
		res, err := metav1.LabelSelectorAsSelector(c.ResourceSelector)
		if err != nil || res.String() != ours.String() {
			t.Fatalf("resourceSelector %v differs from namespaceSelector %v", res, ours)
		}
		kubectl, err := labels.Parse(s)
		if err != nil {
			t.Fatalf("accepted %q, which kubectl -l rejects: %v", s, err)
		}
		for _, set := range labelSets(t, kubectl) {
			if a, b := ours.Matches(labels.Set(set)), kubectl.Matches(labels.Set(set)); a != b {
				t.Errorf("%q on %v: ours %v, kubectl %v (ours is %q)", s, set, a, b, ours.String())
			}
		}
		again, err := parseSelector(ours.String())
		if err != nil {
			t.Fatalf("%q: its own form %q does not parse: %v", s, ours.String(), err)
		}
		if back, _ := metav1.LabelSelectorAsSelector(again); back.String() != ours.String() {
			t.Errorf("%q: round trip %q -> %q", s, ours.String(), back.String())
		}
	})
}

// labelSets are the label sets to compare two selectors on: each key of
// the requirements absent, or set to each value they name, or to a value
// they do not name.
func labelSets(t *testing.T, sel labels.Selector) []map[string]string {
	reqs, _ := sel.Requirements()
	keys := []string{}
	values := map[string][]string{}
	for _, r := range reqs {
		if _, ok := values[r.Key()]; !ok {
			keys = append(keys, r.Key())
			values[r.Key()] = []string{"", "zz-other"}
		}
		if r.Operator() == selection.Exists || r.Operator() == selection.DoesNotExist {
			continue
		}
		values[r.Key()] = append(values[r.Key()], r.Values().List()...)
	}
	sets := []map[string]string{{}}
	for _, k := range keys {
		if len(sets) > 4096 {
			break
		}
		var next []map[string]string
		for _, s := range sets {
			absent := map[string]string{}
			for kk, vv := range s {
				absent[kk] = vv
			}
			next = append(next, absent)
			for _, v := range values[k] {
				m := map[string]string{k: v}
				for kk, vv := range s {
					m[kk] = vv
				}
				next = append(next, m)
			}
		}
		sets = next
	}
	return sets
}

func strings63(s string) string {
	out := ""
	for len(out) < 63 {
		out += s
	}
	return out
}
