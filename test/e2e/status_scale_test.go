//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/pkg/live/status"
)

// The fleet of the scale benchmark: scaleContexts contexts, each with
// scaleNamespaces Namespaces of scalePerNamespace ConfigMaps, so 1,000
// objects per context.
const (
	scaleContexts     = 50
	scaleNamespaces   = 10
	scalePerNamespace = 99
)

// BenchmarkStatusFleet measures shard-router status over 50 contexts of
// 1,000 objects against one context of the same fleet: the point is that
// the fleet does not take 50 times one context. One real kube-apiserver
// stands for every cluster: the kubeconfig has 50 contexts that point at
// it, each applied (objects, owning-inventory annotations, ResourceGroup)
// with its own Namespaces. The fleet is measured as it is (rtt=0: on this
// one machine, CPU bound) and again with each context behind its own proxy
// that adds $STATUS_BENCH_RTT (default 20ms) to every round trip, as real
// clusters would. Run it with
//
//	go test -tags e2e -run '^$' -bench BenchmarkStatusFleet -benchtime 3x ./test/e2e/
//
// and read each fleet's contexts=50 wall-x and cpu-x: its wall and CPU
// time as multiples of contexts=1's.
func BenchmarkStatusFleet(b *testing.B) {
	bin, kpt := shardRouter(b), toolPath(b, "kpt")
	dir := b.TempDir()
	creds := clusterNewCreds(b, dir)
	etcd := clusterStartEtcd(b, dir, "etcd-scale")
	etcd.waitReady(b)
	api := clusterStartAPIServer(b, dir, "scale", creds, etcd, "")
	api.waitReady(b)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	names := make([]string, scaleContexts)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
	}
	scaleWriteKubeconfig(b, kubeconfig, creds.Token, api, names, nil)

	pkg, out := filepath.Join(dir, "pkg"), filepath.Join(dir, "out")
	scaleWritePackage(b, pkg, names)
	mustRun(b, cmdSpec{Timeout: buildTimeout}, bin, "split", pkg, "-o", out)
	mustRun(b, cmdSpec{}, kpt, "live", "install-resource-group", "--kubeconfig", kubeconfig, "--context", names[0])
	for _, name := range names {
		scaleApply(b, api, filepath.Join(out, name))
	}
	// What is measured is the in-sync fleet, every object read and checked.
	res := runCmd(b, cmdSpec{Timeout: buildTimeout}, bin, "status", out, "--kubeconfig", kubeconfig, "--detailed-exitcode")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, fmt.Sprintf("%d of %d contexts in sync.", scaleContexts, scaleContexts)) {
		b.Fatalf("the fleet is not in sync:\n%s", res)
	}
	// The same fleet as far away as real clusters: each context's server
	// is its own proxy that adds the round-trip time.
	fleets := []struct{ name, kubeconfig string }{{"rtt=0", kubeconfig}}
	if rtt := scaleBenchRTT(b); rtt > 0 {
		servers := make([]string, len(names))
		for i := range servers {
			servers[i] = "https://" + startLatencyProxy(b, strings.TrimPrefix(api.URL, "https://"), rtt).Addr
		}
		far := filepath.Join(dir, "kubeconfig-rtt")
		scaleWriteKubeconfig(b, far, creds.Token, api, names, servers)
		fleets = append(fleets, struct{ name, kubeconfig string }{"rtt=" + rtt.String(), far})
	}
	for _, f := range fleets {
		b.Run(f.name, func(b *testing.B) { benchStatusContexts(b, out, f.kubeconfig, names) })
	}
}

// scaleBenchRTT is the round-trip time the benchmark adds for its far
// fleet: $STATUS_BENCH_RTT (a Go duration; 0 leaves the far fleet out),
// default 20ms.
func scaleBenchRTT(b testing.TB) time.Duration {
	v := os.Getenv("STATUS_BENCH_RTT")
	if v == "" {
		return 20 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("STATUS_BENCH_RTT=%q: want a duration such as 20ms", v)
	}
	return d
}

// benchStatusContexts runs status for one context, then for every one, and
// reports the second's wall and CPU time per op as ratios of the first's
// (wall-x, cpu-x): the point is that these stay far below the number of
// contexts. The engine runs in-process, so that its CPU time can be
// measured; with a latency proxy, that includes the proxy's forwarding.
func benchStatusContexts(b *testing.B, out, kubeconfig string, names []string) {
	var one struct{ wall, cpu float64 }
	for _, bc := range []struct {
		name     string
		contexts []string
	}{
		{"contexts=1", names[:1]},
		{fmt.Sprintf("contexts=%d", len(names)), nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			start := time.Now()
			for range b.N {
				doc, err := status.Run(context.Background(), status.Options{OutDir: out, Kubeconfig: kubeconfig, Contexts: bc.contexts})
				if err != nil || !doc.InSync() {
					b.Fatalf("status: %v, in sync %v", err, doc != nil && doc.InSync())
				}
			}
			wall := time.Since(start).Seconds() / float64(b.N)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano()-before.Utime.Nano()+after.Stime.Nano()-before.Stime.Nano()).Seconds() / float64(b.N)
			b.ReportMetric(cpu, "cpu-s/op")
			if bc.contexts != nil {
				one.wall, one.cpu = wall, cpu
			} else if one.wall > 0 {
				b.ReportMetric(wall/one.wall, "wall-x")
				b.ReportMetric(cpu/one.cpu, "cpu-x")
			}
		})
	}
}

// scaleWriteKubeconfig writes one context per name, all served by a: at
// its own URL, or with servers, each name at its own server (a proxy to a).
func scaleWriteKubeconfig(b testing.TB, path, token string, a *clusterAPIServer, names, servers []string) {
	b.Helper()
	var s strings.Builder
	fmt.Fprintf(&s, "apiVersion: v1\nkind: Config\ncurrent-context: %s\nclusters:\n", names[0])
	cluster := func(i int) string { return "scale" }
	if servers == nil {
		fmt.Fprintf(&s, "- name: scale\n  cluster:\n    server: %s\n    certificate-authority: %s\n", a.URL, a.CAFile)
	} else {
		cluster = func(i int) string { return names[i] }
		for i, n := range names {
			fmt.Fprintf(&s, "- name: %s\n  cluster:\n    server: %s\n    certificate-authority: %s\n", n, servers[i], a.CAFile)
		}
	}
	s.WriteString("users:\n- name: admin\n  user:\n    token: " + token + "\ncontexts:\n")
	for i, n := range names {
		fmt.Fprintf(&s, "- name: %s\n  context:\n    cluster: %s\n    user: admin\n", n, cluster(i))
	}
	writeFile(b, path, s.String())
}

// scaleWritePackage writes a package that routes each context's
// Namespaces (labelled shard=<context>) and their ConfigMaps to it.
func scaleWritePackage(b testing.TB, dir string, names []string) {
	b.Helper()
	writeFile(b, filepath.Join(dir, "Kptfile"), testfixture.Kptfile("scale"))
	var cfg strings.Builder
	cfg.WriteString("apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata:\n  name: shards\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  contexts:\n")
	for _, n := range names {
		fmt.Fprintf(&cfg, "  - name: %s\n    namespaceSelector:\n      matchLabels: {shard: %s}\n", n, n)
	}
	writeFile(b, filepath.Join(dir, "shards.yaml"), cfg.String())
	for _, n := range names {
		var docs []string
		for i := range scaleNamespaces {
			ns := fmt.Sprintf("%s-ns%02d", n, i)
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels: {shard: %s}\n", ns, n))
			for j := range scalePerNamespace {
				docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\n  namespace: %s\n  labels: {app: scale}\ndata:\n  index: \"%d\"\n  owner: team-%02d\n", j, ns, j, j%7))
			}
		}
		writeFile(b, filepath.Join(dir, n+".yaml"), strings.Join(docs, "---\n"))
	}
}

// scaleApply creates a context package's objects as kpt live apply leaves
// them (each with the owning-inventory annotation) and its ResourceGroup
// listing them, through the API, a few requests at once: much faster
// than 50 applies, and the same state for status to read.
func scaleApply(b testing.TB, a *clusterAPIServer, dir string) {
	b.Helper()
	nodes, err := (&kio.LocalPackageReader{PackagePath: dir, MatchFilesGlob: []string{"*.yaml"}, OmitReaderAnnotations: true}).Read()
	if err != nil {
		b.Fatal(err)
	}
	var rg *yaml.RNode
	var objs []*yaml.RNode
	for _, n := range nodes {
		switch {
		case n.GetKind() == "ResourceGroup":
			rg = n
		case n.GetAnnotations()["config.kubernetes.io/local-config"] == "true":
		default:
			objs = append(objs, n)
		}
	}
	if rg == nil {
		b.Fatalf("%s: no resourcegroup.yaml", dir)
	}
	id := rg.GetLabels()["cli-utils.sigs.k8s.io/inventory-id"]
	var resources []map[string]string
	var mu sync.Mutex
	var errs []string
	work := make(chan *yaml.RNode)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if err := scaleCreate(a, n, id); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	for _, n := range objs {
		if n.GetKind() == "Namespace" { // before the objects they hold
			if err := scaleCreate(a, n, id); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, n := range objs {
		if n.GetKind() != "Namespace" {
			work <- n
		}
		resources = append(resources, map[string]string{"group": "", "kind": n.GetKind(), "namespace": n.GetNamespace(), "name": n.GetName()})
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%s: %d objects not created: %s", dir, len(errs), errs[0])
	}
	body, _ := json.Marshal(map[string]any{"apiVersion": "kpt.dev/v1alpha1", "kind": "ResourceGroup",
		"metadata": map[string]any{"name": rg.GetName(), "namespace": rg.GetNamespace(), "labels": rg.GetLabels()},
		"spec":     map[string]any{"resources": resources}})
	if code, resp, err := a.do("POST", "/apis/kpt.dev/v1alpha1/namespaces/"+rg.GetNamespace()+"/resourcegroups", "application/json", body); err != nil || code != http.StatusCreated {
		b.Fatalf("creating ResourceGroup %s: %d %v: %s", rg.GetName(), code, err, resp)
	}
}

// scaleCreate creates one core object (a Namespace or a ConfigMap) with the
// owning-inventory annotation.
func scaleCreate(a *clusterAPIServer, n *yaml.RNode, inventoryID string) error {
	if err := n.PipeE(yaml.SetAnnotation("config.k8s.io/owning-inventory", inventoryID)); err != nil {
		return err
	}
	body, err := n.MarshalJSON()
	if err != nil {
		return err
	}
	path := "/api/v1/namespaces"
	if n.GetKind() == "ConfigMap" {
		path += "/" + n.GetNamespace() + "/configmaps"
	}
	code, resp, err := a.do("POST", path, "application/json", body)
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("creating %s %s/%s: %d %v: %s", n.GetKind(), n.GetNamespace(), n.GetName(), code, err, resp)
	}
	return nil
}
