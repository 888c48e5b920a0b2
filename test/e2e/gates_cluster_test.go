//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// TestRolloutGates proves issue 34's promotion gates on three real
// clusters (TestRollout's: R1 the canary wave, R2 and R3 the wave rest),
// with a real Prometheus (Debian's prometheus) scraping one real
// pushgateway (Debian's prometheus-pushgateway) per cluster, where the
// test pushes each cluster's error ratio. The canary wave has two gates:
// error-rate (prometheus: result < 0.01 passes, result >= 0.05 fails,
// between is inconclusive) and smoke (http, against a server of the
// test). Steps then prove: a failing canary rolled back (onFailure
// Rollback), an inconclusive gate pausing, a value that turns bad during
// the bake, a kubernetes gate on a custom resource whose status the test
// sets, and Prometheus stopped during the bake. Every process listens on
// 127.0.0.1 and is stopped at the end.
func TestRolloutGates(t *testing.T) {
	e := &rolloutE2E{bin: shardRouter(t), kpt: toolPath(t, "kpt"), names: []string{"R1", "R2", "R3"}}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		toolPath(t, tool)
	}
	for _, tool := range []string{"prometheus", "prometheus-pushgateway"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: run hack/install-packages.sh", tool)
		}
	}
	e.dir = t.TempDir()
	creds := clusterNewCreds(t, e.dir)
	e.api = clusterStartFleet(t, e.dir, creds, e.names...)
	var servers []*clusterAPIServer
	for _, name := range e.names {
		servers = append(servers, e.api[name])
	}
	e.kubeconfig = filepath.Join(e.dir, "kubeconfig")
	clusterWriteKubeconfig(t, e.kubeconfig, creds.Token, servers...)
	e.pkg, e.out = filepath.Join(e.dir, "pkg"), filepath.Join(e.dir, "out")
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		t.Fatal(err)
	}
	g := &gatesE2E{rolloutE2E: e, pushgateways: map[string]string{}}
	g.startMetrics(t)
	g.smoke = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/healthz") {
			fmt.Fprint(w, `{"ok": true}`)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(g.smoke.Close)

	runSteps(t, []clusterStep{
		{"HealthyValuesGoThrough", g.healthy},
		{"FailingCanaryRollsBack", g.failing},
		{"InconclusivePausesThenResumes", g.inconclusive},
		{"TurnsBadDuringTheBake", g.turnsBad},
		{"KubernetesGateOnACustomResource", g.kubernetesGate},
		{"PrometheusStoppedDuringTheBake", g.prometheusStopped},
	})
}

type gatesE2E struct {
	*rolloutE2E
	prometheus   string
	prom         *exec.Cmd
	pushgateways map[string]string
	smoke        *httptest.Server
}

// startMetrics starts a pushgateway per cluster and a Prometheus that
// scrapes them every second.
func (g *gatesE2E) startMetrics(t testing.TB) {
	var targets []string
	for _, name := range g.names {
		port := clusterFreePort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		g.startProc(t, "pushgateway-"+name, "prometheus-pushgateway", "--web.listen-address="+addr)
		g.pushgateways[name] = "http://" + addr
		targets = append(targets, fmt.Sprintf("%q", addr))
	}
	cfg := filepath.Join(g.dir, "prometheus.yml")
	writeFile(t, cfg, fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: pushgateway
  honor_labels: true
  static_configs:
  - targets: [%s]
`, strings.Join(targets, ", ")))
	addr := fmt.Sprintf("127.0.0.1:%d", clusterFreePort(t))
	g.prom = g.startProc(t, "prometheus", "prometheus", "--config.file="+cfg, "--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(g.dir, "prometheus-data"))
	g.prometheus = "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(g.prometheus + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus on %s is not ready after a minute: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startProc starts a server whose output goes to a log in the test's
// directory, and stops it (by its own pid) at the end.
func (g *gatesE2E) startProc(t testing.TB, name, bin string, args ...string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(filepath.Join(g.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	return cmd
}

// push sets each cluster's errors_ratio on its own pushgateway, then waits
// until Prometheus returns every value.
func (g *gatesE2E) push(t testing.TB, values map[string]float64) {
	t.Helper()
	for name, v := range values {
		body := fmt.Sprintf("errors_ratio{cluster=%q} %g\n", name, v)
		resp, err := http.Post(g.pushgateways[name]+"/metrics/job/app", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("pushing to %s: HTTP %d", name, resp.StatusCode)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for name, v := range values {
		for {
			got, ok := g.query(t, fmt.Sprintf("errors_ratio{cluster=%q}", name))
			if ok && got == fmt.Sprintf("%g", v) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("prometheus has errors_ratio %q for %s, want %g", got, name, v)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// query is the first sample of an instant query.
func (g *gatesE2E) query(t testing.TB, q string) (string, bool) {
	resp, err := http.Get(g.prometheus + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var doc struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || len(doc.Data.Result) == 0 {
		return "", false
	}
	s, _ := doc.Data.Result[0].Value[1].(string)
	return s, true
}

// write writes the package (rolloutVersion) with every context's
// Prometheus endpoint and the canary wave's two gates, baking 4s.
func (g *gatesE2E) write(t testing.TB, v rolloutVersion) {
	t.Helper()
	g.writeGates(t, v, "4s", `      - name: error-rate
        prometheus: {query: 'errors_ratio{cluster="{{.context}}"}'}
        interval: 2s
        successCondition: result < 0.01
        failureCondition: result >= 0.05
      - name: smoke
        http: {url: "`+g.smoke.URL+`/{{.context}}/healthz", expectStatus: [200], successCondition: body.ok}
`)
}

// writeGates writes the package (rolloutVersion) with every context's
// Prometheus endpoint, the canary wave baking for bake with gates (the
// YAML of its gates list, indented as a wave's fields).
func (g *gatesE2E) writeGates(t testing.TB, v rolloutVersion, bake, gates string) {
	t.Helper()
	g.rolloutE2E.write(t, v)
	path := filepath.Join(g.pkg, "shards.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	for _, name := range g.names {
		line := "  - name: " + name + "\n"
		cfg = strings.Replace(cfg, line, line+"    endpoints: {prometheus: \""+g.prometheus+"\"}\n", 1)
	}
	cfg = strings.Replace(cfg, "      bakeTime: 10s\n", "      bakeTime: "+bake+"\n      gates:\n"+gates, 1)
	writeFile(t, path, cfg)
}

// errorRateGate is the canary's error-rate gate alone, every 2s, with
// extra fields.
const errorRateGate = `      - name: error-rate
        prometheus: {query: 'errors_ratio{cluster="{{.context}}"}'}
        interval: 2s
        successCondition: result < 0.01
        failureCondition: result >= 0.05
`

// gateResult finds a gate's result in the report's wave.
func gateResult(r applyRun, wave, gate, context string) *v1alpha1.GateResult {
	for _, w := range r.report.Waves {
		for i, res := range w.Gates {
			if w.Name == wave && res.Gate == gate && res.Context == context {
				return &w.Gates[i]
			}
		}
	}
	return nil
}

// healthy: R1's error ratio is low: every wave applies, the canary's two
// gates are Successful, and apply printed a line per measurement; apply
// --dry-run -o html shows each gate measured once.
func (g *gatesE2E) healthy(t *testing.T) {
	g.push(t, map[string]float64{"R1": 0.001, "R2": 0.001, "R3": 0.001})
	g.write(t, rolloutVersion{value: "v1"})
	r := g.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("healthy values: exit %d\n%s", r.ExitCode, r.result)
	}
	requireWaves(t, r, v1alpha1.WaveApplied, v1alpha1.WaveApplied)
	g.requireValues(t, map[string]string{"R1": "v1", "R2": "v1", "R3": "v1"})
	// error-rate measures every 2s of the 4s bake and at its end; smoke,
	// without an interval, once at the end.
	for gate, least := range map[string]int{"error-rate": 2, "smoke": 1} {
		res := gateResult(r, "canary", gate, "R1")
		if res == nil || res.Phase != v1alpha1.GateSuccessful || res.Successful < least || len(res.Measurements) != res.Successful {
			t.Errorf("gate %s in R1: %+v, want Successful with at least %d measurement(s)", gate, res, least)
		}
	}
	if !strings.Contains(r.Stderr, "wave canary: gate error-rate: R1: 0.001 Successful") || !strings.Contains(r.Stderr, "wave canary: gate smoke: R1: 200 Successful") {
		t.Errorf("no progress line per measurement:\n%s", r.Stderr)
	}
	g.requireStatusGate(t, "error-rate", v1alpha1.GateSuccessful, "0.001")
	// apply --dry-run -o html: the page shows each gate measured once.
	page := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, g.bin, "apply", g.pkg, "--out", g.out, "--kubeconfig", g.kubeconfig, "--dry-run", "-o", "html")
	if page.ExitCode != 0 {
		t.Fatalf("apply --dry-run -o html:\n%s", page)
	}
	for _, want := range []string{`<tr data-gate="canary/R1/error-rate">`, `<tr data-gate="canary/R1/smoke">`, "<code>0.001</code>", "<code>200</code>", "✓ Successful"} {
		if !strings.Contains(page.Stdout, want) {
			t.Errorf("apply --dry-run -o html lacks %q:\n%s", want, page.Stdout)
		}
	}
}

// failing: R1's error ratio is 0.25, with onFailure Rollback: the
// canary's error-rate gate fails R1 at its first measurement, the rollout
// halts and rolls the canary back (wave canary RolledBack, its error naming the halt) (R1's ConfigMap holds v1 again, in the
// cluster and in OUT_DIR), and R2 and R3 get no write to an object.
func (g *gatesE2E) failing(t *testing.T) {
	g.push(t, map[string]float64{"R1": 0.25})
	g.write(t, rolloutVersion{value: "v2", onFailure: "Rollback"})
	before := g.allVersions(t)
	start := time.Now()
	r := g.apply(t)
	if r.ExitCode != 1 {
		t.Fatalf("a failing gate: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyRolledBack, "R2": v1alpha1.ApplySkipped, "R3": v1alpha1.ApplySkipped})
	// The halted wave is RolledBack, as apply --rollback reports it; its
	// error says that it halted the rollout, and why.
	requireWaves(t, r, v1alpha1.WaveRolledBack, v1alpha1.WaveSkipped)
	if len(r.report.Waves) == 2 && (!strings.HasPrefix(r.report.Waves[0].Error, "rolled back: wave canary halted the rollout: ") ||
		!strings.Contains(r.report.Waves[0].Error, "R1")) {
		t.Errorf("the rolled back wave does not say that it halted the rollout, and why: %q", r.report.Waves[0].Error)
	}
	res := gateResult(r, "canary", "error-rate", "R1")
	if res == nil || res.Phase != v1alpha1.GateFailed || len(res.Measurements) == 0 || res.Measurements[len(res.Measurements)-1].Value != "0.25" {
		t.Errorf("gate error-rate in R1: %+v, want Failed on 0.25", res)
	}
	if !strings.Contains(r.Stderr, "gate error-rate failed during wave canary's bake") {
		t.Errorf("apply does not say which gate failed R1:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, "wave canary: rolling back") {
		t.Errorf("no rollback of the canary:\n%s", r.Stderr)
	}
	g.untouched(t, start, before, "R2", "R3")
	g.requireValues(t, map[string]string{"R1": "v1", "R2": "v1", "R3": "v1"})
	// What failed the canary stays visible after the rollback.
	g.requireStatusGate(t, "error-rate", v1alpha1.GateFailed, "0.25")
	if _, err := os.Stat(filepath.Join(g.out, ".shard-router-rollout")); err == nil {
		t.Error("a finished rollback left the rollout's record in OUT_DIR")
	}
}

// inconclusive: R1's error ratio is 0.02, between the two conditions: the
// rollout pauses after the canary (exit 0, wave Paused, rest Pending, no
// write to R2 or R3); once the ratio is low again, the rerun measures the
// canary again and applies the rest.
func (g *gatesE2E) inconclusive(t *testing.T) {
	g.push(t, map[string]float64{"R1": 0.02})
	g.write(t, rolloutVersion{value: "v3"})
	before := g.allVersions(t)
	start := time.Now()
	r := g.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("an inconclusive gate: exit %d, want 0\n%s", r.ExitCode, r.result)
	}
	requireWaves(t, r, v1alpha1.WavePaused, v1alpha1.WavePending)
	if !r.report.Paused || !strings.Contains(r.report.Waves[0].Error, "gate error-rate in R1") {
		t.Errorf("the report does not say the gate paused the rollout: paused %v, %q", r.report.Paused, r.report.Waves[0].Error)
	}
	if res := gateResult(r, "canary", "error-rate", "R1"); res == nil || res.Phase != v1alpha1.GateInconclusive {
		t.Errorf("gate error-rate in R1: %+v, want Inconclusive", res)
	}
	g.untouched(t, start, before, "R2", "R3")
	g.requireStatusGate(t, "error-rate", v1alpha1.GateInconclusive, "0.02")

	g.push(t, map[string]float64{"R1": 0.001})
	r = g.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the rerun: exit %d\n%s", r.ExitCode, r.result)
	}
	requireWaves(t, r, v1alpha1.WaveUnchanged, v1alpha1.WaveApplied)
	if res := gateResult(r, "canary", "error-rate", "R1"); res == nil || res.Phase != v1alpha1.GateSuccessful {
		t.Errorf("the rerun did not measure the canary again: %+v", res)
	}
	g.requireValues(t, map[string]string{"R1": "v3", "R2": "v3", "R3": "v3"})
	// The rerun's measurements replace the inconclusive ones.
	g.requireStatusGate(t, "error-rate", v1alpha1.GateSuccessful, "0.001")
}

// requireStatusGate checks that status, in json and html, shows gate of
// the canary in R1 as OUT_DIR recorded it after the last apply: its phase
// and its last measured value.
func (g *gatesE2E) requireStatusGate(t *testing.T, gate string, phase v1alpha1.GatePhase, value string) {
	t.Helper()
	res := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, g.bin, "status", g.out, "--kubeconfig", g.kubeconfig, "-o", "json")
	var doc v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, res)
	}
	var got *v1alpha1.GateResult
	for _, w := range doc.Gates {
		for i := range w.Gates {
			if w.Wave == "canary" && w.Gates[i].Gate == gate && w.Gates[i].Context == "R1" {
				got = &w.Gates[i]
			}
		}
	}
	if got == nil || got.Phase != phase || len(got.Measurements) == 0 || got.Measurements[len(got.Measurements)-1].Value != value {
		t.Errorf("status shows gate %s in R1 as %+v, want %s with the last value %s\n%s", gate, got, phase, value, res.Stdout)
	}
	page := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, g.bin, "status", g.out, "--kubeconfig", g.kubeconfig, "-o", "html")
	if !strings.Contains(page.Stdout, `<tr data-gate="canary/R1/`+gate+`">`) || !strings.Contains(page.Stdout, "<code>"+value+"</code>") {
		t.Errorf("status -o html does not show gate %s in R1 with %s:\n%s", gate, value, page.Stdout)
	}
}

// waitApply waits for an apply started by applyAsync and reads its
// report.
func waitApply(t testing.TB, cmd *exec.Cmd, progress string, stdout *os.File) applyRun {
	t.Helper()
	_ = cmd.Wait()
	stdout.Close()
	data, _ := os.ReadFile(progress)
	out, _ := os.ReadFile(stdout.Name())
	r := applyRun{result: result{Stdout: string(out), Stderr: string(data), ExitCode: cmd.ProcessState.ExitCode()}}
	if err := json.Unmarshal(out, &r.report); err != nil {
		t.Fatalf("apply -o json printed no report (exit %d): %v\n%s\n%s", r.ExitCode, err, out, data)
	}
	return r
}

// measured counts the progress lines of the error-rate gate in R1.
func measured(t testing.TB, progress string) int {
	data, err := os.ReadFile(progress)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "wave canary: gate error-rate: R1: ")
}

// requireMeasurements asserts the phases of a gate's measurements in
// order.
func requireMeasurements(t testing.TB, res *v1alpha1.GateResult, want ...v1alpha1.GatePhase) {
	t.Helper()
	var got []v1alpha1.GatePhase
	for _, m := range res.Measurements {
		got = append(got, m.Phase)
	}
	if !slices.Equal(got, want) {
		t.Errorf("gate %s in %s: measurements %v, want %v (%+v)", res.Gate, res.Context, got, want, res)
	}
}

// turnsBad: R1's error ratio is good when the canary starts a 30s bake
// with error-rate every 2s; after the first Successful measurement the
// test pushes 0.25. The first measurement taken once Prometheus returns
// 0.25 fails the gate: every measurement before it was Successful, at
// most one was taken after Prometheus had the bad value (one interval),
// and the bake was cut short (the 30s bake would take 16). The rollout
// halts, R2 and R3 get no write to an object.
func (g *gatesE2E) turnsBad(t *testing.T) {
	g.push(t, map[string]float64{"R1": 0.001})
	g.writeGates(t, rolloutVersion{value: "v4"}, "30s", errorRateGate)
	before := g.allVersions(t)
	start := time.Now()
	cmd, progress, stdout := g.applyAsync(t)
	waitFor(t, cmd, progress, "wave canary: gate error-rate: R1: 0.001 Successful")
	pushed := measured(t, progress)
	g.push(t, map[string]float64{"R1": 0.25})
	seen := measured(t, progress)
	r := waitApply(t, cmd, progress, stdout)
	t.Logf("measurements: %d before the push, %d once Prometheus had 0.25\n%s", pushed, seen, r.Stderr)
	if r.ExitCode != 1 {
		t.Fatalf("a value turned bad during the bake: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyFailed, "R2": v1alpha1.ApplySkipped, "R3": v1alpha1.ApplySkipped})
	requireWaves(t, r, v1alpha1.WaveHalted, v1alpha1.WaveSkipped)
	res := gateResult(r, "canary", "error-rate", "R1")
	if res == nil {
		t.Fatalf("no error-rate gate in the report: %+v", r.report.Waves)
	}
	taken := res.Successful + res.Failed + res.Inconclusive + res.Errors
	if res.Phase != v1alpha1.GateFailed || res.Failed != 1 || res.Successful != taken-1 || res.Successful < pushed {
		t.Errorf("gate error-rate in R1: %+v, want Failed by its last measurement, every one before it Successful", res)
	}
	if last := res.Measurements[len(res.Measurements)-1]; last.Value != "0.25" {
		t.Errorf("the failed measurement is %+v, want 0.25", last)
	}
	// seen measurements were printed once Prometheus had 0.25; one more
	// may have been in flight (queried before), then the next one fails.
	if taken > seen+2 {
		t.Errorf("the gate failed at measurement %d, more than one interval after Prometheus had the value (measurement %d)", taken, seen)
	}
	if taken >= 15 || !strings.Contains(r.Stderr, "gate error-rate failed during wave canary's bake") {
		t.Errorf("the gate did not fail during the bake (%d measurements):\n%s", taken, r.Stderr)
	}
	g.untouched(t, start, before, "R2", "R3")
	g.requireValues(t, map[string]string{"R1": "v4", "R2": "v3", "R3": "v3"})
}

// checkCRD is the custom resource the kubernetes gate reads, with a
// status subresource.
const checkCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: checks.gates.e2e.shardrouter.dev
spec:
  group: gates.e2e.shardrouter.dev
  names: {kind: Check, plural: checks, singular: check, listKind: CheckList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// kubernetesGate: a kubernetes gate on a Check (a CRD the test creates in
// R1 only) whose status.phase the test sets through the status
// subresource: Succeeded lets every wave apply, Failed fails R1 and halts
// the rollout with no write to R2 or R3.
func (g *gatesE2E) kubernetesGate(t *testing.T) {
	r1 := g.api["R1"]
	r1.applyYAML(t, checkCRD)
	r1.waitEstablished(t, "checks.gates.e2e.shardrouter.dev")
	const checks = "/apis/gates.e2e.shardrouter.dev/v1/namespaces/default/checks"
	if code, body, err := r1.do("POST", checks, "application/json", []byte(`{"apiVersion":"gates.e2e.shardrouter.dev/v1","kind":"Check","metadata":{"name":"canary"}}`)); err != nil || code != http.StatusCreated {
		t.Fatalf("creating the Check: %d %v: %s", code, err, body)
	}
	setPhase := func(phase string) {
		r1.MergePatch(t, checks+"/canary/status", map[string]any{"status": map[string]any{"phase": phase}})
		if got := r1.Get(t, checks+"/canary")["status"]; fmt.Sprint(got) != fmt.Sprintf("map[phase:%s]", phase) {
			t.Fatalf("the Check's status is %v, want phase %s", got, phase)
		}
	}
	gates := `      - name: canary-check
        kubernetes:
          apiVersion: gates.e2e.shardrouter.dev/v1
          kind: Check
          namespace: default
          name: canary
          successCondition: object.status.phase == "Succeeded"
          failureCondition: object.status.phase == "Failed"
`
	setPhase("Succeeded")
	g.writeGates(t, rolloutVersion{value: "v5"}, "2s", gates)
	r := g.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("a Succeeded Check: exit %d\n%s", r.ExitCode, r.result)
	}
	requireWaves(t, r, v1alpha1.WaveApplied, v1alpha1.WaveApplied)
	res := gateResult(r, "canary", "canary-check", "R1")
	if res == nil || res.Phase != v1alpha1.GateSuccessful || res.Provider != "kubernetes" || len(res.Measurements) != 1 || !strings.Contains(res.Measurements[0].Value, "Succeeded") {
		t.Errorf("gate canary-check in R1: %+v, want Successful on the Check's status", res)
	}
	g.requireValues(t, map[string]string{"R1": "v5", "R2": "v5", "R3": "v5"})

	setPhase("Failed")
	g.writeGates(t, rolloutVersion{value: "v6"}, "2s", gates)
	before := g.allVersions(t)
	start := time.Now()
	r = g.apply(t)
	if r.ExitCode != 1 {
		t.Fatalf("a Failed Check: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyFailed, "R2": v1alpha1.ApplySkipped, "R3": v1alpha1.ApplySkipped})
	requireWaves(t, r, v1alpha1.WaveHalted, v1alpha1.WaveSkipped)
	if res := gateResult(r, "canary", "canary-check", "R1"); res == nil || res.Phase != v1alpha1.GateFailed || !strings.Contains(res.Message, "Failed") {
		t.Errorf("gate canary-check in R1: %+v, want Failed on the Check's status", res)
	}
	g.untouched(t, start, before, "R2", "R3")
	g.requireValues(t, map[string]string{"R1": "v6", "R2": "v5", "R3": "v5"})
}

// prometheusStopped: R1's error ratio is good when the canary starts a
// 30s bake with error-rate every 2s and consecutiveErrorLimit 2; after the
// first Successful measurement the test stops Prometheus. Each later
// measurement is an Error; the third in a row fails the gate (Error), the
// rollout halts, R2 and R3 get no write to an object. It runs last: the
// Prometheus stays stopped.
func (g *gatesE2E) prometheusStopped(t *testing.T) {
	g.push(t, map[string]float64{"R1": 0.001})
	g.writeGates(t, rolloutVersion{value: "v7"}, "30s", errorRateGate+"        consecutiveErrorLimit: 2\n")
	before := g.allVersions(t)
	start := time.Now()
	cmd, progress, stdout := g.applyAsync(t)
	waitFor(t, cmd, progress, "wave canary: gate error-rate: R1: 0.001 Successful")
	_ = g.prom.Process.Kill()
	_ = g.prom.Wait()
	r := waitApply(t, cmd, progress, stdout)
	t.Logf("%s", r.Stderr)
	if r.ExitCode != 1 {
		t.Fatalf("Prometheus stopped during the bake: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyFailed, "R2": v1alpha1.ApplySkipped, "R3": v1alpha1.ApplySkipped})
	requireWaves(t, r, v1alpha1.WaveHalted, v1alpha1.WaveSkipped)
	res := gateResult(r, "canary", "error-rate", "R1")
	if res == nil {
		t.Fatalf("no error-rate gate in the report: %+v", r.report.Waves)
	}
	if res.Phase != v1alpha1.GateError || res.Errors != 3 || res.Failed != 0 || res.Successful < 1 || !strings.Contains(res.Message, "consecutiveErrorLimit 2") {
		t.Errorf("gate error-rate in R1: %+v, want Error after 3 errors in a row", res)
	}
	var want []v1alpha1.GatePhase
	for range res.Successful {
		want = append(want, v1alpha1.GateSuccessful)
	}
	want = append(want, v1alpha1.GateError, v1alpha1.GateError, v1alpha1.GateError)
	requireMeasurements(t, res, want[max(0, len(want)-10):]...)
	if !strings.Contains(r.Stderr, "gate error-rate error during wave canary's bake") {
		t.Errorf("apply does not say the gate errored during the bake:\n%s", r.Stderr)
	}
	g.untouched(t, start, before, "R2", "R3")
	g.requireValues(t, map[string]string{"R1": "v7", "R2": "v5", "R3": "v5"})
}
