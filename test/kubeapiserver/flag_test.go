// Package kubeapiserver_test checks datastore's --etcd-servers-overrides
// values against kube-apiserver's own flag and parser (k8s.io/apiserver). It
// lives outside pkg/ so that `make test` does not link k8s.io/apiserver into
// a test binary (the datastore tests' binary was four times its size with
// it); `make test-slow` and `make fuzz` run it, and `go test ./...`.
package kubeapiserver_test

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
)

const testConfig = `
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

func compile(t *testing.T, text string) *config.Config {
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

// TestFlagParsedByKubeAPIServer feeds each value through kube-apiserver's
// own flag (registered by k8s.io/apiserver's EtcdOptions.AddFlags, a pflag
// StringSlice that reads CSV) and its ParseEtcdServersOverrides, and
// compares the result with the config.
func TestFlagParsedByKubeAPIServer(t *testing.T) {
	table := compile(t, testConfig)
	for i, ctx := range table.Names {
		t.Run(ctx, func(t *testing.T) {
			value := datastore.FormatFlag(datastore.Entries(table, i))
			opts := options.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil))
			fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
			opts.AddFlags(fs)
			if err := fs.Parse([]string{"--etcd-servers-overrides=" + value}); err != nil {
				t.Fatalf("pflag: %v", err)
			}
			parsed, err := options.ParseEtcdServersOverrides(opts.EtcdServersOverrides)
			if err != nil {
				t.Fatalf("ParseEtcdServersOverrides(%q): %v", value, err)
			}
			var want []options.EtcdServerOverride
			for _, e := range datastore.Entries(table, i) {
				want = append(want, options.EtcdServerOverride{
					GroupResource: schema.GroupResource{Group: e.Resource.Group, Resource: e.Resource.Resource},
					Servers:       e.Servers})
			}
			if !reflect.DeepEqual(parsed, want) {
				t.Errorf("kube-apiserver parsed %q as %+v, want %+v", value, parsed, want)
			}
			// And our own reader agrees with kube-apiserver.
			ours, err := datastore.ParseFlag(value)
			if err != nil {
				t.Fatal(err)
			}
			if len(ours) != len(parsed) {
				t.Fatalf("ParseFlag gave %d entries, kube-apiserver %d", len(ours), len(parsed))
			}
			for k := range ours {
				if ours[k].Resource.Group != parsed[k].GroupResource.Group || ours[k].Resource.Resource != parsed[k].GroupResource.Resource || !reflect.DeepEqual(ours[k].Servers, parsed[k].Servers) {
					t.Errorf("entry %d: ParseFlag %+v, kube-apiserver %+v", k, ours[k], parsed[k])
				}
			}
		})
	}
}

func TestParseFlagRejectsWhatKubeAPIServerRejects(t *testing.T) {
	for _, value := range []string{
		"/events",                    // no servers
		"events#http://a:2379",       // no group separator
		"/events#http://a:2379;",     // empty server
		"/events#http://a:2379#x",    // two '#'
		`/events#http://a:2379,"bad`, // broken CSV
		"a/b/c#http://a:2379",        // two '/'
	} {
		_, ours := datastore.ParseFlag(value)
		var theirs error
		opts := options.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil))
		fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
		opts.AddFlags(fs)
		if theirs = fs.Parse([]string{"--etcd-servers-overrides=" + value}); theirs == nil {
			_, theirs = options.ParseEtcdServersOverrides(opts.EtcdServersOverrides)
		}
		if ours == nil || theirs == nil {
			t.Errorf("%q: ParseFlag error %v, kube-apiserver error %v; both should fail", value, ours, theirs)
		}
	}
}
