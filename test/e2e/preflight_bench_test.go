//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkPreflight (make bench-preflight) measures what asking every
// cluster before any write costs (issue 41), and server-side apply against
// client-side (issue 42), on two real clusters it starts itself, with
// make bench-apply's shape (about 1,000 objects over two contexts). Each
// step runs the base commit's binary ($BASE_BIN: the last commit without
// the preflight) and this tree's on packages of their own, alternating
// who goes first, three rounds for the short steps (the median), and
// reports the ratios new/base:
//
//   - create: every object new (the first apply: a dry-run create of
//     each, 16 at a time per cluster);
//   - no change: no request beyond the reads, and 0 writes;
//   - one object changed per context: one dry run each;
//   - every object changed: a dry-run patch of each.
//
// Then server-side apply against client-side, for this tree's shard-router
// and for kpt live apply per context, on packages of their own: create,
// then (shard-router) a no-change apply with --server-side, which must
// send 0 writes. Ratios only: the machine is shared.
func BenchmarkPreflight(b *testing.B) {
	base := os.Getenv("BASE_BIN")
	if base == "" {
		b.Skip("BASE_BIN is the shard-router of the base commit (make bench-preflight builds it)")
	}
	kpt, bin := toolPath(b, "kpt"), shardRouter(b)
	dir := b.TempDir()
	apiA, apiB, kubeconfig := benchClusters(b, dir)
	const namespaces, configMaps = 10, 49 // per context: 10 x (1 + 49) = 500 objects
	type side struct {
		name, bin, pkg, out string
	}
	sides := []*side{{name: "base", bin: base}, {name: "new", bin: bin}}
	for _, s := range sides {
		s.pkg, s.out = benchPackage(b, dir, s.name, namespaces, configMaps), filepath.Join(dir, s.name+"-out")
		if err := os.MkdirAll(s.out, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// kpt's ResourceGroup CRD, which a cluster's first apply installs and
	// waits for, is installed beforehand: else the side that creates first
	// pays for both.
	for _, ctx := range []string{"A", "B"} {
		mustRun(b, cmdSpec{Timeout: 5 * time.Minute}, kpt, "live", "install-resource-group", "--kubeconfig", kubeconfig, "--context", ctx)
	}
	apply := func(s *side, args ...string) (time.Duration, int) {
		markA, markB := apiA.auditMark(b), apiB.auditMark(b)
		res := mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, s.bin, append([]string{"apply", s.pkg, "--out", s.out, "--kubeconfig", kubeconfig}, args...)...)
		return res.Wall, len(apiA.writesSince(b, markA)) + len(apiB.writesSince(b, markB))
	}
	// step runs edit then apply on each side, rounds times, alternating
	// who goes first; it returns each side's median wall time.
	step := func(what string, rounds int, edit func(s *side, round int), wantWrites int) map[string]time.Duration {
		walls := map[string][]time.Duration{}
		for r := range rounds {
			order := sides
			if r%2 == 1 {
				order = []*side{sides[1], sides[0]}
			}
			for _, s := range order {
				if edit != nil {
					edit(s, r)
				}
				wall, writes := apply(s)
				if wantWrites >= 0 && writes != wantWrites {
					b.Errorf("%s, %s: %d write request(s), want %d", what, s.name, writes, wantWrites)
				}
				walls[s.name] = append(walls[s.name], wall)
			}
		}
		med := map[string]time.Duration{}
		for n, ws := range walls {
			slices.Sort(ws)
			med[n] = ws[len(ws)/2]
		}
		ratio := float64(med["new"]) / float64(med["base"])
		b.Logf("%s: base %s, new %s: ratio %.2f (median of %d)", what, med["base"].Round(time.Millisecond), med["new"].Round(time.Millisecond), ratio, rounds)
		b.ReportMetric(ratio, strings.ReplaceAll(what, " ", "-")+"-ratio")
		return med
	}
	// setAll changes every object's value, from the filler it has to the
	// round's own, so that each round writes every object again.
	filler := map[string]string{}
	setAll := func(s *side, round int) {
		from, to := filler[s.name], strings.Repeat(string(rune('y'+round%2)), 64)
		if from == "" {
			from = strings.Repeat("x", 64)
		}
		for _, shard := range []string{"a", "b"} {
			for n := range namespaces {
				p := filepath.Join(s.pkg, fmt.Sprintf("%s-%s-%d.yaml", s.name, shard, n))
				text := clusterReadFile(b, p)
				i := strings.Index(text, "  value: ")
				writeFile(b, p, text[:i]+strings.ReplaceAll(text[i:], from, to))
			}
		}
		filler[s.name] = to
	}
	step("create", 1, nil, -1)
	step("no change", 3, nil, 0)
	step("one changed per context", 3, func(s *side, round int) {
		for _, shard := range []string{"a", "b"} {
			p := filepath.Join(s.pkg, fmt.Sprintf("%s-%s-0.yaml", s.name, shard))
			text := clusterReadFile(b, p)
			i := strings.Index(text, "name: settings-0\n")
			j := i + strings.Index(text[i:], "  value: ")
			k := j + strings.Index(text[j:], "\n")
			writeFile(b, p, text[:j]+fmt.Sprintf("  value: \"round-%d\"", round)+text[k:])
		}
	}, -1)
	step("every object changed", 3, setAll, -1)

	// Server-side against client-side apply, shard-router and kpt alike.
	ssa := func(name string, f func(pkg, out string) time.Duration) (time.Duration, string, string) {
		pkg, out := benchPackage(b, dir, name, namespaces, configMaps), filepath.Join(dir, name+"-out")
		return f(pkg, out), pkg, out
	}
	srCreate := func(args ...string) func(pkg, out string) time.Duration {
		return func(pkg, out string) time.Duration {
			if err := os.MkdirAll(out, 0o755); err != nil {
				b.Fatal(err)
			}
			return mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, bin, append([]string{"apply", pkg, "--out", out, "--kubeconfig", kubeconfig}, args...)...).Wall
		}
	}
	kptCreate := func(args ...string) func(pkg, out string) time.Duration {
		return func(pkg, out string) time.Duration {
			mustRun(b, cmdSpec{}, bin, "split", pkg, "-o", out)
			var took time.Duration
			for _, ctx := range []string{"A", "B"} {
				took += mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, kpt, append([]string{"live", "apply", filepath.Join(out, ctx), "--context", ctx,
					"--kubeconfig", kubeconfig, "--reconcile-timeout", "5m"}, args...)...).Wall
			}
			return took
		}
	}
	kCSA, _, _ := ssa("kcsa", kptCreate())
	sCSA, _, _ := ssa("scsa", srCreate())
	sSSA, ssaPkg, ssaOut := ssa("sssa", srCreate("--server-side"))
	kSSA, _, _ := ssa("kssa", kptCreate("--server-side"))
	markA, markB := apiA.auditMark(b), apiB.auditMark(b)
	mustRun(b, cmdSpec{Timeout: 10 * time.Minute}, bin, "apply", ssaPkg, "--out", ssaOut, "--kubeconfig", kubeconfig, "--server-side")
	if w := len(apiA.writesSince(b, markA)) + len(apiB.writesSince(b, markB)); w != 0 {
		b.Errorf("a no-change apply with --server-side sent %d write request(s)", w)
	}
	b.Logf("create with server-side apply / client-side: shard-router %.2f (%s / %s), kpt live apply %.2f (%s / %s); a no-change --server-side apply: 0 writes",
		float64(sSSA)/float64(sCSA), sSSA.Round(time.Millisecond), sCSA.Round(time.Millisecond),
		float64(kSSA)/float64(kCSA), kSSA.Round(time.Millisecond), kCSA.Round(time.Millisecond))
	b.ReportMetric(float64(sSSA)/float64(sCSA), "sr-ssa/csa")
	b.ReportMetric(float64(kSSA)/float64(kCSA), "kpt-ssa/csa")
}
