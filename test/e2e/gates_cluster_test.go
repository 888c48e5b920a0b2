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
// test). Every process listens on 127.0.0.1 and is stopped at the end.
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
		{"FailingCanaryHalts", g.failing},
		{"InconclusivePausesThenResumes", g.inconclusive},
	})
}

type gatesE2E struct {
	*rolloutE2E
	prometheus   string
	pushgateways map[string]string
	smoke        *httptest.Server
}

// startMetrics starts a pushgateway per cluster and a Prometheus that
// scrapes them every second.
func (g *gatesE2E) startMetrics(t *testing.T) {
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
	g.startProc(t, "prometheus", "prometheus", "--config.file="+cfg, "--web.listen-address="+addr,
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
func (g *gatesE2E) startProc(t *testing.T, name, bin string, args ...string) {
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
// Prometheus endpoint and the canary wave's gates.
func (g *gatesE2E) write(t testing.TB, v rolloutVersion) {
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
	cfg = strings.Replace(cfg, "      bakeTime: 10s\n", `      bakeTime: 4s
      gates:
      - name: error-rate
        prometheus: {query: 'errors_ratio{cluster="{{.context}}"}'}
        interval: 2s
        successCondition: result < 0.01
        failureCondition: result >= 0.05
      - name: smoke
        http: {url: "`+g.smoke.URL+`/{{.context}}/healthz", expectStatus: [200], successCondition: body.ok}
`, 1)
	writeFile(t, path, cfg)
}

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
// gates are Successful, and apply printed a line per measurement.
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
}

// failing: R1's error ratio is 0.25: the canary's error-rate gate fails R1
// at its first measurement, the rollout halts, and R2 and R3 get no write
// to an object. (onFailure: Rollback is not asserted here: at this base,
// the rollback after a halt is refused by the run's own lock, issue 35.)
func (g *gatesE2E) failing(t *testing.T) {
	g.push(t, map[string]float64{"R1": 0.25})
	g.write(t, rolloutVersion{value: "v2"})
	before := g.allVersions(t)
	start := time.Now()
	r := g.apply(t)
	if r.ExitCode != 1 {
		t.Fatalf("a failing gate: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyFailed, "R2": v1alpha1.ApplySkipped, "R3": v1alpha1.ApplySkipped})
	if len(r.report.Waves) != 2 || r.report.Waves[1].Status != v1alpha1.WaveSkipped {
		t.Errorf("waves %+v, want the rest Skipped", r.report.Waves)
	}
	res := gateResult(r, "canary", "error-rate", "R1")
	if res == nil || res.Phase != v1alpha1.GateFailed || len(res.Measurements) == 0 || res.Measurements[len(res.Measurements)-1].Value != "0.25" {
		t.Errorf("gate error-rate in R1: %+v, want Failed on 0.25", res)
	}
	if !strings.Contains(r.Stderr, "gate error-rate failed during wave canary's bake") {
		t.Errorf("apply does not say which gate failed R1:\n%s", r.Stderr)
	}
	g.untouched(t, start, before, "R2", "R3")
	g.requireValues(t, map[string]string{"R1": "v2", "R2": "v1", "R3": "v1"})
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
}
