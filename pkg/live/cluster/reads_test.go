package cluster_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/live/cluster"
)

// sharedKubeconfig has shard-a and shard-c on cluster one as user u,
// shard-b on cluster two, and shard-d on cluster one as user v.
const sharedKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://127.0.0.1:6443"}
- name: two
  cluster: {server: "https://127.0.0.1:7443"}
users:
- name: u
  user: {token: t}
- name: v
  user: {token: w}
contexts:
- name: shard-a
  context: {cluster: one, user: u}
- name: shard-b
  context: {cluster: two, user: u}
- name: shard-c
  context: {cluster: one, user: u}
- name: shard-d
  context: {cluster: one, user: v}
- name: shard-e
  context: {cluster: one, user: u}
current-context: shard-a
`

func loadShared(t *testing.T) *cluster.Kubeconfig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	writeFile(t, path, sharedKubeconfig)
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The identity is read once for the contexts that name the same cluster
// and user entries; another cluster or another user reads its own. A read
// that failed is not kept.
func TestSharedIdentityPerClusterAndUser(t *testing.T) {
	k := loadShared(t)
	ctx := context.Background()
	var reads []string
	readAs := func(name, uid string, err error) func() (cluster.Identity, error) {
		return func() (cluster.Identity, error) {
			reads = append(reads, name)
			return cluster.Identity{UID: uid, Server: name}, err
		}
	}
	failed := errors.New("unreachable")
	if _, err := k.SharedIdentity(ctx, "shard-a", readAs("shard-a", "", failed)); !errors.Is(err, failed) {
		t.Fatalf("error %v, want the read's", err)
	}
	for _, c := range []struct{ name, uid string }{{"shard-a", "one"}, {"shard-c", "other"}, {"shard-b", "two"}, {"shard-d", "one-v"}} {
		id, err := k.SharedIdentity(ctx, c.name, readAs(c.name, c.uid, nil))
		if err != nil {
			t.Fatal(err)
		}
		want := c.uid
		if c.name == "shard-c" {
			want = "one" // shard-a's read
		}
		if id.UID != want {
			t.Errorf("%s: cluster UID %q, want %q", c.name, id.UID, want)
		}
	}
	if got, want := strings.Join(reads, ","), "shard-a,shard-a,shard-b,shard-d"; got != want {
		t.Errorf("reads %s, want %s (shard-a again after its failed read; shard-c none)", got, want)
	}
}

// Contexts that ask while a read is in flight wait for it and get its
// answer, an error included: one read for them all.
func TestSharedIdentityInFlight(t *testing.T) {
	for _, readErr := range []error{nil, errors.New("timed out")} {
		k := loadShared(t)
		var reads atomic.Int64
		release := make(chan struct{})
		started := make(chan struct{})
		read := func() (cluster.Identity, error) {
			if reads.Add(1) == 1 {
				close(started)
			}
			<-release
			return cluster.Identity{UID: "one"}, readErr
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		wg.Go(func() { _, errs[0] = k.SharedIdentity(context.Background(), "shard-a", read) })
		<-started
		for i := 1; i < len(errs); i++ {
			wg.Go(func() { _, errs[i] = k.SharedIdentity(context.Background(), "shard-c", read) })
		}
		// Give the waiters time to find the read in flight (one that came
		// after it would find its answer kept, or its error and read again:
		// the checks below hold either way).
		time.Sleep(20 * time.Millisecond)
		close(release)
		wg.Wait()
		if got := reads.Load(); got != 1 && readErr == nil {
			t.Errorf("%d reads for 8 contexts of one cluster and user, want 1", got)
		}
		for i, err := range errs {
			if err != readErr {
				t.Errorf("context %d: error %v, want %v", i, err, readErr)
			}
		}
	}
}

// The REST config of a cluster and user entry is loaded once: every later
// config, of any context naming both, is a copy of it, with the
// certificate authority's bytes read then (the file is not read again: a
// config still loads once it is gone); a failed load is not remembered.
// The config's transport (the context's credentials) carries the
// certificate authority.
func TestRESTConfigLoadedOnce(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	path := filepath.Join(dir, "config")
	writeFile(t, path, strings.Replace(sharedKubeconfig, `{server: "https://127.0.0.1:6443"}`,
		`{server: "https://127.0.0.1:6443", certificate-authority: `+ca+`}`, 1))
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	f := k.Factory("shard-a")
	if _, err := f.ToRESTConfig(); err == nil {
		t.Fatal("a config whose CA file is missing loads")
	}
	writeFile(t, ca, caPEM)
	c1, err := f.ToRESTConfig()
	if err != nil {
		t.Fatalf("once the CA file exists: %v", err)
	}
	if err := os.Remove(ca); err != nil {
		t.Fatal(err)
	}
	c1.Host = "changed by a caller"
	c2, err := f.ToRESTConfig()
	if err != nil {
		t.Fatalf("the config was loaded again: %v", err)
	}
	if c2.Host != "https://127.0.0.1:6443" || c2.Transport == nil {
		t.Errorf("second config: host %s, transport %v; want a fresh copy of the first, through the context's transport", c2.Host, c2.Transport)
	}
	if _, err := k.Factory("shard-c").ToRESTConfig(); err != nil {
		t.Errorf("shard-c, on the same cluster as the same user, loaded its config again: %v", err)
	}
	if _, err := k.Factory("shard-d").ToRESTConfig(); err == nil {
		t.Error("shard-d, another user of the cluster, loaded its config without the CA file")
	}
}

// ReadClients reach the context's server, and ReadFactory gives one
// dynamic client however often it is asked.
func TestReadClients(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"u-1"}}`))
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "config")
	writeFile(t, path, strings.ReplaceAll(kubeconfig, "https://127.0.0.1:6443", srv.URL))
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	f := k.Factory("shard-a")
	cfg, err := f.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cluster.NewReadClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id, err := cluster.IdentityFrom(context.Background(), rc.CoreV1, rc.Server)
	if err != nil || id.UID != "u-1" || id.Server != srv.URL {
		t.Errorf("identity %+v, %v; want cluster UID u-1 at %s", id, err, srv.URL)
	}
	if got := strings.Join(paths, ","); !strings.HasSuffix(got, "GET /api/v1/namespaces/kube-system") {
		t.Errorf("requests %s, want the kube-system Namespace read last", got)
	}
	rf := cluster.ReadFactory(f)
	d1, err1 := rf.DynamicClient()
	d2, err2 := rf.DynamicClient()
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Errorf("two dynamic clients (%v, %v), want one", err1, err2)
	}
}

// The probe is asked once for the contexts of one cluster and user entry,
// as the identity is; a failed probe is asked again.
func TestSharedProbe(t *testing.T) {
	k := loadShared(t)
	var probes []string
	probe := func(name string, err error) func() error {
		return func() error { probes = append(probes, name); return err }
	}
	down := errors.New("connection refused")
	ctx := context.Background()
	if err := k.SharedProbe(ctx, "shard-a", probe("shard-a", down)); !errors.Is(err, down) {
		t.Fatalf("error %v, want the probe's", err)
	}
	for _, name := range []string{"shard-a", "shard-c", "shard-b", "shard-d"} {
		if err := k.SharedProbe(ctx, name, probe(name, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(probes, ","), "shard-a,shard-a,shard-b,shard-d"; got != want {
		t.Errorf("probes %s, want %s", got, want)
	}
	// The identity is kept apart from the probe: it is read.
	id, err := k.SharedIdentity(ctx, "shard-c", func() (cluster.Identity, error) { return cluster.Identity{UID: "x"}, nil })
	if err != nil || id.UID != "x" {
		t.Errorf("identity %+v, %v; want the one read", id, err)
	}
}
