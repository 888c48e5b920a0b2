// Command docs regenerates the command reference (docs/reference) from the
// commands' help text: `make docs`.
package main

import (
	"fmt"
	"os"
)

func main() {
	dir := referenceDir
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := writeReference(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
