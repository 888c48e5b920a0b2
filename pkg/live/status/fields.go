package status

import (
	"reflect"
	"regexp"
	"slices"
	"strconv"
)

// Drift is found in two steps. covers is the fast, local check: when every
// field the package sets already has the same value in the live object, an
// apply changes none of them and no request is needed. Otherwise a
// server-side dry-run apply of the package says what an apply would make
// of the object, the server doing the defaulting and normalising (500m and
// 0.5 CPU, a port given as a string, stringData), and changedFields lists
// the fields where that result differs from the live object.

// lastAppliedAnnotation is client-side apply's record of the applied
// config; a server-side apply rewrites it, so it is not drift itself.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// covers reports whether every field set in want has the same value in
// live. Lists must have the same length and cover element by element, so
// an extra element in the cluster is left to the dry-run to judge. status
// is ignored: an apply does not write it.
func covers(live, want map[string]any) bool {
	for k, w := range want {
		if k == "status" {
			continue
		}
		l, ok := live[k]
		if !ok || !coversValue(l, w) {
			return false
		}
	}
	return true
}

func coversValue(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			lv, ok := l[k]
			if !ok || !coversValue(lv, wv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return false
		}
		for i := range w {
			if !coversValue(l[i], w[i]) {
				return false
			}
		}
		return true
	}
	return sameScalar(live, want)
}

// sameScalar compares two decoded JSON scalars, numbers by value whatever
// their Go type (int64 from one decoder, float64 from another). A map or a
// list is no scalar.
func sameScalar(a, b any) bool {
	if !isScalar(a) || !isScalar(b) {
		return false
	}
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

// ignoredMeta are the metadata fields every write changes: they are the
// server's bookkeeping, never drift.
var ignoredMeta = []string{"managedFields", "resourceVersion", "generation"}

// changedFields lists the field paths where after (the dry-run result)
// differs from live, sorted: a field set or changed by the apply, or a
// list whose length changes. status and the server's bookkeeping in
// metadata are not compared.
func changedFields(live, after map[string]any) []string {
	var paths []string
	for _, k := range unionKeys(live, after) {
		switch k {
		case "status":
			continue
		case "metadata":
			lm, _ := live[k].(map[string]any)
			am, _ := after[k].(map[string]any)
			paths = append(paths, changedMeta(lm, am)...)
			continue
		}
		paths = appendChanged(paths, k, live[k], after[k])
	}
	slices.Sort(paths)
	return paths
}

func changedMeta(live, after map[string]any) []string {
	var paths []string
	for _, k := range unionKeys(live, after) {
		if slices.Contains(ignoredMeta, k) {
			continue
		}
		l, a := live[k], after[k]
		if k == "annotations" {
			l, a = withoutKey(l, lastAppliedAnnotation), withoutKey(a, lastAppliedAnnotation)
		}
		paths = appendChanged(paths, "metadata"+fieldStep(k), l, a)
	}
	return paths
}

// withoutKey returns m without key, when m is a map.
func withoutKey(m any, key string) any {
	mm, ok := m.(map[string]any)
	if !ok {
		return m
	}
	if _, has := mm[key]; !has {
		return m
	}
	out := make(map[string]any, len(mm))
	for k, v := range mm {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// appendChanged appends the paths under path where l and a differ: the
// leaves of two maps, the elements of two lists of one length, else path
// itself.
func appendChanged(paths []string, path string, l, a any) []string {
	lm, lok := l.(map[string]any)
	am, aok := a.(map[string]any)
	if lok && aok {
		for _, k := range unionKeys(lm, am) {
			paths = appendChanged(paths, path+fieldStep(k), lm[k], am[k])
		}
		return paths
	}
	ll, lok := l.([]any)
	al, aok := a.([]any)
	if lok && aok && len(ll) == len(al) {
		for i := range ll {
			paths = appendChanged(paths, path+"["+strconv.Itoa(i)+"]", ll[i], al[i])
		}
		return paths
	}
	if sameScalar(l, a) || reflect.DeepEqual(l, a) {
		return paths
	}
	return append(paths, path)
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// fieldStep renders one map key of a path: ".name", or `["app.properties"]`
// for a key a dot would make ambiguous.
func fieldStep(k string) string {
	if plainKey.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}
