package input

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// Digest identifies an object's data as it reaches the cluster.
type Digest = yamlio.Digest

// objectDigest digests an object as data (see yamlio.Digester), without
// the annotations that never reach the cluster. shard-router's context and
// datastore annotations are digested apart (RoutedDigest), so that one walk
// serves every context a new object goes to.
var objectDigest = yamlio.Digester{Skip: yamlio.Bookkeeping,
	Apart: []string{v1alpha1.ContextAnnotation, v1alpha1.DataStoreAnnotation}}

// DigestOf digests the object as it reaches the cluster.
func DigestOf(n *yaml.RNode) Digest { return objectDigest.Of(n.YNode()) }

// RouteAnnotations are the values of shard-router's context and datastore
// annotations, in objectDigest.Apart's order.
type RouteAnnotations = []yamlio.Annotation

// BaseDigestOf digests the object without its route annotations, and
// returns those.
func BaseDigestOf(n *yaml.RNode) (Digest, RouteAnnotations) { return objectDigest.Base(n.YNode()) }

// RoutedDigest is the Digest of an object with base Digest base, in
// context ctx with datastore ds.
func RoutedDigest(base Digest, ctx, ds string) Digest {
	return yamlio.WithApart(base, RouteAnnotations{{Value: ctx, Set: true}, {Value: ds, Set: true}})
}
