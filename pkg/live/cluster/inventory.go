package cluster

import (
	"fmt"

	"github.com/kptdev/kpt/pkg/live"
	"k8s.io/apimachinery/pkg/api/meta"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/inventory"
	"sigs.k8s.io/cli-utils/pkg/object"
)

// NewInventoryClient returns kpt's ResourceGroup inventory client for one
// context, the one kpt live apply uses: it stores the object list and,
// as kpt's default --status-policy=all does, each object's status.
func NewInventoryClient(f cmdutil.Factory) (inventory.Client, error) {
	return newInventoryClient(f, inventory.StatusPolicyAll)
}

func newInventoryClient(f cmdutil.Factory, policy inventory.StatusPolicy) (inventory.Client, error) {
	return inventory.NewClient(f, live.WrapInventoryObj, live.InvToUnstructuredFunc, policy, live.ResourceGroupGVK)
}

// LiveInventory is what a cluster's ResourceGroup says it holds.
type LiveInventory struct {
	// Found is false when the cluster has no ResourceGroup for the
	// inventory (never applied, or no ResourceGroup CRD yet).
	Found bool
	// Objects are the objects the ResourceGroup lists: what a kpt live
	// apply of a package without them would prune.
	Objects object.ObjMetadataSet
}

// ReadLiveInventory reads the ResourceGroup of inv in the cluster of f. A
// cluster without kpt's ResourceGroup CRD holds no inventory (Found
// false); an unreachable cluster is an error.
func ReadLiveInventory(f cmdutil.Factory, inv inventory.Info) (LiveInventory, error) {
	client, err := NewInventoryClient(f)
	if err != nil {
		return LiveInventory{}, err
	}
	objs, err := client.GetClusterInventoryObjs(inv)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return LiveInventory{}, nil
		}
		return LiveInventory{}, fmt.Errorf("reading inventory %s/%s: %w", inv.Namespace(), inv.Name(), err)
	}
	switch len(objs) {
	case 0:
		return LiveInventory{}, nil
	case 1:
		set, err := live.WrapInventoryObj(objs[0]).Load()
		if err != nil {
			return LiveInventory{}, fmt.Errorf("reading inventory %s/%s: %w", inv.Namespace(), inv.Name(), err)
		}
		return LiveInventory{Found: true, Objects: set}, nil
	default:
		return LiveInventory{}, fmt.Errorf("inventory id %s: %d ResourceGroups hold it; kpt refuses to apply until one is left", inv.ID(), len(objs))
	}
}
