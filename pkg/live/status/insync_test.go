package status

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastAppliedIs is the half of Mismatch that status' drift does not
// cover: a field in the last-applied configuration but not in the package
// is one client-side apply's three-way merge would remove.
func TestLastAppliedIs(t *testing.T) {
	want := &unstructured.Unstructured{Object: decodeYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: web
  annotations: {config.k8s.io/owning-inventory: inv-1}
data: {value: "1", count: "2"}
`)}
	liveWith := func(last map[string]any) *unstructured.Unstructured {
		live := want.DeepCopy()
		ann := live.GetAnnotations()
		if last != nil {
			text, err := json.Marshal(last)
			if err != nil {
				t.Fatal(err)
			}
			ann[lastAppliedAnnotation] = string(text)
		}
		live.SetAnnotations(ann)
		return live
	}
	extra := want.DeepCopy()
	extra.Object["data"].(map[string]any)["removed"] = "x"
	changed := want.DeepCopy()
	changed.Object["data"].(map[string]any)["value"] = "0"
	for _, tc := range []struct {
		name string
		last map[string]any
		same bool
	}{
		{"the package as sent", want.Object, true},
		{"a field the package no longer sets", extra.Object, false},
		{"another value", changed.Object, false},
		{"no last-applied configuration", nil, false},
	} {
		if got := lastAppliedIs(liveWith(tc.last), want); got != tc.same {
			t.Errorf("%s: lastAppliedIs = %v, want %v", tc.name, got, tc.same)
		}
	}
	// The decoded JSON has float64 numbers, the package int64.
	num := &unstructured.Unstructured{Object: decodeYAML(t, "apiVersion: v1\nkind: X\nmetadata: {name: obj}\nspec: {replicas: 3}\n")}
	live := num.DeepCopy()
	live.SetAnnotations(map[string]string{lastAppliedAnnotation: `{"apiVersion":"v1","kind":"X","metadata":{"name":"obj"},"spec":{"replicas":3}}`})
	if !lastAppliedIs(live, num) {
		t.Error("3 and 3.0 differ")
	}
}

func TestCurrent(t *testing.T) {
	ns := &unstructured.Unstructured{Object: decodeYAML(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\nstatus: {phase: Active}\n")}
	if !Current(ns) {
		t.Error("an Active Namespace is not Current")
	}
	if Current(nil) {
		t.Error("a missing object is Current")
	}
	ns.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	if Current(ns) {
		t.Error("a Namespace being deleted is Current")
	}
}
