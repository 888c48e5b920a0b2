// Command fleet starts and stops the local fleet of `make fleet` and
// `make fleet-down` (see internal/localfleet):
//
//	go run ./hack/fleet up -package examples/per-namespace -dir .fleet -tools .tools/bin
//	go run ./hack/fleet up -contexts 256 -clusters 4 -dir .fleet -tools .tools/bin
//	go run ./hack/fleet down -dir .fleet
//
// With -contexts, up starts a dense fleet, a device for measuring the cost
// of a context: -clusters clusters shared by -contexts kube contexts
// (context i on cluster i % clusters), and writes a package into
// DIR/package whose ShardConfig gives each context Namespaces of its own
// (and so its own inventory). A real fleet has one context per cluster.
//
// up prints `export KUBECONFIG=...` on stdout, its steps on stderr.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/shard-router/shard-router/internal/localfleet"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: fleet up [-package DIR | -contexts N -clusters M] -dir DIR -tools DIR | fleet down -dir DIR")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("fleet "+os.Args[1], flag.ExitOnError)
	pkg := fs.String("package", "examples/per-namespace", "the kpt package whose ShardConfig names the clusters")
	dir := fs.String("dir", ".fleet", "the fleet's directory: data, logs, pid files, kubeconfig")
	tools := fs.String("tools", ".tools/bin", "where etcd, kube-apiserver and kube-controller-manager are")
	contexts := fs.Int("contexts", 0, "a dense fleet for measuring: this many kube contexts on -clusters clusters, and a generated package (0: one cluster per context of -package)")
	clusters := fs.Int("clusters", 4, "the dense fleet's clusters (context i on cluster i % clusters)")
	namespaces := fs.Int("namespaces", 256, "the dense package's Namespaces (raised to -contexts: each context has one at least), namespace j in context j % contexts")
	configMaps := fs.Int("configmaps", 5, "the dense package's ConfigMaps in each Namespace")
	_ = fs.Parse(os.Args[2:])
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "fleet: "+format+"\n", args...) }
	if os.Args[1] == "down" {
		stopped, err := localfleet.Down(*dir, logf)
		if err != nil {
			logf("%v", err)
			os.Exit(1)
		}
		logf("%d process(es) stopped", len(stopped))
		return
	}
	opts := localfleet.Options{Package: *pkg, Dir: *dir, ToolPath: localfleet.ToolIn(*tools), Log: logf}
	if *contexts > 0 {
		opts.Dense = &localfleet.DensePackage{Name: "fleet", Prefix: "fleet", Value: "v1",
			Dense:      localfleet.Dense{Contexts: *contexts, Clusters: *clusters},
			Namespaces: max(*namespaces, *contexts), ConfigMaps: *configMaps}
	}
	f, err := localfleet.Up(opts)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	for _, c := range f.Clusters {
		logf("%s: kube-apiserver %s", c.Context, c.API.URL)
	}
	if d := opts.Dense; d != nil {
		logf("a dense fleet for measuring the cost of a context (real clusters are one context each): %d contexts on %d clusters, context i on cluster i %% %d",
			d.Contexts, d.Clusters, d.Clusters)
		logf("its package: %s (%d Namespaces of %d ConfigMaps, namespace j in context j %% %d); try: shard-router apply %s --out %s/out",
			f.Package, d.Namespaces, d.ConfigMaps, d.Contexts, f.Package, f.Dir)
	}
	logf("%d cluster(s) running; `make fleet-down` stops them", len(f.Clusters))
	fmt.Printf("export KUBECONFIG=%s\n", f.Kubeconfig)
}
