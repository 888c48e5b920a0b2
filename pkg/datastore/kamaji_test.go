package datastore

import (
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/config"
)

func TestKamaji(t *testing.T) {
	// Kamaji connects with https:// only (TestKamajiRefusesEndpointsItCannotExpress).
	table := compile(t, strings.ReplaceAll(testConfig, "http://", "https://"))
	frag, err := KamajiFragment(mustKamaji(t, table, 0)).String()
	if err != nil {
		t.Fatal(err)
	}
	want := `dataStoreOverrides:
- resource: coordination.k8s.io/leases
  dataStore: leases
- resource: /events
  dataStore: kamaji-events
- resource: apps/deployments
  dataStore: kamaji-events
`
	if frag != want {
		t.Errorf("ctx-a fragment:\n%s\nwant:\n%s", frag, want)
	}
	// The fragment decodes into Kamaji's TenantControlPlaneSpec shape.
	var spec struct {
		DataStoreOverrides []KamajiOverride `json:"dataStoreOverrides"`
	}
	if err := sigsyaml.UnmarshalStrict([]byte(frag), &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.DataStoreOverrides) != 3 || spec.DataStoreOverrides[1] != (KamajiOverride{Resource: "/events", DataStore: "kamaji-events"}) {
		t.Errorf("decoded %+v", spec.DataStoreOverrides)
	}

	all, err := FormatKamaji(table.Names, [][]KamajiOverride{mustKamaji(t, table, 0), mustKamaji(t, table, 1), mustKamaji(t, table, 2)})
	if err != nil {
		t.Fatal(err)
	}
	wantAll := `ctx-a:
  dataStoreOverrides:
  - resource: coordination.k8s.io/leases
    dataStore: leases
  - resource: /events
    dataStore: kamaji-events
  - resource: apps/deployments
    dataStore: kamaji-events
ctx-b:
  dataStoreOverrides:
  - resource: coordination.k8s.io/leases
    dataStore: leases
ctx-c:
  dataStoreOverrides: []
`
	if all != wantAll {
		t.Errorf("all contexts:\n%s\nwant:\n%s", all, wantAll)
	}
}

func mustKamaji(t *testing.T, table *config.Config, ctx int) []KamajiOverride {
	t.Helper()
	o, err := Kamaji(table, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestKamajiRefusesEndpointsItCannotExpress: Kamaji always connects with
// https:// to bare host:port endpoints, so any other endpoint would make
// Kamaji's flag differ from -o flag.
func TestKamajiRefusesEndpointsItCannotExpress(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		why      string // "" when Kamaji can express it
	}{
		{"https://etcd-0:2379", ""},
		{"https://10.0.0.1:2379", ""},
		{"https://[fd00::1]:2379", ""},
		{"http://etcd-0:2379", "it is http://, not https://"},
		{"https://etcd-0:2379/prefix", `it has a path ("/prefix")`},
		{"https://etcd-0:2379/", `it has a path ("/")`},
		{"https://user:secret@etcd-0:2379", "it carries user information"},
		{"https://etcd-0:2379?x=1", "it has a query"},
		{"http://u@etcd-0:2379/p", "it is http://, not https://, it carries user information, it has a path"},
	} {
		table := compile(t, `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: s}
spec:
  contexts:
  - name: c00
    dataStores:
    - {name: events, endpoints: ["https://ok:2379", "`+tc.endpoint+`"], kamajiDataStore: events-ds}
  dataStoreOverrides:
  - {resource: /events, dataStore: events}
`)
		got, err := Kamaji(table, 0)
		if tc.why == "" {
			if err != nil || len(got) != 1 || got[0].DataStore != "events-ds" {
				t.Errorf("%s: Kamaji = %v, %v; want one override to events-ds", tc.endpoint, got, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Kamaji = %v; want it refused (%s)", tc.endpoint, got, tc.why)
			continue
		}
		for _, part := range []string{`context "c00"`, `datastore "events"`, tc.endpoint, tc.why, "-o flag"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%s: error %q does not mention %q", tc.endpoint, err, part)
			}
		}
		if got != nil {
			t.Errorf("%s: overrides %v returned with the error", tc.endpoint, got)
		}
	}
}
