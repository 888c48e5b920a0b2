//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// TestTenants proves issue 41 on two real clusters, A (wave canary) and B
// (wave rest), whose kube-apiservers authenticate tokens through the
// test's webhook (tenant_harness_test.go). The platform applies the
// shipped RBAC package (examples/tenant-rbac) for tenant team-a with the
// real kpt; the tenant's user team-a-deployer then holds exactly those
// rights. Its package (testdata/tenant/pkg) is applied with the
// platform's config (--config testdata/tenant/platform.yaml), by the
// platform's CI identity impersonating it (--as), and through a
// kubeconfig's as:: apply, rollout, rollback, force-unlock, status, plan
// --live, a no-change apply with no write; then credentials that expire
// (exec plugin tokens shorter than a bake, with and without
// expirationTimestamp), a later wave's rejected token and a missing exec
// plugin refused before any write, and a token revoked during a bake. The
// steps share the clusters and build on each other.
func TestTenants(t *testing.T) {
	start := time.Now()
	f := startTenantFleet(t, "A", "B")
	f.createTenant(t, teamA)
	t.Logf("clusters and tenant ready after %s", time.Since(start).Round(time.Second))
	e := &tenantE2E{f: f, bin: shardRouter(t), pkg: filepath.Join(f.dir, "team-a", "pkg"), out: filepath.Join(f.dir, "team-a", "out"),
		config: filepath.Join(repoRoot(t), "test", "e2e", "testdata", "tenant", "platform.yaml")}
	copyTree(t, filepath.Join(repoRoot(t), "test", "e2e", "testdata", "tenant", "pkg"), e.pkg)
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		t.Fatal(err)
	}
	// The platform's CI identity, which may impersonate the tenant's user
	// (the package's impersonation.yaml) and nothing else.
	e.ci = f.kubeconfig(t, "platform-ci", f.contexts("platform-ci", tokenUser(f.auth.Grant(rbacExamplePlatform, nil, 0))))
	runSteps(t, []clusterStep{
		{"ImpersonatedApply", e.impersonatedApply},
		{"ImpersonatedStatusAndPlan", e.statusAndPlan},
		{"ImpersonatedNoChangeNoWrite", e.noChange},
		{"PreflightAsksOnlyWhatChanges", e.asksOnlyWhatChanges},
		{"InventoryStatusGrantedByName", e.inventoryGrantedByName},
		{"AnotherTenantsNamespaceRefused", e.otherTenantRefused},
		{"ClusterRoleBindingRefused", e.clusterRoleBindingRefused},
		{"AdmissionPolicyRefused", e.policyRefused},
		{"ImpersonatedRolloutAndRollback", e.rolloutAndRollback},
		{"ImpersonatedForceUnlock", e.forceUnlock},
		{"KubeconfigAs", e.kubeconfigAs},
		{"ExecTokensShorterThanABake", e.execTokens},
		{"LaterWaveRejectedRefusedBeforeAnyWrite", e.laterWaveRejected},
		{"MissingExecPluginRefusedBeforeAnyWrite", e.missingPlugin},
		{"TokenRevokedDuringABake", e.revokedDuringBake},
	})
}

// teamA is the tenant: the package's example tenant, its namespaces
// spread over the two clusters (two in A: kpt's status watcher then
// watches each namespace, never the cluster).
var teamA = tenantSpec{Name: rbacExampleTenant, User: rbacExampleUser, Inventory: rbacExampleTenant,
	Namespaces: map[string][]string{"A": {"team-a-web", "team-a-api"}, "B": {"team-a-data"}}}

type tenantE2E struct {
	f                   *tenantFleet
	bin                 string
	pkg, out, config    string
	ci                  string // the platform CI's kubeconfig (impersonates with --as)
	impersonate         []string
	value               int
	lastAppliedIdentity string
}

// asTenant are the flags that make the platform's CI identity act as the
// tenant.
var asTenant = []string{"--as", rbacExampleUser}

// apply runs apply -o json with the platform's config and kubeconfig.
func (e *tenantE2E) apply(t testing.TB, kubeconfig string, args ...string) applyRun {
	t.Helper()
	args = append([]string{"apply", e.pkg, "--out", e.out, "--config", e.config, "--kubeconfig", kubeconfig, "-o", "json", "--reconcile-timeout", "2m"}, args...)
	res := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, e.bin, args...)
	r := applyRun{result: res}
	if err := json.Unmarshal([]byte(res.Stdout), &r.report); err != nil && res.Stdout != "" {
		t.Fatalf("apply -o json printed no report: %v\n%s", err, res)
	}
	t.Logf("%s: exit %d", res.Cmd, res.ExitCode)
	return r
}

// mustApply runs apply, which must exit 0 with every context want.
func (e *tenantE2E) mustApply(t testing.TB, kubeconfig string, want v1alpha1.ApplyStatus, args ...string) applyRun {
	t.Helper()
	r := e.apply(t, kubeconfig, args...)
	if r.ExitCode != 0 {
		t.Fatalf("apply failed:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": want, "B": want})
	return r
}

// change sets both settings ConfigMaps to a new value, and returns it.
func (e *tenantE2E) change(t testing.TB) string {
	t.Helper()
	e.value++
	v := fmt.Sprint(e.value + 1)
	e.setValue(t, v)
	return v
}

// liveValues are the settings ConfigMaps' values, A's then B's.
func (e *tenantE2E) liveValues(t testing.TB) [2]string {
	t.Helper()
	var out [2]string
	for i, p := range []string{"A:/api/v1/namespaces/team-a-web/configmaps/settings", "B:/api/v1/namespaces/team-a-data/configmaps/settings"} {
		ctx, path, _ := strings.Cut(p, ":")
		if obj := e.f.api[ctx].Get(t, path); obj != nil {
			data, _ := obj["data"].(map[string]any)
			out[i], _ = data["value"].(string)
		}
	}
	return out
}

// tenantLease is the tenant's Lease in ctx (its inventory's, in team-a).
func (e *tenantE2E) tenantLease(t testing.TB, ctx string) (leaseState, map[string]any) {
	t.Helper()
	list := e.f.api[ctx].Get(t, "/apis/coordination.k8s.io/v1/namespaces/team-a/leases")
	items, _ := list["items"].([]any)
	for _, it := range items {
		obj, _ := it.(map[string]any)
		meta, _ := obj["metadata"].(map[string]any)
		if name, _ := meta["name"].(string); strings.HasPrefix(name, "shard-router.") {
			return parseLease(obj), obj
		}
	}
	t.Fatalf("%s: no shard-router Lease in namespace team-a", ctx)
	return leaseState{}, nil
}

// requireWritesAs fails unless every write of writes was sent by user
// acting as as ("" : acting as nobody else).
func requireWritesAs(t testing.TB, what string, writes map[string][]auditEvent, user, as string) {
	t.Helper()
	want := user
	if as != "" {
		want += " as " + as
	}
	n := 0
	for ctx, evs := range writes {
		n += len(evs)
		if got := users(evs); len(got) > 0 && !slices.Equal(got, []string{want}) {
			t.Errorf("%s: %s's writes came from %v, want %s only", what, ctx, got, want)
		}
	}
	if n == 0 {
		t.Errorf("%s: no write at all", what)
	}
}

// impersonatedApply: the first apply, by the platform's CI identity with
// --as: both contexts Applied, every write as the tenant, the package's own
// ShardConfig warned about and not used, the record saying who applied as
// whom in each cluster and in OUT_DIR.
func (e *tenantE2E) impersonatedApply(t *testing.T) {
	marks := e.f.auditMarks(t)
	r := e.mustApply(t, e.ci, v1alpha1.ApplyApplied, asTenant...)
	requireWritesAs(t, "the first apply", e.f.writesSince(t, marks), rbacExamplePlatform, rbacExampleUser)
	if !slices.ContainsFunc(r.report.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "ShardConfig my-own in shards.yaml[0] is not used: --config ")
	}) {
		t.Errorf("no warning about the package's own ShardConfig: %q", r.report.Warnings)
	}
	if got := e.liveValues(t); got != [2]string{"1", "1"} {
		t.Errorf("values %v after the first apply, want 1 in both", got)
	}
	for _, ctx := range e.f.names {
		l, obj := e.tenantLease(t, ctx)
		if as := clusterAnnotation(obj, "shardrouter.dev/applied-as"); as != rbacExampleUser || l.Outcome != "applied" {
			t.Errorf("%s: Lease %+v applied-as %q, want applied as %s", ctx, l, as, rbacExampleUser)
		}
	}
	var rec struct {
		Contexts map[string]struct {
			AppliedAs string `json:"appliedAs"`
		} `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(clusterReadFile(t, filepath.Join(e.out, ".shard-router-fleet.json"))), &rec); err != nil {
		t.Fatal(err)
	}
	for _, ctx := range e.f.names {
		if rec.Contexts[ctx].AppliedAs != rbacExampleUser {
			t.Errorf("OUT_DIR's record of %s: applied as %q, want %s", ctx, rec.Contexts[ctx].AppliedAs, rbacExampleUser)
		}
	}
}

// statusAndPlan: status and plan --live as the tenant read every context
// in full; status shows whom the last apply acted as.
func (e *tenantE2E) statusAndPlan(t *testing.T) {
	marks := e.f.auditMarks(t)
	res := runCmd(t, cmdSpec{}, e.bin, append([]string{"status", e.out, "--kubeconfig", e.ci, "-o", "json", "--detailed-exitcode"}, asTenant...)...)
	var doc v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil || res.ExitCode != 0 {
		t.Fatalf("status as the tenant: exit %d, %v\n%s", res.ExitCode, err, res)
	}
	for _, c := range doc.Contexts {
		if c.Record == nil || c.Record.AppliedAs != rbacExampleUser || !c.InSync() {
			t.Errorf("status of %s: in sync %v, record %+v; want in sync, applied as %s", c.Name, c.InSync(), c.Record, rbacExampleUser)
		}
	}
	table := mustRun(t, cmdSpec{}, e.bin, append([]string{"status", e.out, "--kubeconfig", e.ci}, asTenant...)...)
	clusterMentions(t, "status' table", table.Stdout, " as "+rbacExampleUser)

	plan := runCmd(t, cmdSpec{}, e.bin, append([]string{"plan", e.pkg, "--previous", e.out, "--config", e.config, "--live", "--kubeconfig", e.ci,
		"-o", "json", "--detailed-exitcode"}, asTenant...)...)
	var p v1alpha1.SplitPlan
	if err := json.Unmarshal([]byte(plan.Stdout), &p); err != nil || plan.ExitCode != 0 || len(p.Errors) > 0 {
		t.Fatalf("plan --live as the tenant: exit %d, %v, errors %q\n%s", plan.ExitCode, err, p.Errors, plan)
	}
	e.f.requireNoWrites(t, "status and plan --live", marks)
}

// noChange: an apply with no change, as the tenant, sends no write at
// all (not even a Lease).
func (e *tenantE2E) noChange(t *testing.T) {
	marks := e.f.auditMarks(t)
	e.mustApply(t, e.ci, v1alpha1.ApplyUnchanged, asTenant...)
	e.f.requireNoWrites(t, "a no-change apply as the tenant", marks)
}

// rolloutAndRollback: a change rolls out wave by wave (each baked) as the
// tenant; then a change stopped after the canary (--until-wave) is rolled
// back by hand (apply --rollback), as the tenant.
func (e *tenantE2E) rolloutAndRollback(t *testing.T) {
	v := e.change(t)
	r := e.mustApply(t, e.ci, v1alpha1.ApplyApplied, asTenant...)
	if len(r.report.Waves) != 2 || r.report.Waves[0].Status != v1alpha1.WaveApplied || r.report.Waves[1].Status != v1alpha1.WaveApplied {
		t.Errorf("waves %+v, want canary and rest applied", r.report.Waves)
	}
	if got := e.liveValues(t); got != [2]string{v, v} {
		t.Fatalf("values %v after the rollout, want %s in both", got, v)
	}
	paused := e.change(t)
	r = e.apply(t, e.ci, append([]string{"--until-wave", "canary"}, asTenant...)...)
	if r.ExitCode != 0 || !r.report.Paused {
		t.Fatalf("--until-wave canary: exit %d, paused %v\n%s", r.ExitCode, r.report.Paused, r.result)
	}
	if got := e.liveValues(t); got != [2]string{paused, v} {
		t.Fatalf("values %v after the canary, want %s then %s", got, paused, v)
	}
	rb := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, e.bin, append([]string{"apply", "--rollback", "--out", e.out, "--kubeconfig", e.ci, "-o", "json"}, asTenant...)...)
	if rb.ExitCode != 0 {
		t.Fatalf("apply --rollback as the tenant:\n%s", rb)
	}
	if got := e.liveValues(t); got != [2]string{v, v} {
		t.Errorf("values %v after the rollback, want %s in both", got, v)
	}
	e.setValue(t, v) // the package as the clusters hold it again
}

// setValue sets both settings ConfigMaps of the package to v.
func (e *tenantE2E) setValue(t testing.TB, v string) {
	t.Helper()
	e.setValueIn(t, v, "web.yaml", "data.yaml")
}

// setValueIn sets the settings ConfigMap of each file to v.
func (e *tenantE2E) setValueIn(t testing.TB, v string, files ...string) {
	t.Helper()
	for _, file := range files {
		p := filepath.Join(e.pkg, file)
		text := clusterReadFile(t, p)
		i := strings.Index(text, "  value: ")
		end := strings.Index(text[i:], "\n")
		writeFile(t, p, text[:i]+"  value: \""+v+"\""+text[i+end:])
	}
}

// startApply starts apply -o json in the background.
func (e *tenantE2E) startApply(t testing.TB, kubeconfig string, args ...string) *runningApply {
	t.Helper()
	args = append([]string{"apply", e.pkg, "--out", e.out, "--config", e.config, "--kubeconfig", kubeconfig, "-o", "json", "--reconcile-timeout", "2m"}, args...)
	dir := t.TempDir()
	r := &runningApply{job: "tenant", progress: filepath.Join(dir, "stderr"), report: filepath.Join(dir, "stdout")}
	stderr, err := os.Create(r.progress)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	stdout, err := os.Create(r.report)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	r.cmd = exec.Command(e.bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = stdout, stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// forceUnlock: a run killed during the canary's bake leaves both locks
// held; apply --force-unlock, as the tenant, breaks each, and the rerun
// completes at once (long before the locks would expire).
func (e *tenantE2E) forceUnlock(t *testing.T) {
	v := e.change(t)
	run := e.startApply(t, e.ci, asTenant...)
	waitFor(t, run.cmd, run.progress, "wave canary: baking")
	run.kill(t)
	for _, ctx := range e.f.names {
		if l, _ := e.tenantLease(t, ctx); l.Holder == "" {
			t.Fatalf("%s: the killed run left no lock", ctx)
		}
		res := runCmd(t, cmdSpec{}, e.bin, append([]string{"apply", "--force-unlock", ctx, "--out", e.out, "--kubeconfig", e.ci}, asTenant...)...)
		if res.ExitCode != 0 || !strings.Contains(res.Stderr, fmt.Sprintf("context %q: broke the lock of", ctx)) {
			t.Fatalf("--force-unlock %s as the tenant:\n%s", ctx, res)
		}
	}
	// The canary already holds the change (killed during its bake).
	r := e.apply(t, e.ci, asTenant...)
	if r.ExitCode != 0 {
		t.Fatalf("the rerun after --force-unlock:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyUnchanged, "B": v1alpha1.ApplyApplied})
	if got := e.liveValues(t); got != [2]string{v, v} {
		t.Errorf("values %v after the rerun, want %s in both", got, v)
	}
}

// kubeconfigAs: the same rights through a kubeconfig user entry's as: (no
// flag): a no-change apply writes nothing, a change applies as the
// tenant, status reads every context.
func (e *tenantE2E) kubeconfigAs(t *testing.T) {
	kc := e.f.kubeconfig(t, "platform-ci-as", e.f.contexts("platform-ci-as-tenant",
		asUser(tokenUser(e.f.auth.Grant(rbacExamplePlatform, nil, 0)), rbacExampleUser)))
	marks := e.f.auditMarks(t)
	e.mustApply(t, kc, v1alpha1.ApplyUnchanged)
	e.f.requireNoWrites(t, "a no-change apply through the kubeconfig's as:", marks)
	v := e.change(t)
	marks = e.f.auditMarks(t)
	e.mustApply(t, kc, v1alpha1.ApplyApplied)
	requireWritesAs(t, "an apply through the kubeconfig's as:", e.f.writesSince(t, marks), rbacExamplePlatform, rbacExampleUser)
	if got := e.liveValues(t); got != [2]string{v, v} {
		t.Errorf("values %v, want %s in both", got, v)
	}
	for _, ctx := range e.f.names {
		if _, obj := e.tenantLease(t, ctx); clusterAnnotation(obj, "shardrouter.dev/applied-as") != rbacExampleUser {
			t.Errorf("%s: the Lease does not record the kubeconfig's as:", ctx)
		}
	}
	mustRun(t, cmdSpec{}, e.bin, "status", e.out, "--kubeconfig", kc, "--detailed-exitcode")
}

// tenantKubeconfig is a kubeconfig of the tenant's own identity: context A
// as user entry tenant-a (entryA), B as tenant-b (entryB).
func (e *tenantE2E) tenantKubeconfig(t testing.TB, name, entryA, entryB string) string {
	t.Helper()
	return e.f.kubeconfig(t, name, []kubeContext{{name: "A", cluster: "A", user: "tenant-a", entry: entryA}, {name: "B", cluster: "B", user: "tenant-b", entry: entryB}})
}

// execTokens: the tenant's own identity through an exec plugin whose
// tokens live 3 s, far less than a rollout's bakes (10 s per wave): with
// an expirationTimestamp (client-go runs the plugin again once it has
// passed) and without one (the cluster's 401 is the first sign: the
// plugin runs again and the request is sent again), the rollout completes,
// on many tokens.
func (e *tenantE2E) execTokens(t *testing.T) {
	for _, withExpiry := range []bool{true, false} {
		t.Run(fmt.Sprintf("expirationTimestamp=%v", withExpiry), func(t *testing.T) {
			entry := e.f.auth.execUser(t, rbacExampleUser, 3*time.Second, withExpiry)
			kc := e.tenantKubeconfig(t, fmt.Sprintf("exec-%v", withExpiry), entry, entry)
			issued := e.f.auth.Issued(rbacExampleUser)
			v := e.change(t)
			r := e.mustApply(t, kc, v1alpha1.ApplyApplied)
			if got := e.liveValues(t); got != [2]string{v, v} {
				t.Errorf("values %v, want %s in both", got, v)
			}
			n := e.f.auth.Issued(rbacExampleUser) - issued
			t.Logf("the rollout took %d tokens of 3 s (%s)", n, r.Cmd)
			// kube-apiserver keeps a good answer for a token 10 s: a token
			// of 3 s serves up to 10 s; the bakes alone last 20 s.
			if n < 2 {
				t.Errorf("the rollout took %d token(s) of 3 s, want new ones during its 20 s of bakes", n)
			}
			if strings.Contains(r.Stderr, "credentials") {
				t.Errorf("progress mentions credentials:\n%s", r.Stderr)
			}
		})
	}
}

// refusedBeforeAnyWrite runs apply with kubeconfig and a change: it must
// be refused, its one error starting with want, with no write to any
// cluster (not even a lock); plan --live and apply --dry-run say the same.
func (e *tenantE2E) refusedBeforeAnyWrite(t *testing.T, kubeconfig, want string, args ...string) {
	t.Helper()
	v := e.change(t)
	before := e.liveValues(t)
	marks := e.f.auditMarks(t)
	r := e.apply(t, kubeconfig, args...)
	if r.ExitCode != 1 || len(r.report.Errors) != 1 || !strings.HasPrefix(r.report.Errors[0], want) {
		t.Errorf("apply: exit %d, errors %q; want 1 and one error %q", r.ExitCode, r.report.Errors, want)
	}
	clusterMentions(t, "the refusal", r.Stderr, want)
	for _, c := range r.report.Contexts {
		if c.Applied != 0 {
			t.Errorf("context %s: %d applied, want none", c.Name, c.Applied)
		}
	}
	t.Logf("refused: %s", r.report.Errors)
	dry := e.apply(t, kubeconfig, append([]string{"--dry-run"}, args...)...)
	if dry.ExitCode != 1 || !slices.ContainsFunc(dry.report.Errors, func(s string) bool { return strings.HasPrefix(s, want) }) {
		t.Errorf("apply --dry-run: exit %d, errors %q; want 1 and %q", dry.ExitCode, dry.report.Errors, want)
	}
	plan := runCmd(t, cmdSpec{}, e.bin, append([]string{"plan", e.pkg, "--previous", e.out, "--config", e.config, "--live", "--kubeconfig", kubeconfig, "-o", "json"}, args...)...)
	var p v1alpha1.SplitPlan
	if err := json.Unmarshal([]byte(plan.Stdout), &p); err != nil || plan.ExitCode != 1 || !slices.ContainsFunc(p.Errors, func(s string) bool { return strings.HasPrefix(s, want) }) {
		t.Errorf("plan --live: exit %d, %v, errors %q; want 1 and %q", plan.ExitCode, err, p.Errors, want)
	}
	e.f.requireNoWrites(t, "the refused apply, its dry run and plan --live", marks)
	if got := e.liveValues(t); got != before || got[0] == v {
		t.Errorf("values %v after the refusal, want %v", got, before)
	}
	e.setValue(t, before[0])
}

// laterWaveRejected: the canary's credentials work, the later wave's
// token was revoked: the run is refused before any write, naming B, its
// kubeconfig user entry and the 401.
func (e *tenantE2E) laterWaveRejected(t *testing.T) {
	revoked := e.f.auth.Grant(rbacExampleUser, nil, 0)
	e.f.auth.Revoke(revoked)
	kc := e.tenantKubeconfig(t, "b-revoked", tokenUser(e.f.auth.Grant(rbacExampleUser, nil, 0)), tokenUser(revoked))
	e.refusedBeforeAnyWrite(t, kc, `context "B": kubeconfig user "tenant-b": credentials rejected (401), also once read again: found before any write`)
}

// missingPlugin: the later wave's kubeconfig user entry runs an exec
// plugin that is not installed: refused before any write, naming it.
func (e *tenantE2E) missingPlugin(t *testing.T) {
	plugin := filepath.Join(e.f.dir, "bin", "gke-gcloud-auth-plugin")
	kc := e.tenantKubeconfig(t, "b-no-plugin", tokenUser(e.f.auth.Grant(rbacExampleUser, nil, 0)), execPluginUser(plugin, "unused"))
	e.refusedBeforeAnyWrite(t, kc, fmt.Sprintf(`context "B": kubeconfig user "tenant-b": exec plugin %s: not found: found before any write`, plugin))
}

// revokedDuringBake: the canary's token is revoked during its bake (30 s,
// longer than kube-apiserver's 10 s token cache): the canary fails for its
// credentials (not as lost health), the rollout halts before B, and the
// canary's lock, which the run cannot release, is named with when it
// expires; the rerun with a new token waits for it (--lock-timeout) and
// completes.
func (e *tenantE2E) revokedDuringBake(t *testing.T) {
	slow := filepath.Join(e.f.dir, "platform-slow-canary.yaml")
	writeFile(t, slow, strings.Replace(clusterReadFile(t, e.config), "bakeTime: 10s", "bakeTime: 30s", 1))
	tokenA := e.f.auth.Grant(rbacExampleUser, nil, 0)
	kc := e.tenantKubeconfig(t, "revoked-during-bake", tokenUser(tokenA), tokenUser(e.f.auth.Grant(rbacExampleUser, nil, 0)))
	before := e.liveValues(t)
	v := e.change(t)
	config := e.config
	e.config = slow
	run := e.startApply(t, kc)
	e.config = config
	waitFor(t, run.cmd, run.progress, "wave canary: baking 30s")
	e.f.auth.Revoke(tokenA)
	r := run.wait(t)
	if r.ExitCode != 1 {
		t.Fatalf("the run whose canary token was revoked: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	t.Logf("the canary's error: %s\nthe run's errors: %q", r.report.Contexts[0].Error, r.report.Errors)
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyFailed, "B": v1alpha1.ApplySkipped})
	a := r.report.Contexts[0]
	if !strings.HasPrefix(a.Error, `context "A": kubeconfig user "tenant-a": credentials rejected (401)`) || strings.Contains(a.Error, "health") {
		t.Errorf("A's error %q, want its credentials rejected (and no lost health)", a.Error)
	}
	if got := e.liveValues(t); got != [2]string{v, before[1]} {
		t.Errorf("values %v, want %s in A (applied before its bake), %s in B (never written)", got, v, before[1])
	}
	if !slices.ContainsFunc(r.report.Errors, func(s string) bool {
		return strings.HasPrefix(s, `context "A": releasing its lock: context "A": kubeconfig user "tenant-a": credentials rejected (401)`) &&
			strings.Contains(s, "stays held by this run until it expires at ") && strings.Contains(s, "--lock-timeout")
	}) {
		t.Errorf("errors %q: none names A's lock, left held, and when it expires", r.report.Errors)
	}
	if l, _ := e.tenantLease(t, "A"); l.Holder == "" {
		t.Errorf("A's Lease is free, yet the run could not release it: %+v", l)
	}
	// The rerun changes A again, so it needs A's lock: it waits for the
	// lock the dead credentials left (--lock-timeout) and completes.
	l, _ := e.tenantLease(t, "A")
	v = e.change(t)
	kc = e.tenantKubeconfig(t, "renewed", tokenUser(e.f.auth.Grant(rbacExampleUser, nil, 0)), tokenUser(e.f.auth.Grant(rbacExampleUser, nil, 0)))
	rerun := e.apply(t, kc, "--lock-timeout", "1m")
	if rerun.ExitCode != 0 {
		t.Fatalf("the rerun with new credentials and --lock-timeout:\n%s", rerun.result)
	}
	if time.Now().Before(l.Expires()) {
		t.Errorf("the rerun ended before the lock it had to wait for expired (%s)", l.Expires().Format(time.StampMilli))
	}
	if got := e.liveValues(t); got != [2]string{v, v} {
		t.Errorf("values %v after the rerun, want %s in both", got, v)
	}
}

// asksOnlyWhatChanges: a no-change apply asks the clusters nothing (no
// dry run, no access review), and one changed object costs one dry run in
// its cluster and no request in the other (issue 41's preflight).
func (e *tenantE2E) asksOnlyWhatChanges(t *testing.T) {
	marks := e.f.auditMarks(t)
	e.mustApply(t, e.ci, v1alpha1.ApplyUnchanged, asTenant...)
	for ctx, evs := range e.f.requestsSince(t, marks) {
		if len(evs) > 0 {
			t.Errorf("%s: a no-change apply sent %d request(s) that write or ask: %v", ctx, len(evs), evs)
		}
	}
	before := e.liveValues(t)
	e.setValueIn(t, "b-only", "data.yaml")
	marks = e.f.auditMarks(t)
	r := e.apply(t, e.ci, asTenant...)
	if r.ExitCode != 0 {
		t.Fatalf("one change in B:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyUnchanged, "B": v1alpha1.ApplyApplied})
	asked := e.f.requestsSince(t, marks)
	if len(asked["A"]) > 0 {
		t.Errorf("A, unchanged, was asked or written: %v", asked["A"])
	}
	var dry []auditEvent
	for _, ev := range asked["B"] {
		if strings.Contains(ev.RequestURI, "dryRun=All") {
			dry = append(dry, ev)
		}
	}
	if len(dry) != 1 || !strings.Contains(dry[0].RequestURI, "/namespaces/team-a-data/configmaps/settings") {
		t.Errorf("B: want one dry run, of settings; got %v", dry)
	}
	e.setValueIn(t, before[1], "data.yaml")
	if r := e.apply(t, e.ci, asTenant...); r.ExitCode != 0 {
		t.Fatalf("back to the package:\n%s", r.result)
	}
}

// inventoryGrantedByName: the tenant's Role grants the update of its
// inventories' status by name only (resourceNames), as a platform may: the
// apply goes through (the preflight's question of every name is denied,
// the named one allowed). Naming another inventory instead, the apply is
// refused before any write, with RBAC's answer to the named question.
func (e *tenantE2E) inventoryGrantedByName(t *testing.T) {
	names := map[string]string{}
	for ctx, api := range e.f.api {
		list := api.Get(t, "/apis/kpt.dev/v1alpha1/namespaces/team-a/resourcegroups")
		items, _ := list["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("%s: %d ResourceGroups in team-a, want the tenant's one", ctx, len(items))
		}
		meta, _ := items[0].(map[string]any)["metadata"].(map[string]any)
		names[ctx], _ = meta["name"].(string)
	}
	statusRule := func(ctx, granted string) {
		rule := "- apiGroups: [kpt.dev]\n  resources: [resourcegroups/status]\n  verbs: [update]\n"
		if granted != "" {
			rule += "  resourceNames: [" + granted + "]\n"
		}
		api := e.f.api[ctx]
		api.applyYAML(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: shard-router-inventory, namespace: team-a}
rules:
- apiGroups: [kpt.dev]
  resources: [resourcegroups]
  verbs: [get, create, update, delete]
`+rule+`- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update, delete]
`)
		// RBAC takes the Role from its informer: wait until it answers
		// the tenant's questions as the Role now says.
		clusterWait(t, api.proc, "the Role", func() error {
			for _, name := range []string{"", names[ctx]} {
				want := granted == "" || name != "" && name == granted
				if got := api.mayUpdateStatus(t, rbacExampleUser, "team-a", name); got != want {
					return fmt.Errorf("update of resourcegroups/status named %q: allowed %v, want %v", name, got, want)
				}
			}
			return nil
		})
	}
	defer func() {
		for ctx := range e.f.api {
			statusRule(ctx, "")
		}
	}()
	for ctx := range e.f.api {
		statusRule(ctx, names[ctx])
	}
	v := e.change(t)
	e.mustApply(t, e.ci, v1alpha1.ApplyApplied, asTenant...)
	if got := e.liveValues(t); got != [2]string{v, v} {
		t.Errorf("values %v after the apply with the inventories granted by name, want %s in both", got, v)
	}
	statusRule("B", "another-inventory")
	e.refusedBeforeAnyWrite(t, e.ci, fmt.Sprintf(`context "B": update ResourceGroup.kpt.dev team-a/%s refused: kpt writes the inventory with update of its status; RBAC does not allow it`, names["B"]), asTenant...)
}

// withExtra runs refusedBeforeAnyWrite with a file added to the tenant's
// package, then takes it away.
func (e *tenantE2E) withExtra(t *testing.T, file, content, want string) {
	t.Helper()
	p := filepath.Join(e.pkg, file)
	writeFile(t, p, content)
	e.refusedBeforeAnyWrite(t, e.ci, want, asTenant...)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// otherTenantRefused: a ConfigMap in another tenant's namespace (team-b,
// made from the same RBAC package) is refused before any write, with
// RBAC's own words, a change for both clusters riding along.
func (e *tenantE2E) otherTenantRefused(t *testing.T) {
	e.f.createTenant(t, tenantSpec{Name: "team-b", User: "team-b-deployer", Inventory: "team-b",
		Namespaces: map[string][]string{"A": {"team-b-web"}, "B": {"team-b-data"}}})
	e.withExtra(t, "intruder.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: intruder\n  namespace: team-b-data\n  labels: {shard: b}\ndata: {value: x}\n",
		`context "B": create ConfigMap team-b-data/intruder refused: configmaps is forbidden: User "`+rbacExampleUser+`" cannot create resource "configmaps" in API group "" in the namespace "team-b-data"`)
}

// clusterRoleBindingRefused: a ClusterRoleBinding, which the tenant's
// rights do not reach, is refused before any write.
func (e *tenantE2E) clusterRoleBindingRefused(t *testing.T) {
	e.withExtra(t, "crb.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: team-a-escalates
  labels: {shard: a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: `+rbacExampleUser+`}]
`, `context "A": create ClusterRoleBinding.rbac.authorization.k8s.io team-a-escalates refused: clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "`+rbacExampleUser+`" cannot create resource "clusterrolebindings"`)
}

// denyLabelled is a ValidatingAdmissionPolicy of A's: no ConfigMap in
// team-a-web may carry the label forbidden, which RBAC alone allows.
const denyLabelled = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-forbidden-configmaps}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [configmaps]
  validations:
  - expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"
    message: "team-a's ConfigMaps may not be labelled forbidden (policy no-forbidden-configmaps)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-forbidden-configmaps}
spec:
  policyName: no-forbidden-configmaps
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: team-a-web}
`

// policyRefused: an object that RBAC allows and A's admission policy
// denies is refused before any write, with the policy's message.
func (e *tenantE2E) policyRefused(t *testing.T) {
	apiA := e.f.api["A"]
	apiA.applyYAML(t, denyLabelled)
	// The policy takes effect once the apiserver has read it.
	probe := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe","namespace":"team-a-web","labels":{"forbidden":"yes"}}}`)
	clusterWait(t, apiA.proc, "the admission policy", func() error {
		code, body, err := apiA.do("POST", "/api/v1/namespaces/team-a-web/configmaps?dryRun=All", "application/json", probe)
		if err != nil || code != 422 && code != 403 {
			return fmt.Errorf("not denied yet: %d %v %s", code, err, body)
		}
		return nil
	})
	e.withExtra(t, "labelled.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labelled\n  namespace: team-a-web\n  labels: {shard: a, forbidden: \"yes\"}\ndata: {value: x}\n",
		`context "A": create ConfigMap team-a-web/labelled refused: configmaps "labelled" is forbidden: ValidatingAdmissionPolicy 'no-forbidden-configmaps' with binding 'no-forbidden-configmaps' denied request: team-a's ConfigMaps may not be labelled forbidden (policy no-forbidden-configmaps)`)
}
