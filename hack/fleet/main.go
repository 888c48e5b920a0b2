// Command fleet starts and stops the local fleet of `make fleet` and
// `make fleet-down` (see internal/localfleet):
//
//	go run ./hack/fleet up -package examples/per-namespace -dir .fleet -tools .tools/bin
//	go run ./hack/fleet down -dir .fleet
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
		fmt.Fprintln(os.Stderr, "usage: fleet up -package DIR -dir DIR -tools DIR | fleet down -dir DIR")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("fleet "+os.Args[1], flag.ExitOnError)
	pkg := fs.String("package", "examples/per-namespace", "the kpt package whose ShardConfig names the clusters")
	dir := fs.String("dir", ".fleet", "the fleet's directory: data, logs, pid files, kubeconfig")
	tools := fs.String("tools", ".tools/bin", "where etcd, kube-apiserver and kube-controller-manager are")
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
	f, err := localfleet.Up(localfleet.Options{Package: *pkg, Dir: *dir, ToolPath: localfleet.ToolIn(*tools), Log: logf})
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	for _, c := range f.Clusters {
		logf("context %s: kube-apiserver %s", c.Context, c.API.URL)
	}
	logf("%d cluster(s) running; `make fleet-down` stops them", len(f.Clusters))
	fmt.Printf("export KUBECONFIG=%s\n", f.Kubeconfig)
}
