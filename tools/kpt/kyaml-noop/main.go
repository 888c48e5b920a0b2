// Command kyaml-noop is a KRM function that changes nothing, built on
// sigs.k8s.io/kustomize/kyaml's fn/framework. It exists as the benchmark
// baseline: the cost of kyaml's decode, annotation handling and encode alone.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
)

func main() {
	noop := framework.ResourceListProcessorFunc(func(*framework.ResourceList) error { return nil })
	if err := framework.Execute(noop, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
