package config

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// matchEvery is what the index must agree with: every selector evaluated.
func matchEvery(sels []labels.Selector, l map[string]string) []int {
	var out []int
	for i, s := range sels {
		if s != nil && s.Matches(labels.Set(l)) {
			out = append(out, i)
		}
	}
	return out
}

func mustSelector(t *testing.T, s *metav1.LabelSelector) labels.Selector {
	t.Helper()
	if s == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestSelectorIndexCases(t *testing.T) {
	in := func(key string, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
	}
	specs := []*metav1.LabelSelector{
		{MatchLabels: map[string]string{"shard": "a"}},                // 0
		{MatchLabels: map[string]string{"shard": "b", "tier": "web"}}, // 1
		nil, // 2: matches nothing
		{},  // 3: matches everything
		{MatchExpressions: []metav1.LabelSelectorRequirement{in("shard", "a", "c")}},                                                        // 4
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "shard", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}}}}, // 5
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}},                        // 6
		{MatchLabels: map[string]string{"tier": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{in("shard", "a", "b", "c")}},    // 7: filed under tier
		{MatchExpressions: []metav1.LabelSelectorRequirement{in("shard", "a", "a")}},                                                        // 8: repeated value
	}
	sels := make([]labels.Selector, len(specs))
	for i, s := range specs {
		sels[i] = mustSelector(t, s)
	}
	x := NewSelectorIndex(sels)
	for _, tc := range []struct {
		labels map[string]string
		want   []int
	}{
		{nil, []int{3, 5}},
		{map[string]string{"shard": "a"}, []int{0, 3, 4, 8}},
		{map[string]string{"shard": "b"}, []int{3, 5}},
		{map[string]string{"shard": "b", "tier": "web"}, []int{1, 3, 5, 6, 7}},
		{map[string]string{"shard": "c", "tier": "db"}, []int{3, 4, 5, 6}},
		{map[string]string{"shard": "a", "tier": "web"}, []int{0, 3, 4, 6, 7, 8}},
		{map[string]string{"other": "x"}, []int{3, 5}},
	} {
		if got := x.Match(tc.labels); !slices.Equal(got, tc.want) {
			t.Errorf("match(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

// TestSelectorIndexAgreesWithEveryEvaluation compares the index with
// evaluating every selector, on random selectors and label sets.
func TestSelectorIndexAgreesWithEveryEvaluation(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	keys := []string{"shard", "tier", "team", "env"}
	vals := []string{"a", "b", "c", "d", ""}
	ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}
	randLabels := func() map[string]string {
		l := map[string]string{}
		for _, k := range keys {
			if rnd.IntN(2) == 0 {
				l[k] = vals[rnd.IntN(len(vals)-1)]
			}
		}
		return l
	}
	for round := 0; round < 200; round++ {
		sels := make([]labels.Selector, 1+rnd.IntN(40))
		for i := range sels {
			if rnd.IntN(10) == 0 {
				continue // nil
			}
			s := &metav1.LabelSelector{}
			if rnd.IntN(2) == 0 {
				s.MatchLabels = map[string]string{}
				for n := rnd.IntN(3); n >= 0; n-- {
					s.MatchLabels[keys[rnd.IntN(len(keys))]] = vals[rnd.IntN(len(vals)-1)]
				}
			}
			for n := rnd.IntN(3); n > 0; n-- {
				r := metav1.LabelSelectorRequirement{Key: keys[rnd.IntN(len(keys))], Operator: ops[rnd.IntN(len(ops))]}
				if r.Operator == metav1.LabelSelectorOpIn || r.Operator == metav1.LabelSelectorOpNotIn {
					for m := 1 + rnd.IntN(3); m > 0; m-- {
						r.Values = append(r.Values, vals[rnd.IntN(len(vals)-1)])
					}
				}
				s.MatchExpressions = append(s.MatchExpressions, r)
			}
			sels[i] = mustSelector(t, s)
		}
		x := NewSelectorIndex(sels)
		for n := 0; n < 50; n++ {
			l := randLabels()
			if got, want := x.Match(l), matchEvery(sels, l); !slices.Equal(got, want) {
				t.Fatalf("round %d: match(%v) = %v, every selector evaluated: %v\nselectors: %v", round, l, got, want, fmt.Sprint(sels))
			}
		}
	}
}
