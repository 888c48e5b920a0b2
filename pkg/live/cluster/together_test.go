package cluster_test

import (
	"context"
	"path/filepath"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
)

var rgResource = schema.GroupVersionResource{Group: "kpt.dev", Version: "v1alpha1", Resource: "resourcegroups"}

func resourceGroup(name, id string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kpt.dev/v1alpha1")
	u.SetKind("ResourceGroup")
	u.SetNamespace("default")
	u.SetName(name)
	u.SetLabels(map[string]string{"cli-utils.sigs.k8s.io/inventory-id": id})
	return u
}

func shardLease(name string, labelled bool) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: lease.Name(name)}}
	if labelled {
		l.Labels = map[string]string{lease.ManagedByLabel: "shard-router"}
	}
	return l
}

// verbs counts a fake's actions by verb and resource.
func verbs(actions []k8stesting.Action) map[string]int {
	n := map[string]int{}
	for _, a := range actions {
		n[a.GetVerb()+" "+a.GetResource().Resource]++
	}
	return n
}

// The contexts that name the same cluster and user entries and keep their
// inventories in one namespace (shard-a and shard-c of sharedKubeconfig)
// have their first ResourceGroup and Lease reads answered by one list of
// each; a context alone in its group (shard-b: another cluster; shard-d:
// another user) sends its GETs as before. What the list lacks (a Lease
// without shard-router's label) is in the list of every Lease; a later
// read, and every read after a list that failed are GETs, with the
// answers and errors GETs give.
func TestReadTogether(t *testing.T) {
	k := loadShared(t)
	refs := map[string]cluster.InventoryRef{}
	for _, c := range []string{"a", "b", "c", "d"} {
		refs["shard-"+c] = cluster.InventoryRef{Namespace: "default", Name: "inv-" + c, ID: "id-" + c}
	}
	k.ReadTogether(refs)

	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{rgResource: "ResourceGroupList"},
		resourceGroup("inv-a", "id-a"), resourceGroup("inv-b", "id-b"), resourceGroup("inv-c", "id-c"),
		resourceGroup("inv-d", "id-d"), resourceGroup("other", "id-other"))
	cs := fake.NewClientset(shardLease("inv-a", true), shardLease("inv-b", true), shardLease("inv-c", false), shardLease("inv-d", true))
	ctx := context.Background()

	readRG := func(context, name string) (*unstructured.Unstructured, error) {
		t.Helper()
		d, err := k.InventoryReadsOf(context, cluster.WithDynamic(nil, dyn, nil)).DynamicClient()
		if err != nil {
			t.Fatal(err)
		}
		return d.Resource(rgResource).Namespace("default").Get(ctx, name, metav1.GetOptions{})
	}
	readLease := func(context, name string) (*coordinationv1.Lease, error) {
		return k.LeasesOf(context, cs.CoordinationV1()).Leases("default").Get(ctx, lease.Name(name), metav1.GetOptions{})
	}
	mustName := func(what string, got interface{ GetName() string }, err error, want string) {
		t.Helper()
		if err != nil || got.GetName() != want {
			t.Fatalf("%s: %v, %v; want %s", what, got, err, want)
		}
	}

	for _, c := range []string{"a", "c"} {
		u, err := readRG("shard-"+c, "inv-"+c)
		mustName("shard-"+c+"'s ResourceGroup", u, err, "inv-"+c)
	}
	if got := verbs(dyn.Actions()); got["list resourcegroups"] != 1 || got["get resourcegroups"] != 0 {
		t.Errorf("shard-a and shard-c read their ResourceGroups with %v, want one list and no get", got)
	}
	requireListSelects(t, dyn.Actions(), "cli-utils.sigs.k8s.io/inventory-id in (id-a,id-c)", "the group's inventory ids")
	for _, c := range []string{"b", "d"} {
		u, err := readRG("shard-"+c, "inv-"+c)
		mustName("shard-"+c+"'s ResourceGroup", u, err, "inv-"+c)
	}
	u, err := readRG("shard-a", "inv-a")
	mustName("shard-a's second read", u, err, "inv-a")
	if got := verbs(dyn.Actions()); got["list resourcegroups"] != 1 || got["get resourcegroups"] != 3 {
		t.Errorf("after the alone contexts' reads and a second read: %v, want the one list and 3 gets", got)
	}

	for _, c := range []string{"a", "c", "b", "d"} {
		l, err := readLease("shard-"+c, "inv-"+c)
		mustName("shard-"+c+"'s Lease", l, err, lease.Name("inv-"+c))
	}
	// shard-c's Lease lacks the label, so the list lacks it: the list of
	// every Lease of the namespace holds it.
	if got := verbs(cs.Actions()); got["list leases"] != 2 || got["get leases"] != 2 {
		t.Errorf("the Leases were read with %v, want two lists (the labelled, every one) and 2 gets (b's, d's)", got)
	}

	// A list that fails: each context of the group GETs, and a missing
	// object is the GET's NotFound.
	k2 := loadShared(t)
	k2.ReadTogether(map[string]cluster.InventoryRef{
		"shard-a": {Namespace: "default", Name: "inv-a", ID: "id-a"},
		"shard-c": {Namespace: "default", Name: "gone", ID: "id-gone"},
	})
	cs2 := fake.NewClientset(shardLease("inv-a", true))
	cs2.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", nil)
	})
	l, err := k2.LeasesOf("shard-a", cs2.CoordinationV1()).Leases("default").Get(ctx, lease.Name("inv-a"), metav1.GetOptions{})
	mustName("shard-a's Lease after a forbidden list", l, err, lease.Name("inv-a"))
	if _, err := k2.LeasesOf("shard-c", cs2.CoordinationV1()).Leases("default").Get(ctx, lease.Name("gone"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Lease that does not exist, after a forbidden list: %v, want the GET's NotFound", err)
	}
	if got := verbs(cs2.Actions()); got["list leases"] != 1 || got["get leases"] != 2 {
		t.Errorf("after a forbidden list: %v, want the one list and a get each", got)
	}
}

// Contexts OUT_DIR records no apply of (Unrecorded) read their
// ResourceGroup and Lease from the namespace's list of every name (of
// every Lease): one that is not there is not found, as a GET would say;
// a ResourceGroup that is there is read with a GET. In a group with a
// recorded context, that one's ResourceGroup is listed by its id alone.
func TestReadTogetherUnrecorded(t *testing.T) {
	k := loadShared(t)
	k.ReadTogether(map[string]cluster.InventoryRef{
		"shard-a": {Namespace: "default", Name: "inv-a", ID: "id-a", Unrecorded: true},
		"shard-c": {Namespace: "default", Name: "inv-c", ID: "id-c", Unrecorded: true},
		"shard-e": {Namespace: "default", Name: "inv-e", ID: "id-e"},
	})
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	names := metadatafake.NewSimpleMetadataClient(scheme, partialResourceGroup("inv-c"), partialResourceGroup("inv-e"), partialResourceGroup("other"))
	k.UseMetadata(func(string) (metadata.Interface, error) { return names, nil })
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{rgResource: "ResourceGroupList"},
		resourceGroup("inv-c", "id-c"), resourceGroup("inv-e", "id-e"), resourceGroup("other", "id-other"))
	cs := fake.NewClientset(shardLease("inv-c", false), shardLease("inv-e", true))
	ctx := context.Background()
	readRG := func(context, name string) (*unstructured.Unstructured, error) {
		d, err := k.InventoryReadsOf(context, cluster.WithDynamic(nil, dyn, nil)).DynamicClient()
		if err != nil {
			t.Fatal(err)
		}
		return d.Resource(rgResource).Namespace("default").Get(ctx, name, metav1.GetOptions{})
	}
	_, wantErr := dyn.Resource(rgResource).Namespace("default").Get(ctx, "inv-a", metav1.GetOptions{})
	dyn.ClearActions()

	if _, err := readRG("shard-a", "inv-a"); err == nil || err.Error() != wantErr.Error() || !apierrors.IsNotFound(err) {
		t.Errorf("shard-a's ResourceGroup, which does not exist: %v, want a GET's NotFound: %v", err, wantErr)
	}
	for _, c := range []string{"c", "e"} {
		if u, err := readRG("shard-"+c, "inv-"+c); err != nil || u.GetName() != "inv-"+c {
			t.Errorf("shard-%s's ResourceGroup: %v, %v", c, u, err)
		}
	}
	if got := verbs(names.Actions()); got["list resourcegroups"] != 1 || len(got) != 1 {
		t.Errorf("the names were read with %v, want one list", got)
	}
	if got := verbs(dyn.Actions()); got["list resourcegroups"] != 1 || got["get resourcegroups"] != 1 {
		t.Errorf("the ResourceGroups were read with %v, want one list (shard-e's) and one get (shard-c's)", got)
	}
	requireListSelects(t, dyn.Actions(), "cli-utils.sigs.k8s.io/inventory-id in (id-e)", "the recorded context's inventory id")

	for _, c := range []string{"a", "c", "e"} {
		l, err := k.LeasesOf("shard-"+c, cs.CoordinationV1()).Leases("default").Get(ctx, lease.Name("inv-"+c), metav1.GetOptions{})
		switch {
		case c == "a" && !apierrors.IsNotFound(err):
			t.Errorf("shard-a's Lease, which does not exist: %v, %v; want NotFound", l, err)
		case c != "a" && (err != nil || l.Name != lease.Name("inv-"+c)):
			t.Errorf("shard-%s's Lease: %v, %v", c, l, err)
		}
	}
	if got := verbs(cs.Actions()); got["list leases"] != 2 || got["get leases"] != 0 {
		t.Errorf("the Leases were read with %v, want two lists (shard-e's labelled, every one) and no get", got)
	}
}

// requireListSelects: every list among actions selects want (what).
func requireListSelects(t *testing.T, actions []k8stesting.Action, want, what string) {
	t.Helper()
	for _, a := range actions {
		if l, ok := a.(k8stesting.ListAction); ok {
			if sel := l.GetListRestrictions().Labels.String(); sel != want {
				t.Errorf("the list selects %q, want %s", sel, what)
			}
		}
	}
}

func partialResourceGroup(name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "kpt.dev/v1alpha1", Kind: "ResourceGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// OUT_DIR's resourcegroup.yaml gives where a context's inventory is; a
// package without one gives nothing.
func TestInventoryRefOf(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ctx", "resourcegroup.yaml"), `apiVersion: kpt.dev/v1alpha1
kind: ResourceGroup
metadata:
  name: inventory-ctx
  namespace: shard-inventory
  labels:
    cli-utils.sigs.k8s.io/inventory-id: 4fee24087482fcdca3bba9830be5625166f98d63
`)
	got := cluster.RecordedInventories(dir, []string{"ctx", "unrecorded", "absent"}, func(name string) bool { return name != "unrecorded" })
	want := cluster.InventoryRef{Namespace: "shard-inventory", Name: "inventory-ctx", ID: "4fee24087482fcdca3bba9830be5625166f98d63"}
	if len(got) != 1 || got["ctx"] != want {
		t.Errorf("RecordedInventories = %v, want only ctx: %v", got, want)
	}
}
