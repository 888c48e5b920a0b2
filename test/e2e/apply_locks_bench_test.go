//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkApplyLocks (make bench-locks) measures what the fleet's locks
// and stale checks (issue 35) cost an apply that changes every context:
// the working tree's shard-router against BASE_BIN, a shard-router built
// from before them (the make target builds it from LOCKS_BASE), on two
// real clusters it starts itself, each binary with its own package of the
// same shape (about 500 objects per context, its own namespaces and
// inventories). In alternating rounds each binary applies a change of one
// object in every context (where the locks' fixed cost weighs most), then
// of every object. It runs once whatever b.N is and reports the ratios of
// the medians, new/base, and the write requests of each run: the new one
// adds a Lease create or update per context and its release (plus a
// renewal every 10 s).
func BenchmarkApplyLocks(b *testing.B) {
	baseBin := os.Getenv("BASE_BIN")
	if baseBin == "" {
		b.Skip("BASE_BIN (a shard-router built from before the locks) is not set: run make bench-locks")
	}
	bin := shardRouter(b)
	dir := b.TempDir()
	apiA, apiB, kubeconfig := benchClusters(b, dir)

	const namespaces, configMaps = 10, 49
	type side struct {
		name, bin, pkg, prefix, out string
		one, all                    []time.Duration
		writes                      int
	}
	sides := []*side{{name: "base", bin: baseBin, prefix: "lb"}, {name: "new", bin: bin, prefix: "ln"}}
	for _, s := range sides {
		s.pkg = benchPackage(b, dir, s.prefix, namespaces, configMaps)
		s.out = filepath.Join(dir, s.prefix+"-out")
		if err := os.MkdirAll(s.out, 0o755); err != nil {
			b.Fatal(err)
		}
		mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, s.bin, "apply", s.pkg, "--out", s.out, "--kubeconfig", kubeconfig)
	}
	apply := func(s *side) time.Duration {
		markA, markB := apiA.auditMark(b), apiB.auditMark(b)
		start := time.Now()
		mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, s.bin, "apply", s.pkg, "--out", s.out, "--kubeconfig", kubeconfig)
		took := time.Since(start)
		s.writes = len(apiA.writesSince(b, markA)) + len(apiB.writesSince(b, markB))
		return took
	}
	const rounds = 5
	var oneWrites, allWrites [2]int
	for round := range rounds {
		order := sides
		if round%2 == 1 {
			order = []*side{sides[1], sides[0]}
		}
		for _, s := range order {
			// One object in every context: a ConfigMap of its own.
			for _, shard := range []string{"a", "b"} {
				writeFile(b, filepath.Join(s.pkg, "change-"+shard+".yaml"), fmt.Sprintf(
					"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: change\n  namespace: %s-%s-0\ndata:\n  round: %q\n", s.prefix, shard, fmt.Sprint(round)))
			}
			s.one = append(s.one, apply(s))
			oneWrites[slices.Index(sides, s)] = s.writes
		}
		for _, s := range order {
			// Every object of every context.
			writeBenchNamespaces(b, s.pkg, s.prefix, []string{"a", "b"}, fmt.Sprintf("round-%d", round), namespaces, configMaps)
			s.all = append(s.all, apply(s))
			allWrites[slices.Index(sides, s)] = s.writes
		}
	}
	one := float64(median(sides[1].one)) / float64(median(sides[0].one))
	all := float64(median(sides[1].all)) / float64(median(sides[0].all))
	b.Logf("one object changed in each of 2 contexts: new %s, base %s (medians of %d): ratio %.3f; write requests new %d, base %d",
		median(sides[1].one).Round(time.Millisecond), median(sides[0].one).Round(time.Millisecond), rounds, one, oneWrites[1], oneWrites[0])
	b.Logf("all %d objects changed: new %s, base %s (medians of %d): ratio %.3f; write requests new %d, base %d", 2*namespaces*(1+configMaps),
		median(sides[1].all).Round(time.Millisecond), median(sides[0].all).Round(time.Millisecond), rounds, all, allWrites[1], allWrites[0])
	b.ReportMetric(one, "one-ratio")
	b.ReportMetric(all, "all-ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
