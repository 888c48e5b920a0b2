package config

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// SelectorIndex finds which of a list of label selectors match a label set
// without evaluating every selector: each selector with an equality
// requirement (matchLabels, or an `In` expression) is filed under that
// requirement's key and values, so only the selectors filed under one of
// the object's own labels are candidates. Selectors with no such
// requirement (only NotIn, Exists, DoesNotExist, or empty) are evaluated
// for every object. The cost per object is then independent of how many
// contexts a config declares.
type SelectorIndex struct {
	sels []labels.Selector
	// keys[k] is an indexed label key; values[k] maps each of its values to
	// the ascending indexes of the selectors filed under it.
	keys   []string
	values []map[string][]int
	// always are the selectors that cannot be indexed, ascending.
	always []int
}

// NewSelectorIndex indexes sels; a nil selector matches nothing and is left
// out.
func NewSelectorIndex(sels []labels.Selector) *SelectorIndex {
	x := &SelectorIndex{sels: sels}
	for i, s := range sels {
		if s == nil {
			continue
		}
		req, ok := equalityRequirement(s)
		if !ok {
			x.always = append(x.always, i)
			continue
		}
		k := slices.Index(x.keys, req.Key())
		if k < 0 {
			k = len(x.keys)
			x.keys = append(x.keys, req.Key())
			x.values = append(x.values, map[string][]int{})
		}
		for _, v := range req.ValuesUnsorted() {
			if l := x.values[k][v]; len(l) == 0 || l[len(l)-1] != i { // In (a, a)
				x.values[k][v] = append(l, i)
			}
		}
	}
	return x
}

// equalityRequirement picks the requirement of s that names the fewest
// values among those an object can only meet by carrying one of them.
func equalityRequirement(s labels.Selector) (labels.Requirement, bool) {
	reqs, selectable := s.Requirements()
	if !selectable {
		return labels.Requirement{}, false
	}
	best := -1
	for i := range reqs {
		switch reqs[i].Operator() {
		case selection.In, selection.Equals, selection.DoubleEquals:
			if best < 0 || len(reqs[i].ValuesUnsorted()) < len(reqs[best].ValuesUnsorted()) {
				best = i
			}
		}
	}
	if best < 0 {
		return labels.Requirement{}, false
	}
	return reqs[best], true
}

// Match returns the ascending indexes of the selectors that match l.
func (x *SelectorIndex) Match(l map[string]string) []int {
	// A selector is filed under one key, and an object has one value per
	// key, so candidates from different keys and from always never repeat.
	var buf [16]int
	cand := append(buf[:0], x.always...)
	lists := 0
	if len(l) > 0 {
		for k, key := range x.keys {
			if v, ok := l[key]; ok {
				if ids := x.values[k][v]; len(ids) > 0 {
					cand = append(cand, ids...)
					lists++
				}
			}
		}
	}
	if len(x.always) > 0 && lists > 0 || lists > 1 {
		slices.Sort(cand)
	}
	var out []int
	set := labels.Set(l)
	for _, i := range cand {
		if x.sels[i].Matches(set) {
			out = append(out, i)
		}
	}
	return out
}
