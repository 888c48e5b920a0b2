//go:build e2e

package e2e

// Argo CD's objects as `split --engine argocd` generates them, accepted by
// a real kube-apiserver that serves Argo CD's own CRDs, taken from the
// github.com/argoproj/argo-cd/v3 module (manifests/crds). Argo CD's
// controllers do not build with this Go, so no Argo CD runs: the proof is
// that the API accepts the ApplicationSet and the Applications its list
// generator yields. Config Sync's module is not served, so its RootSync
// CRD cannot be had here and the RootSyncs are not validated by an API.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/testenv"
)

// argoCDVersion is the newest argo-cd/v3 release whose go.mod this Go
// accepts (v3.6 declares go 1.27).
const argoCDVersion = "v3.5.7"

// argoCDCRDs returns the module's manifests/crds directory.
func argoCDCRDs(t testing.TB) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v3@"+argoCDVersion)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		testenv.Missing(t, "github.com/argoproj/argo-cd/v3@"+argoCDVersion, "go mod download it: "+mod.Error+" "+errString(err))
	}
	return filepath.Join(mod.Dir, "manifests", "crds")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestArgoCDObjectsAcceptedByArgoCRDs(t *testing.T) {
	crds := argoCDCRDs(t)
	bin := shardRouter(t)
	dir := t.TempDir()
	creds := clusterNewCreds(t, dir)
	etcd := clusterStartEtcd(t, dir, "etcd-argo")
	etcd.waitReady(t)
	api := clusterStartAPIServer(t, dir, "argo", creds, etcd, "")
	api.waitReady(t)
	for _, f := range []string{"application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"} {
		api.applyYAML(t, clusterReadFile(t, filepath.Join(crds, f)))
	}
	for _, n := range []string{"applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io"} {
		api.waitEstablished(t, n)
	}
	api.applyYAML(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"argocd"}}`)

	pkg := filepath.Join(dir, "pkg")
	copyTree(t, filepath.Join(repoRoot(t), "test", "e2e", "testdata", "cluster"), pkg)
	cfg := strings.ReplaceAll(clusterReadFile(t, filepath.Join(pkg, "shards.yaml")), "EVENTS_ETCD_URL", "http://127.0.0.1:2379")
	cfg = strings.Replace(cfg, "  - name: A\n", "  - name: A\n    labels: {tier: canary}\n", 1)
	cfg = strings.Replace(cfg, "  - name: B\n", "  - name: B\n    labels: {tier: prod}\n", 1)
	cfg += "  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {tier: canary}}\n    - name: prod\n      contexts: {matchLabels: {tier: prod}}\n      maxParallel: 1\n"
	writeFile(t, filepath.Join(pkg, "shards.yaml"), cfg)
	out := filepath.Join(dir, "out")
	if res := runCmd(t, cmdSpec{}, bin, "split", pkg, "-o", out, "--engine", "argocd",
		"--gitops-url", "https://git.example.com/fleet.git", "--gitops-path", "clusters"); res.ExitCode != 0 {
		t.Fatalf("split:\n%s", res)
	}
	data := clusterReadFile(t, filepath.Join(out, "_gitops", "argocd", "applicationset.yaml"))
	api.applyYAML(t, data)
	set := api.Get(t, "/apis/argoproj.io/v1alpha1/namespaces/argocd/applicationsets/cluster")
	if set == nil {
		t.Fatal("the ApplicationSet was not stored")
	}
	spec, _ := set["spec"].(map[string]any)
	strategy, _ := spec["strategy"].(map[string]any)
	if strategy["type"] != "RollingSync" {
		t.Errorf("stored strategy %v, want RollingSync (a field the CRD does not know would be pruned)", strategy)
	}

	// The Applications the list generator yields: the template executed
	// with each element (goTemplate, missingkey=error, as Argo CD does).
	nodes, err := kio.FromBytes([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := nodes[0].Pipe(yaml.Lookup("spec", "template"))
	if err != nil || tmpl == nil {
		t.Fatalf("no spec.template: %v", err)
	}
	elems, err := nodes[0].Pipe(yaml.Lookup("spec", "generators", "0", "list", "elements"))
	if err != nil || elems == nil {
		t.Fatalf("no list elements: %v", err)
	}
	list, _ := elems.Elements()
	if len(list) != 2 {
		t.Fatalf("%d elements, want one per context", len(list))
	}
	for _, el := range list {
		vars := map[string]string{}
		_ = el.VisitFields(func(f *yaml.MapNode) error {
			vars[f.Key.YNode().Value] = f.Value.YNode().Value
			return nil
		})
		text, err := tmpl.String()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := template.Must(template.New("app").Option("missingkey=error").Parse(text)).Execute(&b, vars); err != nil {
			t.Fatal(err)
		}
		app, err := yaml.Parse(b.String())
		if err != nil {
			t.Fatal(err)
		}
		_ = app.PipeE(yaml.SetField("apiVersion", yaml.NewScalarRNode("argoproj.io/v1alpha1")))
		_ = app.PipeE(yaml.SetField("kind", yaml.NewScalarRNode("Application")))
		_ = app.PipeE(yaml.Lookup("metadata"), yaml.SetField("namespace", yaml.NewScalarRNode("argocd")))
		s, _ := app.String()
		api.applyYAML(t, s)
		got := api.Get(t, "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/"+app.GetName())
		if got == nil {
			t.Fatalf("Application %s was not stored", app.GetName())
		}
		gs, _ := got["spec"].(map[string]any)
		dest, _ := gs["destination"].(map[string]any)
		if dest["name"] != vars["context"] {
			t.Errorf("Application %s: destination %v, want name %s", app.GetName(), dest, vars["context"])
		}
		labels, _ := got["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["shardrouter.dev/wave"] != vars["wave"] {
			t.Errorf("Application %s: labels %v, want shardrouter.dev/wave=%s", app.GetName(), labels, vars["wave"])
		}
	}
}
