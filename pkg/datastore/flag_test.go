package datastore

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/pkg/kinds"
)

var (
	testConfig = testfixture.DataStoreConfig
	compile    = testfixture.Compile
)

func TestFormatFlag(t *testing.T) {
	table := compile(t, testConfig)
	want := map[string]string{
		// Config order; extensions/deployments is written as its storage key.
		"ctx-a": "coordination.k8s.io/leases#http://etcd-leases:2379,/events#https://etcd-ev-0:2379;https://etcd-ev-1:2379,apps/deployments#https://etcd-ev-0:2379;https://etcd-ev-1:2379",
		// Only the datastores the context declares.
		"ctx-b": "coordination.k8s.io/leases#https://10.0.0.7:2379",
		"ctx-c": "",
	}
	for i, ctx := range table.Names {
		if got := FormatFlag(Entries(table, i)); got != want[ctx] {
			t.Errorf("%s: got %q, want %q", ctx, got, want[ctx])
		}
	}
}

func TestParseFlagNormalisesAndLastWins(t *testing.T) {
	got, err := ParseFlag("events.k8s.io/events#http://a:2379,/events#http://b:2379")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{Resource: kinds.GroupResource{Resource: "events"}, Servers: []string{"http://b:2379"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestFormatJSON(t *testing.T) {
	data, err := FormatJSON([]string{"z", "a"}, []string{"/events#http://x:2379", ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"z\": \"/events#http://x:2379\",\n  \"a\": \"\"\n}\n"; string(data) != want {
		t.Errorf("got %q, want %q (config order, not sorted)", data, want)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil || m["z"] != "/events#http://x:2379" {
		t.Errorf("not valid JSON: %v %v", m, err)
	}
	if data, _ := FormatJSON(nil, nil); string(data) != "{}\n" {
		t.Errorf("no contexts: %q", data)
	}
}

func TestParsePrevious(t *testing.T) {
	leases := kinds.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	t.Run("config", func(t *testing.T) {
		prev, err := ParsePrevious([]byte(testConfig))
		if err != nil {
			t.Fatal(err)
		}
		if !prev.FromConfig || prev.IsBare || len(prev.ByContext) != 3 {
			t.Fatalf("got %+v", prev)
		}
		b := prev.ByContext["ctx-b"]
		if len(b) != 1 || b[0].Resource != leases || b[0].DataStore != "leases" {
			t.Errorf("ctx-b: %+v", b)
		}
		if a := prev.ByContext["ctx-a"]; len(a) != 3 || !a[1].Ephemeral {
			t.Errorf("ctx-a: %+v", a)
		}
	})
	t.Run("lines", func(t *testing.T) {
		prev, err := ParsePrevious([]byte("ctx-a\tcoordination.k8s.io/leases#http://x:2379\nctx-b\t\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(prev.ByContext) != 2 || len(prev.ByContext["ctx-a"]) != 1 || prev.ByContext["ctx-b"] != nil {
			t.Errorf("got %+v", prev.ByContext)
		}
	})
	t.Run("json", func(t *testing.T) {
		prev, err := ParsePrevious([]byte(`{"ctx-a": "/events#http://x:2379", "ctx-b": ""}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(prev.ByContext) != 2 || prev.ByContext["ctx-a"][0].Resource.Resource != "events" {
			t.Errorf("got %+v", prev.ByContext)
		}
	})
	t.Run("bare", func(t *testing.T) {
		prev, err := ParsePrevious([]byte("coordination.k8s.io/leases#http://x:2379\n"))
		if err != nil {
			t.Fatal(err)
		}
		if !prev.IsBare || len(prev.Bare) != 1 || prev.Bare[0].Resource != leases {
			t.Errorf("got %+v", prev)
		}
		empty, err := ParsePrevious([]byte("\n"))
		if err != nil || !empty.IsBare || len(empty.Bare) != 0 {
			t.Errorf("empty value: %+v %v", empty, err)
		}
	})
	for name, text := range map[string]string{
		"two bare lines": "/events#http://a:2379\n/pods#http://b:2379\n",
		"bad value":      "ctx-a\t/events\n",
		"bad config":     "apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nspec: {contexts: []}\n",
		"duplicate ctx":  "a\t\na\t\n",
	} {
		if _, err := ParsePrevious([]byte(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDiff(t *testing.T) {
	leases := kinds.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	events := kinds.GroupResource{Resource: "events"}
	pods := kinds.GroupResource{Resource: "pods"}
	before := []Entry{
		{Resource: leases, DataStore: "l", Servers: []string{"http://a:2379", "http://b:2379"}},
		{Resource: events, DataStore: "e", Servers: []string{"http://e:2379"}, Ephemeral: true},
		{Resource: pods, Servers: []string{"http://p:2379"}},
	}
	after := []Entry{
		// Same servers in another order, under another logical name: no change.
		{Resource: leases, DataStore: "renamed", Servers: []string{"http://b:2379", "http://a:2379"}},
		// Other servers.
		{Resource: events, DataStore: "e", Servers: []string{"http://e2:2379"}},
		// New override: moves from the main etcd.
		{Resource: kinds.GroupResource{Group: "apps", Resource: "deployments"}, DataStore: "d", Servers: []string{"http://d:2379"}},
	}
	got := Diff("ctx", before, after)
	var summary []string
	for _, c := range got {
		summary = append(summary, c.Resource.String()+": "+c.From.String()+" -> "+c.To.String())
		if c.Context != "ctx" {
			t.Errorf("context %q", c.Context)
		}
	}
	want := []string{
		`/events: datastore "e" (http://e:2379) -> datastore "e" (http://e2:2379)`,
		`apps/deployments: the main etcd (--etcd-servers) -> datastore "d" (http://d:2379)`,
		`/pods: http://p:2379 -> the main etcd (--etcd-servers)`,
	}
	if strings.Join(summary, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(summary, "\n"), strings.Join(want, "\n"))
	}
	if !got[0].Ephemeral || got[1].Ephemeral || got[2].Ephemeral {
		t.Errorf("ephemeral: %v %v %v (the before side's flag counts)", got[0].Ephemeral, got[1].Ephemeral, got[2].Ephemeral)
	}
	if len(Diff("ctx", after, after)) != 0 {
		t.Error("no change expected between equal lists")
	}
}
