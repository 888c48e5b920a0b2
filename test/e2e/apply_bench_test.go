//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/testfixture"
)

// BenchmarkApplyVsKpt (make bench-apply) compares, on two real clusters it
// starts itself, `shard-router apply` of about 1,000 objects to two
// contexts with `kpt live apply` run once per context in sequence, on a
// package of the same shape (its own namespaces and inventories), first
// creating everything, then with no change (counting the write requests
// both apiservers' audit logs record: none for shard-router, which reads
// that every context is in sync). It runs once whatever b.N is,
// and reports the ratios shard-router/kpt: a ratio is what to read on a
// shared machine, never an absolute time.
func BenchmarkApplyVsKpt(b *testing.B) {
	kpt, bin := toolPath(b, "kpt"), shardRouter(b)
	dir := b.TempDir()
	apiA, apiB, kubeconfig := benchClusters(b, dir)

	const namespaces, configMaps = 10, 49 // per context: 10 x (1 + 49) = 500 objects
	sr, kp := benchPackage(b, dir, "sr", namespaces, configMaps), benchPackage(b, dir, "kp", namespaces, configMaps)
	srOut, kpOut := filepath.Join(dir, "sr-out"), filepath.Join(dir, "kp-out")
	mustRun(b, cmdSpec{}, bin, "split", kp, "-o", kpOut)
	if err := os.MkdirAll(srOut, 0o755); err != nil { // a first apply: OUT_DIR exists, empty
		b.Fatal(err)
	}

	srApply := func() time.Duration {
		start := time.Now()
		mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, bin, "apply", sr, "--out", srOut, "--kubeconfig", kubeconfig)
		return time.Since(start)
	}
	kptApply := func() time.Duration {
		start := time.Now()
		for _, ctx := range []string{"A", "B"} {
			mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, kpt, "live", "apply", filepath.Join(kpOut, ctx), "--context", ctx,
				"--kubeconfig", kubeconfig, "--reconcile-timeout", "5m")
		}
		return time.Since(start)
	}
	// writes counts the write requests both clusters' audit logs record
	// during f.
	writes := func(f func() time.Duration) (time.Duration, int) {
		markA, markB := apiA.auditMark(b), apiB.auditMark(b)
		took := f()
		return took, len(apiA.writesSince(b, markA)) + len(apiB.writesSince(b, markB))
	}
	// Alternate who goes first, so that neither always meets a warmer
	// apiserver.
	kCreate := kptApply()
	sCreate := srApply()
	sSame, sWrites := writes(srApply)
	kSame, kWrites := writes(kptApply)
	if sWrites != 0 {
		b.Errorf("a no-change shard-router apply sent %d write request(s)", sWrites)
	}
	b.Logf("create %d objects in 2 contexts: shard-router apply %s, kpt live apply x2 %s: ratio %.2f", 2*namespaces*(1+configMaps),
		sCreate.Round(time.Millisecond), kCreate.Round(time.Millisecond), float64(sCreate)/float64(kCreate))
	b.Logf("no change: shard-router apply %s (%d write requests), kpt live apply x2 %s (%d write requests): ratio %.2f",
		sSame.Round(time.Millisecond), sWrites, kSame.Round(time.Millisecond), kWrites, float64(sSame)/float64(kSame))
	b.ReportMetric(float64(sCreate)/float64(kCreate), "create-ratio")
	b.ReportMetric(float64(sSame)/float64(kSame), "nochange-ratio")
	b.ReportMetric(sCreate.Seconds(), "sr-create-s")
	b.ReportMetric(kCreate.Seconds(), "kpt-create-s")
	b.ReportMetric(sSame.Seconds(), "sr-nochange-s")
	b.ReportMetric(kSame.Seconds(), "kpt-nochange-s")
	b.ReportMetric(float64(sWrites), "sr-nochange-writes")
	b.ReportMetric(float64(kWrites), "kpt-nochange-writes")
}

// benchClusters starts two real clusters, A and B, and writes a
// kubeconfig with a context for each.
func benchClusters(b *testing.B, dir string) (apiA, apiB *clusterAPIServer, kubeconfig string) {
	creds := clusterNewCreds(b, dir)
	etcdA, etcdB := clusterStartEtcd(b, dir, "bench-etcd-a"), clusterStartEtcd(b, dir, "bench-etcd-b")
	etcdA.waitReady(b)
	etcdB.waitReady(b)
	apiA = clusterStartAPIServer(b, dir, "A", creds, etcdA, "")
	apiB = clusterStartAPIServer(b, dir, "B", creds, etcdB, "")
	apiA.waitReady(b)
	apiB.waitReady(b)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	clusterWriteKubeconfig(b, kubeconfig, creds.Token, apiA, apiB)
	return apiA, apiB, kubeconfig
}

// benchPackage writes a package of namespaces per context (prefix-a-N to
// A, prefix-b-N to B), each with configMaps ConfigMaps.
func benchPackage(b *testing.B, dir, prefix string, namespaces, configMaps int) string {
	pkg := filepath.Join(dir, prefix+"-pkg")
	writeFile(b, filepath.Join(pkg, "Kptfile"), testfixture.Kptfile("bench-"+prefix))
	writeFile(b, filepath.Join(pkg, "shards.yaml"), `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  contexts:
  - name: A
    namespaceSelector: {matchLabels: {bench.shardrouter.dev/shard: a}}
  - name: B
    namespaceSelector: {matchLabels: {bench.shardrouter.dev/shard: b}}
`)
	writeBenchNamespaces(b, pkg, prefix, []string{"a", "b"}, strings.Repeat("x", 64), namespaces, configMaps)
	return pkg
}

// writeBenchNamespaces writes, for each shard, namespaces files
// prefix-<shard>-N.yaml into pkg: a Namespace labelled
// bench.shardrouter.dev/shard: <shard> and configMaps ConfigMaps in it
// holding value.
func writeBenchNamespaces(b *testing.B, pkg, prefix string, shards []string, value string, namespaces, configMaps int) {
	for _, shard := range shards {
		for n := range namespaces {
			ns := fmt.Sprintf("%s-%s-%d", prefix, shard, n)
			var s strings.Builder
			fmt.Fprintf(&s, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    bench.shardrouter.dev/shard: %s\n", ns, shard)
			for c := range configMaps {
				fmt.Fprintf(&s, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-%d\n  namespace: %s\ndata:\n  value: %q\n", c, ns, value)
			}
			writeFile(b, filepath.Join(pkg, ns+".yaml"), s.String())
		}
	}
}
