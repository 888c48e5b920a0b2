//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// TestPreflight proves that every cluster is asked before any write (issue
// 41), on two real clusters whose own RBAC and ValidatingAdmissionPolicy
// answer: a tenant, impersonated through its kubeconfig (as:), applies a
// package of its own; then, in turn, an object in another team's
// namespace, a ClusterRoleBinding and an object a policy denies are
// refused before any write in either cluster (audit logs), each named with
// the cluster's own reason, and plan --live and apply --dry-run show the
// same refusals. A no-change apply sends no request that writes or
// dry-runs; one changed object costs one dry run.
func TestPreflight(t *testing.T) {
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kpt"} {
		toolPath(t, tool)
	}
	p := startStrategyFleet(t)
	p.tenantSetup(t)
	runSteps(t, []clusterStep{
		{"TenantApplies", p.tenantApplies},
		{"NoChangeAsksNothing", p.noChangeAsksNothing},
		{"OneChangeOneDryRun", p.oneChangeOneDryRun},
		{"AnotherTeamsNamespaceRefused", p.otherNamespaceRefused},
		{"ClusterRoleBindingRefused", p.clusterRoleBindingRefused},
		{"AdmissionPolicyRefused", p.policyRefused},
	})
}

// strategyE2E is two clusters, A and B, with an admin kubeconfig and a
// tenant's (the admin's token, impersonating tenant-a).
type strategyE2E struct {
	dir string
	e   *clusterE2E
	// tenant applies the tenant's package as tenant-a.
	tenant *applyE2E
}

func startStrategyFleet(t *testing.T) *strategyE2E {
	t.Helper()
	start := time.Now()
	p := &strategyE2E{dir: t.TempDir()}
	creds := clusterNewCreds(t, p.dir)
	api := clusterStartFleet(t, p.dir, creds, "A", "B")
	p.e = &clusterE2E{bin: shardRouter(t), kpt: toolPath(t, "kpt"), names: []string{"A", "B"},
		kubeconfig: filepath.Join(p.dir, "kubeconfig"),
		clusters:   map[string]*clusterState{"A": {Name: "A", API: api["A"]}, "B": {Name: "B", API: api["B"]}}}
	clusterWriteKubeconfig(t, p.e.kubeconfig, creds.Token, api["A"], api["B"])
	t.Logf("clusters ready after %s", time.Since(start).Round(time.Second))
	return p
}

// impersonating writes a copy of kubeconfig whose users impersonate user.
func impersonating(t testing.TB, kubeconfig, path, user string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		u.Impersonate = user
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// tenantRBAC is what the platform grants tenant-a in each cluster: admin
// in team-a, ResourceGroups and Leases there (its inventories), reads of
// its Namespace, kube-system and kpt's ResourceGroup CRD.
const tenantRBAC = `apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-a-admin, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant-a}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant-a-inventory, namespace: team-a}
rules:
- apiGroups: [kpt.dev]
  resources: [resourcegroups, resourcegroups/status]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-a-inventory, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant-a-inventory}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant-a}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tenant-a-reads}
rules:
- apiGroups: [""]
  resources: [namespaces]
  resourceNames: [team-a, kube-system]
  verbs: [get]
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  resourceNames: [resourcegroups.kpt.dev]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tenant-a-reads}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tenant-a-reads}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant-a}]
`

// tenantPackage is tenant-a's package: ConfigMaps in team-a, routed by
// their own label, with inventories in team-a.
func tenantPackage(t testing.TB, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: tenant-a\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n")
	writeFile(t, filepath.Join(dir, "shards.yaml"), `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  contexts:
  - name: A
    resourceSelector: {matchLabels: {preflight.e2e.shardrouter.dev/shard: a}}
    inventory: {namespace: team-a}
  - name: B
    resourceSelector: {matchLabels: {preflight.e2e.shardrouter.dev/shard: b}}
    inventory: {namespace: team-a}
`)
	var b strings.Builder
	for _, shard := range []string{"a", "b"} {
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-%s%d\n  namespace: team-a\n  labels: {preflight.e2e.shardrouter.dev/shard: %s}\ndata:\n  value: \"v1\"\n", shard, i, shard)
		}
	}
	writeFile(t, filepath.Join(dir, "settings.yaml"), b.String())
}

// tenantSetup grants tenant-a its rights in both clusters, installs kpt's
// ResourceGroup CRD (the platform's job), and writes the tenant's package
// and kubeconfig.
func (p *strategyE2E) tenantSetup(t *testing.T) {
	for _, name := range p.e.names {
		api := p.e.clusters[name].API
		api.applyYAML(t, tenantRBAC)
		mustRun(t, cmdSpec{}, p.e.kpt, "live", "install-resource-group", "--kubeconfig", p.e.kubeconfig, "--context", name)
	}
	te := *p.e
	te.kubeconfig = filepath.Join(p.dir, "tenant-a.kubeconfig")
	impersonating(t, p.e.kubeconfig, te.kubeconfig, "tenant-a")
	p.tenant = &applyE2E{e: &te, pkg: filepath.Join(p.dir, "tenant-pkg"), out: filepath.Join(p.dir, "tenant-out")}
	tenantPackage(t, p.tenant.pkg)
	if err := os.MkdirAll(p.tenant.out, 0o755); err != nil {
		t.Fatal(err)
	}
}

// requestsSince are the requests that write or ask (dry runs, access
// reviews) each cluster received since marks.
func (a *applyE2E) requestsSince(t testing.TB, marks map[string]int64) map[string][]auditEvent {
	t.Helper()
	out := map[string][]auditEvent{}
	for _, name := range a.e.names {
		out[name] = a.e.clusters[name].API.requestsSince(t, marks[name])
	}
	return out
}

// dryRuns are the dry runs of evs.
func dryRuns(evs []auditEvent) []auditEvent {
	var out []auditEvent
	for _, e := range evs {
		if strings.Contains(e.RequestURI, "dryRun=All") {
			out = append(out, e)
		}
	}
	return out
}

func (p *strategyE2E) tenantApplies(t *testing.T) {
	r := p.tenant.mustApply(t, v1alpha1.ApplyApplied)
	clusterMentions(t, "the tenant's first apply", r.Stderr, "A: asked before any write:", "B: asked before any write:", "3 dry run(s)")
	if r.report.Apply == nil || r.report.Apply.FieldManager != "kubectl" || r.report.Apply.ServerSide {
		t.Errorf("the report does not say kpt's defaults were used: %+v", r.report.Apply)
	}
}

func (p *strategyE2E) noChangeAsksNothing(t *testing.T) {
	marks := p.tenant.auditMarks(t)
	p.tenant.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "a no-change apply (dry runs and access reviews included)", p.tenant.requestsSince(t, marks), p.e.names...)
}

func (p *strategyE2E) oneChangeOneDryRun(t *testing.T) {
	p.tenant.setValue(t, "settings.yaml", "settings-b2", "v2")
	marks := p.tenant.auditMarks(t)
	r := p.tenant.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("one change:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyUnchanged, "B": v1alpha1.ApplyApplied})
	writes := p.tenant.requestsSince(t, marks)
	requireNoWrites(t, "A, unchanged (dry runs and access reviews included)", writes, "A")
	if d := dryRuns(writes["B"]); len(d) != 1 || !strings.Contains(d[0].RequestURI, "/configmaps/settings-b2") {
		t.Errorf("B: want one dry run, of settings-b2; got %v", d)
	}
}

// refusedBeforeAnyWrite applies, expects a refusal naming words, and no
// persisted write in either cluster; plan --live and apply --dry-run say
// the same.
func (p *strategyE2E) refusedBeforeAnyWrite(t *testing.T, words ...string) {
	t.Helper()
	marks, outBefore := p.tenant.auditMarks(t), snapshot(t, p.tenant.out)
	r := p.tenant.apply(t)
	if r.ExitCode != 1 {
		t.Fatalf("want a refusal (exit 1):\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplySkipped, "B": v1alpha1.ApplySkipped})
	t.Logf("refused:\n%s", strings.Join(r.report.Errors, "\n"))
	clusterMentions(t, "the refusal", strings.Join(r.report.Errors, "\n"), words...)
	clusterMentions(t, "apply's stderr", r.Stderr, words...)
	requireNoWrites(t, "a refused run", p.tenant.writesSince(t, marks), p.e.names...)
	clusterSameFiles(t, "a refused apply", outBefore, snapshot(t, p.tenant.out))
	plan := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, p.e.bin, "plan", p.tenant.pkg, "--previous", p.tenant.out, "--live", "--kubeconfig", p.tenant.e.kubeconfig)
	if plan.ExitCode != 1 {
		t.Errorf("plan --live: exit %d, want 1\n%s", plan.ExitCode, plan)
	}
	clusterMentions(t, "plan --live", plan.Stdout, words...)
	dry := p.tenant.apply(t, "--dry-run")
	if dry.ExitCode != 1 {
		t.Errorf("apply --dry-run: exit %d, want 1\n%s", dry.ExitCode, dry.result)
	}
	clusterMentions(t, "apply --dry-run", strings.Join(dry.report.Errors, "\n"), words...)
}

func (p *strategyE2E) otherNamespaceRefused(t *testing.T) {
	// A change for A rides along: it must not be written either.
	p.tenant.setValue(t, "settings.yaml", "settings-a1", "v2")
	extra := filepath.Join(p.tenant.pkg, "intruder.yaml")
	writeFile(t, extra, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: intruder\n  namespace: team-b\n  labels: {preflight.e2e.shardrouter.dev/shard: b}\ndata: {value: x}\n")
	p.refusedBeforeAnyWrite(t, `context "B": create ConfigMap team-b/intruder refused`, `User "tenant-a" cannot create resource "configmaps" in API group "" in the namespace "team-b"`)
	if err := os.Remove(extra); err != nil {
		t.Fatal(err)
	}
}

func (p *strategyE2E) clusterRoleBindingRefused(t *testing.T) {
	extra := filepath.Join(p.tenant.pkg, "crb.yaml")
	writeFile(t, extra, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tenant-a-escalates
  labels: {preflight.e2e.shardrouter.dev/shard: a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant-a}]
`)
	p.refusedBeforeAnyWrite(t, `context "A": create ClusterRoleBinding.rbac.authorization.k8s.io tenant-a-escalates refused`, `User "tenant-a" cannot create resource "clusterrolebindings"`)
	if err := os.Remove(extra); err != nil {
		t.Fatal(err)
	}
}

// denyLabelled is a ValidatingAdmissionPolicy of A's: no ConfigMap in
// team-a may carry the label forbidden, which RBAC alone allows.
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
      matchLabels: {kubernetes.io/metadata.name: team-a}
`

func (p *strategyE2E) policyRefused(t *testing.T) {
	apiA := p.e.clusters["A"].API
	apiA.applyYAML(t, denyLabelled)
	// The policy takes effect once the apiserver has read it: wait for it
	// to deny a dry run.
	probe := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe","namespace":"team-a","labels":{"forbidden":"yes"}}}`)
	clusterWait(t, apiA.proc, "the admission policy", func() error {
		code, body, err := apiA.do("POST", "/api/v1/namespaces/team-a/configmaps?dryRun=All", "application/json", probe)
		if err != nil || code != 422 && code != 403 {
			return fmt.Errorf("not denied yet: %d %v %s", code, err, body)
		}
		return nil
	})
	text := clusterReadFile(t, filepath.Join(p.tenant.pkg, "settings.yaml"))
	labelled := strings.Replace(text, "name: settings-a2\n  namespace: team-a\n  labels: {preflight.e2e.shardrouter.dev/shard: a}",
		"name: settings-a2\n  namespace: team-a\n  labels: {preflight.e2e.shardrouter.dev/shard: a, forbidden: \"yes\"}", 1)
	if labelled == text {
		t.Fatal("settings-a2 not found in the package")
	}
	writeFile(t, filepath.Join(p.tenant.pkg, "settings.yaml"), labelled)
	p.refusedBeforeAnyWrite(t, `context "A": update ConfigMap team-a/settings-a2 refused`, "may not be labelled forbidden (policy no-forbidden-configmaps)")
	writeFile(t, filepath.Join(p.tenant.pkg, "settings.yaml"), text)
	r := p.tenant.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the package without the refused objects:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyUnchanged})
}
