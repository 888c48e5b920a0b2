package cluster_test

import (
	"errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	flowcontrolapi "k8s.io/api/flowcontrol/v1beta2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmdtesting "k8s.io/kubectl/pkg/cmd/testing"

	"github.com/shard-router/shard-router/pkg/live/cluster"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://127.0.0.1:6443"}
- name: two
  cluster: {server: "https://127.0.0.1:7443"}
users:
- name: u
  user: {token: t}
contexts:
- name: shard-a
  context: {cluster: one, user: u}
- name: shard-b
  context: {cluster: two, user: u}
current-context: shard-a
`

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	writeFile(t, path, kubeconfig)

	t.Run("explicit path", func(t *testing.T) {
		t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
		k, err := cluster.LoadKubeconfig(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(k.Contexts(), ","); got != "shard-a,shard-b" {
			t.Errorf("contexts %s, want shard-a,shard-b", got)
		}
	})
	t.Run("from $KUBECONFIG", func(t *testing.T) {
		t.Setenv("KUBECONFIG", path)
		k, err := cluster.LoadKubeconfig("")
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Require([]string{"shard-b"}); err != nil {
			t.Error(err)
		}
	})
	t.Run("unreadable file is named", func(t *testing.T) {
		bad := filepath.Join(dir, "bad")
		writeFile(t, bad, "clusters: [not: a: map")
		_, err := cluster.LoadKubeconfig(bad)
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("error %v, want one naming %s", err, bad)
		}
		_, err = cluster.LoadKubeconfig(filepath.Join(dir, "absent"))
		if err == nil || !strings.Contains(err.Error(), "absent") {
			t.Errorf("error %v, want one naming the absent file", err)
		}
	})
	t.Run("missing contexts are all named", func(t *testing.T) {
		k, err := cluster.LoadKubeconfig(path)
		if err != nil {
			t.Fatal(err)
		}
		err = k.Require([]string{"shard-a", "shard-c", "shard-d"})
		var missing *cluster.MissingContextError
		if !errors.As(err, &missing) {
			t.Fatalf("error %v, want a MissingContextError", err)
		}
		if got := strings.Join(missing.Missing, ","); got != "shard-c,shard-d" {
			t.Errorf("missing %s, want shard-c,shard-d", got)
		}
		for _, want := range []string{`"shard-c"`, `"shard-d"`, path} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
	})
}

func TestFactoryUsesTheNamedContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	writeFile(t, path, kubeconfig)
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for ctx, server := range map[string]string{"shard-a": "https://127.0.0.1:6443", "shard-b": "https://127.0.0.1:7443"} {
		raw, err := k.Factory(ctx).ToRawKubeConfigLoader().ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if raw.Host != server {
			t.Errorf("context %s: host %s, want %s", ctx, raw.Host, server)
		}
	}
}

// TestReadPackage reads a context package as split writes it: the Kptfile
// and the ResourceGroup are not objects to apply, the ResourceGroup is the
// inventory, and a namespaced object without a namespace gets the
// context's namespace, as kpt live apply gives it.
func TestReadPackage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "Kptfile"), `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: demo-shard-a
  annotations:
    config.kubernetes.io/local-config: "true"
`)
	writeFile(t, filepath.Join(dir, "resourcegroup.yaml"), `apiVersion: kpt.dev/v1alpha1
kind: ResourceGroup
metadata:
  name: demo-shard-a
  namespace: default
  labels:
    cli-utils.sigs.k8s.io/inventory-id: 0123abcd
`)
	writeFile(t, filepath.Join(dir, "team", "cm.yaml"), `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: "1"
---
apiVersion: v1
kind: Namespace
metadata:
  name: team
`)
	f := cmdtesting.NewTestFactory().WithNamespace("from-context")
	t.Cleanup(f.Cleanup)

	pkg, err := cluster.ReadPackage(f, "shard-a", dir)
	if err != nil {
		t.Fatal(err)
	}
	if pkg.Inventory.Name() != "demo-shard-a" || pkg.Inventory.Namespace() != "default" || pkg.Inventory.ID() != "0123abcd" {
		t.Errorf("inventory %s/%s id %s, want default/demo-shard-a id 0123abcd",
			pkg.Inventory.Namespace(), pkg.Inventory.Name(), pkg.Inventory.ID())
	}
	var got []string
	for _, o := range pkg.Objects {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	if want := "ConfigMap from-context/settings,Namespace /team"; strings.Join(got, ",") != want {
		t.Errorf("objects %s, want %s", strings.Join(got, ","), want)
	}
}

func TestReadPackageWithoutInventory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n")
	f := cmdtesting.NewTestFactory()
	t.Cleanup(f.Cleanup)
	_, err := cluster.ReadPackage(f, "shard-a", dir)
	if err == nil || !strings.Contains(err.Error(), `context "shard-a"`) || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %v, want one naming the context and %s", err, dir)
	}
}

// countingMapper counts the RESTMapping calls that reach it.
type countingMapper struct {
	meta.RESTMapper
	calls int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.calls++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func TestMemoMapper(t *testing.T) {
	base := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	base.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	counting := &countingMapper{RESTMapper: base}
	m := cluster.MemoMapper(counting)
	cm := schema.GroupKind{Kind: "ConfigMap"}
	for range 3 {
		got, err := m.RESTMapping(cm, "v1")
		if err != nil || got.Resource.Resource != "configmaps" || got.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("mapping %v, %v", got, err)
		}
	}
	if _, err := m.RESTMapping(cm); err != nil {
		t.Fatal(err)
	}
	if counting.calls != 2 {
		t.Errorf("%d calls reached the mapper, want 2 (one per distinct question)", counting.calls)
	}
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	for range 2 {
		if _, err := m.RESTMapping(widget); !meta.IsNoMatchError(err) {
			t.Fatalf("error %v, want no match", err)
		}
	}
	if counting.calls != 4 {
		t.Errorf("%d calls reached the mapper, want 4: an error is asked again", counting.calls)
	}
}

// TestFactoryAsksAboutFlowControlOnce: kpt's throttling asks the apiserver
// whether it has flow control (HEAD /livez/ping) on every rest config; the
// factory asks once when the answer is yes (throttling off), and keeps
// asking, as kpt does, when it is no (kpt's 30 QPS, burst 60).
func TestFactoryAsksAboutFlowControlOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flowControl bool
		wantPings   int64
		wantQPS     float32
		wantBurst   int
	}{
		{name: "flow control", flowControl: true, wantPings: 1, wantQPS: -1, wantBurst: -1},
		{name: "no flow control", flowControl: false, wantPings: 5, wantQPS: 30, wantBurst: 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pings atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodHead && r.URL.Path == "/livez/ping" {
					pings.Add(1)
					if tc.flowControl {
						w.Header().Set(flowcontrolapi.ResponseHeaderMatchedFlowSchemaUID, "some-uid")
					}
				}
			}))
			defer srv.Close()
			path := filepath.Join(t.TempDir(), "config")
			withC := strings.Replace(kubeconfig, "current-context:", "- name: shard-c\n  context: {cluster: one, user: u}\ncurrent-context:", 1)
			writeFile(t, path, strings.ReplaceAll(withC, "https://127.0.0.1:6443", srv.URL))
			k, err := cluster.LoadKubeconfig(path)
			if err != nil {
				t.Fatal(err)
			}
			f := k.Factory("shard-a")
			for range 5 {
				c, err := f.ToRESTConfig()
				if err != nil {
					t.Fatal(err)
				}
				if c.QPS != tc.wantQPS || c.Burst != tc.wantBurst {
					t.Fatalf("QPS %v, burst %d; want %v, %d", c.QPS, c.Burst, tc.wantQPS, tc.wantBurst)
				}
			}
			if got := pings.Load(); got != tc.wantPings {
				t.Errorf("%d flow-control pings for 5 rest configs, want %d", got, tc.wantPings)
			}
			// Another context on the same server: the answer is kept per
			// server, not per context.
			if _, err := k.Factory("shard-c").ToRESTConfig(); err != nil {
				t.Fatal(err)
			}
			if got, want := pings.Load(), tc.wantPings+map[bool]int64{true: 0, false: 1}[tc.flowControl]; got != want {
				t.Errorf("%d flow-control pings after a second context on the server, want %d", got, want)
			}
		})
	}
}

// TestFactoryFromTheLoadedKubeconfig: each context's factory gives the REST
// config kubectl's ConfigFlags give for that context, from the kubeconfig
// read once: its server, and its credentials and TLS settings in the
// context's transport; and one discovery client, kept for the factory's
// life.
func TestFactoryFromTheLoadedKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	writeFile(t, path, kubeconfig)
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shard-a", "shard-b"} {
		flags := genericclioptions.NewConfigFlags(true)
		flags.KubeConfig, flags.Context = &path, &name
		want, err := flags.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		f := k.Factory(name)
		got, err := f.ToRESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		// The credentials and TLS settings are in the context's transport
		// (credentials_test.go sends requests through it).
		if got.Host != want.Host || got.Transport != k.Credentials(name) || k.Credentials(name) == nil {
			t.Errorf("%s: REST config %s with transport %T, ConfigFlags give %s; want the context's credentials' transport", name, got.Host, got.Transport, want.Host)
		}
		if got.UserAgent != cluster.UserAgent {
			t.Errorf("%s: user agent %q, want %q", name, got.UserAgent, cluster.UserAgent)
		}
		d1, err1 := f.ToDiscoveryClient()
		d2, err2 := f.ToDiscoveryClient()
		if err1 != nil || err2 != nil || d1 != d2 {
			t.Errorf("%s: two discovery clients (%v, %v), want one per factory", name, err1, err2)
		}
	}
}

// Contexts that name the same cluster and user entries share one discovery
// client (one read of discovery per cluster in a run); another cluster
// entry gets its own.
func TestFactoriesShareDiscoveryPerClusterAndUser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	writeFile(t, path, strings.Replace(kubeconfig, "current-context:", "- name: shard-c\n  context: {cluster: one, user: u}\ncurrent-context:", 1))
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	discovery := map[string]any{}
	for _, name := range []string{"shard-a", "shard-b", "shard-c"} {
		d, err := k.Factory(name).ToDiscoveryClient()
		if err != nil {
			t.Fatal(err)
		}
		discovery[name] = d
	}
	if discovery["shard-a"] != discovery["shard-c"] {
		t.Error("shard-a and shard-c name the same cluster and user, and have two discovery clients")
	}
	if discovery["shard-a"] == discovery["shard-b"] {
		t.Error("shard-a and shard-b reach different clusters, and share a discovery client")
	}
}
