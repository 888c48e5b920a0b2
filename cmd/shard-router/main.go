// Command shard-router is a KRM function that routes the resources of a kpt
// package to kube contexts and etcd datastores. All logic is in pkg/.
package main

import (
	"os"

	"github.com/shard-router/shard-router/pkg/cli"
)

// atExit runs before the process exits (a build with -tags pprof stops
// its CPU profile there).
var atExit = func() {}

func main() {
	code := cli.Main(cli.StandardStreams(), os.Args[1:])
	atExit()
	os.Exit(code)
}
