//go:build e2e

package e2e

// The tenants' harness (issue 41), for any test that runs shard-router as a
// tenant of a platform: real kube-apiservers that authenticate bearer
// tokens through a webhook this test serves (kube-apiserver's
// --authentication-token-webhook-config-file), so that a test decides
// which tokens are good, for whom, and revokes or expires them mid-run;
// an exec credential plugin the kubeconfig calls (this test binary,
// started again in plugin mode, which asks the same server for a token,
// with or without an expirationTimestamp); tenants made with the RBAC
// package the platform ships (examples/tenant-rbac), applied with the
// real kpt; and the audit logs' "no write".
//
//	f := startTenantFleet(t, "A", "B")      // clusters with webhook auth, audit logs, a controller manager
//	f.createTenant(t, teamA)               // Namespaces and the shipped rights, in every cluster
//	token := f.auth.Grant("ci", nil, 0)    // a token the webhook accepts, as user ci
//	kc := f.kubeconfig(t, "kc", f.userEntry("ci", tokenUser(token)))
//	marks := f.auditMarks(t)
//	... run shard-router ...
//	f.requireNoWrites(t, "the refused apply", marks) // not even a Lease

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// envExecPlugin, when set, makes the test binary an exec credential
// plugin: it gets the URL to ask for a credential (TestMain).
const envExecPlugin = "SHARD_ROUTER_E2E_EXEC_PLUGIN"

// execPluginMain is the test binary as a kubeconfig exec plugin: it prints
// the ExecCredential the token authority gives at url.
func execPluginMain(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e exec plugin:", err)
		return 1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "e2e exec plugin: %s: %v %s\n", resp.Status, err, body)
		return 1
	}
	_, err = os.Stdout.Write(body)
	if err != nil {
		return 1
	}
	return 0
}

// tokenAuthority decides which bearer tokens are good: kube-apiserver
// asks it (TokenReview through its token webhook), and the exec plugin
// gets tokens from it.
type tokenAuthority struct {
	URL string
	srv *httptest.Server
	mu  sync.Mutex
	// tokens are the tokens granted, by token.
	tokens map[string]*grant
	// issued counts the tokens the exec plugin got, per user; refused
	// are the users the plugin gets no token for any more.
	issued  map[string]int
	refused map[string]bool
	n       int
}

// grant is one token.
type grant struct {
	user    string
	groups  []string
	expires time.Time // zero: never
	revoked bool
}

func startTokenAuthority(t testing.TB) *tokenAuthority {
	t.Helper()
	a := &tokenAuthority{tokens: map[string]*grant{}, issued: map[string]int{}, refused: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/authenticate", a.review)
	mux.HandleFunc("/exec", a.exec)
	a.srv = httptest.NewServer(mux) // on 127.0.0.1
	a.URL = a.srv.URL
	t.Cleanup(a.srv.Close)
	return a
}

// Grant makes a token for user (and groups), valid for ttl (0: until
// revoked).
func (a *tokenAuthority) Grant(user string, groups []string, ttl time.Duration) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	token := fmt.Sprintf("e2e-%s-%d-%d", strings.ReplaceAll(user, ":", "-"), a.n, time.Now().UnixNano())
	g := &grant{user: user, groups: groups}
	if ttl > 0 {
		g.expires = time.Now().Add(ttl)
	}
	a.tokens[token] = g
	return token
}

// Revoke makes token bad at once (kube-apiserver caches a good answer for
// up to 10 s: its token cache, not configurable).
func (a *tokenAuthority) Revoke(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g := a.tokens[token]; g != nil {
		g.revoked = true
	}
}

// RevokeUser revokes every token of user, and the exec plugin gets no new
// one for it.
func (a *tokenAuthority) RevokeUser(user string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, g := range a.tokens {
		if g.user == user {
			g.revoked = true
		}
	}
	a.refused[user] = true
}

// Restore lets the exec plugin get tokens for user again.
func (a *tokenAuthority) Restore(user string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.refused, user)
}

// Issued is how many tokens the exec plugin got for user.
func (a *tokenAuthority) Issued(user string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issued[user]
}

// tokenReview is authentication.k8s.io/v1 TokenReview, as much as the
// webhook reads and answers.
type tokenReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Token string `json:"token"`
	} `json:"spec"`
	Status struct {
		Authenticated bool `json:"authenticated"`
		User          struct {
			Username string   `json:"username,omitempty"`
			UID      string   `json:"uid,omitempty"`
			Groups   []string `json:"groups,omitempty"`
		} `json:"user"`
		Error string `json:"error,omitempty"`
	} `json:"status"`
}

// review answers kube-apiserver's TokenReview.
func (a *tokenAuthority) review(w http.ResponseWriter, r *http.Request) {
	var tr tokenReview
	if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	g := a.tokens[tr.Spec.Token]
	ok := g != nil && !g.revoked && (g.expires.IsZero() || time.Now().Before(g.expires))
	if ok {
		tr.Status.Authenticated = true
		tr.Status.User.Username, tr.Status.User.UID, tr.Status.User.Groups = g.user, g.user, g.groups
	}
	a.mu.Unlock()
	tr.Spec.Token = ""
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(tr)
}

// exec gives the exec plugin a credential: a new token for ?user=, valid
// for ?ttl=, with its expirationTimestamp when ?expiry=true.
func (a *tokenAuthority) exec(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	user := q.Get("user")
	ttl, err := time.ParseDuration(q.Get("ttl"))
	if err != nil {
		http.Error(w, "ttl: "+err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	refused := a.refused[user]
	if !refused {
		a.issued[user]++
	}
	a.mu.Unlock()
	if refused {
		http.Error(w, "no credential for "+user, http.StatusForbidden)
		return
	}
	token := a.Grant(user, q["group"], ttl)
	status := map[string]any{"token": token}
	if q.Get("expiry") == "true" {
		status["expirationTimestamp"] = time.Now().Add(ttl).UTC().Format(time.RFC3339)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status})
}

// webhookArgs are the kube-apiserver flags that make it ask a about bearer
// tokens (after its token file: the admin's token still works), without
// a webhook cache.
func (a *tokenAuthority) webhookArgs(t testing.TB, dir, name string) []string {
	t.Helper()
	path := filepath.Join(dir, name+"-token-webhook.kubeconfig")
	writeFile(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: authority
  cluster: {server: %q}
users:
- name: kube-apiserver
  user: {}
contexts:
- name: webhook
  context: {cluster: authority, user: kube-apiserver}
current-context: webhook
`, a.URL+"/authenticate"))
	return []string{"--authentication-token-webhook-config-file", path, "--authentication-token-webhook-version", "v1",
		"--authentication-token-webhook-cache-ttl", "0s"}
}

// tokenUser is a kubeconfig user entry with a bearer token.
func tokenUser(token string) string { return fmt.Sprintf("{token: %q}", token) }

// execUser is a kubeconfig user entry whose exec plugin (this test binary)
// gets tokens for user valid for ttl, with their expirationTimestamp when
// withExpiry.
func (a *tokenAuthority) execUser(t testing.TB, user string, ttl time.Duration, withExpiry bool) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/exec?user=%s&ttl=%s&expiry=%v", a.URL, user, ttl, withExpiry)
	return execPluginUser(self, url)
}

// execPluginUser is a kubeconfig user entry that runs command as its exec
// plugin, asking url.
func execPluginUser(command, url string) string {
	return fmt.Sprintf("{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never, env: [{name: %s, value: %q}]}}",
		command, envExecPlugin, url)
}

// asUser adds an as: (and as-groups:) to a user entry.
func asUser(entry, as string, groups ...string) string {
	extra := fmt.Sprintf("as: %q", as)
	if len(groups) > 0 {
		extra += fmt.Sprintf(", as-groups: [%s]", strings.Join(groups, ", "))
	}
	return strings.TrimSuffix(entry, "}") + ", " + extra + "}"
}

// tenantFleet is clusters whose kube-apiserver authenticates tokens
// through auth, each with a kube-controller-manager (it fills the
// aggregated roles, admin included) and an audit log of writes.
type tenantFleet struct {
	dir   string
	creds *clusterCreds
	auth  *tokenAuthority
	names []string
	api   map[string]*clusterAPIServer
	// admin is a kubeconfig of every cluster as the admin (system:masters).
	admin string
	kpt   string
}

// startTenantFleet starts one cluster per name.
func startTenantFleet(t testing.TB, names ...string) *tenantFleet {
	t.Helper()
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kpt"} {
		toolPath(t, tool)
	}
	f := &tenantFleet{dir: t.TempDir(), names: names, api: map[string]*clusterAPIServer{}, kpt: toolPath(t, "kpt")}
	f.creds = clusterNewCreds(t, f.dir)
	f.auth = startTokenAuthority(t)
	for _, name := range names {
		etcd := clusterStartEtcd(t, f.dir, "etcd-"+strings.ToLower(name))
		etcd.waitReady(t)
		pre := &clusterAPIServer{Name: name, dir: f.dir}
		args := append(clusterAuditArgs(t, pre), f.auth.webhookArgs(t, f.dir, name)...)
		f.api[name] = clusterStartAPIServerArgs(t, f.dir, name, f.creds, etcd, "", args...)
	}
	servers := make([]*clusterAPIServer, len(names))
	for i, name := range names {
		f.api[name].waitReady(t)
		clusterStartControllerManager(t, f.api[name], f.creds)
		servers[i] = f.api[name]
	}
	f.admin = filepath.Join(f.dir, "admin.kubeconfig")
	clusterWriteKubeconfig(t, f.admin, f.creds.Token, servers...)
	return f
}

// kubeContext is one context of a kubeconfig the test writes: its
// cluster, and its user entry (name and YAML fields).
type kubeContext struct {
	name, cluster, user, entry string
}

// contexts are a context per cluster of f, named after it, all with one
// user entry.
func (f *tenantFleet) contexts(user, entry string) []kubeContext {
	var out []kubeContext
	for _, n := range f.names {
		out = append(out, kubeContext{name: n, cluster: n, user: user, entry: entry})
	}
	return out
}

// kubeconfig writes a kubeconfig of contexts into f's directory.
func (f *tenantFleet) kubeconfig(t testing.TB, name string, contexts []kubeContext) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + contexts[0].name + "\nclusters:\n")
	for _, n := range f.names {
		fmt.Fprintf(&b, "- name: %s\n  cluster: {server: %q, certificate-authority: %q}\n", n, f.api[n].URL, f.api[n].CAFile)
	}
	b.WriteString("users:\n")
	seen := map[string]bool{}
	for _, c := range contexts {
		if !seen[c.user] {
			seen[c.user] = true
			fmt.Fprintf(&b, "- name: %s\n  user: %s\n", c.user, c.entry)
		}
	}
	b.WriteString("contexts:\n")
	for _, c := range contexts {
		fmt.Fprintf(&b, "- name: %s\n  context: {cluster: %s, user: %s}\n", c.name, c.cluster, c.user)
	}
	path := filepath.Join(f.dir, name+".kubeconfig")
	writeFile(t, path, b.String())
	return path
}

// tenantSpec is a tenant of the platform: its identity, its inventory
// namespace (in every cluster) and its other namespaces, per cluster.
type tenantSpec struct {
	// Name names its objects (the package's team-a).
	Name string
	// User is the identity that holds its rights (a user of the token
	// webhook, or impersonated).
	User string
	// Inventory is its inventory namespace, in every cluster.
	Inventory string
	// Namespaces are its namespaces besides Inventory, per cluster.
	Namespaces map[string][]string
}

// rbacPackage is the package the platform ships: examples/tenant-rbac.
func rbacPackage(t testing.TB) string { return filepath.Join(repoRoot(t), "examples", "tenant-rbac") }

// createTenant makes tn in every cluster as the platform would: the
// shipped RBAC package made for tn and that cluster (its example tenant
// team-a renamed, one Namespace and admin RoleBinding per namespace), then
// applied with the real kpt as the admin.
func (f *tenantFleet) createTenant(t testing.TB, tn tenantSpec) {
	t.Helper()
	for _, ctx := range f.names {
		dir := filepath.Join(f.dir, "platform", tn.Name+"-"+ctx)
		instantiateRBAC(t, rbacPackage(t), dir, tn, tn.Namespaces[ctx])
		mustRun(t, cmdSpec{}, f.kpt, "live", "init", dir, "--namespace", "default", "--name", "tenant-"+tn.Name+"-"+strings.ToLower(ctx))
		mustRun(t, cmdSpec{Timeout: 3 * time.Minute}, f.kpt, "live", "apply", dir, "--kubeconfig", f.admin, "--context", ctx, "--reconcile-timeout", "2m")
	}
}

// The shipped package's example tenant, as instantiateRBAC replaces it.
const (
	rbacExampleTenant    = "team-a"
	rbacExampleUser      = "team-a-deployer"
	rbacExamplePlatform  = "platform-ci"
	rbacExampleNamespace = "team-a-web" // the one namespace whose Namespace and RoleBinding are copied per namespace
)

// instantiateRBAC writes into dir the shipped package made for tn in one
// cluster, as its README tells a platform to: the example tenant's names
// replaced by tn's, and the example namespace's Namespace and RoleBinding
// copied once per namespace (the package's other example namespaces
// left out).
func instantiateRBAC(t testing.TB, src, dir string, tn tenantSpec, namespaces []string) {
	t.Helper()
	nodes, err := kio.LocalPackageReader{PackagePath: src, MatchFilesGlob: []string{"*.yaml"}}.Read()
	if err != nil {
		t.Fatal(err)
	}
	var out []*yaml.RNode
	for _, n := range nodes {
		if n.GetKind() == "Kptfile" || n.GetKind() == "ResourceGroup" {
			continue
		}
		ns := n.GetNamespace()
		if n.GetKind() == "Namespace" {
			ns = n.GetName()
		}
		isExampleNs := strings.HasPrefix(ns, rbacExampleTenant+"-")
		if isExampleNs && ns != rbacExampleNamespace {
			continue // the example's other namespaces: copied from the first
		}
		copies := []string{""}
		if isExampleNs {
			copies = namespaces
		}
		for _, target := range copies {
			text, err := n.String()
			if err != nil {
				t.Fatal(err)
			}
			if target != "" {
				text = strings.ReplaceAll(text, rbacExampleNamespace, target)
			}
			text = strings.ReplaceAll(text, rbacExampleUser, tn.User)
			text = strings.ReplaceAll(text, rbacExampleTenant, tn.Name)
			if tn.Inventory != tn.Name {
				text = strings.ReplaceAll(text, "namespace: "+tn.Name+"\n", "namespace: "+tn.Inventory+"\n")
			}
			c, err := yaml.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
	}
	// The ClusterRole's list of the tenant's Namespaces, as the package
	// has it, with the example's workload namespaces replaced by tn's in
	// this cluster.
	for _, n := range out {
		if n.GetKind() != "ClusterRole" {
			continue
		}
		rules, err := n.Pipe(yaml.Lookup("rules"))
		if err != nil || rules == nil {
			t.Fatalf("%s: the ClusterRole has no rules", src)
		}
		elems, _ := rules.Elements()
		for _, r := range elems {
			res, _ := r.Pipe(yaml.Lookup("resources"))
			names, _ := r.Pipe(yaml.Lookup("resourceNames"))
			if res == nil || names == nil || !slices.ContainsFunc(res.YNode().Content, func(n *yaml.Node) bool { return n.Value == "namespaces" }) {
				continue
			}
			var list []string
			for _, name := range names.YNode().Content {
				switch {
				case !strings.HasPrefix(name.Value, tn.Name+"-"):
					list = append(list, name.Value)
				case len(namespaces) > 0 && !slices.Contains(list, namespaces[0]):
					list = append(list, namespaces...)
				}
			}
			if err := r.PipeE(yaml.SetField("resourceNames", yaml.NewListRNode(list...))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: tenant-rbac\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n")
	var b strings.Builder
	for i, n := range out {
		if i > 0 {
			b.WriteString("---\n")
		}
		s, err := n.String()
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(s)
	}
	writeFile(t, filepath.Join(dir, "rbac.yaml"), b.String())
}

// auditMarks are where each cluster's audit log ends now.
func (f *tenantFleet) auditMarks(t testing.TB) map[string]int64 {
	t.Helper()
	marks := map[string]int64{}
	for _, n := range f.names {
		marks[n] = f.api[n].auditMark(t)
	}
	return marks
}

// writesSince are the writes every cluster received since marks from
// anyone but the cluster's own components (the controller manager, the
// apiserver's own system: users): whoever sends them, impersonating or
// not.
func (f *tenantFleet) writesSince(t testing.TB, marks map[string]int64) map[string][]auditEvent {
	t.Helper()
	out := map[string][]auditEvent{}
	for _, n := range f.names {
		out[n] = f.api[n].anyWritesSince(t, marks[n])
	}
	return out
}

// requestsSince are writesSince with the dry runs and access reviews: what
// every cluster was asked, as well as written.
func (f *tenantFleet) requestsSince(t testing.TB, marks map[string]int64) map[string][]auditEvent {
	t.Helper()
	out := map[string][]auditEvent{}
	for _, n := range f.names {
		out[n] = f.api[n].anyRequestsSince(t, marks[n])
	}
	return out
}

// requireNoWrites fails when any cluster received a write since marks,
// shard-router's Leases included.
func (f *tenantFleet) requireNoWrites(t testing.TB, what string, marks map[string]int64) {
	t.Helper()
	for n, evs := range f.writesSince(t, marks) {
		if len(evs) > 0 {
			t.Errorf("%s: cluster %s received %d write(s), want none: %v", what, n, len(evs), evs)
		}
	}
}

// requireNoObjectWrites fails when any cluster received a write to an
// object since marks; writes to shard-router's own Leases (a run's lock)
// are allowed.
func (f *tenantFleet) requireNoObjectWrites(t testing.TB, what string, marks map[string]int64) {
	t.Helper()
	for n, evs := range f.writesSince(t, marks) {
		if objects, _ := splitLeaseWrites(evs); len(objects) > 0 {
			t.Errorf("%s: cluster %s received %d write(s) to objects, want none: %v", what, n, len(objects), objects)
		}
	}
}

// anyWritesSince are the writes a received since mark from anyone but
// its own components; a server-side dry run (status' drift check, apply's
// preflight) and an access review persist nothing and are not ones.
func (a *clusterAPIServer) anyWritesSince(t testing.TB, mark int64) []auditEvent {
	t.Helper()
	return withoutAsks(a.anyRequestsSince(t, mark))
}

// anyRequestsSince are anyWritesSince with the dry runs and access
// reviews.
func (a *clusterAPIServer) anyRequestsSince(t testing.TB, mark int64) []auditEvent {
	t.Helper()
	return a.eventsSince(t, mark, func(e auditEvent) bool { return !strings.HasPrefix(e.User.Username, "system:") })
}

// users are the users (and whom they impersonated) of evs, sorted, once
// each: "ci as team-a".
func users(evs []auditEvent) []string {
	seen := map[string]bool{}
	for _, e := range evs {
		u := e.User.Username
		if e.ImpersonatedUser != nil {
			u += " as " + e.ImpersonatedUser.Username
		}
		seen[u] = true
	}
	out := make([]string, 0, len(seen))
	for u := range seen {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// mayUpdateStatus asks a's RBAC (a SubjectAccessReview, as the e2e
// admin) whether user may update the status of the ResourceGroup name in
// namespace ("": of every ResourceGroup there).
func (a *clusterAPIServer) mayUpdateStatus(t testing.TB, user, namespace, name string) bool {
	t.Helper()
	body, err := json.Marshal(map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
		"spec": map[string]any{"user": user, "resourceAttributes": map[string]any{"group": "kpt.dev", "resource": "resourcegroups",
			"subresource": "status", "verb": "update", "namespace": namespace, "name": name}}})
	if err != nil {
		t.Fatal(err)
	}
	code, resp, err := a.do("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", body)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("%s: SubjectAccessReview: %d %v: %s", a.Name, code, err, resp)
	}
	var got struct {
		Status struct{ Allowed bool } `json:"status"`
	}
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Fatal(err)
	}
	return got.Status.Allowed
}
