package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AppliedUnchanged decides whether a no-change apply with --server-side
// sends a request: only when the manager's apply owns exactly the
// package's fields and the cluster holds its values. The managed fields
// below are in the server's FieldsV1 form.
func TestAppliedUnchanged(t *testing.T) {
	const deploy = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  annotations: {config.k8s.io/owning-inventory: inv-1}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: app
        image: web:1
        ports:
        - containerPort: 80
`
	const owned = `{"f:metadata":{"f:annotations":{"f:config.k8s.io/owning-inventory":{}},"f:labels":{"f:app":{}}},` +
		`"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},` +
		`"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}`
	want := &unstructured.Unstructured{Object: decodeYAML(t, deploy)}
	// The live object holds the package's values and the server's
	// defaults; its ports keep the defaulted protocol.
	live := func(manager string, op metav1.ManagedFieldsOperationType, fields string, edit func(map[string]any)) *unstructured.Unstructured {
		u := want.DeepCopy()
		u.Object["spec"].(map[string]any)["strategy"] = map[string]any{"type": "RollingUpdate"}
		c := u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["imagePullPolicy"] = "IfNotPresent"
		c["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
		if edit != nil {
			edit(u.Object)
		}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Subresource: "status",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:replicas":{}}}`)}},
			{Manager: manager, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}},
		})
		return u
	}
	// A keyed list whose key the package leaves to a default (protocol)
	// cannot be matched without the schema: applied again, as any doubt.
	if AppliedUnchanged(live("platform", metav1.ManagedFieldsOperationApply, owned, nil), want, "platform") {
		t.Error("a port keyed by a defaulted protocol was matched")
	}
	portsGiven := want.DeepCopy()
	portsGiven.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
	ownedTCP := `{"f:metadata":{"f:annotations":{"f:config.k8s.io/owning-inventory":{}},"f:labels":{"f:app":{}}},` +
		`"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},` +
		`"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}`
	for _, tc := range []struct {
		name string
		live *unstructured.Unstructured
		want *unstructured.Unstructured
		same bool
	}{
		{"owns exactly the package's fields", live("platform", metav1.ManagedFieldsOperationApply, ownedTCP, nil), portsGiven, true},
		{"another manager", live("other", metav1.ManagedFieldsOperationApply, ownedTCP, nil), portsGiven, false},
		{"owned by an update, not an apply", live("platform", metav1.ManagedFieldsOperationUpdate, ownedTCP, nil), portsGiven, false},
		{"a value changed in the cluster", live("platform", metav1.ManagedFieldsOperationApply, ownedTCP, func(o map[string]any) {
			o["spec"].(map[string]any)["replicas"] = int64(3)
		}), portsGiven, false},
		{"a field the package no longer sets", live("platform", metav1.ManagedFieldsOperationApply,
			`{"f:metadata":{"f:annotations":{"f:config.k8s.io/owning-inventory":{}},"f:labels":{"f:app":{},"f:tier":{}}},`+ownedTCP[len(`{"f:metadata":{"f:annotations":{"f:config.k8s.io/owning-inventory":{}},"f:labels":{"f:app":{}}},`):], nil), portsGiven, false},
		{"a field the manager does not own yet", live("platform", metav1.ManagedFieldsOperationApply,
			`{"f:metadata":{"f:annotations":{"f:config.k8s.io/owning-inventory":{}}},`+ownedTCP[len(`{"f:metadata":{"f:annotations":{"f:config.k8s.io/owning-inventory":{}},"f:labels":{"f:app":{}}},`):], nil), portsGiven, false},
	} {
		if got := AppliedUnchanged(tc.live, tc.want, "platform"); got != tc.same {
			t.Errorf("%s: AppliedUnchanged = %v, want %v", tc.name, got, tc.same)
		}
	}
}

// A ConfigMap: maps only; a set list ("v:") of a CRD-like object.
func TestAppliedUnchangedMapsAndSets(t *testing.T) {
	cm := &unstructured.Unstructured{Object: decodeYAML(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\ndata: {a: '1', b: '2'}\n")}
	entry := func(raw string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}}
	}
	live := cm.DeepCopy()
	live.SetManagedFields(entry(`{"f:data":{"f:a":{},"f:b":{}}}`))
	if !AppliedUnchanged(live, cm, "kubectl") {
		t.Error("a ConfigMap applied as is was not unchanged")
	}
	live.SetManagedFields(entry(`{"f:data":{"f:a":{},"f:b":{},"f:c":{}}}`))
	live.Object["data"].(map[string]any)["c"] = "3"
	if AppliedUnchanged(live, cm, "kubectl") {
		t.Error("a key the manager owns and the package dropped was unchanged")
	}
	set := &unstructured.Unstructured{Object: decodeYAML(t, "apiVersion: x/v1\nkind: S\nmetadata: {name: s}\nspec: {finalizers: [a, b]}\n")}
	liveSet := set.DeepCopy()
	liveSet.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "x/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}}}}`)}}})
	if !AppliedUnchanged(liveSet, set, "kubectl") {
		t.Error("a set list owned element by element was not unchanged")
	}
	set.Object["spec"].(map[string]any)["finalizers"] = []any{"a", "c"}
	if AppliedUnchanged(liveSet, set, "kubectl") {
		t.Error("another set element was unchanged")
	}
}
