package kubeapiserver_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/kinds"
)

// FuzzOverride compiles a config with one arbitrary override resource and
// one arbitrary endpoint. Nothing may panic. What Validate and Compile
// accept must make a flag value that kube-apiserver's own flag (pflag's
// CSV string slice, then ParseEtcdServersOverrides) and ParseFlag both read
// back as exactly the override: its storage group/resource and the
// endpoint; and datastore.FormatFlag(datastore.ParseFlag(v)) == v.
func FuzzOverride(f *testing.F) {
	for _, seed := range [][2]string{
		{"/events", "https://etcd-0:2379"},
		{"events.k8s.io/events", "http://10.0.0.1:2379"},
		{"coordination.k8s.io/leases", "https://[::1]:2379"},
		{"apps/deployments", "https://etcd"},
		{"extensions/ingresses", "https://e:1/path?q=1"},
		{"/registry/events", "https://e:1"},
		{"events", "etcd:2379"},
		{"/ events", "https://e:1#x"},
		{"example.com/widgets", "https://e:1;https://f:2"},
		{"metrics.k8s.io/pods", "https://e:1,https://f:2"},
		{"authorization.k8s.io/subjectaccessreviews", "https://e :1"},
		{"/Events", "unix:///run/etcd.sock"},
		{"//events", ""},
		{"/pods/status", "https://e:1\""},
		{"apps/", "https://user:pw@e:1"},
		{"/", "HTTPS://E:1"},
		{"\"/events\"", "https://e:1%2C"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, resource, endpoint string) {
		_, _ = config.ParseResource(resource) // must not panic on anything
		_ = v1alpha1.ValidateEndpoint(endpoint)
		cfg := &v1alpha1.ShardConfig{Spec: v1alpha1.ShardConfigSpec{
			Contexts:           []v1alpha1.Context{{Name: "c", DataStores: []v1alpha1.DataStore{{Name: "ds", Endpoints: []string{endpoint}}}}},
			DataStoreOverrides: []v1alpha1.DataStoreOverride{{Resource: resource, DataStore: "ds"}},
		}}
		if errs := cfg.Validate(); len(errs) > 0 {
			return
		}
		table, _, errs := config.Compile(cfg)
		if len(errs) > 0 {
			return
		}
		entries := datastore.Entries(table, 0)
		if len(entries) != 1 {
			t.Fatalf("%d entries for one override", len(entries))
		}
		gr, err := config.ParseResource(resource)
		if err != nil {
			t.Fatalf("Compile accepted %q, which ParseResource rejects: %v", resource, err)
		}
		canonical, _, ok := kinds.StoredResource(gr)
		if !ok || entries[0].Resource != canonical {
			t.Fatalf("entry %v, want the storage resource %v of %q", entries[0].Resource, canonical, resource)
		}
		value := datastore.FormatFlag(entries)

		opts := options.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil))
		fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
		opts.AddFlags(fs)
		if err := fs.Parse([]string{"--etcd-servers-overrides=" + value}); err != nil {
			t.Fatalf("kube-apiserver's flag rejects %q: %v", value, err)
		}
		parsed, err := options.ParseEtcdServersOverrides(opts.EtcdServersOverrides)
		if err != nil {
			t.Fatalf("ParseEtcdServersOverrides(%q): %v", value, err)
		}
		if len(parsed) != 1 || parsed[0].GroupResource.Group != canonical.Group || parsed[0].GroupResource.Resource != canonical.Resource ||
			!reflect.DeepEqual(parsed[0].Servers, []string{endpoint}) {
			t.Fatalf("kube-apiserver reads %q as %+v, want %v#%s", value, parsed, canonical, endpoint)
		}
		ours, err := datastore.ParseFlag(value)
		if err != nil {
			t.Fatalf("datastore.ParseFlag(%q): %v", value, err)
		}
		if len(ours) != 1 || ours[0].Resource != canonical || !slices.Equal(ours[0].Servers, []string{endpoint}) {
			t.Fatalf("datastore.ParseFlag(%q) = %+v", value, ours)
		}
		if again := datastore.FormatFlag(ours); again != value {
			t.Fatalf("round trip %q -> %q", value, again)
		}
	})
}

// FuzzParseFlag reads arbitrary flag values. ParseFlag must never panic,
// and must accept only what kube-apiserver accepts; what it reads it must
// write back in a form that reads the same.
func FuzzParseFlag(f *testing.F) {
	for _, seed := range []string{
		"", "/events#https://e:1", "/events#https://e:1;https://f:2,coordination.k8s.io/leases#http://l:2379",
		"events.k8s.io/events#https://e:1", "/events", "/events#", "#https://e:1", "/events#a#b",
		"\"/events#https://e:1\"", "\"unterminated", "a/b/c#x", "/events#https://e:1,/events#https://f:2",
		" /events#https://e:1", "/events#;", ",",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		ours, err := datastore.ParseFlag(value)
		opts := options.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil))
		fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
		opts.AddFlags(fs)
		terr := fs.Parse([]string{"--etcd-servers-overrides=" + value})
		if terr == nil {
			_, terr = options.ParseEtcdServersOverrides(opts.EtcdServersOverrides)
		}
		if err != nil {
			return // stricter than kube-apiserver is allowed
		}
		if terr != nil {
			t.Fatalf("ParseFlag accepts %q, kube-apiserver rejects it: %v", value, terr)
		}
		if value == "" {
			return
		}
		again := datastore.FormatFlag(ours)
		back, err := datastore.ParseFlag(again)
		if err != nil {
			t.Fatalf("%q -> %q, which ParseFlag rejects: %v", value, again, err)
		}
		if !reflect.DeepEqual(back, ours) {
			t.Fatalf("%q -> %q reads as %+v, not %+v", value, again, back, ours)
		}
	})
}
