package apply

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeReads is an apiserver enough for load: discovery of the kinds the
// package and its reads use, and the inventory, identity and Lease reads,
// each answering with its status code (200 with an object, or an error).
type fakeReads struct {
	inventory, identity, lease int
	mu                         sync.Mutex
	asked                      map[string]bool
}

func (f *fakeReads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	resources := func(gv string, res ...string) string {
		return fmt.Sprintf(`{"kind":"APIResourceList","groupVersion":%q,"resources":[%s]}`, gv, strings.Join(res, ","))
	}
	resource := func(name, kind string, namespaced bool) string {
		return fmt.Sprintf(`{"name":%q,"singularName":"","kind":%q,"namespaced":%v,"verbs":["get","list","create","update","patch","delete"]}`, name, kind, namespaced)
	}
	status := func(code int, what string) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"%s: refused by the test","code":%d}`, what, code)
	}
	f.mu.Lock()
	f.asked[r.URL.Path] = true
	f.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/api":
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"]}`)
	case p == "/apis":
		fmt.Fprint(w, `{"kind":"APIGroupList","groups":[`+
			`{"name":"kpt.dev","versions":[{"groupVersion":"kpt.dev/v1alpha1","version":"v1alpha1"}],"preferredVersion":{"groupVersion":"kpt.dev/v1alpha1","version":"v1alpha1"}},`+
			`{"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}}]}`)
	case p == "/api/v1":
		fmt.Fprint(w, resources("v1", resource("namespaces", "Namespace", false), resource("configmaps", "ConfigMap", true)))
	case p == "/apis/kpt.dev/v1alpha1":
		fmt.Fprint(w, resources("kpt.dev/v1alpha1", resource("resourcegroups", "ResourceGroup", true)))
	case p == "/apis/coordination.k8s.io/v1":
		fmt.Fprint(w, resources("coordination.k8s.io/v1", resource("leases", "Lease", true)))
	case strings.Contains(p, "/resourcegroups/"):
		status(f.inventory, "inventory")
	case p == "/api/v1/namespaces/kube-system":
		if f.identity == http.StatusOK {
			fmt.Fprint(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","uid":"uid-1"}}`)
			return
		}
		status(f.identity, "identity")
	case strings.Contains(p, "/leases/"):
		status(f.lease, "lease")
	default:
		status(http.StatusNotFound, "not served")
	}
}

// Reading a context at once (identity, inventory and Lease together)
// fails it with the error the same reads one after another would have
// met first: the inventory's, then the identity's, then the Lease's.
func TestLoadFailsWithTheFirstReadsError(t *testing.T) {
	t.Setenv("KUBECACHEDIR", t.TempDir())
	for _, tc := range []struct {
		name                       string
		inventory, identity, lease int
		want, notWant              string
	}{
		{"every read fails", http.StatusInternalServerError, http.StatusForbidden, http.StatusInternalServerError, "reading inventory", "identity"},
		{"identity and Lease fail", http.StatusNotFound, http.StatusForbidden, http.StatusInternalServerError, "reading the cluster's identity", "Lease"},
		{"the Lease fails", http.StatusNotFound, http.StatusOK, http.StatusInternalServerError, "reading Lease", "identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeReads{inventory: tc.inventory, identity: tc.identity, lease: tc.lease, asked: map[string]bool{}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			pkg, out := setup(t)
			kubeconfig := filepath.Join(t.TempDir(), "config")
			data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: %q}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: A\n  context: {cluster: a, user: u}\n- name: B\n  context: {cluster: a, user: u}\n", srv.URL)
			if err := os.WriteFile(kubeconfig, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			report, _ := runApply(t, pkg, out, kubeconfig)
			if report == nil || len(report.Contexts) != 2 {
				t.Fatalf("report %+v", report)
			}
			for _, c := range report.Contexts {
				if !strings.Contains(c.Error, tc.want) || strings.Contains(c.Error, tc.notWant) {
					t.Errorf("context %s: error %q, want the one of %q alone", c.Name, c.Error, tc.want)
				}
				if !strings.Contains(c.Error, fmt.Sprintf("context %q", c.Name)) {
					t.Errorf("context %s: error %q does not name the context", c.Name, c.Error)
				}
			}
		})
	}
}
