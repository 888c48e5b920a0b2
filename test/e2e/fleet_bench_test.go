//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/localfleet"
)

// The shape of BenchmarkFleet's package, the same at every size: 1,280
// ConfigMaps in 256 Namespaces (1,536 objects), on fleetBenchClusters
// clusters.
const (
	fleetBenchClusters   = 4
	fleetBenchNamespaces = 256
	fleetBenchConfigMaps = 5
	// fleetBenchBake is the canary wave's bakeTime in the rollout.
	fleetBenchBake = 2 * time.Second
)

// fleetUsage is what one measured step cost: the whole process's wall
// time, CPU time (user + system) and peak RSS, as wait4 reports them; for
// the kpt loop, the sums of wall and CPU and the largest RSS.
type fleetUsage struct {
	wall, cpu time.Duration
	rssMB     float64
}

func usageOf(res result) fleetUsage {
	u := fleetUsage{wall: res.Wall}
	if r := res.Usage; r != nil {
		u.cpu = time.Duration(r.Utime.Nano() + r.Stime.Nano())
		u.rssMB = float64(r.Maxrss) / 1024 // KB on Linux
	}
	return u
}

func (u fleetUsage) add(v fleetUsage) fleetUsage {
	return fleetUsage{wall: u.wall + v.wall, cpu: u.cpu + v.cpu, rssMB: max(u.rssMB, v.rssMB)}
}

func (u fleetUsage) String() string {
	return fmt.Sprintf("%.1f / %.1f / %.0f", u.wall.Seconds(), u.cpu.Seconds(), u.rssMB)
}

// The steps BenchmarkFleet measures at each size, in the order it runs them.
var fleetBenchSteps = []string{
	"apply, first (creates everything)",
	"apply, one object changed per context",
	"apply, no change",
	"status",
	"plan, no change",
	"split (to an empty directory)",
	fmt.Sprintf("apply, two-wave rollout of one object per context (canary: 4 contexts, bake %s)", fleetBenchBake),
	"kpt live apply once per context, no change",
}

// BenchmarkFleet (make bench-fleet, issue 36) measures what a context costs:
// the same 1,536 objects (1,280 ConfigMaps in 256 Namespaces) spread over
// 16, 64 and 256 contexts (BENCH_FLEET_SIZES=16,64 to shrink it) of a
// dense fleet of four kube-apiservers (startDenseFleet: context i on
// cluster i % 4, each with Namespaces and an inventory of its own), fresh
// clusters for each size. At each size it runs, as whole processes, the
// first apply, an apply that changes one object in every context, a
// no-change apply (which must send no write to an object), status, plan,
// split, and a two-wave rollout of one object per context, then `kpt live
// apply` once per context with no change: the loop users run today
// (BENCH_FLEET_KPT_SAMPLE contexts of it, default 32, scaled to all). It
// prints, for each, wall time, CPU (user+sys) and peak RSS, the ratios of
// the largest size to the smallest, and the no-change apply against the kpt
// loop. It runs once whatever b.N is; the machine is shared, so read the
// ratios of one run.
func BenchmarkFleet(b *testing.B) {
	sizes := fleetBenchSizes(b)
	bin, kpt := shardRouter(b), toolPath(b, "kpt")
	const timeout = 20 * time.Minute
	usage := make([][]fleetUsage, len(sizes)) // [size][step]
	kptSampled := make([]int, len(sizes))
	for si, n := range sizes {
		start := time.Now()
		dir := b.TempDir()
		f := startDenseFleet(b, dir, localfleet.Dense{Contexts: n, Clusters: fleetBenchClusters})
		p := localfleet.DensePackage{Name: "bench", Prefix: "bench", Dense: f.Dense,
			Namespaces: fleetBenchNamespaces, ConfigMaps: fleetBenchConfigMaps, Value: "v1"}
		pkg, out := filepath.Join(dir, "pkg"), filepath.Join(dir, "out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
		write := func(p localfleet.DensePackage) {
			if err := p.Write(pkg); err != nil {
				b.Fatal(err)
			}
		}
		measure := func(args ...string) fleetUsage {
			return usageOf(mustRun(b, cmdSpec{Timeout: timeout}, bin, args...))
		}
		apply := func() fleetUsage { return measure("apply", pkg, "--out", out, "--kubeconfig", f.kubeconfig) }
		var u []fleetUsage
		write(p)
		u = append(u, apply())
		p.FirstValue = "v2"
		write(p)
		u = append(u, apply())
		marks := f.auditMarks(b)
		u = append(u, apply())
		if w := f.objectWritesSince(b, marks); len(w) > 0 {
			b.Errorf("%d contexts: a no-change apply sent %d write(s) to objects, such as %s", n, len(w), w[0])
		}
		u = append(u, measure("status", out, "--kubeconfig", f.kubeconfig, "--detailed-exitcode"))
		u = append(u, measure("plan", pkg, "--previous", out, "--detailed-exitcode"))
		u = append(u, measure("split", pkg, "-o", filepath.Join(dir, "split")))
		p.FirstValue = "v3"
		p.Rollout = fmt.Sprintf("  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {stage: canary}}\n      bakeTime: %s\n    - name: rest\n      contexts: {}\n", fleetBenchBake)
		write(p)
		u = append(u, apply())
		var loop fleetUsage
		sample := fleetBenchKptSample(b, n)
		for k := range sample {
			ctx := f.ContextName(k * n / sample)
			res := mustRun(b, cmdSpec{Timeout: timeout}, kpt, "live", "apply", filepath.Join(out, ctx), "--context", ctx,
				"--kubeconfig", f.kubeconfig, "--reconcile-timeout", "5m")
			loop = loop.add(usageOf(res))
		}
		// Each kpt process applies one context alone: the loop over every
		// context is the sample's sum times n/sample.
		loop.wall = loop.wall * time.Duration(n) / time.Duration(sample)
		loop.cpu = loop.cpu * time.Duration(n) / time.Duration(sample)
		kptSampled[si] = sample
		u = append(u, loop)
		usage[si] = u
		f.stop()
		b.Logf("%d contexts measured in %s", n, time.Since(start).Round(time.Second))
	}
	fmt.Print(fleetBenchTable(sizes, usage, kptSampled))
	last := len(sizes) - 1
	b.ReportMetric(usage[last][2].wall.Seconds()/usage[last][7].wall.Seconds(), "nochange-vs-kpt-loop")
	if last > 0 {
		for _, m := range []struct {
			step int
			name string
		}{{0, "first"}, {2, "nochange"}, {3, "status"}} {
			b.ReportMetric(usage[last][m.step].wall.Seconds()/usage[0][m.step].wall.Seconds(), m.name+"-wall-x")
		}
		b.ReportMetric(usage[last][0].rssMB/usage[0][0].rssMB, "first-rss-x")
	}
}

// fleetBenchTable renders the measurements as a markdown table: a row per
// step, a column per size (wall s / CPU s / peak RSS MB), the ratios of the
// largest size to the smallest, and a row of the no-change apply against
// the kpt loop.
func fleetBenchTable(sizes []int, usage [][]fleetUsage, kptSampled []int) string {
	var s strings.Builder
	last := len(sizes) - 1
	fmt.Fprintf(&s, "\n%d namespaced objects in %d Namespaces on %d kube-apiservers; each cell: wall s / CPU s (user+sys) / peak RSS MB\n\n",
		fleetBenchNamespaces*fleetBenchConfigMaps, fleetBenchNamespaces, fleetBenchClusters)
	s.WriteString("| step |")
	for _, n := range sizes {
		fmt.Fprintf(&s, " %d contexts |", n)
	}
	if last > 0 {
		fmt.Fprintf(&s, " %d vs %d: wall / CPU / RSS |", sizes[last], sizes[0])
	}
	s.WriteString("\n|---|")
	s.WriteString(strings.Repeat("---|", len(sizes)+min(last, 1)))
	s.WriteString("\n")
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	for i, step := range fleetBenchSteps {
		fmt.Fprintf(&s, "| %s |", step)
		for si := range sizes {
			fmt.Fprintf(&s, " %s |", usage[si][i])
		}
		if last > 0 {
			a, b := usage[last][i], usage[0][i]
			fmt.Fprintf(&s, " %s / %s / %s |", ratio(a.wall.Seconds(), b.wall.Seconds()), ratio(a.cpu.Seconds(), b.cpu.Seconds()), ratio(a.rssMB, b.rssMB))
		}
		s.WriteString("\n")
	}
	s.WriteString("| (kpt: contexts run, the rest extrapolated) |")
	for si, n := range sizes {
		fmt.Fprintf(&s, " %d of %d |", kptSampled[si], n)
	}
	if last > 0 {
		s.WriteString(" |")
	}
	s.WriteString("\n")
	s.WriteString("| no-change apply vs the kpt loop: wall / CPU |")
	for si := range sizes {
		a, b := usage[si][2], usage[si][7]
		fmt.Fprintf(&s, " %s / %s |", ratio(a.wall.Seconds(), b.wall.Seconds()), ratio(a.cpu.Seconds(), b.cpu.Seconds()))
	}
	if last > 0 {
		s.WriteString(" |")
	}
	s.WriteString("\n")
	return s.String()
}

// fleetBenchKptSample is how many of n contexts the kpt loop runs:
// BENCH_FLEET_KPT_SAMPLE (default 32; 0 for every context), evenly spaced,
// its sums scaled to n. A kpt process applies one context alone, so the
// loop's cost is its processes' sum; the sample keeps 256 contexts' loop
// (about 0.9 s a context here) from doubling the benchmark's time.
func fleetBenchKptSample(b *testing.B, n int) int {
	v := os.Getenv("BENCH_FLEET_KPT_SAMPLE")
	if v == "" {
		v = "32"
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 0 {
		b.Fatalf("BENCH_FLEET_KPT_SAMPLE=%q: want a count of contexts (0: every one)", v)
	}
	if k == 0 || k > n {
		return n
	}
	return k
}

// fleetBenchSizes are the context counts of BENCH_FLEET_SIZES (comma
// separated), default 16,64,256.
func fleetBenchSizes(b *testing.B) []int {
	v := os.Getenv("BENCH_FLEET_SIZES")
	if v == "" {
		v = "16,64,256"
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < fleetBenchClusters || n > fleetBenchNamespaces {
			b.Fatalf("BENCH_FLEET_SIZES=%q: want context counts from %d to %d, such as 16,64,256", v, fleetBenchClusters, fleetBenchNamespaces)
		}
		sizes = append(sizes, n)
	}
	return sizes
}
