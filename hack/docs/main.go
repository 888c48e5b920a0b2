// Command docs regenerates the command reference (docs/reference) from the
// commands' help text: `make docs`.
package main

import (
	"fmt"
	"os"

	"github.com/shard-router/shard-router/internal/refdocs"
)

func main() {
	dir := refdocs.Dir
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := refdocs.Write(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
