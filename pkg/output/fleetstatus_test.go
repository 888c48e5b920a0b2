package output

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func objStatus(r v1alpha1.ObjectRef, status, inventory string, drift ...string) v1alpha1.ObjectStatus {
	return v1alpha1.ObjectStatus{ObjectRef: r, Status: status, Inventory: inventory, Drift: drift}
}

// sampleStatus has every state: a context in sync, one with a drifted, a
// missing, an extra, a never-applied, an in-progress and an unreadable
// object, one whose inventory is missing, and an unreachable one.
func sampleStatus() *v1alpha1.FleetStatus {
	inv := func(name, state string) v1alpha1.InventoryState {
		return v1alpha1.InventoryState{Namespace: "default", Name: name, State: state}
	}
	inProgress := objStatus(ref("apps", "Deployment", "payments", "api"), "InProgress", v1alpha1.ObjectApplied)
	inProgress.Message = "Replicas: 1/3"
	unreadable := objStatus(ref("example.com", "Widget", "payments", "w"), v1alpha1.StatusUnknown, v1alpha1.ObjectApplied)
	unreadable.Error = "widgets.example.com is forbidden: User cannot list"
	return &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Contexts: []v1alpha1.ContextStatus{
		{Name: "eu-shard-00", Reachable: true, Inventory: inv("shop-eu-shard-00", v1alpha1.InventoryFound), Objects: []v1alpha1.ObjectStatus{
			objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
			objStatus(ref("", "Namespace", "", "payments"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
		}},
		{Name: "eu-shard-01", Reachable: true, Inventory: inv("shop-eu-shard-01", v1alpha1.InventoryFound), Objects: []v1alpha1.ObjectStatus{
			objStatus(ref("", "ConfigMap", "payments", "settings"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied, "data.color", `data["app.properties"]`),
			objStatus(ref("", "ConfigMap", "payments", "old"), v1alpha1.StatusCurrent, v1alpha1.ObjectExtra),
			objStatus(ref("", "Secret", "payments", "token"), v1alpha1.StatusNotFound, v1alpha1.ObjectApplied),
			objStatus(ref("", "Service", "payments", "new"), v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied),
			objStatus(ref("", "Service", "payments", "web"), v1alpha1.StatusCurrent, v1alpha1.ObjectApplied),
			inProgress, unreadable,
		}},
		{Name: "eu-shard-02", Reachable: true, Inventory: inv("shop-eu-shard-02", v1alpha1.InventoryMissing), Objects: []v1alpha1.ObjectStatus{
			objStatus(ref("", "Namespace", "", "search"), v1alpha1.StatusNotFound, v1alpha1.ObjectNotApplied),
		}},
		{Name: "eu-shard-03", Error: "Get \"https://10.0.0.3:6443/api\": dial tcp 10.0.0.3:6443: connect: connection refused",
			Inventory: inv("shop-eu-shard-03", v1alpha1.InventoryUnknown)},
	}}
}

func TestStatusTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := RenderStatusTable(&b, sampleStatus()); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.table", b.Bytes())
	// Every object that needs attention is named; the others are not.
	for _, c := range sampleStatus().Contexts {
		for _, o := range c.Objects {
			if named := strings.Contains(b.String(), "  "+o.ObjectRef.String()+" "); named != o.NeedsAttention() {
				t.Errorf("%s in %s: named %v, needs attention %v", o.ObjectRef, c.Name, named, o.NeedsAttention())
			}
		}
	}
}

func TestStatusMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := RenderStatusMarkdown(&b, sampleStatus()); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.md", b.Bytes())
	md := b.String()
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") || strings.Count(md, "<details>") != 2 {
		t.Errorf("want 2 balanced <details> (the contexts that need attention):\n%s", md)
	}
	if !strings.Contains(md, ":no_entry: `eu-shard-03` is **unreachable**") {
		t.Error("the unreachable context is not called out")
	}
}

func TestStatusMarkdownInSync(t *testing.T) {
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Contexts: sampleStatus().Contexts[:1]}
	var b bytes.Buffer
	if err := RenderStatusMarkdown(&b, s); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); !strings.Contains(md, "**1 of 1 contexts in sync.**") || strings.Contains(md, ":warning:") ||
		strings.Contains(md, "<details>") || !strings.Contains(md, "| `eu-shard-00` | in sync | found | 2 | 2 | 0 | 0 | 0 | 0 |") {
		t.Errorf("markdown:\n%s", md)
	}
}

func TestStatusJSONRoundTrip(t *testing.T) {
	s := sampleStatus()
	var b bytes.Buffer
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.FleetStatus
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, s) {
		t.Errorf("round trip:\n%+v\n%+v", back, *s)
	}
	if !strings.Contains(b.String(), `"drift": [
            "data.color",`) || !strings.Contains(b.String(), `"drift": false`) {
		t.Errorf("drift is not false or the list of fields:\n%s", b.String())
	}
}

// A context whose engine keeps the inventory (a split for Argo CD): every
// format says the extras are not known, keeps the extra and not-applied
// columns with "unknown" in them, and never calls it in sync; an object
// that needs attention for its drift is still listed.
func TestStatusEngineKeepsInventory(t *testing.T) {
	note := "inventory extras not known for argocd: Argo CD keeps what it applied"
	ok := objStatus(ref("", "ConfigMap", "payments", "a"), v1alpha1.StatusCurrent, v1alpha1.ObjectInventoryUnknown)
	drifted := objStatus(ref("", "ConfigMap", "payments", "b"), v1alpha1.StatusCurrent, v1alpha1.ObjectInventoryUnknown, "data.color")
	inv := v1alpha1.InventoryState{Namespace: "argocd", Name: "shop-a", State: v1alpha1.InventoryUnknown, Engine: "argocd", Note: note}
	s := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Contexts: []v1alpha1.ContextStatus{
		{Name: "eu-shard-00", Reachable: true, Inventory: inv, Objects: []v1alpha1.ObjectStatus{ok}},
		{Name: "eu-shard-01", Reachable: true, Inventory: inv, Objects: []v1alpha1.ObjectStatus{ok, drifted}},
	}}
	var table, md, page bytes.Buffer
	if err := RenderStatusTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := RenderStatusHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"eu-shard-00  extras not known  unknown    1        1        0            0        unknown  unknown",
		"eu-shard-01  needs attention   unknown    2        2        0            1        unknown  unknown",
		"0 of 2 contexts in sync. 1 object(s) need attention. 2 context(s) not checked for inventory extras",
		"eu-shard-00: " + note, "ConfigMap payments/b", "\n\nNeeds attention in eu-shard-01 (1):",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "ConfigMap payments/a") || strings.Contains(table.String(), "in sync ") {
		t.Errorf("the table lists the Current object or calls a context in sync:\n%s", table.String())
	}
	for _, want := range []string{"| `eu-shard-00` | extras not known | unknown | 1 | 1 | 0 | 0 | unknown | unknown |", ":grey_question: `eu-shard-00`: " + note} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, want := range []string{`data-label="extra"><span class="warn">? unknown</span>`, `data-inventory-note="eu-shard-01">? <code>eu-shard-01</code>: ` + note} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
