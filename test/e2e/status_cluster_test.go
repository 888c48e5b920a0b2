//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The scenarios of issue 22 on the clusters of TestCluster: shard-router
// status reports each cluster's health and drift against OUT_DIR and the
// live inventories, as the clusters themselves show it.

// status runs shard-router status -o json on dir (default: the split
// output) and decodes the FleetStatus.
func (e *clusterE2E) status(t *testing.T, dir string, args ...string) (*v1alpha1.FleetStatus, result) {
	t.Helper()
	if dir == "" {
		dir = e.out
	}
	args = append([]string{"status", dir, "--kubeconfig", e.kubeconfig, "-o", "json", "--timeout", "1m"}, args...)
	res := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, e.bin, args...)
	var doc v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, res)
	}
	if doc.APIVersion != v1alpha1.APIVersion || doc.Kind != v1alpha1.FleetStatusKind {
		t.Errorf("status -o json: apiVersion %q, kind %q", doc.APIVersion, doc.Kind)
	}
	return &doc, res
}

// statusContext returns one context of a status, failing when absent.
func statusContext(t *testing.T, doc *v1alpha1.FleetStatus, name string) v1alpha1.ContextStatus {
	t.Helper()
	for _, c := range doc.Contexts {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("status has no context %s: %+v", name, doc.Contexts)
	return v1alpha1.ContextStatus{}
}

// statusObject returns one object of a context's status by its key
// (refKey), failing when absent.
func statusObject(t *testing.T, c v1alpha1.ContextStatus, key string) v1alpha1.ObjectStatus {
	t.Helper()
	for _, o := range c.Objects {
		if refKey(o.Group, o.Kind, o.Namespace, o.Name) == key {
			return o
		}
	}
	t.Fatalf("context %s: no object %s in the status", c.Name, key)
	return v1alpha1.ObjectStatus{}
}

// attention lists "key status inventory drift" for every object of a
// context that needs attention.
func attention(c v1alpha1.ContextStatus) []string {
	var out []string
	for _, o := range c.Objects {
		if o.NeedsAttention() {
			out = append(out, refKey(o.Group, o.Kind, o.Namespace, o.Name)+" "+o.Status+" "+o.Inventory+" "+strings.Join(o.Drift, ",")+o.Error)
		}
	}
	return out
}

// statusInSync: after an apply, every context is reachable, its inventory
// found, and every object of its package applied, Current and in sync,
// exactly the objects of OUT/<ctx>; exit 0 even with --detailed-exitcode.
// The clusters hold defaulted fields the packages never set (a Service's
// clusterIP, a Deployment's strategy and container defaults): no drift.
func (e *clusterE2E) statusInSync(t *testing.T) {
	for _, ctx := range e.names {
		e.apply(t, ctx).requireClean(t, ctx)
	}
	doc, res := e.status(t, "", "--detailed-exitcode")
	if res.ExitCode != 0 {
		t.Fatalf("status after apply: exit %d, want 0\n%s", res.ExitCode, res)
	}
	for _, name := range e.names {
		c := statusContext(t, doc, name)
		if !c.Reachable || c.Error != "" || c.Inventory.State != v1alpha1.InventoryFound || !c.InSync() {
			t.Errorf("%s: reachable %v, error %q, inventory %+v, needing attention %v", name, c.Reachable, c.Error, c.Inventory, attention(c))
		}
		var want, got []string
		for _, it := range e.items(t, filepath.Join(e.out, name)) {
			want = append(want, it.key())
		}
		for _, o := range c.Objects {
			got = append(got, refKey(o.Group, o.Kind, o.Namespace, o.Name))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: status lists\n  %v\nOUT/%s holds\n  %v", name, got, name, want)
		}
	}
	// The defaults are there, and were not counted as drift.
	a := e.clusters["A"].API
	svc := a.Get(t, "/api/v1/namespaces/alpha/services/web")
	if spec, _ := svc["spec"].(map[string]any); spec["clusterIP"] == nil || spec["clusterIP"] == "" {
		t.Errorf("Service alpha/web has no clusterIP: %v", spec)
	}
	dep := a.Get(t, "/apis/apps/v1/namespaces/alpha/deployments/web")
	if spec, _ := dep["spec"].(map[string]any); spec["strategy"] == nil || spec["revisionHistoryLimit"] == nil {
		t.Errorf("Deployment alpha/web has no defaulted strategy and revisionHistoryLimit: %v", spec)
	}
	if t.Failed() {
		return
	}
	// Markdown and the table say the same.
	res = runCmd(t, cmdSpec{}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig, "-o", "markdown")
	clusterMentions(t, "status -o markdown", res.Stdout, "**2 of 2 contexts in sync.**", "| `A` | in sync | found |", "| `B` | in sync | found |")
	res = runCmd(t, cmdSpec{}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig, "--context", "B")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "1 of 1 contexts in sync.") || strings.Contains(res.Stdout, "\nA ") {
		t.Errorf("status --context B (table): exit %d\n%s", res.ExitCode, res)
	}
}

// statusDrift: a ConfigMap's data edited through the API, a Deployment's
// image changed by a strategic merge patch, a Service's label edited, and
// a Secret deleted. Status names exactly those fields (not the defaults
// the dry-run apply fills in around them) and the Secret NotFound; exit 2
// with --detailed-exitcode, 0 without.
func (e *clusterE2E) statusDrift(t *testing.T) {
	a := e.clusters["A"].API
	a.MergePatch(t, "/api/v1/namespaces/alpha/configmaps/web-config", map[string]any{"data": map[string]any{"shard": "edited"}})
	clusterPatch(t, a, "/apis/apps/v1/namespaces/alpha/deployments/web", "application/strategic-merge-patch+json",
		`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.invalid/web:edited"}]}}}}`)
	a.MergePatch(t, "/api/v1/namespaces/alpha/services/web", map[string]any{"spec": map[string]any{"selector": map[string]any{"app": "edited"}}})
	clusterDelete(t, a, "/api/v1/namespaces/alpha/secrets/web-secret")

	doc, res := e.status(t, "", "--detailed-exitcode")
	if res.ExitCode != 2 {
		t.Errorf("status --detailed-exitcode with drift: exit %d, want 2\n%s", res.ExitCode, res)
	}
	c := statusContext(t, doc, "A")
	for key, want := range map[string][]string{
		refKey("", "ConfigMap", "alpha", "web-config"): {"data.shard"},
		refKey("apps", "Deployment", "alpha", "web"):   {"spec.template.spec.containers[0].image"},
		refKey("", "Service", "alpha", "web"):          {"spec.selector.app"},
	} {
		if o := statusObject(t, c, key); !slices.Equal(o.Drift, want) || o.Error != "" {
			t.Errorf("A %s: drift %q (error %q), want %q", key, o.Drift, o.Error, want)
		}
	}
	if o := statusObject(t, c, refKey("", "Secret", "alpha", "web-secret")); o.Status != v1alpha1.StatusNotFound || len(o.Drift) > 0 {
		t.Errorf("A deleted Secret alpha/web-secret: status %s, drift %v; want NotFound, no drift", o.Status, o.Drift)
	}
	if got := attention(c); len(got) != 4 {
		t.Errorf("A: %d objects need attention, want the 4 edited or deleted:\n%s", len(got), strings.Join(got, "\n"))
	}
	if b := statusContext(t, doc, "B"); !b.InSync() {
		t.Errorf("B is not in sync: %v", attention(b))
	}
	if _, res := e.status(t, ""); res.ExitCode != 0 {
		t.Errorf("status without --detailed-exitcode: exit %d, want 0\n%s", res.ExitCode, res)
	}
	res = runCmd(t, cmdSpec{}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig)
	t.Logf("shard-router status (table):\n%s", res.Stdout)
	clusterMentions(t, "status (table)", res.Stdout, "Needs attention in A (4):", "data.shard", "Secret alpha/web-secret", "NotFound")
	t.Run("HTML", e.statusPage)
	// An apply puts everything back.
	e.apply(t, "A")
	if doc, res := e.status(t, "", "--detailed-exitcode"); res.ExitCode != 0 {
		t.Errorf("status after re-applying A: exit %d, want 0: %v\n%s", res.ExitCode, attention(statusContext(t, doc, "A")), res)
	}
}

// statusPage: status -o html of the drifted clusters, in Chromium, shows
// what status -o json says (see TestHTMLPagesInChromium).
func (e *clusterE2E) statusPage(t *testing.T) {
	browser := startChromium(t)
	dir := t.TempDir()
	for _, format := range []string{"html", "json"} {
		res := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig, "-o", format, "--timeout", "1m")
		if res.ExitCode != 0 {
			t.Fatalf("status -o %s: %s", format, res)
		}
		writeFile(t, filepath.Join(dir, "status."+format), res.Stdout)
	}
	doc := clusterReadFile(t, filepath.Join(dir, "status.json"))
	page := loadPage(t, browser, filepath.Join(dir, "status.html"), filepath.Join(screenshotDir(t), "status-cluster-drift"))
	checkStatusPage(t, page, []byte(doc))
	if !strings.Contains(page.Visible, "data.shard") || !strings.Contains(page.Visible, "A: 4 object(s) need attention") {
		t.Errorf("the page does not show A's 4 objects that need attention and the drifted field:\n%s", page.Visible)
	}
}

// statusInventory: an object the live inventory holds that OUT_DIR lacks
// (applied from a copy of OUT/B with one more ConfigMap) is reported as
// extra, and an object of OUT_DIR the inventory lacks as not applied.
func (e *clusterE2E) statusInventory(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, e.out, dir)
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: status-extra\n  namespace: charlie\ndata:\n  k: v\n"
	writeFile(t, filepath.Join(dir, "B", "status-extra.yaml"), extra)
	res := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, e.kpt, "live", "apply", filepath.Join(dir, "B"),
		"--context", "B", "--kubeconfig", e.kubeconfig, "--reconcile-timeout", "3m")
	if res.ExitCode != 0 {
		t.Fatalf("kpt live apply of OUT/B with one more ConfigMap:\n%s", res)
	}
	extraKey := refKey("", "ConfigMap", "charlie", "status-extra")
	doc, res := e.status(t, "", "--detailed-exitcode")
	if res.ExitCode != 2 {
		t.Errorf("status with an extra object: exit %d, want 2\n%s", res.ExitCode, res)
	}
	b := statusContext(t, doc, "B")
	if o := statusObject(t, b, extraKey); o.Inventory != v1alpha1.ObjectExtra || o.Status != v1alpha1.StatusCurrent {
		t.Errorf("B %s: inventory %s, status %s; want extra, Current", extraKey, o.Inventory, o.Status)
	}
	if got := attention(b); len(got) != 1 {
		t.Errorf("B: want only the extra object to need attention: %v", got)
	}
	// Against the copy, the same object is in sync, and a ConfigMap never
	// applied is reported as such.
	writeFile(t, filepath.Join(dir, "B", "status-new.yaml"), strings.ReplaceAll(extra, "status-extra", "status-new"))
	doc, _ = e.status(t, dir, "--context", "B")
	b = statusContext(t, doc, "B")
	if o := statusObject(t, b, extraKey); o.NeedsAttention() {
		t.Errorf("B %s against the package that holds it: %+v", extraKey, o)
	}
	if o := statusObject(t, b, refKey("", "ConfigMap", "charlie", "status-new")); o.Inventory != v1alpha1.ObjectNotApplied || o.Status != v1alpha1.StatusNotFound {
		t.Errorf("B ConfigMap charlie/status-new: inventory %s, status %s; want notApplied, NotFound", o.Inventory, o.Status)
	}
	// A package whose inventory the cluster lacks (another ResourceGroup
	// name): its inventory is missing, every object not applied.
	rgPath := filepath.Join(dir, "B", "resourcegroup.yaml")
	rg := clusterReadFile(t, rgPath)
	renamed := regexp.MustCompile(`(?m)^  name: .*$`).ReplaceAllString(rg, "  name: status-missing-inventory")
	if renamed == rg {
		t.Fatalf("%s has no name to change:\n%s", rgPath, rg)
	}
	writeFile(t, rgPath, renamed)
	doc, res = e.status(t, dir, "--context", "B", "--detailed-exitcode")
	b = statusContext(t, doc, "B")
	if res.ExitCode != 2 || !b.Reachable || b.Inventory.State != v1alpha1.InventoryMissing || b.Inventory.Name != "status-missing-inventory" {
		t.Errorf("B with a missing inventory: exit %d (want 2), reachable %v, inventory %+v\n%s", res.ExitCode, b.Reachable, b.Inventory, res)
	}
	for _, o := range b.Objects {
		if o.Inventory != v1alpha1.ObjectNotApplied {
			t.Errorf("B %s with a missing inventory: inventory %s, want notApplied", o.ObjectRef, o.Inventory)
		}
	}
	// Applying OUT/B prunes the extra object.
	e.apply(t, "B")
	if _, res := e.status(t, "", "--detailed-exitcode"); res.ExitCode != 0 {
		t.Errorf("status after re-applying B: exit %d, want 0\n%s", res.ExitCode, res)
	}
}

// statusUnreachable: with B's kube-apiserver stopped, B is reported
// unreachable and A in full; exit 1, whatever --detailed-exitcode says.
// B is started again afterwards.
func (e *clusterE2E) statusUnreachable(t *testing.T) {
	apiB := e.clusters["B"].API
	apiB.proc.stop()
	defer apiB.Restart(t, "")
	for _, extra := range [][]string{nil, {"--detailed-exitcode"}} {
		doc, res := e.status(t, "", extra...)
		if res.ExitCode != 1 {
			t.Errorf("status %v with B stopped: exit %d, want 1\n%s", extra, res.ExitCode, res)
		}
		b := statusContext(t, doc, "B")
		if b.Reachable || b.Error == "" || b.Inventory.State != v1alpha1.InventoryUnknown {
			t.Errorf("B stopped: reachable %v, error %q, inventory %s", b.Reachable, b.Error, b.Inventory.State)
		}
		a := statusContext(t, doc, "A")
		if !a.InSync() || len(a.Objects) != len(e.items(t, filepath.Join(e.out, "A"))) {
			t.Errorf("A with B stopped: in sync %v, %d objects: %v", a.InSync(), len(a.Objects), attention(a))
		}
	}
	res := runCmd(t, cmdSpec{}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig)
	t.Logf("shard-router status (table) with B stopped:\n%s", res.Stdout)
	clusterMentions(t, "status (table) with B stopped", res.Stdout, "unreachable", "B: unreachable: ")
	if res.ExitCode != 1 {
		t.Errorf("status (table) with B stopped: exit %d, want 1", res.ExitCode)
	}
}

// clusterPatch sends a patch of the given content type.
func clusterPatch(t testing.TB, a *clusterAPIServer, path, contentType, patch string) {
	t.Helper()
	code, body, err := a.do("PATCH", path, contentType, []byte(patch))
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s: PATCH %s: %d %v: %s", a.Name, path, code, err, body)
	}
}

// clusterDelete deletes an object and waits until it is gone.
func clusterDelete(t testing.TB, a *clusterAPIServer, path string) {
	t.Helper()
	code, body, err := a.do("DELETE", path, "", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s: DELETE %s: %d %v: %s", a.Name, path, code, err, body)
	}
	clusterWait(t, a.proc, "deleted "+path, func() error {
		if a.Get(t, path) != nil {
			return errors.New("still there")
		}
		return nil
	})
}
