// Package v1alpha1 holds shard-router's function config, ShardConfig, and the
// annotation keys it writes. It imports no other package of the project.
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// Group, Version and Kind of the typed function config.
	Group      = "shardrouter.dev"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
	Kind       = "ShardConfig"

	// ContextAnnotation lists the kube contexts a resource is applied to,
	// joined by "," in the order the config declares them.
	ContextAnnotation = "shardrouter.dev/context"
	// DataStoreAnnotation names the logical datastore that holds the resource
	// in its cluster: one name, or "ctx=datastore" pairs when contexts disagree.
	DataStoreAnnotation = "shardrouter.dev/datastore"

	// DefaultDataStore is the cluster's main etcd (--etcd-servers). Reserved.
	DefaultDataStore = "default"
)

// ShardConfig is the typed function config of shard-router.
type ShardConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ShardConfigSpec `json:"spec"`
}

// ShardConfigSpec declares the clusters (contexts), how resources are matched
// to them, and which built-in resources live in which etcd datastore.
type ShardConfigSpec struct {
	// Contexts are kubeconfig context names, in the order annotations list them.
	Contexts []Context `json:"contexts"`
	// DataStoreOverrides map a built-in storage group/resource to a logical
	// datastore, in the order the --etcd-servers-overrides flag lists them.
	DataStoreOverrides []DataStoreOverride `json:"dataStoreOverrides,omitempty"`
	// DefaultContext receives namespaced resources nothing else decides.
	DefaultContext string `json:"defaultContext,omitempty"`
	// AllowMoves turns a refused move (a context dropped from a resource,
	// which kpt live apply would prune) into a warning.
	AllowMoves bool `json:"allowMoves,omitempty"`
	// AllowDataStoreChanges turns a refused datastore change (kube-apiserver
	// never migrates data between datastores) into a warning.
	AllowDataStoreChanges bool `json:"allowDataStoreChanges,omitempty"`
	// Placement places new Namespaces that no selector matches.
	Placement *Placement `json:"placement,omitempty"`
	// PruneGuard tunes the mass-deletion guard of split and plan.
	PruneGuard *PruneGuard `json:"pruneGuard,omitempty"`
	// AllowMassPrune turns a refused mass deletion into a warning.
	AllowMassPrune bool `json:"allowMassPrune,omitempty"`
	// Rollout orders the contexts into waves for apply; without it every
	// context is one wave.
	Rollout *Rollout `json:"rollout,omitempty"`
	// Apply fixes kpt live apply's flags for every apply of this config;
	// a flag on the command line wins.
	Apply *ApplyOptions `json:"apply,omitempty"`
	// GitOps names the git repository a GitOps engine pulls the split from
	// (split --engine flux|argocd|configsync).
	GitOps *GitOps `json:"gitops,omitempty"`
}

// PruneGuard refuses a split that would prune all of one context's objects,
// or, from one context whose previous package held at least MinObjects
// objects, more than MaxPercent of them: a broken generator or an empty file
// must not make kpt live apply delete most of a cluster.
type PruneGuard struct {
	// MaxPercent is the share of a context's objects one split may prune,
	// 0-100 (default 50).
	MaxPercent *int32 `json:"maxPercent,omitempty"`
	// MinObjects exempts contexts that held fewer objects from MaxPercent
	// (default 10); losing all objects is refused however few.
	MinObjects *int32 `json:"minObjects,omitempty"`
}

// Defaults of PruneGuard.
const (
	DefaultPruneMaxPercent = 50
	DefaultPruneMinObjects = 10
)

// Limits returns the guard's maxPercent and minObjects, defaults applied.
func (g *PruneGuard) Limits() (maxPercent, minObjects int) {
	maxPercent, minObjects = DefaultPruneMaxPercent, DefaultPruneMinObjects
	if g != nil && g.MaxPercent != nil {
		maxPercent = int(*g.MaxPercent)
	}
	if g != nil && g.MinObjects != nil {
		minObjects = int(*g.MinObjects)
	}
	return maxPercent, minObjects
}

// Context is one cluster, named as in the kubeconfig.
type Context struct {
	// Name of the kubeconfig context.
	Name string `json:"name"`
	// Labels are the context's own labels (not its resources'), which
	// spec.rollout.waves[].contexts select.
	Labels map[string]string `json:"labels,omitempty"`
	// NamespaceSelector matches the labels of a resource's Namespace.
	// Absent matches nothing; {} matches everything.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// ResourceSelector matches the resource's own labels.
	ResourceSelector *metav1.LabelSelector `json:"resourceSelector,omitempty"`
	// DataStores are this cluster's extra etcd datastores.
	DataStores []DataStore `json:"dataStores,omitempty"`
	// Inventory sets the kpt inventory (ResourceGroup) that split writes for
	// this context; by default it is derived from the package and context.
	Inventory *Inventory `json:"inventory,omitempty"`
	// Weight is this context's share of new Namespaces under spec.placement
	// (default 1); 0 takes no new Namespaces but keeps those it has.
	Weight *int32 `json:"weight,omitempty"`
	// Budget limits what the context holds in total, all datastores together.
	Budget *Budget `json:"budget,omitempty"`
	// DefaultDataStoreBudget limits what the main etcd ("default") holds.
	DefaultDataStoreBudget *Budget `json:"defaultDataStoreBudget,omitempty"`
	// Endpoints name this cluster's services by role (prometheus: its
	// Prometheus' base URL), for spec.rollout.waves[].gates.
	Endpoints map[string]string `json:"endpoints,omitempty"`
}

// DataStore is a logical etcd datastore of one cluster.
type DataStore struct {
	// Name is the logical name that dataStoreOverrides refer to.
	Name string `json:"name"`
	// Endpoints are the etcd client URLs (http or https).
	Endpoints []string `json:"endpoints"`
	// KamajiDataStore names the Kamaji DataStore object; default: Name.
	KamajiDataStore string `json:"kamajiDataStore,omitempty"`
	// Budget limits what this datastore holds.
	Budget *Budget `json:"budget,omitempty"`
}

// DataStoreOverride sends one built-in resource to a logical datastore, in
// Kamaji's shape.
type DataStoreOverride struct {
	// Resource is the storage group/resource as the kube-apiserver flag writes
	// it; the core group is empty ("/events").
	Resource string `json:"resource"`
	// DataStore is a logical datastore name declared by some context.
	DataStore string `json:"dataStore"`
	// Ephemeral exempts this resource from the datastore-change refusal: its
	// objects are short-lived (Events expire after an hour), so losing them
	// on a change is accepted.
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// PlacementStrategy names how new Namespaces are placed.
type PlacementStrategy string

// RendezvousPlacement is weighted rendezvous (highest random weight) hashing
// of the Namespace name over the contexts; see package route.
const RendezvousPlacement PlacementStrategy = "Rendezvous"

// Placement chooses a context for a Namespace that no selector matches and
// that carries no context annotation yet. The choice is written as the
// context annotation, so it never changes afterwards.
type Placement struct {
	// Strategy is "Rendezvous".
	Strategy PlacementStrategy `json:"strategy"`
	// Label, when set, is also stamped on each placed Namespace.
	Label *PlacementLabel `json:"label,omitempty"`
}

// PlacementLabel is the label that records a Namespace's context for other
// tools, e.g. spotify.com/cluster-shard: "03".
type PlacementLabel struct {
	// Key is the label key.
	Key string `json:"key"`
	// Values maps every context name to its label value.
	Values map[string]string `json:"values"`
}

// Budget caps what a context or a datastore may hold; exceeding it is a
// warning, or an error with Enforce.
type Budget struct {
	// MaxObjects caps the number of objects.
	MaxObjects *int64 `json:"maxObjects,omitempty"`
	// MaxBytes caps the objects' serialized size (a quantity: 512Mi, 2Gi).
	MaxBytes *resource.Quantity `json:"maxBytes,omitempty"`
	// Enforce makes exceeding the budget an error.
	Enforce bool `json:"enforce,omitempty"`
}

// Inventory identifies a kpt inventory ResourceGroup.
type Inventory struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	ID        string `json:"id,omitempty"`
}
