//go:build e2e

package e2e

// The real-cluster harness: etcd, kube-apiserver and kube-controller-manager
// processes on 127.0.0.1 with free ports, token auth, service-account keys
// generated at test time and a kubeconfig with one context per cluster.
// Every process runs in its own process group, is killed by t.Cleanup, by
// a SIGINT/SIGTERM handler and, should the test binary die (go test
// -timeout panics without running clean-ups), by the kernel (Pdeathsig).

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of the readiness polls. They only stop a server that never gets
// ready; nothing is asserted on time.
const (
	clusterReadyAttempts = 240
	clusterPollMax       = time.Second
	clusterStopGrace     = 10 * time.Second
)

// clusterProc is one server process.
type clusterProc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// exited is closed once the process has been reaped; err is then set.
	exited chan struct{}
	err    error
}

var (
	clusterProcsMu sync.Mutex
	clusterProcs   = map[*clusterProc]bool{}
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
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}
			for p := range clusterProcs {
				select {
				case <-p.exited:
				case <-time.After(clusterStopGrace):
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

// clusterStartProc starts bin with its output in dir/<name>.log.
func clusterStartProc(t testing.TB, dir, name, bin string, args ...string) *clusterProc {
	t.Helper()
	clusterSignalHandler()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(logFile, "=== %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &clusterProc{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	clusterProcsMu.Lock()
	clusterProcs[p] = true
	clusterDirs[dir] = true
	clusterProcsMu.Unlock()
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- last lines of %s (%s):\n%s", name, logPath, clusterTail(logPath, 25))
		}
		p.stop()
	})
	return p
}

// stop terminates the process group: SIGTERM, then SIGKILL after a grace
// period. It is idempotent.
func (p *clusterProc) stop() {
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(clusterStopGrace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	}
	// Children that outlived the leader, if any.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	clusterProcsMu.Lock()
	delete(clusterProcs, p)
	clusterProcsMu.Unlock()
}

// clusterTail returns the last n lines of a file.
func clusterTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// clusterWait polls check until it succeeds, with a growing interval and a
// bounded number of attempts; it fails at once when the process exits.
func clusterWait(t testing.TB, p *clusterProc, what string, check func() error) {
	t.Helper()
	interval := 50 * time.Millisecond
	var err error
	for range clusterReadyAttempts {
		if err = check(); err == nil {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited (%v) before %s:\n%s", p.name, p.err, what, clusterTail(p.logPath, 40))
		case <-time.After(interval):
		}
		interval = min(2*interval, clusterPollMax)
	}
	t.Fatalf("%s: no %s after %d attempts: %v\n%s", p.name, what, clusterReadyAttempts, err, clusterTail(p.logPath, 40))
}

// clusterFreePort returns a TCP port free on 127.0.0.1 right now.
func clusterFreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clusterEtcd is one single-member etcd.
type clusterEtcd struct {
	Name      string
	ClientURL string
	proc      *clusterProc
}

func clusterStartEtcd(t testing.TB, dir, name string) *clusterEtcd {
	t.Helper()
	client := fmt.Sprintf("http://127.0.0.1:%d", clusterFreePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", clusterFreePort(t))
	p := clusterStartProc(t, dir, name, toolPath(t, "etcd"),
		"--name", name, "--data-dir", filepath.Join(dir, name+".etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", name+"="+peer,
		// Throw-away data: no fsync keeps the test fast on slow disks.
		"--unsafe-no-fsync", "--log-level", "warn")
	return &clusterEtcd{Name: name, ClientURL: client, proc: p}
}

func (e *clusterEtcd) waitReady(t testing.TB) {
	t.Helper()
	clusterWait(t, e.proc, "/health", func() error {
		resp, err := http.Get(e.ClientURL + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var h struct{ Health string }
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			return err
		}
		if h.Health != "true" {
			return fmt.Errorf("health %q", h.Health)
		}
		return nil
	})
}

// Has reports whether key exists, through etcd's v3 JSON gateway.
func (e *clusterEtcd) Has(t testing.TB, key string) bool {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(key)), "count_only": true})
	resp, err := http.Post(e.ClientURL+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd %s: %v", e.Name, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd %s: range %s: %s: %s", e.Name, key, resp.Status, data)
	}
	// int64 fields are JSON strings; an absent count is zero.
	var r struct {
		Count string `json:"count"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("etcd %s: %v: %s", e.Name, err, data)
	}
	return r.Count != "" && r.Count != "0"
}

// clusterCreds are the credentials every cluster of a test shares.
type clusterCreds struct {
	Token     string
	TokenFile string
	// SAKey is the service-account signing key (PKCS#1 PEM).
	SAKey string
}

func clusterNewCreds(t testing.TB, dir string) *clusterCreds {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c := &clusterCreds{TokenFile: filepath.Join(dir, "tokens.csv"), SAKey: filepath.Join(dir, "sa.key")}
	writeFile(t, c.SAKey, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	c.Token = hex.EncodeToString(b)
	// token,user,uid,"groups": an admin through RBAC's system:masters.
	writeFile(t, c.TokenFile, c.Token+`,e2e-admin,e2e-admin,"system:masters"`+"\n")
	return c
}

// clusterAPIServer is one kube-apiserver.
type clusterAPIServer struct {
	Name    string
	URL     string
	CAFile  string
	dir     string
	args    []string
	creds   *clusterCreds
	client  *http.Client
	proc    *clusterProc
	started int
	// owner is the test that started the server: every restart of its
	// process is stopped with it, not with the step that restarted it.
	owner testing.TB
}

// clusterStartAPIServer starts kube-apiserver on etcd main, with the
// --etcd-servers-overrides value overrides ("" leaves the flag out).
func clusterStartAPIServer(t testing.TB, dir, name string, creds *clusterCreds, main *clusterEtcd, overrides string) *clusterAPIServer {
	t.Helper()
	return clusterStartAPIServerArgs(t, dir, name, creds, main, overrides)
}

// clusterStartAPIServerArgs is clusterStartAPIServer with more flags.
func clusterStartAPIServerArgs(t testing.TB, dir, name string, creds *clusterCreds, main *clusterEtcd, overrides string, extra ...string) *clusterAPIServer {
	t.Helper()
	port := clusterFreePort(t)
	certDir := filepath.Join(dir, name+"-certs")
	a := &clusterAPIServer{Name: name, URL: fmt.Sprintf("https://127.0.0.1:%d", port), CAFile: filepath.Join(certDir, "apiserver.crt"), dir: dir, creds: creds, owner: t}
	a.args = []string{
		"--etcd-servers", main.ClientURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", certDir,
		"--token-auth-file", creds.TokenFile, "--authorization-mode", "RBAC",
		"--service-account-key-file", creds.SAKey, "--service-account-signing-key-file", creds.SAKey,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", "10.96.0.0/16",
	}
	a.args = append(a.args, extra...)
	a.start(t, overrides)
	return a
}

func (a *clusterAPIServer) start(t testing.TB, overrides string) {
	t.Helper()
	args := a.args
	if overrides != "" {
		args = append(args[:len(args):len(args)], "--etcd-servers-overrides", overrides)
	}
	a.started++
	a.proc = clusterStartProc(a.owner, a.dir, fmt.Sprintf("%s-%d", a.Name, a.started), toolPath(t, "kube-apiserver"), args...)
	a.client = nil
}

// Restart stops kube-apiserver and starts it again, on the same port and
// etcd, with another --etcd-servers-overrides value.
func (a *clusterAPIServer) Restart(t testing.TB, overrides string) {
	t.Helper()
	a.proc.stop()
	a.start(t, overrides)
	a.waitReady(t)
}

// waitReady waits for the self-signed serving certificate, /readyz, and
// the default Namespace (the inventory's).
func (a *clusterAPIServer) waitReady(t testing.TB) {
	t.Helper()
	clusterWait(t, a.proc, "serving certificate", func() error {
		pemData, err := os.ReadFile(a.CAFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return errors.New("no certificate in " + a.CAFile)
		}
		a.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		return nil
	})
	clusterWait(t, a.proc, "/readyz", func() error {
		code, body, err := a.do("GET", "/readyz", "", nil)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("%d: %s", code, body)
		}
		return err
	})
	clusterWait(t, a.proc, "Namespace default", func() error {
		code, body, err := a.do("GET", "/api/v1/namespaces/default", "", nil)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("%d: %s", code, body)
		}
		return err
	})
}

func (a *clusterAPIServer) do(method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, a.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.creds.Token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
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
	kubeconfig := filepath.Join(a.dir, a.Name+"-kcm.kubeconfig")
	clusterWriteKubeconfig(t, kubeconfig, creds.Token, a)
	port := clusterFreePort(t)
	p := clusterStartProc(t, a.dir, a.Name+"-kcm", toolPath(t, "kube-controller-manager"),
		"--kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", filepath.Join(a.dir, a.Name+"-kcm-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file", creds.SAKey,
		"--root-ca-file", a.CAFile)
	// Its self-signed certificate is not worth trusting for a health probe.
	probe := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	clusterWait(t, p, "/healthz", func() error {
		resp, err := probe.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		return nil
	})
	return p
}

// clusterWriteKubeconfig writes a kubeconfig with one context per server, named
// after it; the first is the current context.
func clusterWriteKubeconfig(t testing.TB, path, token string, servers ...*clusterAPIServer) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + servers[0].Name + "\nclusters:\n")
	for _, s := range servers {
		fmt.Fprintf(&b, "- name: %s\n  cluster:\n    server: %s\n    certificate-authority: %s\n", s.Name, s.URL, s.CAFile)
	}
	b.WriteString("users:\n- name: e2e-admin\n  user:\n    token: " + token + "\ncontexts:\n")
	for _, s := range servers {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: %s\n    user: e2e-admin\n", s.Name, s.Name)
	}
	writeFile(t, path, b.String())
}

// clusterState is one cluster: its etcds, kube-apiserver and controller
// manager.
type clusterState struct {
	Name   string
	Main   *clusterEtcd
	Events *clusterEtcd // nil when the cluster has no events datastore
	API    *clusterAPIServer
}
