// Command shard-router is a KRM function that routes the resources of a kpt
// package to kube contexts and etcd datastores. All logic is in pkg/.
package main

import (
	"os"

	"github.com/shard-router/shard-router/pkg/cli"
)

func main() {
	os.Exit(cli.Main(cli.StandardStreams(), os.Args[1:]))
}
