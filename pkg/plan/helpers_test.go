package plan

// The fixtures and helpers of package split's tests that the plan's tests
// share, splitting through Build as `shard-router split` does.

import (
	"maps"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/split"
)

// The fixtures and helpers shared with other packages' tests.
const shardConfig = testfixture.ShardConfig

var (
	basePackage  = testfixture.BasePackage
	writeTree    = testfixture.WriteTree
	readTree     = testfixture.ReadTree
	keys         = testfixture.Keys
	errorResults = testfixture.ErrorResults
	wantError    = testfixture.WantError
	mustParse    = testfixture.MustParse
	hasResult    = testfixture.HasResult
)

// changeBase changes the base package in pkg: an update, a create and a
// prune, so that some files of its split change and others do not.
func changeBase(t *testing.T, pkg string) {
	t.Helper()
	files := basePackage()
	writeTree(t, pkg, map[string]string{
		"apps/web.yaml":    strings.Replace(files["apps/web.yaml"], "image: nginx", "image: nginx:2", 1),
		"rbac/writer.yaml": strings.Replace(files["rbac/reader.yaml"], "name: reader", "name: writer", 1),
		"apps/lease.yaml":  "",
	})
}

// splitDir runs what `shard-router split PKG -o OUT` runs. It returns the
// plan, or the error that stopped it; plan errors make it return an error
// naming them, and nothing is written then.
func splitDir(t *testing.T, pkg, out string) (*split.Layout, error) {
	t.Helper()
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		return nil, err
	}
	in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
	if err != nil {
		return nil, err
	}
	return runRoute(t, in, od, nil)
}

// runRoute routes the input with its own config, then writes the plan to
// od when it is not nil, as `shard-router split` does.
func runRoute(t testing.TB, in *input.Input, od *outdir.OutDir, opts *Options) (*split.Layout, error) {
	t.Helper()
	node, err := in.Config()
	if err != nil {
		return nil, err
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		return nil, results
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Split.Out = od
	plan, err := Build(in, cfg, o)
	if err != nil {
		return nil, err
	}
	if plan.Results.ExitCode() != 0 {
		if len(plan.Packages) != 0 {
			t.Errorf("a plan with errors has %d packages", len(plan.Packages))
		}
		return plan, errorResults(plan.Results)
	}
	if od != nil {
		return plan, split.Write(od, plan)
	}
	return plan, nil
}

func mustSplit(t *testing.T, pkg, out string) *split.Layout {
	t.Helper()
	plan, err := splitDir(t, pkg, out)
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	return plan
}

// relabel moves Namespace a (and so everything in it) to ctx-b.
func relabel(t *testing.T, pkg string) {
	t.Helper()
	ns := strings.Replace(basePackage()["namespaces.yaml"], "shard: a", "shard: b", 1)
	writeTree(t, pkg, map[string]string{"namespaces.yaml": ns})
}

// equalMaps is maps.Equal for the string maps of these tests.
var equalMaps = maps.Equal[map[string]string, map[string]string]
