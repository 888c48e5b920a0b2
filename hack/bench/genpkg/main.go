// Command genpkg writes a generated ResourceList (package gen) to stdout, for
// the whole-process benchmark in hack/bench/run.sh.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/shard-router/shard-router/internal/gen"
)

func main() {
	var o gen.Options
	flag.IntVar(&o.Items, "items", 10000, "number of items")
	flag.IntVar(&o.Contexts, "contexts", 64, "number of contexts")
	flag.Uint64Var(&o.Seed, "seed", 1, "random seed")
	flag.BoolVar(&o.Routed, "routed", false, "items already carry the annotations of a previous run")
	flag.Parse()
	if err := gen.Write(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "genpkg:", err)
		os.Exit(1)
	}
}
