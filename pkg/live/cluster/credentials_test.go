package cluster_test

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	flowcontrolapi "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/live/cluster"
)

// fakeAPIServer is a TLS server that answers like a kube-apiserver for
// the few requests these tests send: it accepts the bearer tokens in
// valid, and records what each request carried.
type fakeAPIServer struct {
	*httptest.Server
	mu    sync.Mutex
	valid map[string]bool
	seen  []seenRequest
}

type seenRequest struct {
	method, path, token, as, asUID, body string
	asGroups                             []string
}

func startFakeAPIServer(t *testing.T, valid ...string) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{valid: map[string]bool{}}
	f.accept(valid...)
	f.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{method: r.Method, path: r.URL.Path, token: token, as: r.Header.Get("Impersonate-User"),
			asUID: r.Header.Get("Impersonate-Uid"), asGroups: r.Header.Values("Impersonate-Group"), body: string(body)})
		ok := f.valid[token]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		// Flow control: kpt's throttling then asks once per server.
		w.Header().Set(flowcontrolapi.ResponseHeaderMatchedFlowSchemaUID, "fs")
		switch {
		case !ok:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
		case r.URL.Path == "/version":
			fmt.Fprint(w, `{"major":"1","minor":"34","gitVersion":"v1.34.4"}`)
		case r.Method == http.MethodPost:
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusCreated)
			w.Write(body)
		case r.URL.Query().Get("watch") == "true":
			fmt.Fprint(w, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ns","resourceVersion":"2"}}}`+"\n")
		default:
			fmt.Fprint(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","uid":"u-1"}}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// accept makes the server take these tokens only.
func (f *fakeAPIServer) accept(tokens ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.valid = map[string]bool{}
	for _, tok := range tokens {
		f.valid[tok] = true
	}
}

// requests are those the server saw, but kpt's flow-control pings.
func (f *fakeAPIServer) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seenRequest
	for _, r := range f.seen {
		if r.path != "/livez/ping" {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeAPIServer) tokens() []string {
	var out []string
	for _, r := range f.requests() {
		out = append(out, r.token)
	}
	return out
}

// kubeconfigFor writes a kubeconfig with context "c" on f, whose user
// entry "u" is user (YAML fields of a user entry).
func kubeconfigFor(t *testing.T, f *fakeAPIServer, user string) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})
	path := filepath.Join(t.TempDir(), "config")
	writeFile(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: u
  user: %s
contexts:
- name: c
  context: {cluster: one, user: u}
current-context: c
`, f.URL, base64.StdEncoding.EncodeToString(ca), user))
	return path
}

func loadKubeconfig(t *testing.T, path string) *cluster.Kubeconfig {
	t.Helper()
	k, err := cluster.LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// readIdentity sends one GET through the context's factory, as apply's
// first read does.
func readIdentity(t *testing.T, k *cluster.Kubeconfig) error {
	t.Helper()
	_, err := cluster.ReadIdentity(context.Background(), k.Factory("c"))
	return err
}

// execPlugin writes an exec credential plugin (a shell script) that
// prints the token held in tokenFile, and counts its runs in runs.
func execPlugin(t *testing.T, dir string) (script, tokenFile, runs string) {
	t.Helper()
	script, tokenFile, runs = filepath.Join(dir, "plugin.sh"), filepath.Join(dir, "token"), filepath.Join(dir, "runs")
	writeFile(t, script, fmt.Sprintf(`#!/bin/sh
echo run >> %s
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%%s"}}' "$(cat %s)"
`, runs, tokenFile))
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	return script, tokenFile, runs
}

func execUser(script string) string {
	return fmt.Sprintf(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}`, script)
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// The context's requests carry its user entry's token and its as:, or
// the flags' impersonation instead (kubectl's --as takes precedence).
func TestCredentialsCarryTokenAndImpersonation(t *testing.T) {
	f := startFakeAPIServer(t, "t")
	path := kubeconfigFor(t, f, `{token: t, as: team-a, as-groups: [deployers]}`)

	k := loadKubeconfig(t, path)
	if err := readIdentity(t, k); err != nil {
		t.Fatal(err)
	}
	got := f.requests()[len(f.requests())-1]
	if got.token != "t" || got.as != "team-a" || strings.Join(got.asGroups, ",") != "deployers" {
		t.Errorf("request with token %q as %q groups %v; want t as team-a groups deployers", got.token, got.as, got.asGroups)
	}
	if as := k.As("c").String(); as != "team-a (groups: deployers)" {
		t.Errorf("As: %q, want the user entry's", as)
	}

	k = loadKubeconfig(t, path)
	k.Impersonate(cluster.Impersonation{User: "team-b", UID: "42", Groups: []string{"ci", "ops"}})
	if err := readIdentity(t, k); err != nil {
		t.Fatal(err)
	}
	got = f.requests()[len(f.requests())-1]
	if got.as != "team-b" || got.asUID != "42" || strings.Join(got.asGroups, ",") != "ci,ops" {
		t.Errorf("with --as: request as %q uid %q groups %v; want team-b, 42, ci,ops", got.as, got.asUID, got.asGroups)
	}
	if as := k.As("c").String(); as != "team-b (groups: ci, ops; uid: 42)" {
		t.Errorf("As with --as: %q", as)
	}

	plain := loadKubeconfig(t, kubeconfigFor(t, f, `{token: t}`))
	if err := readIdentity(t, plain); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[len(f.requests())-1]; got.as != "" {
		t.Errorf("without impersonation: request as %q", got.as)
	}
	if as := plain.As("c"); !as.IsZero() {
		t.Errorf("As without impersonation: %+v", as)
	}
}

// A token file rotated since it was read: the 401 re-reads it and the
// request is sent again, and succeeds.
func TestCredentialsRereadTokenFileOn401(t *testing.T) {
	f := startFakeAPIServer(t, "old")
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeFile(t, tokenFile, "old")
	k := loadKubeconfig(t, kubeconfigFor(t, f, fmt.Sprintf(`{tokenFile: %q}`, tokenFile)))
	if err := readIdentity(t, k); err != nil {
		t.Fatal(err)
	}
	writeFile(t, tokenFile, "new")
	f.accept("new")
	before := len(f.requests())
	if err := readIdentity(t, k); err != nil {
		t.Fatalf("after the token file rotated: %v", err)
	}
	if got := strings.Join(f.tokens()[before:], ","); got != "old,new" {
		t.Errorf("tokens sent: %s; want old (401), then new", got)
	}
	if err := k.Credentials("c").Err(); err != nil {
		t.Errorf("a retried request succeeded, yet the context's credentials failed: %v", err)
	}
}

// An exec plugin's token that expired without an expirationTimestamp:
// client-go runs the plugin again on the 401, and the retry sends the new
// token. Also for a request with a body (a create) and a watch.
func TestCredentialsExecTokenRefreshedOn401(t *testing.T) {
	f := startFakeAPIServer(t, "t1")
	script, tokenFile, runs := execPlugin(t, t.TempDir())
	writeFile(t, tokenFile, "t1")
	k := loadKubeconfig(t, kubeconfigFor(t, f, execUser(script)))
	if err := readIdentity(t, k); err != nil {
		t.Fatal(err)
	}
	cs, err := k.Factory("c").KubernetesClientSet()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, step := range []struct {
		what string
		send func() error
	}{
		{"a GET", func() error { return readIdentity(t, k) }},
		{"a create", func() error {
			_, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
				Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err
		}},
		{"a watch", func() error {
			w, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
	} {
		token := fmt.Sprintf("t%d", i+2)
		writeFile(t, tokenFile, token)
		f.accept(token)
		before, ran := len(f.requests()), lines(t, runs)
		if err := step.send(); err != nil {
			t.Fatalf("%s after the token expired: %v (sent %v)", step.what, err, f.requests()[before:])
		}
		sent := f.requests()[before:]
		if len(sent) != 2 || sent[0].token != fmt.Sprintf("t%d", i+1) || sent[1].token != token || sent[0].body != sent[1].body {
			t.Errorf("%s: sent %+v; want the old token (401), then %s with the same body", step.what, sent, token)
		}
		if got := lines(t, runs) - ran; got != 1 {
			t.Errorf("%s: the plugin ran %d times, want once (on the 401)", step.what, got)
		}
	}
}

// Credentials the cluster rejects also once read again fail the context,
// naming it, its user entry and the cause; a later success clears that.
func TestCredentialsRejected(t *testing.T) {
	f := startFakeAPIServer(t)
	k := loadKubeconfig(t, kubeconfigFor(t, f, `{token: revoked}`))
	err := readIdentity(t, k)
	if err == nil {
		t.Fatal("a rejected token: no error")
	}
	fail := k.CredentialsFailure("c")
	if fail == nil || !fail.Rejected() {
		t.Fatalf("failure %v, want credentials rejected", fail)
	}
	if want := `context "c": kubeconfig user "u": credentials rejected (401), also once read again`; fail.Error() != want {
		t.Errorf("failure %q, want %q", fail, want)
	}
	if got := strings.Join(f.tokens(), ","); !strings.HasSuffix(got, "revoked,revoked") {
		t.Errorf("tokens sent %s: want the request sent twice", got)
	}
	f.accept("revoked")
	if err := readIdentity(t, k); err != nil {
		t.Fatal(err)
	}
	if fail := k.CredentialsFailure("c"); fail != nil {
		t.Errorf("the credentials work again, yet the failure is %v", fail)
	}
}

// An exec plugin that is missing, or fails, fails the context's first
// request, and says which plugin and how.
func TestCredentialsExecPluginMissingOrFailing(t *testing.T) {
	f := startFakeAPIServer(t, "t")
	dir := t.TempDir()
	failing := filepath.Join(dir, "failing.sh")
	writeFile(t, failing, "#!/bin/sh\necho no credentials for you >&2\nexit 3\n")
	if err := os.Chmod(failing, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-plugin")
	for _, tc := range []struct{ plugin, cause string }{
		{missing, "exec plugin " + missing + ": not found"},
		{failing, "exec plugin " + failing + ": failed with exit code 3"},
	} {
		k := loadKubeconfig(t, kubeconfigFor(t, f, execUser(tc.plugin)))
		err := readIdentity(t, k)
		var cerr *cluster.CredentialsError
		if !errors.As(err, &cerr) || cerr.Cause != tc.cause || cerr.Rejected() {
			t.Errorf("error %v, want a credentials error %q", err, tc.cause)
		}
		if fail := k.CredentialsFailure("c"); fail == nil || fail.Cause != tc.cause || fail.User != "u" || fail.Context != "c" {
			t.Errorf("recorded failure %v, want %q", fail, tc.cause)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests reached the server without credentials", n)
	}
}

// A token file that does not exist is a credentials failure too.
func TestCredentialsTokenFileMissing(t *testing.T) {
	f := startFakeAPIServer(t, "t")
	tokenFile := filepath.Join(t.TempDir(), "absent")
	k := loadKubeconfig(t, kubeconfigFor(t, f, fmt.Sprintf(`{tokenFile: %q}`, tokenFile)))
	err := readIdentity(t, k)
	want := "token file " + tokenFile + ": not found"
	if fail := k.CredentialsFailure("c"); err == nil || fail == nil || fail.Cause != want {
		t.Fatalf("error %v, failure %v; want %q", err, fail, want)
	}
	writeFile(t, tokenFile, "t")
	if err := readIdentity(t, k); err != nil {
		t.Errorf("once the token file exists: %v", err)
	}
}

// An unreachable cluster is not a credentials failure.
func TestCredentialsUnreachableIsNotAFailure(t *testing.T) {
	f := startFakeAPIServer(t, "t")
	path := kubeconfigFor(t, f, `{token: t}`)
	f.Close()
	k := loadKubeconfig(t, path)
	if err := readIdentity(t, k); err == nil {
		t.Fatal("a stopped server: no error")
	}
	if fail := k.CredentialsFailure("c"); fail != nil {
		t.Errorf("unreachable: credentials failure %v", fail)
	}
}
