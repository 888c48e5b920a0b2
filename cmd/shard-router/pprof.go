//go:build pprof

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// A build with -tags pprof (never the product's) writes a CPU profile of
// the whole run to $SHARD_ROUTER_CPUPROFILE, for docs/design/performance.md.
func init() {
	path := os.Getenv("SHARD_ROUTER_CPUPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "SHARD_ROUTER_CPUPROFILE: %v\n", err)
		os.Exit(2)
	}
	atExit = func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
