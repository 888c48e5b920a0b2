package status

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// Fleet is where status reads from: the context packages and the clusters.
type Fleet interface {
	// Package reads one context's package, as an apply would send it.
	Package(context string) (*Package, error)
	// Connect returns the clients of one context's cluster.
	Connect(ctx context.Context, context string) (*Cluster, error)
}

// Package is one context's package: its objects and its inventory.
type Package struct {
	Inventory Inventory
	Objects   []*unstructured.Unstructured
}

// Inventory names a package's ResourceGroup.
type Inventory struct {
	Namespace, Name, ID string
}

// Cluster is the clients of one context.
type Cluster struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}
