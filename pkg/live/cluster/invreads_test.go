package cluster_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	kptcmdutil "github.com/kptdev/kpt/pkg/lib/util/cmdutil"
	"github.com/kptdev/kpt/pkg/live"
	"github.com/kptdev/kpt/pkg/printer"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/apis/actuation"
	"sigs.k8s.io/cli-utils/pkg/common"
	"sigs.k8s.io/cli-utils/pkg/inventory"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/internal/localfleet"
	"github.com/shard-router/shard-router/pkg/live/cluster"
)

// inventoryFactory is what kpt's inventory client asks of a factory: a
// dynamic client, a REST mapper that knows ResourceGroups, discovery.
type inventoryFactory struct {
	cmdutil.Factory
	dyn *dynamicfake.FakeDynamicClient
}

func (f inventoryFactory) DynamicClient() (dynamic.Interface, error) { return f.dyn, nil }

func (f inventoryFactory) ToRESTMapper() (meta.RESTMapper, error) {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{live.ResourceGroupGVK.GroupVersion()})
	m.Add(live.ResourceGroupGVK, meta.RESTScopeNamespace)
	return m, nil
}

func (f inventoryFactory) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return memory.NewMemCacheClient(fake.NewClientset().Discovery()), nil
}

func newInventoryFactory(objs ...runtime.Object) inventoryFactory {
	return inventoryFactory{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{rgResource: "ResourceGroupList"}, objs...)}
}

// localInventory is a package's inventory, as kpt live init writes it.
func localInventory() inventory.Info {
	return live.WrapInventoryInfoObj(resourceGroup("inv-a", "id-a"))
}

func configMap(name string) object.ObjMetadata {
	return object.ObjMetadata{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: "default", Name: name}
}

// applyInventory drives an inventory client as cli-utils' applier does in
// an apply of objs: it reads the inventory as it prepares (the inventory
// policy, the prune set, the task queue), merges objs into it, and at the
// end replaces it with objs and their statuses.
func applyInventory(t *testing.T, c inventory.Client, inv inventory.Info, objs object.ObjMetadataSet) {
	t.Helper()
	if _, err := c.GetClusterInventoryObjs(inv); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.GetClusterObjs(inv); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Merge(inv, objs, common.DryRunNone); err != nil {
		t.Fatal(err)
	}
	var status []actuation.ObjectStatus
	for _, id := range objs {
		status = append(status, actuation.ObjectStatus{ObjectReference: inventory.ObjectReferenceFromObjMetadata(id),
			Strategy: actuation.ActuationStrategyApply, Actuation: actuation.ActuationSucceeded, Reconcile: actuation.ReconcileSucceeded})
	}
	if err := c.Replace(inv, objs, status, common.DryRunNone); err != nil {
		t.Fatal(err)
	}
}

// storedInventory is the cluster's ResourceGroup inv-a.
func storedInventory(t *testing.T, f inventoryFactory) map[string]any {
	t.Helper()
	u, err := f.dyn.Resource(rgResource).Namespace("default").Get(t.Context(), "inv-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// storeAsAnotherClient has another client than the one under test store
// objs in the ResourceGroup inv-a of rgs, with a read and an update.
func storeAsAnotherClient(t *testing.T, rgs dynamic.ResourceInterface, objs object.ObjMetadataSet) {
	t.Helper()
	u, err := rgs.Get(t.Context(), "inv-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := live.WrapInventoryObj(u)
	if err := wrapped.Store(objs, nil); err != nil {
		t.Fatal(err)
	}
	other, err := wrapped.GetObject()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rgs.Update(t.Context(), other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A first apply and an apply that changes the inventory: kpt's engine
// reads it seven and eight times with kpt's own client; through the
// applier's client two reads reach the cluster in each (one as it
// prepares, one after its own writes, as it replaces), and the cluster
// ends with the same ResourceGroup.
func TestApplierInventoryClientReadsOnce(t *testing.T) {
	kpts, mine := newInventoryFactory(), newInventoryFactory()
	kptClient, err := cluster.NewInventoryClient(kpts)
	if err != nil {
		t.Fatal(err)
	}
	myClient, err := cluster.NewApplierInventoryClient(mine, inventory.StatusPolicyAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, objs := range []object.ObjMetadataSet{{configMap("a"), configMap("b")}, {configMap("b"), configMap("c")}} {
		kpts.dyn.ClearActions()
		mine.dyn.ClearActions()
		applyInventory(t, kptClient, localInventory(), objs)
		applyInventory(t, myClient, localInventory(), objs)
		kptVerbs, myVerbs := verbs(kpts.dyn.Actions()), verbs(mine.dyn.Actions())
		if myVerbs["get resourcegroups"] != 2 || kptVerbs["get resourcegroups"] <= 2 {
			t.Errorf("apply %d: %d reads of the inventory reached the cluster (kpt's client: %d), want 2", i+1, myVerbs["get resourcegroups"], kptVerbs["get resourcegroups"])
		}
		delete(kptVerbs, "get resourcegroups")
		delete(myVerbs, "get resourcegroups")
		if !reflect.DeepEqual(myVerbs, kptVerbs) {
			t.Errorf("apply %d wrote %v, kpt's client %v: want the same writes", i+1, myVerbs, kptVerbs)
		}
		if got, want := storedInventory(t, mine), storedInventory(t, kpts); !reflect.DeepEqual(got, want) {
			t.Errorf("apply %d stored\n%v\nkpt's client stored\n%v", i+1, got, want)
		}
	}
}

// A first apply of an inventory the run read missing (absent): the
// engine's reads of it before its create send nothing, the one after its
// writes (as it replaces) reaches the cluster, and the cluster ends with
// what kpt's own client stores. A second apply with the same client reads
// the cluster again.
func TestApplierInventoryClientAbsent(t *testing.T) {
	kpts, mine := newInventoryFactory(), newInventoryFactory()
	kptClient, err := cluster.NewInventoryClient(kpts)
	if err != nil {
		t.Fatal(err)
	}
	myClient, err := cluster.NewApplierInventoryClient(mine, inventory.StatusPolicyAll, localInventory())
	if err != nil {
		t.Fatal(err)
	}
	for i, objs := range []object.ObjMetadataSet{{configMap("a"), configMap("b")}, {configMap("b"), configMap("c")}} {
		kpts.dyn.ClearActions()
		mine.dyn.ClearActions()
		applyInventory(t, kptClient, localInventory(), objs)
		applyInventory(t, myClient, localInventory(), objs)
		kptVerbs, myVerbs := verbs(kpts.dyn.Actions()), verbs(mine.dyn.Actions())
		if want := []int{1, 2}[i]; myVerbs["get resourcegroups"] != want {
			t.Errorf("apply %d: %d reads of the inventory reached the cluster, want %d", i+1, myVerbs["get resourcegroups"], want)
		}
		delete(kptVerbs, "get resourcegroups")
		delete(myVerbs, "get resourcegroups")
		if !reflect.DeepEqual(myVerbs, kptVerbs) {
			t.Errorf("apply %d wrote %v, kpt's client %v: want the same writes", i+1, myVerbs, kptVerbs)
		}
		if got, want := storedInventory(t, mine), storedInventory(t, kpts); !reflect.DeepEqual(got, want) {
			t.Errorf("apply %d stored\n%v\nkpt's client stored\n%v", i+1, got, want)
		}
	}
}

// On a real kube-apiserver: another client creates the inventory after
// the run read it missing. The engine's create, made from that read, is
// refused with "already exists", and the other client's inventory stays
// as it made it (kpt's engine, reading it, would have merged into it).
func TestApplierInventoryClientAbsentCreatedMeanwhile(t *testing.T) {
	f := clusterWithResourceGroups(t)
	c, err := cluster.NewApplierInventoryClient(f, inventory.StatusPolicyAll, localInventory())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		t.Fatal(err)
	}
	rgs := dyn.Resource(rgResource).Namespace("default")
	theirs := live.WrapInventoryObj(resourceGroup("inv-a", "id-other"))
	if err := theirs.Store(object.ObjMetadataSet{configMap("z")}, nil); err != nil {
		t.Fatal(err)
	}
	u, err := theirs.GetObject()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rgs.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Merge(localInventory(), object.ObjMetadataSet{configMap("a")}, common.DryRunNone); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("the engine's create of an inventory created meanwhile: %v, want already exists", err)
	}
	got, err := rgs.Get(t.Context(), "inv-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := live.WrapInventoryObj(got).Load()
	if err != nil {
		t.Fatal(err)
	}
	if !objs.Equal(object.ObjMetadataSet{configMap("z")}) || got.GetLabels()[common.InventoryLabel] != "id-other" {
		t.Fatalf("the other client's inventory now holds %v, id %s; want z, id-other", objs, got.GetLabels()[common.InventoryLabel])
	}
}

// Reads with no write of the client between answer what the first read
// answered, a write by another client meanwhile included; the client's
// own write makes the next read go to the cluster. A failed read (not a
// NotFound) is not kept.
func TestApplierInventoryClientForgets(t *testing.T) {
	f := newInventoryFactory()
	c, err := cluster.NewApplierInventoryClient(f, inventory.StatusPolicyAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv := localInventory()
	gets := func() int { return verbs(f.dyn.Actions())["get resourcegroups"] }

	failed := false
	f.dyn.PrependReactor("get", "resourcegroups", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failed {
			return false, nil, nil
		}
		failed = true
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	if _, err := c.GetClusterObjs(inv); err == nil {
		t.Fatal("a failed read: no error")
	}
	if objs, err := c.GetClusterObjs(inv); err != nil || len(objs) != 0 || gets() != 2 {
		t.Fatalf("the read after a failed one: %v, %v, %d GETs; want none found, and the read sent again", objs, err, gets())
	}
	if objs, err := c.GetClusterObjs(inv); err != nil || len(objs) != 0 || gets() != 2 {
		t.Fatalf("a read after a NotFound: %v, %v, %d GETs; want the NotFound kept", objs, err, gets())
	}

	applyInventory(t, c, inv, object.ObjMetadataSet{configMap("a")})
	before := gets()
	if objs, err := c.GetClusterObjs(inv); err != nil || len(objs) != 1 || gets() != before+1 {
		t.Fatalf("the first read after the client's writes: %v, %v, %d GETs (%d before); want the cluster's answer", objs, err, gets(), before)
	}
	storeAsAnotherClient(t, f.dyn.Resource(rgResource).Namespace("default"), object.ObjMetadataSet{configMap("a"), configMap("z")})
	before = gets()
	if objs, err := c.GetClusterObjs(inv); err != nil || len(objs) != 1 || gets() != before {
		t.Fatalf("a read after another client's write, with no write of this client between: %v, %v; want the kept answer (one object), no GET", objs, err)
	}
	if _, err := c.Merge(inv, object.ObjMetadataSet{configMap("a")}, common.DryRunNone); err != nil {
		t.Fatal(err)
	}
	before = gets()
	if _, err := c.GetClusterObjs(inv); err != nil || gets() != before+1 {
		t.Fatalf("a read after the client's write: %v, %d GETs (%d before); want it sent", err, gets(), before)
	}
}

// On a real kube-apiserver: another client writes the inventory after a
// read the applier's client keeps; the engine's next write, made from
// that read, is refused with a conflict, and the other client's change
// stays. The write after it reads the cluster again and merges both.
func TestApplierInventoryClientConflicts(t *testing.T) {
	f := clusterWithResourceGroups(t)
	c, err := cluster.NewApplierInventoryClient(f, inventory.StatusPolicyAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv := localInventory()
	applyInventory(t, c, inv, object.ObjMetadataSet{configMap("a")})
	if objs, err := c.GetClusterObjs(inv); err != nil || len(objs) != 1 {
		t.Fatalf("the inventory after the apply: %v, %v; want a", objs, err)
	}

	dyn, err := f.DynamicClient()
	if err != nil {
		t.Fatal(err)
	}
	rgs := dyn.Resource(rgResource).Namespace("default")
	stored := func() object.ObjMetadataSet {
		t.Helper()
		u, err := rgs.Get(t.Context(), "inv-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := live.WrapInventoryObj(u).Load()
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	storeAsAnotherClient(t, rgs, object.ObjMetadataSet{configMap("a"), configMap("z")})

	if _, err := c.Merge(inv, object.ObjMetadataSet{configMap("a"), configMap("b")}, common.DryRunNone); !apierrors.IsConflict(err) {
		t.Fatalf("the engine's write from the read kept before another client's write: %v, want a conflict", err)
	}
	if got := stored(); !got.Contains(configMap("z")) || got.Contains(configMap("b")) {
		t.Fatalf("after the refused write the cluster's inventory holds %v, want the other client's z and no b", got)
	}
	if _, err := c.Merge(inv, object.ObjMetadataSet{configMap("a"), configMap("b")}, common.DryRunNone); err != nil {
		t.Fatalf("the write after a refused one: %v", err)
	}
	if got := stored(); !got.Equal(object.ObjMetadataSet{configMap("a"), configMap("b"), configMap("z")}) {
		t.Fatalf("after the merge the cluster's inventory holds %v, want a, b and the other client's z", got)
	}
}

// clusterWithResourceGroups starts a kube-apiserver with kpt's
// ResourceGroup CRD installed; the factory of its context.
func clusterWithResourceGroups(t *testing.T) cmdutil.Factory {
	t.Helper()
	kubeconfig := localfleet.StartForTest(t, filepath.Join("..", "..", "..", ".tools", "bin"))
	k, err := cluster.LoadKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	f := k.Factory("A")
	var out strings.Builder
	if err := kptcmdutil.InstallResourceGroupCRD(printer.WithContext(t.Context(), printer.New(&out, &out)), f); err != nil {
		t.Fatalf("installing kpt's ResourceGroup CRD: %v\n%s", err, out.String())
	}
	return f
}

// On a real kube-apiserver, a first apply, one that keeps the inventory's
// objects and one that changes them, each through kpt's own client
// (inventory inv-k) and the applier's (inv-m): the applier's does not
// send the updates of the ResourceGroup that would change nothing but its
// status (which the status update after each sends), sends the others,
// and the cluster sees the same changes: the same watch events for
// either inventory, the same spec and status.
func TestApplierInventoryClientSkipsUpdatesThatChangeNothing(t *testing.T) {
	f := clusterWithResourceGroups(t)
	kptClient, err := cluster.NewInventoryClient(f)
	if err != nil {
		t.Fatal(err)
	}
	myClient, err := cluster.NewApplierInventoryClient(f, inventory.StatusPolicyAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		t.Fatal(err)
	}
	rgs := dyn.Resource(rgResource).Namespace("default")
	w, err := rgs.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	kptInv := live.WrapInventoryInfoObj(resourceGroup("inv-k", "id-k"))
	myInv := live.WrapInventoryInfoObj(resourceGroup("inv-m", "id-m"))
	for i, step := range []struct {
		objs object.ObjMetadataSet
		// updates are kpt's updates of the ResourceGroup, skipped those
		// that change nothing.
		updates, skipped int
	}{
		{objs: object.ObjMetadataSet{configMap("a"), configMap("b")}, updates: 1, skipped: 1}, // it creates, then replaces
		{objs: object.ObjMetadataSet{configMap("a"), configMap("b")}, updates: 2, skipped: 2}, // it merges, then replaces
		{objs: object.ObjMetadataSet{configMap("b"), configMap("c")}, updates: 2, skipped: 0},
	} {
		before := updatesOfResourceGroups(t, f)
		applyInventory(t, kptClient, kptInv, step.objs)
		kpts := updatesOfResourceGroups(t, f) - before
		applyInventory(t, myClient, myInv, step.objs)
		mine := updatesOfResourceGroups(t, f) - before - kpts
		if kpts != step.updates || mine != kpts-step.skipped {
			t.Errorf("apply %d: the applier's client sent %d updates of the ResourceGroup, kpt's %d: want %d and %d", i+1, mine, kpts, step.updates-step.skipped, step.updates)
		}
		for _, field := range []string{"spec", "status"} {
			k, m := storedField(t, rgs, "inv-k", field), storedField(t, rgs, "inv-m", field)
			if !reflect.DeepEqual(k, m) {
				t.Errorf("apply %d: the applier's client stored the %s\n%v\nkpt's client\n%v", i+1, field, m, k)
			}
		}
	}
	events := map[string][]watch.EventType{}
	for {
		select {
		case e := <-w.ResultChan():
			if u, ok := e.Object.(*unstructured.Unstructured); ok {
				events[u.GetName()] = append(events[u.GetName()], e.Type)
			}
			continue
		case <-time.After(2 * time.Second):
		}
		break
	}
	if len(events["inv-k"]) < 4 || !reflect.DeepEqual(events["inv-m"], events["inv-k"]) {
		t.Errorf("watch events of the inventory written by the applier's client %v, by kpt's %v: want the same", events["inv-m"], events["inv-k"])
	}
}

// updatesOfResourceGroups is how many updates of ResourceGroups (not of
// their status) the kube-apiserver has served, from its metrics.
func updatesOfResourceGroups(t *testing.T, f cmdutil.Factory) int {
	t.Helper()
	cs, err := f.KubernetesClientSet()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="resourcegroups"`) ||
			!strings.Contains(line, `subresource=""`) || !strings.Contains(line, `verb="PUT"`) {
			continue
		}
		v, err := strconv.Atoi(line[strings.LastIndex(line, " ")+1:])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		n += v
	}
	return n
}

func storedField(t *testing.T, rgs dynamic.ResourceInterface, name, field string) any {
	t.Helper()
	u, err := rgs.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.Object[field]
}
