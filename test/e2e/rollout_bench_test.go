//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/testfixture"
)

// rolloutBenchBake is the canary's bakeTime in BenchmarkRolloutVsAllAtOnce.
const rolloutBenchBake = 3 * time.Second

// BenchmarkRolloutVsAllAtOnce (issue 28) compares, on three real clusters
// it starts itself, a change rolled out in two waves (the canary A, then B
// and C) minus its bake time with the same change applied to the three
// contexts at once, on two packages of the same shape (their own
// namespaces and inventories). It runs once whatever b.N is, and reports
// the ratio waved/all-at-once, the write requests each side sent (the
// clusters' audit logs), and the floor of that ratio on this machine: kpt
// live apply run by hand in the waves' order against all at once.
func BenchmarkRolloutVsAllAtOnce(b *testing.B) {
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

	const namespaces, configMaps = 4, 49 // per context: 4 x (1 + 49) = 200 objects
	// apply returns how long the apply took and how many write requests
	// it sent to the three clusters.
	apply := func(prefix string, waved bool, value string) (time.Duration, int) {
		pkg := benchRolloutPackage(b, dir, prefix, waved, value, namespaces, configMaps)
		out := filepath.Join(dir, prefix+"-out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
		marks := make([]int64, len(servers))
		for i, s := range servers {
			marks[i] = s.auditMark(b)
		}
		start := time.Now()
		mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, bin, "apply", pkg, "--out", out, "--kubeconfig", kubeconfig)
		took := time.Since(start)
		writes := 0
		for i, s := range servers {
			writes += len(s.writesSince(b, marks[i]))
		}
		return took, writes
	}
	apply("wv", true, "v1")
	apply("all", false, "v1")
	// The change, alternating who goes first.
	waved, wavedWrites := apply("wv", true, "v2")
	all, allWrites := apply("all", false, "v2")
	waved2, wavedWrites2 := apply("wv", true, "v3")
	all2, allWrites2 := apply("all", false, "v3")
	waved -= rolloutBenchBake
	waved2 -= rolloutBenchBake
	ratio := float64(waved+waved2) / float64(all+all2)

	// The floor any orchestrator of kpt's engine meets on this machine:
	// kpt live apply itself, run by hand in the same order (A, then B and
	// C at once) against all three at once, on a third package of the
	// same shape split by shard-router.
	kpt := toolPath(b, "kpt")
	kptApply := func(value string, groups ...[]string) time.Duration {
		pkg := benchRolloutPackage(b, dir, "kp", false, value, namespaces, configMaps)
		out := filepath.Join(dir, "kp-split-"+value)
		mustRun(b, cmdSpec{}, bin, "split", pkg, "-o", out)
		start := time.Now()
		for _, group := range groups {
			results := make([]result, len(group))
			var wg sync.WaitGroup
			for i, ctx := range group {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = run(context.Background(), cmdSpec{Timeout: 10 * time.Minute}, kpt, "live", "apply", filepath.Join(out, ctx),
						"--context", ctx, "--kubeconfig", kubeconfig, "--reconcile-timeout", "5m")
				}()
			}
			wg.Wait()
			for _, res := range results {
				if res.Err != nil || res.ExitCode != 0 {
					b.Fatal(res)
				}
			}
		}
		return time.Since(start)
	}
	inOrder, atOnce := [][]string{{"A"}, {"B", "C"}}, [][]string{{"A", "B", "C"}}
	kptApply("v1", atOnce...)
	kSeq, kAll := kptApply("v2", inOrder...), kptApply("v3", atOnce...)
	kSeq2, kAll2 := kptApply("v4", inOrder...), kptApply("v5", atOnce...)
	floor := float64(kSeq+kSeq2) / float64(kAll+kAll2)
	b.Logf("the same order with kpt live apply by hand: A then B and C %s and %s, all three at once %s and %s: ratio %.2f",
		kSeq.Round(time.Millisecond), kSeq2.Round(time.Millisecond), kAll.Round(time.Millisecond), kAll2.Round(time.Millisecond), floor)
	b.ReportMetric(floor, "kpt-in-order-ratio")
	b.Logf("a change of %d objects in 3 contexts: waved minus its %s bake %s and %s, all at once %s and %s: ratio %.2f",
		3*namespaces*(1+configMaps), rolloutBenchBake, waved.Round(time.Millisecond), waved2.Round(time.Millisecond),
		all.Round(time.Millisecond), all2.Round(time.Millisecond), ratio)
	b.Logf("write requests: waved %d and %d, all at once %d and %d", wavedWrites, wavedWrites2, allWrites, allWrites2)
	b.ReportMetric(ratio, "waved-minus-bake-ratio")
	b.ReportMetric((waved+waved2).Seconds()/2, "waved-minus-bake-s")
	b.ReportMetric((all+all2).Seconds()/2, "all-at-once-s")
	b.ReportMetric(float64(wavedWrites+wavedWrites2)/2, "waved-writes")
	b.ReportMetric(float64(allWrites+allWrites2)/2, "all-at-once-writes")
}

// benchRolloutPackage writes a package of namespaces per context
// (prefix-a-N to A, and so on), each with configMaps ConfigMaps holding
// value; waved adds spec.rollout: A as the canary with rolloutBenchBake,
// then B and C.
func benchRolloutPackage(b *testing.B, dir, prefix string, waved bool, value string, namespaces, configMaps int) string {
	pkg := filepath.Join(dir, prefix+"-pkg")
	writeFile(b, filepath.Join(pkg, "Kptfile"), testfixture.Kptfile("bench-"+prefix))
	cfg := `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  contexts:
  - name: A
    labels: {stage: canary}
    namespaceSelector: {matchLabels: {bench.shardrouter.dev/shard: a}}
  - name: B
    namespaceSelector: {matchLabels: {bench.shardrouter.dev/shard: b}}
  - name: C
    namespaceSelector: {matchLabels: {bench.shardrouter.dev/shard: c}}
`
	if waved {
		cfg += fmt.Sprintf("  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {stage: canary}}\n      bakeTime: %s\n    - name: rest\n      contexts: {}\n", rolloutBenchBake)
	}
	writeFile(b, filepath.Join(pkg, "shards.yaml"), cfg)
	writeBenchNamespaces(b, pkg, prefix, []string{"a", "b", "c"}, value, namespaces, configMaps)
	return pkg
}
