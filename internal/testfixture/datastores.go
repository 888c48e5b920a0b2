package testfixture

import (
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
)

// DataStoreConfig is a ShardConfig of three contexts with datastores and
// overrides: endpoints in several schemes, a context with no datastore, an
// ephemeral override and an old group written as its storage group.
const DataStoreConfig = `
apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
spec:
  contexts:
  - name: ctx-a
    dataStores:
    - name: events
      endpoints: ["https://etcd-ev-0:2379", "https://etcd-ev-1:2379"]
      kamajiDataStore: kamaji-events
    - name: leases
      endpoints: ["http://etcd-leases:2379"]
  - name: ctx-b
    dataStores:
    - name: leases
      endpoints: ["https://10.0.0.7:2379"]
  - name: ctx-c
  dataStoreOverrides:
  - resource: coordination.k8s.io/leases
    dataStore: leases
  - resource: /events
    dataStore: events
    ephemeral: true
  - resource: extensions/deployments
    dataStore: events
`

// Compile validates and compiles a ShardConfig's text, failing t on any
// error.
func Compile(t testing.TB, text string) *config.Config {
	t.Helper()
	var cfg v1alpha1.ShardConfig
	if err := sigsyaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
		t.Fatal(err)
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	table, _, errs := config.Compile(&cfg)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return table
}
