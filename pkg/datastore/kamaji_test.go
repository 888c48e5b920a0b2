package datastore

import (
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

func TestKamaji(t *testing.T) {
	table := compile(t, testConfig)
	frag, err := KamajiFragment(table.Kamaji(0)).String()
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

	all, err := FormatKamaji(table.Contexts(), [][]KamajiOverride{table.Kamaji(0), table.Kamaji(1), table.Kamaji(2)})
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
