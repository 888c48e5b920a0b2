//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// time, CPU time (user + system) and peak RSS, as wait4 reports them, and
// the CPU time of the fleet's etcd and kube-apiserver processes meanwhile
// (they share the machine's cores with it); for the kpt loop, the sums of
// wall and CPU and the largest RSS.
type fleetUsage struct {
	wall, cpu time.Duration
	rssMB     float64
	clusters  time.Duration
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
	return fleetUsage{wall: u.wall + v.wall, cpu: u.cpu + v.cpu, rssMB: max(u.rssMB, v.rssMB), clusters: u.clusters + v.clusters}
}

func (u fleetUsage) String() string {
	return fmt.Sprintf("%.1f / %.1f / %.0f / %.1f", u.wall.Seconds(), u.cpu.Seconds(), u.rssMB, u.clusters.Seconds())
}

// medianUsage is, of steps measured several times, the median of each
// measure on its own.
func medianUsage(us []fleetUsage) fleetUsage {
	pick := func(f func(fleetUsage) float64) float64 {
		v := make([]float64, len(us))
		for i, u := range us {
			v[i] = f(u)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return fleetUsage{
		wall:     time.Duration(pick(func(u fleetUsage) float64 { return float64(u.wall) })),
		cpu:      time.Duration(pick(func(u fleetUsage) float64 { return float64(u.cpu) })),
		rssMB:    pick(func(u fleetUsage) float64 { return u.rssMB }),
		clusters: time.Duration(pick(func(u fleetUsage) float64 { return float64(u.clusters) })),
	}
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

// Indexes of fleetBenchSteps.
const (
	stepFirst = iota
	stepOneChanged
	stepNoChange
	stepStatus
	stepPlan
	stepSplit
	stepRollout
	stepKptLoop
)

// fleetSide is one shard-router binary measured on the fleets.
type fleetSide struct {
	name, bin, prefix string
	// usage[size][step].
	usage [][]fleetUsage
}

// fleetSideAt is a side at one size: a package and an OUT_DIR of its own
// (its own Namespaces and inventories) on that size's fleet.
type fleetSideAt struct {
	*fleetSide
	p        localfleet.DensePackage
	pkg, out string
	// rounds[step] are the repeated steps' runs.
	rounds map[int][]fleetUsage
}

// fleetSize is one size's fleet and what each side measures on it.
type fleetSize struct {
	si, n int
	dir   string
	f     *denseFleet
	// at are the sides, in the order of BenchmarkFleet's sides.
	at []*fleetSideAt
}

// fleetBenchTimeout bounds each measured process.
const fleetBenchTimeout = 20 * time.Minute

// startFleetSize starts a fleet of n contexts with kpt's ResourceGroup CRD
// installed, and writes each side's package.
func startFleetSize(b *testing.B, si, n int, sides []*fleetSide, kpt string) *fleetSize {
	z := &fleetSize{si: si, n: n, dir: b.TempDir()}
	z.f = startDenseFleet(b, z.dir, localfleet.Dense{Contexts: n, Clusters: fleetBenchClusters})
	// kpt's ResourceGroup CRD, which the first apply to a cluster installs
	// and waits for, is installed beforehand, so that every first apply
	// measured (of either side, in any round) pays for what a context
	// costs, not for a cluster's one-time install.
	for j := range fleetBenchClusters {
		mustRun(b, cmdSpec{Timeout: fleetBenchTimeout}, kpt, "live", "install-resource-group", "--kubeconfig", z.f.kubeconfig, "--context", z.f.ContextName(j))
	}
	for _, side := range sides {
		s := &fleetSideAt{fleetSide: side, rounds: map[int][]fleetUsage{}}
		s.p = localfleet.DensePackage{Name: side.prefix, Prefix: side.prefix, Dense: z.f.Dense,
			Namespaces: fleetBenchNamespaces, ConfigMaps: fleetBenchConfigMaps, Value: "v1"}
		s.pkg, s.out = z.dirsOf(b, side.prefix)
		z.write(b, s)
		z.at = append(z.at, s)
	}
	return z
}

// measure runs a side's shard-router with args, and what the fleet's
// clusters spent meanwhile.
func (z *fleetSize) measure(b *testing.B, s *fleetSideAt, args ...string) fleetUsage {
	c0 := z.f.clustersCPU()
	u := usageOf(mustRun(b, cmdSpec{Timeout: fleetBenchTimeout}, s.bin, args...))
	u.clusters = z.f.clustersCPU() - c0
	return u
}

// applyPackage is every apply measured: the first apply's later rounds
// apply packages of their own, with the same flags.
func (z *fleetSize) applyPackage(b *testing.B, s *fleetSideAt, pkg, out string) fleetUsage {
	return z.measure(b, s, "apply", pkg, "--out", out, "--kubeconfig", z.f.kubeconfig)
}

func (z *fleetSize) apply(b *testing.B, s *fleetSideAt) fleetUsage {
	return z.applyPackage(b, s, s.pkg, s.out)
}

// dirsOf are the directories of a package and of its OUT_DIR, made empty.
func (z *fleetSize) dirsOf(b *testing.B, prefix string) (pkg, out string) {
	pkg, out = filepath.Join(z.dir, prefix+"-pkg"), filepath.Join(z.dir, prefix+"-out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	return pkg, out
}

func (z *fleetSize) write(b *testing.B, s *fleetSideAt) {
	if err := s.p.Write(s.pkg); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFleet (make bench-fleet, issue 36) measures what a context costs:
// the same 1,536 objects (1,280 ConfigMaps in 256 Namespaces) spread over
// 16, 64 and 256 contexts (BENCH_FLEET_SIZES=16,64 to shrink it) of a
// dense fleet of four kube-apiservers (startDenseFleet: context i on
// cluster i % 4, each with Namespaces and an inventory of its own), a
// fleet of fresh clusters for each size, kpt's ResourceGroup CRD
// installed. It runs, as whole processes, the first apply, an apply that
// changes one object in every context, a no-change apply (which must send
// no write to an object) and status, plan, split, and a two-wave rollout
// of one object per context, then `kpt live apply` once per context with
// no change: the loop users run today (BENCH_FLEET_KPT_SAMPLE contexts of
// it, default 32, scaled to all). The first apply, the no-change apply and
// status run BENCH_FLEET_ROUNDS times each (default 3; the first apply's
// later rounds come last, each of a package new to the clusters), their
// medians reported. It prints, for each, wall time, CPU (user+sys), peak
// RSS and the clusters' CPU, the ratios of the largest size to the
// smallest, and the no-change apply against the kpt loop.
//
// Every size's fleet is up from the start, and each step runs at every
// size in turn before the next step (the order of the sizes alternating
// round by round): the ratios between sizes compare runs made moments
// apart on this shared machine, not minutes apart (an idle fleet costs its
// cores about 0.1 of one, the same whichever size is measured).
//
// With BASE_BIN (make bench-fleet-base builds it from FLEET_BASE), it
// measures that shard-router and the working tree's side by side on the
// same fleets, each with a package and an OUT_DIR of its own: the first
// and one-changed applies base first, the repeated steps alternating which
// goes first, then a table of each and of their ratios against the
// bounds. It runs once whatever b.N is; the machine is shared, so read the
// ratios of one run.
func BenchmarkFleet(b *testing.B) {
	sizes := fleetBenchSizes(b)
	rounds := fleetBenchRounds(b)
	kpt := toolPath(b, "kpt")
	sides := []*fleetSide{{name: "new", bin: shardRouter(b), prefix: "bench"}}
	if base := os.Getenv("BASE_BIN"); base != "" {
		sides = []*fleetSide{{name: "base", bin: base, prefix: "bbase"}, sides[0]}
	}
	newSide := sides[len(sides)-1]
	for _, s := range sides {
		s.usage = make([][]fleetUsage, len(sizes))
		for si := range sizes {
			s.usage[si] = make([]fleetUsage, len(fleetBenchSteps))
		}
	}
	start := time.Now()
	zs := make([]*fleetSize, len(sizes))
	for si, n := range sizes {
		zs[si] = startFleetSize(b, si, n, sides, kpt)
	}
	defer func() {
		for _, z := range zs {
			z.f.stop()
		}
	}()
	b.Logf("fleets of %v contexts ready in %s", sizes, time.Since(start).Round(time.Second))
	start = time.Now()
	// everySize runs step at each size, in round r's order.
	everySize := func(r int, step func(z *fleetSize)) {
		for _, z := range inTurn(zs, r) {
			step(z)
		}
	}
	kptSampled := make([]int, len(sizes))
	// each lists the repeated steps' runs, printed with the tables (a
	// benchmark's log keeps only its first lines).
	var each []string
	everySize(0, func(z *fleetSize) {
		for _, s := range z.at {
			s.rounds[stepFirst] = append(s.rounds[stepFirst], z.apply(b, s))
		}
	})
	everySize(1, func(z *fleetSize) {
		for _, s := range z.at {
			s.p.FirstValue = "v2"
			z.write(b, s)
			s.usage[z.si][stepOneChanged] = z.apply(b, s)
		}
	})
	for r := range rounds {
		everySize(r, func(z *fleetSize) {
			for _, s := range inTurn(z.at, r) {
				marks := z.f.auditMarks(b)
				s.rounds[stepNoChange] = append(s.rounds[stepNoChange], z.apply(b, s))
				if w := z.f.objectWritesSince(b, marks); len(w) > 0 {
					b.Errorf("%d contexts, %s: a no-change apply sent %d write(s) to objects, such as %s", z.n, s.name, len(w), w[0])
				}
				s.rounds[stepStatus] = append(s.rounds[stepStatus],
					z.measure(b, s, "status", s.out, "--kubeconfig", z.f.kubeconfig, "--detailed-exitcode"))
			}
		})
	}
	everySize(0, func(z *fleetSize) {
		for _, s := range z.at {
			for _, step := range []int{stepNoChange, stepStatus} {
				s.usage[z.si][step] = medianUsage(s.rounds[step])
				each = append(each, fmt.Sprintf("%d contexts, %s, %s: %s", z.n, s.name, fleetBenchSteps[step], roundsString(s.rounds[step])))
			}
			s.usage[z.si][stepPlan] = z.measure(b, s, "plan", s.pkg, "--previous", s.out, "--detailed-exitcode")
			s.usage[z.si][stepSplit] = z.measure(b, s, "split", s.pkg, "-o", filepath.Join(z.dir, s.prefix+"-split"))
		}
	})
	everySize(1, func(z *fleetSize) {
		for _, s := range z.at {
			s.p.FirstValue = "v3"
			s.p.Rollout = fmt.Sprintf("  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {stage: canary}}\n      bakeTime: %s\n    - name: rest\n      contexts: {}\n", fleetBenchBake)
			z.write(b, s)
			s.usage[z.si][stepRollout] = z.apply(b, s)
		}
	})
	// kpt live apply is the same whichever shard-router wrote the
	// packages: the loop runs once per size, on the working tree's.
	everySize(0, func(z *fleetSize) {
		var loop fleetUsage
		out := z.at[len(z.at)-1].out
		sample := fleetBenchKptSample(b, z.n)
		for k := range sample {
			ctx := z.f.ContextName(k * z.n / sample)
			c0 := z.f.clustersCPU()
			res := mustRun(b, cmdSpec{Timeout: fleetBenchTimeout}, kpt, "live", "apply", filepath.Join(out, ctx), "--context", ctx,
				"--kubeconfig", z.f.kubeconfig, "--reconcile-timeout", "5m")
			u := usageOf(res)
			u.clusters = z.f.clustersCPU() - c0
			loop = loop.add(u)
		}
		// Each kpt process applies one context alone: the loop over every
		// context is the sample's sum times n/sample.
		loop.wall = loop.wall * time.Duration(z.n) / time.Duration(sample)
		loop.cpu = loop.cpu * time.Duration(z.n) / time.Duration(sample)
		loop.clusters = loop.clusters * time.Duration(z.n) / time.Duration(sample)
		kptSampled[z.si] = sample
		for _, s := range sides {
			s.usage[z.si][stepKptLoop] = loop
		}
	})
	// The first apply again, in rounds after every other step (which the
	// extra objects would otherwise change), so that its ratio is of
	// medians, as the no-change apply's and status' are: one run of it is
	// a single sample on a shared machine. Each round's package is new to
	// the clusters (Namespaces and inventories of its own) and its OUT_DIR
	// empty, and the sizes and sides alternate which goes first.
	for r := 1; r < rounds; r++ {
		everySize(r, func(z *fleetSize) {
			for _, s := range inTurn(z.at, r) {
				p := s.p
				p.Name, p.Prefix = fmt.Sprintf("%s-first%d", s.prefix, r), fmt.Sprintf("%s%d", s.prefix, r)
				p.FirstValue, p.Rollout = "", ""
				pkg, out := z.dirsOf(b, p.Prefix)
				if err := p.Write(pkg); err != nil {
					b.Fatal(err)
				}
				s.rounds[stepFirst] = append(s.rounds[stepFirst], z.applyPackage(b, s, pkg, out))
			}
		})
	}
	everySize(0, func(z *fleetSize) {
		for _, s := range z.at {
			s.usage[z.si][stepFirst] = medianUsage(s.rounds[stepFirst])
			each = append(each, fmt.Sprintf("%d contexts, %s, %s: %s", z.n, s.name, fleetBenchSteps[stepFirst], roundsString(s.rounds[stepFirst])))
		}
	})
	b.Logf("%v contexts measured in %s", sizes, time.Since(start).Round(time.Second))
	for _, s := range sides {
		if len(sides) > 1 {
			fmt.Printf("\n%s: %s\n", s.name, s.bin)
		}
		fmt.Print(fleetBenchTable(sizes, s.usage, kptSampled, rounds))
	}
	if len(sides) > 1 {
		fmt.Print(fleetBenchCompare(sizes, sides))
	}
	fmt.Printf("\neach round, wall s / CPU s / the clusters' CPU s:\n\n")
	for _, line := range each {
		fmt.Printf("- %s\n", line)
	}
	last := len(sizes) - 1
	for _, s := range sides {
		prefix := ""
		if s != newSide {
			prefix = s.name + "-"
		}
		b.ReportMetric(s.usage[last][stepNoChange].wall.Seconds()/s.usage[last][stepKptLoop].wall.Seconds(), prefix+"nochange-vs-kpt-loop")
		if last > 0 {
			for _, m := range []struct {
				step int
				name string
			}{{stepFirst, "first"}, {stepNoChange, "nochange"}, {stepStatus, "status"}} {
				b.ReportMetric(s.usage[last][m.step].wall.Seconds()/s.usage[0][m.step].wall.Seconds(), prefix+m.name+"-wall-x")
			}
			b.ReportMetric(s.usage[last][stepFirst].rssMB/s.usage[0][stepFirst].rssMB, prefix+"first-rss-x")
		}
	}
}

// inTurn is the order of xs (sides, or sizes) in round r: the other way
// round in every second round, so that none always goes first.
func inTurn[T any](xs []T, r int) []T {
	if r%2 == 0 {
		return xs
	}
	order := slices.Clone(xs)
	slices.Reverse(order)
	return order
}

// roundsString lists the runs of a repeated step: wall s / CPU s /
// clusters' CPU s each.
func roundsString(us []fleetUsage) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = fmt.Sprintf("%.2f / %.2f / %.2f", u.wall.Seconds(), u.cpu.Seconds(), u.clusters.Seconds())
	}
	return strings.Join(parts, ", ")
}

// fleetBenchTable renders the measurements as a markdown table: a row per
// step, a column per size (wall s / CPU s / peak RSS MB / clusters' CPU
// s), the ratios of the largest size to the smallest, and a row of the
// no-change apply against the kpt loop.
func fleetBenchTable(sizes []int, usage [][]fleetUsage, kptSampled []int, rounds int) string {
	var s strings.Builder
	last := len(sizes) - 1
	fmt.Fprintf(&s, "\n%d namespaced objects in %d Namespaces on %d kube-apiservers; each cell: wall s / CPU s (user+sys) / peak RSS MB / the clusters' CPU s (etcd and kube-apiserver); the first apply, no change and status: medians of %d runs\n\n",
		fleetBenchNamespaces*fleetBenchConfigMaps, fleetBenchNamespaces, fleetBenchClusters, rounds)
	s.WriteString("| step |")
	for _, n := range sizes {
		fmt.Fprintf(&s, " %d contexts |", n)
	}
	if last > 0 {
		fmt.Fprintf(&s, " %d vs %d: wall / CPU / RSS / clusters' CPU |", sizes[last], sizes[0])
	}
	s.WriteString("\n|---|")
	s.WriteString(strings.Repeat("---|", len(sizes)+min(last, 1)))
	s.WriteString("\n")
	for i, step := range fleetBenchSteps {
		fmt.Fprintf(&s, "| %s |", step)
		for si := range sizes {
			fmt.Fprintf(&s, " %s |", usage[si][i])
		}
		if last > 0 {
			fmt.Fprintf(&s, " %s |", usageRatio(usage[last][i], usage[0][i]))
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
		a, b := usage[si][stepNoChange], usage[si][stepKptLoop]
		fmt.Fprintf(&s, " %s / %s |", ratio(a.wall.Seconds(), b.wall.Seconds()), ratio(a.cpu.Seconds(), b.cpu.Seconds()))
	}
	if last > 0 {
		s.WriteString(" |")
	}
	s.WriteString("\n")
	return s.String()
}

// fleetBenchCompare renders, for each side, the ratios of the largest size
// to the smallest, and the bounds of issue 43 beside them.
func fleetBenchCompare(sizes []int, sides []*fleetSide) string {
	var s strings.Builder
	last := len(sizes) - 1
	fmt.Fprintf(&s, "\n%d vs %d contexts, each cell: wall / CPU / RSS / clusters' CPU\n\n| step |", sizes[last], sizes[0])
	for _, side := range sides {
		fmt.Fprintf(&s, " %s |", side.name)
	}
	s.WriteString(" bound |\n|---|" + strings.Repeat("---|", len(sides)+1) + "\n")
	bounds := map[int]string{stepFirst: "wall ≤ 1.5, RSS ≤ 0.89", stepNoChange: "wall ≤ 1.5, no write", stepStatus: "wall ≤ 1.5"}
	for i, step := range fleetBenchSteps[:stepKptLoop] {
		fmt.Fprintf(&s, "| %s |", step)
		for _, side := range sides {
			fmt.Fprintf(&s, " %s |", usageRatio(side.usage[last][i], side.usage[0][i]))
		}
		fmt.Fprintf(&s, " %s |\n", bounds[i])
	}
	return s.String()
}

func usageRatio(a, b fleetUsage) string {
	return fmt.Sprintf("%s / %s / %s / %s", ratio(a.wall.Seconds(), b.wall.Seconds()), ratio(a.cpu.Seconds(), b.cpu.Seconds()),
		ratio(a.rssMB, b.rssMB), ratio(a.clusters.Seconds(), b.clusters.Seconds()))
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
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

// fleetBenchRounds is how many times the no-change apply and status run
// at each size: BENCH_FLEET_ROUNDS, default 3.
func fleetBenchRounds(b *testing.B) int {
	v := os.Getenv("BENCH_FLEET_ROUNDS")
	if v == "" {
		return 3
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 1 {
		b.Fatalf("BENCH_FLEET_ROUNDS=%q: want a count of runs, at least 1", v)
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
		// The rollout's canary wave takes one context of each cluster:
		// its second wave needs one more.
		if err != nil || n <= fleetBenchClusters || n > fleetBenchNamespaces {
			b.Fatalf("BENCH_FLEET_SIZES=%q: want context counts from %d to %d, such as 16,64,256", v, fleetBenchClusters+1, fleetBenchNamespaces)
		}
		sizes = append(sizes, n)
	}
	return sizes
}
