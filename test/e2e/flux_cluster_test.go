//go:build e2e

package e2e

// The GitOps hand-off proven on a real Flux (issue 29): source-controller
// and kustomize-controller, built from their Go modules by `make tools`,
// run as local processes against a management kube-apiserver M and apply
// `split --engine flux`'s directories to two clusters A and B through
// their kubeconfig Secrets, pulling the split over HTTP from a git
// repository that `git http-backend` serves on 127.0.0.1.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// fluxE2E is the state the Flux scenarios share.
type fluxE2E struct {
	clusterE2E
	mgmt *clusterAPIServer
	// work is the git work tree that holds the package (pkg) and the
	// split (work/out); bare is the repository Flux pulls.
	work, bare string
	url        string
	// kustomizations maps each context to its Kustomization's name.
	kustomizations map[string]string
	// procs are the Flux controllers.
	procs []*clusterProc
}

const (
	fluxNamespace = "flux-system"
	fluxKsPath    = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/" + fluxNamespace + "/kustomizations/"
	// fluxWait bounds every wait on Flux; nothing is asserted on time.
	fluxWait = 5 * time.Minute
)

// fluxTool returns a Flux controller built by `make tools`: missing, it
// fails the test in CI and skips it elsewhere.
func fluxTool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), ".tools", "bin", name)
	if env := os.Getenv(strings.ToUpper(strings.ReplaceAll(name, "-", "_"))); env != "" {
		p = env
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, name, "build it with `make tools` (tools/flux)")
	}
	return p
}

// fluxCRDs are the CustomResourceDefinitions of the two controllers, from
// their modules' config/crd/bases, as the tools module pins them.
func fluxCRDs(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, m := range []string{"github.com/fluxcd/source-controller", "github.com/fluxcd/kustomize-controller"} {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", m)
		cmd.Dir = filepath.Join(repoRoot(t), "tools", "flux")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			testenv.Missing(t, m+" in the module cache", fmt.Sprintf("make tools downloads it: %v", err))
		}
		dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases")
		got, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if len(got) == 0 {
			t.Fatalf("no CRDs in %s", dir)
		}
		files = append(files, got...)
	}
	return files
}

// TestFlux: waves as dependsOn (wave B waits for wave A's Ready), each
// cluster converging to exactly its directory, and pruning.
func TestFlux(t *testing.T) {
	e := &fluxE2E{clusterE2E: clusterE2E{bin: shardRouter(t), names: []string{"A", "B"}}}
	sourceController, kustomizeController := fluxTool(t, "source-controller"), fluxTool(t, "kustomize-controller")
	requireProgram(t, "git", "apt-get install git")
	crds := fluxCRDs(t)
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		toolPath(t, tool)
	}
	dir := t.TempDir()
	creds := clusterNewCreds(t, dir)
	aMain, aEvents, bMain, mMain := clusterStartEtcd(t, dir, "etcd-a-main"), clusterStartEtcd(t, dir, "etcd-a-events"),
		clusterStartEtcd(t, dir, "etcd-b-main"), clusterStartEtcd(t, dir, "etcd-m-main")
	for _, s := range []*clusterEtcd{aMain, aEvents, bMain, mMain} {
		s.waitReady(t)
	}

	// The repository: the package and its split, committed to a bare
	// repository served by git http-backend.
	e.work, e.bare = filepath.Join(dir, "work"), filepath.Join(dir, "git", "fleet.git")
	e.pkg, e.out = filepath.Join(e.work, "pkg"), filepath.Join(e.work, "out")
	copyTree(t, filepath.Join(repoRoot(t), "test", "e2e", "testdata", "cluster"), e.pkg)
	cfg := strings.ReplaceAll(clusterReadFile(t, filepath.Join(e.pkg, "shards.yaml")), "EVENTS_ETCD_URL", aEvents.ClientURL)
	// Waves: A (canary) before B (prod); a short interval for the test.
	cfg = strings.Replace(cfg, "  - name: A\n", "  - name: A\n    labels: {tier: canary}\n", 1)
	cfg = strings.Replace(cfg, "  - name: B\n", "  - name: B\n    labels: {tier: prod}\n", 1)
	cfg += "  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {tier: canary}}\n    - name: prod\n      contexts: {matchLabels: {tier: prod}}\n" +
		"  gitops:\n    interval: 3s\n  allowMoves: true\n"
	writeFile(t, filepath.Join(e.pkg, "shards.yaml"), cfg)
	git(t, dir, "init", "-q", "--bare", "-b", "main", e.bare)
	git(t, dir, "init", "-q", "-b", "main", e.work)
	srv := httptest.NewServer(&cgi.Handler{Path: gitExecPath(t), Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(e.bare), "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}})
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/fleet.git"

	apiA := clusterStartAPIServer(t, dir, "A", creds, aMain, e.overrides(t, "A"))
	apiB := clusterStartAPIServer(t, dir, "B", creds, bMain, "")
	e.mgmt = clusterStartAPIServer(t, dir, "M", creds, mMain, "")
	for _, a := range []*clusterAPIServer{apiA, apiB, e.mgmt} {
		a.waitReady(t)
	}
	clusterStartControllerManager(t, apiA, creds)
	clusterStartControllerManager(t, apiB, creds)
	e.clusters = map[string]*clusterState{
		"A": {Name: "A", Main: aMain, Events: aEvents, API: apiA},
		"B": {Name: "B", Main: bMain, API: apiB},
	}

	// Flux on M: its CRDs, then the two controllers with M's kubeconfig.
	for _, f := range crds {
		e.mgmt.applyYAML(t, clusterReadFile(t, f))
	}
	for _, f := range crds {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		name = name[strings.Index(name, "_")+1:] + "." + name[:strings.Index(name, "_")]
		e.mgmt.waitEstablished(t, name)
	}
	mKubeconfig := filepath.Join(dir, "m.kubeconfig")
	clusterWriteKubeconfig(t, mKubeconfig, creds.Token, e.mgmt)
	storage := fmt.Sprintf("127.0.0.1:%d", clusterFreePort(t))
	if err := os.Mkdir(filepath.Join(dir, "flux-storage"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBECONFIG=" + mKubeconfig, "RUNTIME_NAMESPACE=" + fluxNamespace, "SOURCE_CONTROLLER_LOCALHOST=" + storage}
	sc := clusterStartProcEnv(t, dir, "source-controller", env, sourceController,
		"--storage-path", filepath.Join(dir, "flux-storage"), "--storage-addr", storage, "--storage-adv-addr", storage,
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", clusterFreePort(t)), "--health-addr", fmt.Sprintf("127.0.0.1:%d", clusterFreePort(t)))
	kc := clusterStartProcEnv(t, dir, "kustomize-controller", env, kustomizeController,
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", clusterFreePort(t)), "--health-addr", fmt.Sprintf("127.0.0.1:%d", clusterFreePort(t)),
		"--requeue-dependency", "2s")
	e.procs = []*clusterProc{sc, kc}
	e.kubeconfig = filepath.Join(dir, "kubeconfig")
	clusterWriteKubeconfig(t, e.kubeconfig, creds.Token, apiA, apiB, e.mgmt)

	steps := []clusterStep{
		{"WavesAreDependsOn", e.waves},
		{"ConvergesToItsDirectory", e.converges},
		{"Prune", e.prune},
		{"MoveHandsOff", e.move},
		{"StatusKnowsFlux", e.status},
		{"KptSplitIsNotFluxs", e.kptSplit},
	}
	runSteps(t, steps)
}

// gitExecPath is git-http-backend's path.
func gitExecPath(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, "git-http-backend", "apt-get install git")
	}
	return p
}

// splitAndPush splits the package for Flux, commits the work tree and
// pushes it; it returns the commit.
func (e *fluxE2E) splitAndPush(t testing.TB, msg string) string {
	t.Helper()
	if res := runCmd(t, cmdSpec{}, e.bin, "split", e.pkg, "-o", e.out, "--engine", "flux", "--gitops-url", e.url); res.ExitCode != 0 {
		t.Fatalf("split:\n%s", res)
	}
	git(t, e.work, "add", "-A")
	git(t, e.work, "commit", "-q", "--allow-empty", "-m", msg)
	git(t, e.work, "push", "-q", e.bare, "main")
	return strings.TrimSpace(git(t, e.work, "rev-parse", "HEAD"))
}

// kubeconfigFor is a kubeconfig for one cluster with its CA inline, as a
// Secret must hold it.
func kubeconfigFor(t testing.TB, a *clusterAPIServer) string {
	t.Helper()
	ca := base64.StdEncoding.EncodeToString([]byte(clusterReadFile(t, a.CAFile)))
	return fmt.Sprintf("apiVersion: v1\nkind: Config\ncurrent-context: %[1]s\nclusters:\n- name: %[1]s\n  cluster:\n    server: %[2]s\n    certificate-authority-data: %[3]s\n"+
		"users:\n- name: u\n  user:\n    token: %[4]s\ncontexts:\n- name: %[1]s\n  context:\n    cluster: %[1]s\n    user: u\n", a.Name, a.URL, ca, a.creds.Token)
}

// secretYAML is the kubeconfig Secret the management Kustomization of ctx
// names.
func (e *fluxE2E) secretYAML(t testing.TB, ctx string) string {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": e.kustomizations[ctx] + "-kubeconfig", "namespace": fluxNamespace},
		"stringData": map[string]string{"value": kubeconfigFor(t, e.clusters[ctx].API)}})
	return string(data)
}

// waves: with only B's kubeconfig Secret, A's Kustomization cannot get
// Ready, and B's, which dependsOn it, applies nothing; once A's Secret is
// there, a sampler sees no object of B's directory in B before A's
// Kustomization is Ready at the commit.
func (e *fluxE2E) waves(t *testing.T) {
	commit := e.splitAndPush(t, "first split")
	mgmt := clusterReadFile(t, filepath.Join(e.out, "_gitops", "flux", "management.yaml"))
	e.kustomizations = fluxKustomizations(t, mgmt)
	if len(e.kustomizations) != 2 {
		t.Fatalf("management.yaml has Kustomizations for %v, want A and B", e.kustomizations)
	}
	e.mgmt.applyYAML(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+fluxNamespace+`"}}`)
	e.mgmt.applyYAML(t, e.secretYAML(t, "B"))
	e.mgmt.applyYAML(t, mgmt)
	bItems := e.items(t, filepath.Join(e.out, "B"))

	// B must wait while A cannot get Ready: sample for a while.
	e.waitFor(t, "B's Kustomization to report its dependency", func() error {
		ready, msg := e.ready(t, "B", "")
		if ready {
			t.Fatalf("B's Kustomization is Ready while A's cannot be (no kubeconfig Secret): %s", msg)
		}
		if !strings.Contains(msg, "dependency") {
			return fmt.Errorf("B: %s", msg)
		}
		return nil
	})
	for range 40 {
		if n := e.present(t, "B", bItems); n > 0 {
			t.Fatalf("%d object(s) of B's directory are in B while A's Kustomization is not Ready", n)
		}
		if ready, msg := e.ready(t, "A", ""); ready {
			t.Fatalf("A's Kustomization is Ready without its kubeconfig Secret: %s", msg)
		}
		time.Sleep(250 * time.Millisecond)
	}

	e.mgmt.applyYAML(t, e.secretYAML(t, "A"))
	aReadyAt, bFirstAt := -1, -1
	for i := 0; ; i++ {
		aReady, _ := e.ready(t, "A", commit)
		if aReady && aReadyAt < 0 {
			aReadyAt = i
		}
		if e.present(t, "B", bItems) > 0 && bFirstAt < 0 {
			bFirstAt = i
			if aReadyAt < 0 {
				t.Fatalf("sample %d: an object of B's directory is in B before A's Kustomization is Ready", i)
			}
		}
		if bReady, _ := e.ready(t, "B", commit); bReady && aReady {
			break
		}
		if i > int(fluxWait/(50*time.Millisecond)) {
			_, am := e.ready(t, "A", commit)
			_, bm := e.ready(t, "B", commit)
			t.Fatalf("not Ready at %s: A: %s; B: %s", commit, am, bm)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("A Ready at sample %d, first object in B at sample %d", aReadyAt, bFirstAt)
}

// converges: every object of each directory is in its cluster, annotated
// with it and its datastore (Events and Leases in A's events etcd), in no
// other cluster unless that one's directory holds it too, and Flux's own
// inventory of each Kustomization is exactly its directory: nothing else
// (no overrides record, no Kptfile) was applied.
func (e *fluxE2E) converges(t *testing.T) {
	holders := map[string][]string{}
	var all []clusterItem
	for _, ctx := range e.names {
		items := e.items(t, filepath.Join(e.out, ctx))
		var want []string
		for _, it := range items {
			k := fluxInventoryID(it)
			if len(holders[k]) == 0 {
				all = append(all, it)
			}
			holders[k] = append(holders[k], ctx)
			want = append(want, k)
		}
		slices.Sort(want)
		if got := e.inventory(t, ctx); !slices.Equal(got, want) {
			t.Errorf("%s's Kustomization applied %v\nits directory holds %v", ctx, got, want)
		}
	}
	for i := range all {
		all[i].Context = strings.Join(holders[fluxInventoryID(all[i])], ",")
	}
	e.checkPlacement(t, all)
}

// prune: an object removed from the package is deleted from its cluster
// by Flux once the split that drops it is pushed.
func (e *fluxE2E) prune(t *testing.T) {
	p := filepath.Join(e.pkg, "alpha.yaml")
	doc := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: alpha\ndata:\n  shard: \"a\"\n"
	src := clusterReadFile(t, p)
	if !strings.Contains(src, doc) {
		t.Fatalf("%s no longer holds ConfigMap alpha/web-config as the test expects", p)
	}
	gone := "/api/v1/namespaces/alpha/configmaps/web-config"
	if e.clusters["A"].API.Get(t, gone) == nil {
		t.Fatal("ConfigMap alpha/web-config is not in A before the prune")
	}
	writeFile(t, p, strings.Replace(src, doc, "", 1))
	commit := e.splitAndPush(t, "drop alpha/web-config")
	e.waitFor(t, "A's Kustomization Ready at "+commit, func() error {
		if ok, msg := e.ready(t, "A", commit); !ok {
			return fmt.Errorf("%s", msg)
		}
		return nil
	})
	if e.clusters["A"].API.Get(t, gone) != nil {
		t.Error("ConfigMap alpha/web-config is still in A after Flux applied the split that dropped it")
	}
	if e.clusters["A"].API.Get(t, "/api/v1/namespaces/alpha/services/web") == nil {
		t.Error("Service alpha/web, still in the package, is gone from A")
	}
	e.converges(t)
}

// move: Namespace bravo and its objects move from A to B in two commits
// while a poller samples both clusters every ~50ms: the first split keeps
// them in A's directory as well as B's; the second, given Flux's own
// Kustomizations (B Ready at the revision that holds them), drops them
// from A, and Flux prunes them there. At every sample each moving object
// is in at least one cluster, and it leaves A only after it was in B.
func (e *fluxE2E) move(t *testing.T) {
	var moving []clusterItem
	for _, it := range e.items(t, filepath.Join(e.out, "A")) {
		if it.Namespace == clusterMovedNamespace || (it.Kind == "Namespace" && it.Name == clusterMovedNamespace) {
			moving = append(moving, it)
		}
	}
	if len(moving) < 5 {
		t.Fatalf("only %d objects of A are in Namespace %s: too few to prove a move", len(moving), clusterMovedNamespace)
	}
	p := filepath.Join(e.pkg, clusterMovedNamespace+".yaml")
	src := clusterReadFile(t, p)
	moved := strings.Replace(src, "e2e.shardrouter.dev/shard: a", "e2e.shardrouter.dev/shard: b", 1)
	if moved == src {
		t.Fatalf("%s has no shard: a label to change", p)
	}

	stop, samples := e.poll(t, moving)
	defer stop()
	writeFile(t, p, moved)
	first := e.splitAndPush(t, "move bravo to B: hand off")
	record := clusterReadFile(t, filepath.Join(e.out, "_gitops", "shard-router-handoff.yaml"))
	if !strings.Contains(record, "from: A") || e.present(t, "A", moving) != len(moving) {
		t.Fatalf("the first split of the move does not keep the objects in A:\n%s", record)
	}
	for _, ctx := range e.names {
		e.waitFor(t, ctx+"'s Kustomization Ready at "+first, func() error {
			if ok, msg := e.ready(t, ctx, first); !ok {
				return fmt.Errorf("%s", msg)
			}
			return nil
		})
	}
	if n := e.present(t, "A", moving); n != len(moving) {
		t.Fatalf("%d of %d moving objects left A before the second split", len(moving)-n, len(moving))
	}
	code, body, err := e.mgmt.do("GET", fluxKsPath[:len(fluxKsPath)-1], "", nil)
	if err != nil || code != 200 {
		t.Fatalf("listing the Kustomizations: %d %v", code, err)
	}
	status := filepath.Join(t.TempDir(), "kustomizations.json")
	writeFile(t, status, string(body))
	res := runCmd(t, cmdSpec{}, e.bin, "split", e.pkg, "-o", e.out, "--engine", "flux", "--gitops-url", e.url, "--handoff-status", status)
	if res.ExitCode != 0 || !strings.Contains(res.Stderr, "hand-off done") {
		t.Fatalf("the second split of the move:\n%s", res)
	}
	git(t, e.work, "add", "-A")
	git(t, e.work, "commit", "-q", "-m", "move bravo to B: done")
	git(t, e.work, "push", "-q", e.bare, "main")
	second := strings.TrimSpace(git(t, e.work, "rev-parse", "HEAD"))
	e.waitFor(t, "the moved objects pruned from A", func() error {
		if ok, msg := e.ready(t, "A", second); !ok {
			return fmt.Errorf("%s", msg)
		}
		if n := e.present(t, "A", moving); n > 0 {
			return fmt.Errorf("%d moving objects still in A", n)
		}
		return nil
	})
	stop()
	s := samples()
	if len(s.bad) > 0 {
		t.Errorf("%d bad samples, such as: %s", len(s.bad), strings.Join(s.bad[:min(5, len(s.bad))], "; "))
	}
	if s.both == 0 || s.n < 20 {
		t.Errorf("%d samples, %d with both copies: the poller saw too little to prove the hand-off", s.n, s.both)
	}
	t.Logf("%d samples of %d moving objects, %d with copies in both clusters", s.n, len(moving), s.both)
	e.converges(t)
}

// status: shard-router status on the split for Flux shows each context's
// Kustomization Ready at the last commit, and every object applied (in
// Flux's inventory), Current and without drift.
func (e *fluxE2E) status(t *testing.T) {
	head := strings.TrimSpace(git(t, e.work, "rev-parse", "HEAD"))
	// Flux reconciles every few seconds (Ready is Unknown meanwhile), so
	// ask until a status sees both Kustomizations Ready.
	var doc v1alpha1.FleetStatus
	e.waitFor(t, "a status with every Kustomization Ready at "+head, func() error {
		res := runCmd(t, cmdSpec{}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig, "--flux-context", "M", "-o", "json")
		if res.ExitCode != 0 {
			return fmt.Errorf("status:\n%s", res)
		}
		doc = v1alpha1.FleetStatus{}
		if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Contexts) != 2 {
			t.Fatalf("%d contexts", len(doc.Contexts))
		}
		for _, c := range doc.Contexts {
			if c.Engine == nil || c.Engine.Name != e.kustomizations[c.Name] {
				t.Fatalf("%s: engine status %+v, want Kustomization %s", c.Name, c.Engine, e.kustomizations[c.Name])
			}
			if c.Engine.Ready != "True" || !strings.HasSuffix(c.Engine.Revision, head) {
				return fmt.Errorf("%s: %+v", c.Name, c.Engine)
			}
		}
		return nil
	})
	for _, c := range doc.Contexts {
		want := len(e.items(t, filepath.Join(e.out, c.Name)))
		if len(c.Objects) != want {
			t.Errorf("%s: %d objects, its directory holds %d", c.Name, len(c.Objects), want)
		}
		for _, o := range c.Objects {
			if o.NeedsAttention() {
				t.Errorf("%s: %+v needs attention", c.Name, o)
			}
		}
		if !c.InSync() {
			t.Errorf("%s is not in sync: %+v", c.Name, c.Inventory)
		}
	}
	res := runCmd(t, cmdSpec{}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig, "--flux-context", "M")
	for _, ctx := range e.names {
		if want := ctx + ": flux Kustomization " + fluxNamespace + "/" + e.kustomizations[ctx] + " Ready="; !strings.Contains(res.Stdout, want) {
			t.Errorf("the status table lacks %q:\n%s", want, res.Stdout)
		}
	}
}

// kptSplit: what Flux does with kpt's split (why --engine flux exists): a
// Kustomization over a kpt context directory tries to apply the inventory
// ResourceGroup as an object of the cluster, which has no such kind, and
// fails; the Kptfile (no .yaml name) is not read.
func (e *fluxE2E) kptSplit(t *testing.T) {
	kptOut := filepath.Join(e.work, "kpt-out")
	if res := runCmd(t, cmdSpec{}, e.bin, "split", e.pkg, "-o", kptOut); res.ExitCode != 0 {
		t.Fatalf("split:\n%s", res)
	}
	git(t, e.work, "add", "-A")
	git(t, e.work, "commit", "-q", "-m", "a kpt split")
	git(t, e.work, "push", "-q", e.bare, "main")
	commit := strings.TrimSpace(git(t, e.work, "rev-parse", "HEAD"))
	source := ""
	nodes, err := kio.FromBytes([]byte(clusterReadFile(t, filepath.Join(e.out, "_gitops", "flux", "management.yaml"))))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.GetKind() == "GitRepository" {
			source = n.GetName()
		}
	}
	const name = "kpt-split-a"
	e.mgmt.applyYAML(t, fmt.Sprintf(`{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":%q,"namespace":%q},`+
		`"spec":{"interval":"1m","timeout":"1m","path":"./kpt-out/A","prune":true,"wait":true,"sourceRef":{"kind":"GitRepository","name":%q},"kubeConfig":{"secretRef":{"name":%q}}}}`,
		name, fluxNamespace, source, e.kustomizations["A"]+"-kubeconfig"))
	e.kustomizations["kpt"] = name
	var msg string
	e.waitFor(t, "the kpt split's Kustomization to fail", func() error {
		obj := e.mgmt.Get(t, fluxKsPath+name)
		status, _ := obj["status"].(map[string]any)
		if rev, _ := status["lastAttemptedRevision"].(string); !strings.HasSuffix(rev, commit) {
			return fmt.Errorf("last attempted revision %q, want the kpt split's %s", rev, commit)
		}
		conds, _ := status["conditions"].([]any)
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" && m["status"] == "False" {
				msg = fmt.Sprint(m["message"])
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
	t.Logf("Flux on kpt's split of A: %s", msg)
	if !strings.Contains(msg, "ResourceGroup") {
		t.Errorf("the Kustomization over kpt's split failed otherwise than on its ResourceGroup: %s", msg)
	}
	if strings.Contains(msg, "Kptfile") {
		t.Errorf("Flux read the Kptfile: %s", msg)
	}
	if code, body, err := e.mgmt.do("DELETE", fluxKsPath+name, "", nil); err != nil || code/100 != 2 {
		t.Fatalf("deleting %s: %d %v %s", name, code, err, body)
	}
}

// pollSamples is what the move's poller saw.
type pollSamples struct {
	n, both int
	bad     []string
}

// poll samples every moving object in A and B every ~50ms until stop:
// a sample is bad when an object is in neither cluster, or gone from A
// before any sample saw it in B.
func (e *fluxE2E) poll(t testing.TB, moving []clusterItem) (stop func(), samples func() pollSamples) {
	t.Helper()
	paths := make([]string, len(moving))
	for i, it := range moving {
		paths[i] = it.path(t)
	}
	done, finished := make(chan struct{}), make(chan pollSamples, 1)
	go func() {
		var s pollSamples
		seenB := make([]bool, len(moving))
		for {
			select {
			case <-done:
				finished <- s
				return
			case <-time.After(50 * time.Millisecond):
			}
			s.n++
			all := true
			for i, p := range paths {
				inA, errA := e.exists(e.clusters["A"].API, p)
				inB, errB := e.exists(e.clusters["B"].API, p)
				if errA != nil || errB != nil {
					s.bad = append(s.bad, fmt.Sprintf("sample %d: %s: %v %v", s.n, moving[i], errA, errB))
					continue
				}
				seenB[i] = seenB[i] || inB
				switch {
				case !inA && !inB:
					s.bad = append(s.bad, fmt.Sprintf("sample %d: %s in neither cluster", s.n, moving[i]))
				case !inA && !seenB[i]:
					s.bad = append(s.bad, fmt.Sprintf("sample %d: %s gone from A before it was seen in B", s.n, moving[i]))
				}
				all = all && inA && inB
			}
			if all {
				s.both++
			}
		}
	}()
	var once bool
	var result pollSamples
	stop = func() {
		if !once {
			once = true
			close(done)
			result = <-finished
		}
	}
	return stop, func() pollSamples { stop(); return result }
}

// exists reports whether the object at path exists, without failing the
// test (the poller runs in its own goroutine).
func (e *fluxE2E) exists(a *clusterAPIServer, path string) (bool, error) {
	code, body, err := a.do("GET", path, "", nil)
	switch {
	case err != nil:
		return false, err
	case code == 200:
		return true, nil
	case code == 404:
		return false, nil
	}
	return false, fmt.Errorf("GET %s: %d: %s", path, code, body)
}

// fluxKustomizations maps each context (the last element of its path) to
// the name of its Kustomization in a management.yaml.
func fluxKustomizations(t testing.TB, data string) map[string]string {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes {
		if n.GetKind() != "Kustomization" {
			continue
		}
		p, err := n.GetString("spec.path")
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = n.GetName()
	}
	return out
}

// ready reads ctx's Kustomization: whether it is Ready, at commit when
// commit is not "", and a description for messages.
func (e *fluxE2E) ready(t testing.TB, ctx, commit string) (bool, string) {
	t.Helper()
	obj := e.mgmt.Get(t, fluxKsPath+e.kustomizations[ctx])
	if obj == nil {
		return false, "no Kustomization"
	}
	status, _ := obj["status"].(map[string]any)
	rev, _ := status["lastAppliedRevision"].(string)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		desc := fmt.Sprintf("Ready=%v %v: %v (revision %q)", m["status"], m["reason"], m["message"], rev)
		ok := m["status"] == "True" && (commit == "" || strings.HasSuffix(rev, commit))
		return ok, desc
	}
	return false, "no Ready condition"
}

// inventory is Flux's inventory of ctx's Kustomization, sorted.
func (e *fluxE2E) inventory(t testing.TB, ctx string) []string {
	t.Helper()
	obj := e.mgmt.Get(t, fluxKsPath+e.kustomizations[ctx])
	status, _ := obj["status"].(map[string]any)
	inv, _ := status["inventory"].(map[string]any)
	entries, _ := inv["entries"].([]any)
	var out []string
	for _, en := range entries {
		m, _ := en.(map[string]any)
		out = append(out, fmt.Sprint(m["id"]))
	}
	slices.Sort(out)
	return out
}

// fluxInventoryID is the id Flux's inventory gives an object:
// namespace_name_group_kind.
func fluxInventoryID(it clusterItem) string {
	group, _, _ := strings.Cut(it.APIVersion, "/")
	if !strings.Contains(it.APIVersion, "/") {
		group = ""
	}
	return it.Namespace + "_" + it.Name + "_" + group + "_" + it.Kind
}

// present counts the items that exist in cluster ctx.
func (e *fluxE2E) present(t testing.TB, ctx string, items []clusterItem) int {
	t.Helper()
	n := 0
	for _, it := range items {
		if e.clusters[ctx].API.Get(t, it.path(t)) != nil {
			n++
		}
	}
	return n
}

// waitFor polls check every 250ms until it succeeds, failing after
// fluxWait or when a Flux controller exits.
func (e *fluxE2E) waitFor(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(fluxWait)
	for {
		err := check()
		if err == nil {
			return
		}
		for _, p := range e.procs {
			select {
			case <-p.Exited():
				t.Fatalf("%s exited (%v) while waiting for %s:\n%s", p.Name, p.Err(), what, clusterTail(p.LogPath, 40))
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s: %v", what, fluxWait, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// applyYAML server-side applies every object of a YAML (or JSON) stream.
func (a *clusterAPIServer) applyYAML(t testing.TB, data string) {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		_ = n.PipeE(yaml.ClearAnnotation("config.kubernetes.io/index"), yaml.ClearAnnotation("internal.config.kubernetes.io/index"))
		body, err := n.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		path := apiPath(t, n.GetApiVersion(), n.GetKind(), n.GetNamespace(), n.GetName())
		code, resp, err := a.do("PATCH", path+"?fieldManager=e2e&force=true", "application/apply-patch+yaml", body)
		if err != nil || code/100 != 2 {
			t.Fatalf("%s: apply %s: %d %v: %s", a.Name, path, code, err, resp)
		}
	}
}

// apiPath is an object's URL path, for the kinds the Flux test applies.
func apiPath(t testing.TB, apiVersion, kind, namespace, name string) string {
	t.Helper()
	plural := map[string]string{"Namespace": "namespaces", "Secret": "secrets", "ConfigMap": "configmaps", "CustomResourceDefinition": "customresourcedefinitions",
		"GitRepository": "gitrepositories", "Kustomization": "kustomizations",
		"ApplicationSet": "applicationsets", "Application": "applications",
		"Role": "roles", "RoleBinding": "rolebindings", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
		"ValidatingAdmissionPolicy": "validatingadmissionpolicies", "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
		"Deployment": "deployments", "ReplicaSet": "replicasets"}[kind]
	if plural == "" {
		t.Fatalf("apiPath: kind %s", kind)
	}
	p := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		p = "/api/" + apiVersion
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + plural + "/" + name
}

// waitEstablished waits for a CRD to be served.
func (a *clusterAPIServer) waitEstablished(t testing.TB, name string) {
	t.Helper()
	clusterWait(t, a.proc, "CRD "+name+" Established", func() error {
		obj := a.Get(t, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name)
		if obj == nil {
			return fmt.Errorf("no CRD %s", name)
		}
		status, _ := obj["status"].(map[string]any)
		conds, _ := status["conditions"].([]any)
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
}
