// Package pkgload reads a test's package with its own ShardConfig, as the
// commands do. Only tests import it; it is apart from testfixture, which
// the tests of packages it imports use too.
package pkgload

import (
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// Load reads the package pkg (never reading OUT_DIR od back) and loads
// its own config, failing t on any error or result.
func Load(t testing.TB, pkg string, od *outdir.OutDir) (*input.Input, *function.Engine) {
	t.Helper()
	in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
	if err != nil {
		t.Fatal(err)
	}
	return in, Config(t, in)
}

// Config loads in's own config, failing t on any error or result.
func Config(t testing.TB, in *input.Input) *function.Engine {
	t.Helper()
	node, err := in.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		t.Fatal(results)
	}
	return cfg
}
