package v1alpha1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDriftJSON(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drift Drift
		json  string
	}{
		{"none", nil, "false"},
		{"empty", Drift{}, "false"},
		{"fields", Drift{"data.color", "spec.replicas"}, `["data.color","spec.replicas"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.drift)
			if err != nil || string(got) != tc.json {
				t.Fatalf("Marshal = %s, %v; want %s", got, err, tc.json)
			}
			var back Drift
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if len(back) != len(tc.drift) || (len(back) > 0 && !reflect.DeepEqual(back, tc.drift)) {
				t.Errorf("round trip = %#v, want %#v", back, tc.drift)
			}
		})
	}
	var d Drift
	for _, bad := range []string{"true", `"data"`, "3"} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s) accepted it: %#v", bad, d)
		}
	}
}

// TestFleetStatusJSONShape pins the field names of the document.
func TestFleetStatusJSONShape(t *testing.T) {
	doc := FleetStatus{TypeMeta: NewTypeMeta(FleetStatusKind), Contexts: []ContextStatus{{
		Name: "A", Reachable: true, Inventory: InventoryState{Namespace: "default", Name: "pkg-a", State: InventoryFound},
		Objects: []ObjectStatus{{ObjectRef: ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "c"}, Status: StatusCurrent,
			Drift: Drift{"data.k"}, Inventory: ObjectApplied}},
	}}}
	got, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"shardrouter.dev/v1alpha1","kind":"FleetStatus","contexts":[{"name":"A","reachable":true,"error":"",` +
		`"inventory":{"namespace":"default","name":"pkg-a","state":"found"},"objects":[{"group":"","kind":"ConfigMap",` +
		`"namespace":"ns","name":"c","status":"Current","drift":["data.k"],"inventory":"applied"}]}]}`
	if string(got) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", got, want)
	}
}

func TestFleetStatusVerdicts(t *testing.T) {
	ok := ObjectStatus{Status: StatusCurrent, Inventory: ObjectApplied}
	inv := InventoryState{State: InventoryFound}
	ctx := func(objs ...ObjectStatus) ContextStatus {
		return ContextStatus{Name: "c", Reachable: true, Inventory: inv, Objects: objs}
	}
	with := func(f func(*ObjectStatus)) ObjectStatus { o := ok; f(&o); return o }
	for _, tc := range []struct {
		name           string
		ctx            ContextStatus
		failed, inSync bool
	}{
		{"in sync", ctx(ok, ok), false, true},
		{"no objects", ctx(), false, true},
		{"drifted", ctx(ok, with(func(o *ObjectStatus) { o.Drift = Drift{"data.k"} })), false, false},
		{"not current", ctx(with(func(o *ObjectStatus) { o.Status = "InProgress" })), false, false},
		{"not found", ctx(with(func(o *ObjectStatus) { o.Status = StatusNotFound })), false, false},
		{"extra", ctx(with(func(o *ObjectStatus) { o.Inventory = ObjectExtra })), false, false},
		{"not applied", ctx(with(func(o *ObjectStatus) { o.Inventory = ObjectNotApplied })), false, false},
		{"object error", ctx(with(func(o *ObjectStatus) { o.Error = "forbidden" })), true, false},
		{"inventory missing", ContextStatus{Name: "c", Reachable: true, Inventory: InventoryState{State: InventoryMissing}}, false, false},
		{"unreachable", ContextStatus{Name: "c", Error: "connection refused", Inventory: InventoryState{State: InventoryUnknown}}, true, false},
		{"context error", ContextStatus{Name: "c", Reachable: true, Error: "timed out", Inventory: inv}, true, false},
		{"engine keeps the inventory", ContextStatus{Name: "c", Reachable: true, Inventory: InventoryState{State: InventoryUnknown, Engine: "argocd"},
			Objects: []ObjectStatus{with(func(o *ObjectStatus) { o.Inventory = ObjectInventoryUnknown })}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ctx.Failed(); got != tc.failed {
				t.Errorf("Failed() = %v, want %v", got, tc.failed)
			}
			if got := tc.ctx.InSync(); got != tc.inSync {
				t.Errorf("InSync() = %v, want %v", got, tc.inSync)
			}
			fleet := FleetStatus{Contexts: []ContextStatus{ctx(ok), tc.ctx}}
			if fleet.Failed() != tc.failed || fleet.InSync() != tc.inSync {
				t.Errorf("fleet: Failed() = %v, InSync() = %v; want %v, %v", fleet.Failed(), fleet.InSync(), tc.failed, tc.inSync)
			}
		})
	}
	if o := with(func(o *ObjectStatus) { o.Inventory = ObjectInventoryUnknown }); o.NeedsAttention() {
		t.Error("a Current object without drift needs attention for its engine's inventory alone (said once per context)")
	}
	if !strings.Contains(ObjectStatus{ObjectRef: ObjectRef{Kind: "ConfigMap", Namespace: "n", Name: "c"}}.String(), "ConfigMap n/c") {
		t.Error("ObjectStatus does not print as its ref")
	}
}
