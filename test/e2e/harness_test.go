//go:build e2e

package e2e

// The real-cluster harness: etcd, kube-apiserver and kube-controller-manager
// processes on 127.0.0.1 (internal/localfleet, which `make fleet` shares),
// bound to the test. Every process runs in its own process group, is
// killed by t.Cleanup, by a SIGINT/SIGTERM handler and, should the test
// binary die (go test -timeout panics without running clean-ups), by the
// kernel (Pdeathsig). The helpers fail the test instead of returning
// errors.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/localfleet"
)

// clusterProc is one server process.
type clusterProc struct {
	*localfleet.Proc
}

var (
	clusterProcsMu sync.Mutex
	clusterProcs   = map[*localfleet.Proc]bool{}
	// clusterDirs are the directories the processes ran in, removed by the
	// signal handler (t.TempDir's clean-up does not run on os.Exit).
	clusterDirs    = map[string]bool{}
	clusterSigOnce sync.Once
)

// clusterSignalHandler kills every running server when the test binary is
// interrupted, so that ^C leaves nothing behind.
func clusterSignalHandler() {
	clusterSigOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		go func() {
			sig := <-ch
			clusterProcsMu.Lock()
			for p := range clusterProcs {
				p.Kill()
			}
			for p := range clusterProcs {
				select {
				case <-p.Exited():
				case <-time.After(localfleet.StopGrace):
				}
			}
			for dir := range clusterDirs {
				_ = os.RemoveAll(dir)
				_ = os.Remove(filepath.Dir(dir)) // t.TempDir's parent, when empty
			}
			clusterProcsMu.Unlock()
			fmt.Fprintf(os.Stderr, "e2e: %v: killed the cluster processes\n", sig)
			os.Exit(130)
		}()
	})
}

// clusterLauncher starts processes for t: each is stopped when t ends,
// and its log's last lines are logged when t failed.
func clusterLauncher(t testing.TB) *localfleet.Launcher {
	clusterSignalHandler()
	return &localfleet.Launcher{
		ToolPath: func(name string) (string, error) { return toolPath(t, name), nil },
		OnStart: func(p *localfleet.Proc) {
			clusterProcsMu.Lock()
			clusterProcs[p] = true
			clusterDirs[filepath.Dir(p.LogPath)] = true
			clusterProcsMu.Unlock()
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("--- last lines of %s (%s):\n%s", p.Name, p.LogPath, localfleet.Tail(p.LogPath, 25))
				}
				p.Stop()
				clusterProcsMu.Lock()
				delete(clusterProcs, p)
				clusterProcsMu.Unlock()
			})
		},
	}
}

// clusterStartProc starts bin with its output in dir/<name>.log.
func clusterStartProc(t testing.TB, dir, name, bin string, args ...string) *clusterProc {
	t.Helper()
	return clusterStartProcEnv(t, dir, name, nil, bin, args...)
}

// clusterStartProcEnv is clusterStartProc with env added to the test's
// environment (later entries win).
func clusterStartProcEnv(t testing.TB, dir, name string, env []string, bin string, args ...string) *clusterProc {
	t.Helper()
	p, err := clusterLauncher(t).StartProcEnv(dir, name, env, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return &clusterProc{p}
}

// stop terminates the process group: SIGTERM, then SIGKILL after a grace
// period. It is idempotent.
func (p *clusterProc) stop() { p.Stop() }

// clusterTail returns the last n lines of a file.
func clusterTail(path string, n int) string { return localfleet.Tail(path, n) }

// clusterWait polls check until it succeeds, with a growing interval and a
// bounded number of attempts; it fails at once when the process exits.
func clusterWait(t testing.TB, p *clusterProc, what string, check func() error) {
	t.Helper()
	if err := localfleet.Wait(p.Proc, what, check); err != nil {
		t.Fatal(err)
	}
}

// clusterFreePort returns a TCP port free on 127.0.0.1 right now.
func clusterFreePort(t testing.TB) int {
	t.Helper()
	port, err := localfleet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// clusterEtcd is one single-member etcd.
type clusterEtcd struct {
	Name      string
	ClientURL string
	proc      *clusterProc
	etcd      *localfleet.Etcd
}

func clusterStartEtcd(t testing.TB, dir, name string) *clusterEtcd {
	t.Helper()
	e, err := clusterLauncher(t).StartEtcd(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return &clusterEtcd{Name: e.Name, ClientURL: e.ClientURL, proc: &clusterProc{e.Proc}, etcd: e}
}

func (e *clusterEtcd) waitReady(t testing.TB) {
	t.Helper()
	if err := e.etcd.WaitReady(); err != nil {
		t.Fatal(err)
	}
}

// Has reports whether key exists, through etcd's v3 JSON gateway.
func (e *clusterEtcd) Has(t testing.TB, key string) bool {
	t.Helper()
	ok, err := e.etcd.Has(key)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// clusterCreds are the credentials every cluster of a test shares.
type clusterCreds = localfleet.Creds

// clusterUser is the admin of the test clusters.
const clusterUser = "e2e-admin"

func clusterNewCreds(t testing.TB, dir string) *clusterCreds {
	t.Helper()
	c, err := localfleet.NewCreds(dir, clusterUser)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clusterAPIServer is one kube-apiserver.
type clusterAPIServer struct {
	Name   string
	URL    string
	CAFile string
	dir    string
	creds  *clusterCreds
	// proc is the running process (the latest, after a Restart).
	proc *clusterProc
	srv  *localfleet.APIServer
}

// clusterStartAPIServer starts kube-apiserver on etcd main, with the
// --etcd-servers-overrides value overrides ("" leaves the flag out). Every
// restart of its process is stopped with t, the test that started it, not
// with the step that restarted it.
func clusterStartAPIServer(t testing.TB, dir, name string, creds *clusterCreds, main *clusterEtcd, overrides string) *clusterAPIServer {
	t.Helper()
	// Every server writes an audit log of its write requests (audit_test.go).
	pre := &clusterAPIServer{Name: name, dir: dir}
	return clusterStartAPIServerArgs(t, dir, name, creds, main, overrides, clusterAuditArgs(t, pre)...)
}

// clusterStartAPIServerArgs is clusterStartAPIServer with more flags.
func clusterStartAPIServerArgs(t testing.TB, dir, name string, creds *clusterCreds, main *clusterEtcd, overrides string, extra ...string) *clusterAPIServer {
	t.Helper()
	srv, err := clusterLauncher(t).StartAPIServer(dir, name, creds, main.etcd, overrides, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return &clusterAPIServer{Name: srv.Name, URL: srv.URL, CAFile: srv.CAFile, dir: dir, creds: creds, proc: &clusterProc{srv.Proc}, srv: srv}
}

// start starts the process again (after a.proc.stop()), on the same port
// and etcd, without waiting for it.
func (a *clusterAPIServer) start(t testing.TB, overrides string) {
	t.Helper()
	err := a.srv.Start(overrides)
	a.proc = &clusterProc{a.srv.Proc}
	if err != nil {
		t.Fatal(err)
	}
}

// Restart stops kube-apiserver and starts it again, on the same port and
// etcd, with another --etcd-servers-overrides value.
func (a *clusterAPIServer) Restart(t testing.TB, overrides string) {
	t.Helper()
	err := a.srv.Restart(overrides)
	a.proc = &clusterProc{a.srv.Proc}
	if err != nil {
		t.Fatal(err)
	}
}

// waitReady waits for the self-signed serving certificate, /readyz, and
// the default Namespace (the inventory's).
func (a *clusterAPIServer) waitReady(t testing.TB) {
	t.Helper()
	if err := a.srv.WaitReady(); err != nil {
		t.Fatal(err)
	}
}

func (a *clusterAPIServer) do(method, path, contentType string, body []byte) (int, []byte, error) {
	return a.srv.Do(method, path, contentType, body)
}

// Get reads an object: its JSON, or nil when it does not exist.
func (a *clusterAPIServer) Get(t testing.TB, path string) map[string]any {
	t.Helper()
	code, body, err := a.do("GET", path, "", nil)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", a.Name, path, err)
	}
	switch code {
	case http.StatusOK:
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err != nil {
			t.Fatalf("%s: GET %s: %v", a.Name, path, err)
		}
		return obj
	case http.StatusNotFound:
		return nil
	}
	t.Fatalf("%s: GET %s: %d: %s", a.Name, path, code, body)
	return nil
}

// MergePatch applies a JSON merge patch to an object.
func (a *clusterAPIServer) MergePatch(t testing.TB, path string, patch any) {
	t.Helper()
	data, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	code, body, err := a.do("PATCH", path, "application/merge-patch+json", data)
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s: PATCH %s: %d %v: %s", a.Name, path, code, err, body)
	}
}

// clusterStartControllerManager starts kube-controller-manager for a, with a
// kubeconfig of its own, and waits for /healthz.
func clusterStartControllerManager(t testing.TB, a *clusterAPIServer, creds *clusterCreds) *clusterProc {
	t.Helper()
	if creds != a.srv.Creds {
		t.Fatalf("%s: the controller manager must use the credentials its kube-apiserver was started with", a.Name)
	}
	p, err := clusterLauncher(t).StartControllerManager(a.srv)
	if err != nil {
		t.Fatal(err)
	}
	return &clusterProc{p}
}

// clusterWriteKubeconfig writes a kubeconfig with one context per server, named
// after it; the first is the current context.
func clusterWriteKubeconfig(t testing.TB, path, token string, servers ...*clusterAPIServer) {
	t.Helper()
	srvs := make([]*localfleet.APIServer, len(servers))
	for i, s := range servers {
		srvs[i] = s.srv
	}
	if err := localfleet.WriteKubeconfig(path, &localfleet.Creds{User: clusterUser, Token: token}, srvs...); err != nil {
		t.Fatal(err)
	}
}

// clusterState is one cluster: its etcds, kube-apiserver and controller
// manager.
type clusterState struct {
	Name   string
	Main   *clusterEtcd
	Events *clusterEtcd // nil when the cluster has no events datastore
	API    *clusterAPIServer
}

// clusterStartFleet starts one cluster per name, each with its own etcd,
// a kube-apiserver (writing its audit log, audit_test.go) and a
// kube-controller-manager, and waits until they are ready; the kubeconfig
// (clusterWriteKubeconfig) is the caller's.
func clusterStartFleet(t testing.TB, dir string, creds *clusterCreds, names ...string) map[string]*clusterAPIServer {
	t.Helper()
	api := map[string]*clusterAPIServer{}
	for _, name := range names {
		etcd := clusterStartEtcd(t, dir, "etcd-"+strings.ToLower(name))
		etcd.waitReady(t)
		api[name] = clusterStartAPIServer(t, dir, name, creds, etcd, "")
	}
	for _, name := range names {
		api[name].waitReady(t)
		clusterStartControllerManager(t, api[name], creds)
	}
	return api
}
