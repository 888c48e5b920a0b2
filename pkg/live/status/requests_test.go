package status

import (
	"context"
	"fmt"
	"testing"

	kptfilev1 "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"github.com/kptdev/kpt/pkg/live"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
)

// TestCheckObjectsRequests checks what checkObjects asks a cluster: one
// list for the 40 ConfigMaps of a namespace (never a get each), a get for
// a lone Namespace, and a dry-run apply only for the object whose fields
// differ from the package's.
func TestCheckObjectsRequests(t *testing.T) {
	inv, err := live.ToInventoryInfo(kptfilev1.Inventory{Name: "demo", Namespace: "default", InventoryID: "id-1"})
	if err != nil {
		t.Fatal(err)
	}
	obj := func(kind, ns, name, value string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": name}}}
		if ns != "" {
			u.SetNamespace(ns)
			u.Object["data"] = map[string]any{"v": value}
		}
		return u
	}
	pkg := &cluster.Package{Inventory: inv, Objects: []*unstructured.Unstructured{obj("Namespace", "", "a", "")}}
	var liveObjs []runtime.Object
	var refs []v1alpha1.ObjectRef
	for i := range 40 {
		pkg.Objects = append(pkg.Objects, obj("ConfigMap", "a", fmt.Sprintf("cm-%02d", i), "same"))
		value := "same"
		if i == 7 {
			value = "edited"
		}
		liveObjs = append(liveObjs, asApplied(obj("ConfigMap", "a", fmt.Sprintf("cm-%02d", i), value), "id-1"))
	}
	liveObjs = append(liveObjs, asApplied(pkg.Objects[0], "id-1"))
	for _, u := range pkg.Objects {
		refs = append(refs, refOf(u))
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}, liveObjs...)
	out, err := checkObjects(context.Background(), &conn{dynamic: client, mapper: testMapper()}, pkg, refs, true, DefaultFieldManager)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, a := range client.Actions() {
		count[a.GetVerb()+" "+a.GetResource().Resource]++
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetName() != "cm-07" {
			t.Errorf("a dry-run apply of %s, which is in sync", p.GetName())
		}
	}
	want := map[string]int{"list configmaps": 1, "get namespaces": 1, "patch configmaps": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", count, want)
	}
	if len(out) != 41 {
		t.Errorf("%d objects reported, want 41", len(out))
	}
	for _, o := range out {
		checked := len(o.Drift) > 0 || o.Error != "" // the fake cannot apply: an error
		if checked != (o.Name == "cm-07") || o.Status != "Current" {
			t.Errorf("%s: status %s, drift %v, error %q", o.Name, o.Status, o.Drift, o.Error)
		}
	}
}
