//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkRolloutGates (issue 34) compares, on three real clusters it
// starts itself, a change rolled out in two waves (the canary A, then B
// and C) whose canary has three gates, minus its bake, with the same
// rollout without gates, minus the same bake, on two packages of the
// same shape (their own namespaces and inventories). The gates measure
// every second of the bake and once at its end: error-rate (prometheus,
// a real Prometheus scraping a real pushgateway), smoke (http, a server
// of the benchmark) and settings (kubernetes, a ConfigMap of the package
// in A). Neither gate has a count, so the bake is bakeTime on both sides
// and what is left is the gates' cost: their clients, their measurements
// and the one at the end of the bake. It runs once whatever b.N is and
// reports the ratio gated/ungated (issue 34: at most 1.1) and both times.
func BenchmarkRolloutGates(b *testing.B) {
	for _, tool := range []string{"prometheus", "prometheus-pushgateway"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s is not installed: run hack/install-packages.sh", tool)
		}
	}
	bin := shardRouter(b)
	dir := b.TempDir()
	creds := clusterNewCreds(b, dir)
	var servers []*clusterAPIServer
	for _, name := range []string{"A", "B", "C"} {
		etcd := clusterStartEtcd(b, dir, "bench-etcd-"+strings.ToLower(name))
		etcd.waitReady(b)
		servers = append(servers, clusterStartAPIServer(b, dir, name, creds, etcd, ""))
	}
	for _, s := range servers {
		s.waitReady(b)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	clusterWriteKubeconfig(b, kubeconfig, creds.Token, servers...)

	g := &gatesE2E{rolloutE2E: &rolloutE2E{dir: dir, names: []string{"A"}}, pushgateways: map[string]string{}}
	g.startMetrics(b)
	g.push(b, map[string]float64{"A": 0.001})
	smoke := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"ok": true}`)
	}))
	b.Cleanup(smoke.Close)

	const namespaces, configMaps = 4, 49 // per context: 4 x (1 + 49) = 200 objects
	apply := func(prefix string, gated bool, value string) time.Duration {
		pkg := benchRolloutPackage(b, dir, prefix, true, value, namespaces, configMaps)
		if gated {
			benchGates(b, pkg, prefix, g.prometheus, smoke.URL)
		}
		out := filepath.Join(dir, prefix+"-out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res := mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, bin, "apply", pkg, "--out", out, "--kubeconfig", kubeconfig)
		took := time.Since(start)
		if gated && !strings.Contains(res.Stderr, "wave canary: gate settings: A: ") {
			b.Fatalf("the gated rollout measured no gate:\n%s", res.Stderr)
		}
		return took - rolloutBenchBake
	}
	apply("gt", true, "v1")
	apply("ng", false, "v1")
	// The change, alternating who goes first.
	gated, plain := apply("gt", true, "v2"), apply("ng", false, "v2")
	plain2, gated2 := apply("ng", false, "v3"), apply("gt", true, "v3")
	ratio := float64(gated+gated2) / float64(plain+plain2)
	b.Logf("a change of %d objects in 3 contexts, two waves, minus the canary's %s bake: with 3 gates %s and %s, without %s and %s: ratio %.2f (at most 1.1)",
		3*namespaces*(1+configMaps), rolloutBenchBake, gated.Round(time.Millisecond), gated2.Round(time.Millisecond),
		plain.Round(time.Millisecond), plain2.Round(time.Millisecond), ratio)
	b.ReportMetric(ratio, "gated-vs-ungated-ratio")
	b.ReportMetric((gated+gated2).Seconds()/2, "gated-minus-bake-s")
	b.ReportMetric((plain+plain2).Seconds()/2, "ungated-minus-bake-s")
}

// benchGates gives the canary wave of a package benchRolloutPackage wrote
// its three gates, and A its Prometheus endpoint.
func benchGates(b *testing.B, pkg, prefix, prometheus, smoke string) {
	path := filepath.Join(pkg, "shards.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cfg := strings.Replace(string(data), "  - name: A\n", "  - name: A\n    endpoints: {prometheus: \""+prometheus+"\"}\n", 1)
	bake := fmt.Sprintf("      bakeTime: %s\n", rolloutBenchBake)
	if !strings.Contains(cfg, bake) {
		b.Fatalf("no canary bake in %s:\n%s", path, cfg)
	}
	cfg = strings.Replace(cfg, bake, bake+`      gates:
      - name: error-rate
        prometheus: {query: 'errors_ratio{cluster="{{.context}}"}'}
        interval: 1s
        successCondition: result < 0.01
      - name: smoke
        http: {url: "`+smoke+`/{{.context}}/healthz", successCondition: body.ok}
        interval: 1s
      - name: settings
        kubernetes: {apiVersion: v1, kind: ConfigMap, namespace: `+prefix+`-a-0, name: settings-0, successCondition: 'object.data.value != ""'}
        interval: 1s
`, 1)
	writeFile(b, path, cfg)
}
