package status

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A server-side apply changes nothing when the live object already holds
// every value the package sets (covers) and the field manager's apply
// owns exactly the package's fields: no field to add, none to take from
// another manager, none to remove (a field the manager owns that the
// package no longer sets is removed by the apply). The managed fields are
// read as the server records them (FieldsV1: "f:name" for a field,
// "k:{...}" for an element of a list keyed by some of its fields, "v:..."
// for an element of a set, "." for the element itself); any shape this
// check does not follow answers "not unchanged", and the object is
// applied, as any doubt is.

// AppliedUnchanged reports whether a server-side apply of want by
// manager would change nothing in live.
func AppliedUnchanged(live, want *unstructured.Unstructured, manager string) bool {
	if !covers(live.Object, want.Object) {
		return false
	}
	owned, ok := appliedFields(live, manager, want.GetAPIVersion())
	if !ok {
		return false
	}
	return ownsExactly(owned, appliedConfig(want.Object))
}

// appliedFields is manager's apply entry of live's managed fields for
// apiVersion, decoded; ok is false when there is none or several.
func appliedFields(live *unstructured.Unstructured, manager, apiVersion string) (map[string]any, bool) {
	var found *metav1.ManagedFieldsEntry
	entries := live.GetManagedFields()
	for i := range entries {
		e := &entries[i]
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			continue
		}
		if found != nil || e.APIVersion != apiVersion || e.FieldsV1 == nil {
			return nil, false
		}
		found = e
	}
	if found == nil {
		return nil, false
	}
	var owned map[string]any
	if err := json.Unmarshal(found.FieldsV1.Raw, &owned); err != nil {
		return nil, false
	}
	return owned, true
}

// appliedConfig is what an apply of obj sets: obj without the object's
// identity (apiVersion, kind, name, namespace: never in managed fields)
// and status.
func appliedConfig(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			m, ok := v.(map[string]any)
			if !ok {
				return obj // not an object: the walk below says no
			}
			meta := make(map[string]any, len(m))
			for mk, mv := range m {
				if mk != "name" && mk != "namespace" && mk != "creationTimestamp" {
					meta[mk] = mv
				}
			}
			if len(meta) > 0 {
				out[k] = meta
			}
			continue
		}
		out[k] = v
	}
	return out
}

// ownsExactly reports whether the managed-fields node owned holds exactly
// the fields of want, a value of the applied configuration.
func ownsExactly(owned map[string]any, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		n := 0
		for k := range owned {
			if !strings.HasPrefix(k, "f:") {
				return false
			}
			n++
		}
		if n != len(w) {
			return false
		}
		for k, v := range w {
			child, ok := owned["f:"+k].(map[string]any)
			if !ok || !ownsExactly(child, v) {
				return false
			}
		}
		return true
	case []any:
		return ownsList(owned, w)
	}
	return len(owned) == 0 // a scalar is a leaf
}

// ownsList matches a list of want with its managed-fields node: an atomic
// list (no children) is owned whole; a keyed list owns one "k:" entry per
// element, matched by its key fields' values; a set one "v:" entry per
// element.
func ownsList(owned map[string]any, want []any) bool {
	if len(owned) == 0 {
		return true
	}
	if len(owned) != len(want) {
		return false
	}
	used := map[string]bool{}
	for _, el := range want {
		key, ok := elementKey(owned, el, used)
		if !ok {
			return false
		}
		used[key] = true
		child, _ := owned[key].(map[string]any)
		if em, isMap := el.(map[string]any); isMap {
			rest := make(map[string]any, len(child))
			for k, v := range child {
				if k != "." {
					rest[k] = v
				}
			}
			if !ownsExactly(rest, em) {
				return false
			}
		} else if len(child) != 0 {
			return false
		}
	}
	return true
}

// elementKey finds the unused entry of owned that names el.
func elementKey(owned map[string]any, el any, used map[string]bool) (string, bool) {
	if em, isMap := el.(map[string]any); isMap {
		match := ""
		for k := range owned {
			keyJSON, ok := strings.CutPrefix(k, "k:")
			if !ok || used[k] {
				continue
			}
			var fields map[string]any
			if json.Unmarshal([]byte(keyJSON), &fields) != nil {
				return "", false
			}
			if keyMatches(fields, em) {
				if match != "" {
					return "", false // ambiguous
				}
				match = k
			}
		}
		return match, match != ""
	}
	b, err := json.Marshal(el)
	if err != nil {
		return "", false
	}
	k := "v:" + string(b)
	_, ok := owned[k]
	return k, ok && !used[k]
}

// keyMatches: every key field has el's value.
func keyMatches(fields, el map[string]any) bool {
	for f, v := range fields {
		ev, ok := el[f]
		if !ok || !sameScalar(ev, v) {
			return false
		}
	}
	return true
}
