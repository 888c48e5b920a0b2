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

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/pkg/datastore"
)

var (
	testConfig = testfixture.DataStoreConfig
	compile    = testfixture.Compile
)

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
