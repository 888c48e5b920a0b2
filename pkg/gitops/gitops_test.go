package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func fleet(engine Engine, waves bool) Fleet {
	f := Fleet{Engine: engine, Name: "fleet",
		Source:  Source{URL: "https://git.example.com/fleet.git", Branch: "main", Path: "out", Interval: time.Minute},
		Targets: []Target{{"canary-1", "fleet-canary-1", "canary"}, {"prod-1", "fleet-prod-1", "prod"}, {"prod-2", "fleet-prod-2", "prod"}}}
	if waves {
		f.Waves = []Wave{{Name: "canary", Targets: []int{0}}, {Name: "prod", Targets: []int{1, 2}, MaxParallel: 1}}
	}
	return f
}

func objects(t *testing.T, files []File, p string) []*yaml.RNode {
	t.Helper()
	for _, f := range files {
		if f.Path == p {
			nodes, err := kio.FromBytes(f.Data)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			return nodes
		}
	}
	t.Fatalf("no file %s", p)
	return nil
}

// val is the scalar at path, "" when there is none.
func val(n *yaml.RNode, path ...string) string {
	v, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || v == nil {
		return ""
	}
	return v.YNode().Value
}

func strings_(t *testing.T, n *yaml.RNode, path ...string) []string {
	t.Helper()
	v, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || v == nil {
		return nil
	}
	var out []string
	elems, _ := v.Elements()
	for _, e := range elems {
		out = append(out, yaml.GetValue(e.Field("name").Value))
	}
	return out
}

// Management topology: a wave's Kustomizations depend on every one of the
// wave before; per-cluster files have no dependsOn and no kubeconfig.
func TestFluxWavesAreDependsOn(t *testing.T) {
	files, _, err := Files(fleet(Flux, true))
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string][]string{}
	for _, n := range objects(t, files, FluxManagementFile) {
		if n.GetKind() != "Kustomization" {
			continue
		}
		deps[n.GetName()] = strings_(t, n, "spec", "dependsOn")
		if s, _ := n.GetString("spec.kubeConfig.secretRef.name"); s != n.GetName()+"-kubeconfig" {
			t.Errorf("%s: kubeConfig secret %q", n.GetName(), s)
		}
		if val(n, "spec", "prune") != "true" || val(n, "spec", "wait") != "true" || val(n, "spec", "timeout") == "" {
			t.Errorf("%s: prune %q, wait %q, timeout %q", n.GetName(), val(n, "spec", "prune"), val(n, "spec", "wait"), val(n, "spec", "timeout"))
		}
	}
	want := map[string][]string{"fleet-canary-1": nil, "fleet-prod-1": {"fleet-canary-1"}, "fleet-prod-2": {"fleet-canary-1"}}
	for k, v := range want {
		if !slices.Equal(deps[k], v) {
			t.Errorf("%s dependsOn %v, want %v", k, deps[k], v)
		}
	}
	for _, tg := range fleet(Flux, true).Targets {
		for _, n := range objects(t, files, FluxClusterDir+"/"+tg.Context+".yaml") {
			if n.GetKind() == "Kustomization" {
				if d := strings_(t, n, "spec", "dependsOn"); d != nil {
					t.Errorf("%s per cluster dependsOn %v", tg.Context, d)
				}
				if k, _ := n.Pipe(yaml.Lookup("spec", "kubeConfig")); k != nil {
					t.Errorf("%s per cluster has a kubeConfig", tg.Context)
				}
			}
		}
	}
	files, _, _ = Files(fleet(Flux, false))
	for _, n := range objects(t, files, FluxManagementFile) {
		if d := strings_(t, n, "spec", "dependsOn"); d != nil {
			t.Errorf("without waves %s dependsOn %v", n.GetName(), d)
		}
	}
}

// Argo CD: one RollingSync step per wave, matching the wave label of the
// generated Applications, with the wave's maxParallel.
func TestArgoCDWavesAreRollingSyncSteps(t *testing.T) {
	files, _, err := Files(fleet(ArgoCD, true))
	if err != nil {
		t.Fatal(err)
	}
	set := objects(t, files, ArgoCDFile)[0]
	if s, _ := set.GetString("spec.strategy.type"); s != "RollingSync" {
		t.Fatalf("strategy %q", s)
	}
	steps, _ := set.Pipe(yaml.Lookup("spec", "strategy", "rollingSync", "steps"))
	elems, _ := steps.Elements()
	if len(elems) != 2 {
		t.Fatalf("%d steps, want 2", len(elems))
	}
	for i, w := range []string{"canary", "prod"} {
		e := elems[i]
		k, _ := e.GetString("matchExpressions[0].key")
		v, _ := e.GetString("matchExpressions[0].values[0]")
		if k != WaveLabel || v != w {
			t.Errorf("step %d selects %s=%s, want %s=%s", i, k, v, WaveLabel, w)
		}
	}
	if m := val(elems[1], "maxUpdate"); m != "1" {
		t.Errorf("prod step maxUpdate %q, want 1", m)
	}
	if l := val(set, "spec", "template", "metadata", "labels", WaveLabel); l != "{{ .wave }}" {
		t.Errorf("the Application template's %s label is %q", WaveLabel, l)
	}
	files, _, _ = Files(fleet(ArgoCD, false))
	if s, _ := objects(t, files, ArgoCDFile)[0].Pipe(yaml.Lookup("spec", "strategy")); s != nil {
		t.Error("a strategy without spec.rollout")
	}
}

// Config Sync cannot order: said in a note and in each file.
func TestConfigSyncSaysItCannotOrder(t *testing.T) {
	files, notes, err := Files(fleet(ConfigSync, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "cannot order") {
		t.Errorf("notes %q", notes)
	}
	if len(files) != 3 {
		t.Fatalf("%d files, want one RootSync per cluster", len(files))
	}
	for _, f := range files {
		if !strings.Contains(string(f.Data), "cannot order") {
			t.Errorf("%s does not say that Config Sync cannot order", f.Path)
		}
		n := objects(t, files, f.Path)[0]
		if d, _ := n.GetString("spec.git.dir"); !strings.HasPrefix(d, "out/") || !strings.HasSuffix(f.Path, filepath.Base(d)+".yaml") {
			t.Errorf("%s: git.dir %q", f.Path, d)
		}
		if s, _ := n.GetString("spec.sourceFormat"); s != "unstructured" {
			t.Errorf("%s: sourceFormat %q", f.Path, s)
		}
	}
	if _, notes, _ := Files(fleet(ConfigSync, false)); len(notes) != 0 {
		t.Errorf("notes without waves: %q", notes)
	}
}

func TestResolve(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(repo, "fleet", "out")
	src, err := Resolve(Source{}, &v1alpha1.GitOps{URL: "ssh://git@git.example.com/fleet.git"}, out)
	if err != nil {
		t.Fatal(err)
	}
	if src.Path != "fleet/out" || src.Branch != "main" || src.Interval != DefaultInterval {
		t.Errorf("resolved %+v", src)
	}
	src, err = Resolve(Source{URL: "https://h/x.git", Branch: "release", Path: "./a/b/"}, &v1alpha1.GitOps{URL: "ssh://other/y"}, out)
	if err != nil || src.URL != "https://h/x.git" || src.Branch != "release" || src.Path != "a/b" {
		t.Errorf("flags over spec: %+v, %v", src, err)
	}
	for _, bad := range []struct {
		src  Source
		want string
	}{
		{Source{}, "--gitops-url"},
		{Source{URL: "git.example.com/fleet"}, "http://, https:// or ssh://"},
		{Source{URL: "file:///tmp/repo"}, "http://, https:// or ssh://"},
		{Source{URL: "https:///nohost"}, "host"},
		{Source{URL: "https://h/x", Branch: "a..b"}, "branch"},
		{Source{URL: "https://h/x", Path: "../up"}, "inside the repository"},
		{Source{URL: "https://h/x", Path: "/abs"}, "relative"},
	} {
		if _, err := Resolve(bad.src, nil, out); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Resolve(%+v): %v, want an error with %q", bad.src, err, bad.want)
		}
	}
	if _, err := Resolve(Source{URL: "https://h/x"}, nil, t.TempDir()); err == nil || !strings.Contains(err.Error(), "--gitops-path") {
		t.Errorf("outside a work tree: %v", err)
	}
	if _, err := ParseEngine("fluxcd"); err == nil || !strings.Contains(err.Error(), "kpt, flux, argocd, configsync") {
		t.Errorf("ParseEngine: %v", err)
	}
}
