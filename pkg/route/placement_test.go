package route

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
)

var (
	shards3 = []string{"shard-00", "shard-01", "shard-02"}
	shards4 = []string{"shard-00", "shard-01", "shard-02", "shard-03"}
)

// TestRendezvousGolden pins the placement of fixed names. The expected
// contexts were computed independently, in Python with floating point:
//
//	import hashlib, math
//	def u(ns, ctx):
//	    h = int.from_bytes(hashlib.sha256((ns + "\0" + ctx).encode()).digest()[:8], "big")
//	    return ((h >> 11) + 0.5) / 2**53
//	def choose(ns, ctxs, ws):  # first highest score wins
//	    s = [(-w / math.log(u(ns, c)) if w else -1) for c, w in zip(ctxs, ws)]
//	    return ctxs[s.index(max(s))]
//
// A change here moves real namespaces on the next run of every user that
// has not annotated them yet: the hash must never change.
func TestRendezvousGolden(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		three, four, weighted4 string // weights 1,1,1 / 1,1,1,1 / 1,2,3,0
	}{
		{"default", "shard-01", "shard-01", "shard-02"},
		{"kube-system", "shard-02", "shard-02", "shard-02"},
		{"team-a", "shard-00", "shard-00", "shard-00"},
		{"team-b", "shard-00", "shard-00", "shard-01"},
		{"payments", "shard-00", "shard-00", "shard-02"},
		{"search-ranking", "shard-00", "shard-03", "shard-00"},
		{"ns-00042", "shard-01", "shard-01", "shard-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{
				shards3[Rendezvous(tc.name, shards3, []uint32{1, 1, 1})],
				shards4[Rendezvous(tc.name, shards4, []uint32{1, 1, 1, 1})],
				shards4[Rendezvous(tc.name, shards4, []uint32{1, 2, 3, 0})],
			}
			want := []string{tc.three, tc.four, tc.weighted4}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("placed on %v, want %v", got, want)
			}
		})
	}
}

// TestHash64 checks the hash input and byte order against sha256sum:
// printf 'team-a\0shard-00' | sha256sum  ->  fba9e357b805bf50d88e...
func TestHash64(t *testing.T) {
	if got, want := hash64("team-a", "shard-00"), uint64(0xfba9e357b805bf50); got != want {
		t.Errorf("hash64 = %#x, want %#x", got, want)
	}
}

// TestNegLog2U compares the fixed-point logarithm with math.Log2 over the
// whole range of u, extremes included.
func TestNegLog2U(t *testing.T) {
	hs := []uint64{0, 1, 1 << 11, 1<<63 - 1, 1 << 63, math.MaxUint64, math.MaxUint64 - 1<<11, 0xfba9e357b805bf50}
	for i := range uint64(2000) {
		hs = append(hs, i*0x9e3779b97f4a7c15) // spread over the range
	}
	for _, h := range hs {
		u := (float64(h>>11) + 0.5) / (1 << 53)
		want := -math.Log2(u)
		got := float64(negLog2U(h)) / (1 << fracBits)
		// Truncation to 48 bits, plus float64 rounding of want (<= 54).
		if math.Abs(got-want) > 1e-13 {
			t.Errorf("h=%#x: -log2(u) = %.17g, want %.17g", h, got, want)
		}
		if negLog2U(h) == 0 {
			t.Errorf("h=%#x: -log2(u) is 0, which would make the score infinite", h)
		}
	}
}

// floatRendezvous is the textbook formula in floating point, for
// comparison: the highest -w/ln(u) wins, the first on ties.
func floatRendezvous(key string, names []string, weights []uint32) int {
	best, bestScore := -1, 0.0
	for c, name := range names {
		if weights[c] == 0 {
			continue
		}
		sum := sha256.Sum256([]byte(key + "\x00" + name))
		u := (float64(binary.BigEndian.Uint64(sum[:8])>>11) + 0.5) / (1 << 53)
		score := -float64(weights[c]) / math.Log(u)
		if best < 0 || score > bestScore {
			best, bestScore = c, score
		}
	}
	return best
}

func TestRendezvousMatchesFloatFormula(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	for _, weights := range [][]uint32{{1, 1, 1, 1, 1}, {1, 2, 3, 0, 5}, {0, 0, 7, 0, 0}, {100, 1, 1, 1, 1}} {
		for i := range 5000 {
			key := fmt.Sprintf("team-%d", i)
			if got, want := Rendezvous(key, names, weights), floatRendezvous(key, names, weights); got != want {
				t.Fatalf("weights %v, %q: got %d, want %d", weights, key, got, want)
			}
		}
	}
	if got := Rendezvous("x", names, []uint32{0, 0, 0, 0, 0}); got != -1 {
		t.Errorf("all weights 0: got %d, want -1", got)
	}
}

// chiSquareCritical01 are the critical values of the chi-square
// distribution at significance 0.01, by degrees of freedom (NIST/SEMATECH
// e-Handbook of Statistical Methods, table 1.3.6.7.4).
var chiSquareCritical01 = map[int]float64{1: 6.635, 2: 9.210, 3: 11.345, 4: 13.277, 5: 15.086}

func TestRendezvousSharesMatchWeights(t *testing.T) {
	names := []string{"ctx-a", "ctx-b", "ctx-c", "ctx-d", "ctx-drained"}
	for _, weights := range [][]uint32{{1, 1, 1, 1, 0}, {1, 1, 2, 4, 0}, {3, 1, 1, 1, 0}} {
		t.Run(fmt.Sprint(weights), func(t *testing.T) {
			const n = 10000
			counts := make([]int, len(names))
			for i := range n {
				counts[Rendezvous(fmt.Sprintf("ns-%05d", i), names, weights)]++
			}
			var sum uint32
			for _, w := range weights {
				sum += w
			}
			stat, df := 0.0, -1
			for c, w := range weights {
				if w == 0 {
					if counts[c] != 0 {
						t.Errorf("%s has weight 0 but received %d namespaces", names[c], counts[c])
					}
					continue
				}
				expected := float64(n) * float64(w) / float64(sum)
				d := float64(counts[c]) - expected
				stat += d * d / expected
				df++
			}
			t.Logf("counts %v, chi-square %.3f with %d degrees of freedom", counts, stat, df)
			if crit := chiSquareCritical01[df]; stat > crit {
				t.Errorf("shares %v do not match weights %v: chi-square %.3f > %.3f (df %d, significance 0.01)", counts, weights, stat, crit, df)
			}
		})
	}
}

// TestRendezvousAddingContext: without any stickiness, adding a context
// moves a name only onto the new context, and about 1/(N+1) of them.
func TestRendezvousAddingContext(t *testing.T) {
	moved := 0
	const n = 10000
	for i := range n {
		key := fmt.Sprintf("ns-%05d", i)
		before := Rendezvous(key, shards3, []uint32{1, 1, 1})
		after := Rendezvous(key, shards4, []uint32{1, 1, 1, 1})
		if after != before {
			if after != 3 {
				t.Fatalf("%s moved from %s to %s, not to the new context", key, shards4[before], shards4[after])
			}
			moved++
		}
	}
	if moved < n/5 || moved > n*3/10 {
		t.Errorf("%d of %d names moved to the new context; expected about a quarter", moved, n)
	}
}

func placementConfig(names []string, weights []int32, mut func(*v1alpha1.ShardConfigSpec)) *v1alpha1.ShardConfig {
	cfg := &v1alpha1.ShardConfig{Spec: v1alpha1.ShardConfigSpec{Placement: &v1alpha1.Placement{Strategy: v1alpha1.RendezvousPlacement}}}
	cfg.APIVersion, cfg.Kind, cfg.Name = v1alpha1.APIVersion, v1alpha1.Kind, "shards"
	for i, n := range names {
		c := v1alpha1.Context{Name: n}
		if weights != nil {
			c.Weight = &weights[i]
		}
		cfg.Spec.Contexts = append(cfg.Spec.Contexts, c)
	}
	if mut != nil {
		mut(&cfg.Spec)
	}
	return cfg
}

func mustRouter(t *testing.T, cfg *v1alpha1.ShardConfig) *Router {
	t.Helper()
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("config invalid: %v", errs.ToAggregate())
	}
	c, _, errs := config.Compile(cfg)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return New(c)
}

func namespace(name string, labels map[string]string, annotation string) Object {
	o := Object{APIVersion: "v1", Kind: "Namespace", Name: name, Labels: labels}
	if annotation != "" {
		o.Previous, o.HasPrevious = ParseContexts(annotation), true
	}
	return o
}

func problems(p *Routing) string {
	var b strings.Builder
	for _, pr := range p.Problems {
		fmt.Fprintf(&b, "[%d %v] %s: %s\n", pr.Object, pr.Severity, pr.Field, pr.Message)
	}
	return b.String()
}

// contextsOf routes objs and returns each object's contexts as the
// annotation would read, failing on any problem.
func contextsOf(t *testing.T, r *Router, objs []Object) []string {
	t.Helper()
	p := r.Route(objs)
	if len(p.Problems) > 0 {
		t.Fatalf("unexpected problems:\n%s", problems(p))
	}
	out := make([]string, len(objs))
	for i, d := range p.Decisions {
		out[i] = strings.Join(r.cfg.NamesOf(d.Contexts), ",")
	}
	return out
}

func TestRoutePlacesNamespaceAndItsResources(t *testing.T) {
	r := mustRouter(t, placementConfig(shards3, nil, func(s *v1alpha1.ShardConfigSpec) {
		s.Contexts[1].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"shard": "01"}}
	}))
	objs := []Object{
		namespace("payments", nil, ""),
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "payments", Name: "cm"},
		namespace("labelled", map[string]string{"shard": "01"}, ""),
		namespace("kube-system", nil, "shard-01"), // pinned by hand: stays, whatever the hash says
	}
	p := r.Route(objs)
	if len(p.Problems) > 0 {
		t.Fatalf("unexpected problems:\n%s", problems(p))
	}
	want := []struct {
		reason Reason
		ctx    string
	}{{Placed, "shard-00"}, {FollowsNamespace, "shard-00"}, {Selected, "shard-01"}, {Sticky, "shard-01"}}
	for i, w := range want {
		d := p.Decisions[i]
		if d.Reason != w.reason || strings.Join(r.cfg.NamesOf(d.Contexts), ",") != w.ctx {
			t.Errorf("%s: %v %v, want %v %s", objs[i].Name, d.Reason, r.cfg.NamesOf(d.Contexts), w.reason, w.ctx)
		}
	}
	if got := shards3[Rendezvous("kube-system", shards3, []uint32{1, 1, 1})]; got == "shard-01" {
		t.Fatalf("test needs a pinned context that differs from the hash's %s", got)
	}
}

// TestRouteAddingContextMovesNothing routes new namespaces, writes the
// result as their annotation (as the function does), then adds a context:
// nothing placed moves, and only new namespaces can land on the new one.
func TestRouteAddingContextMovesNothing(t *testing.T) {
	var objs []Object
	for i := range 400 {
		objs = append(objs, namespace(fmt.Sprintf("team-%03d", i), nil, ""))
	}
	first := contextsOf(t, mustRouter(t, placementConfig(shards3, nil, nil)), objs)
	for i := range objs {
		objs[i].Previous, objs[i].HasPrevious = ParseContexts(first[i]), true
	}
	grown := mustRouter(t, placementConfig(shards4, nil, nil))
	second := contextsOf(t, grown, objs)
	for i := range objs {
		if second[i] != first[i] {
			t.Errorf("%s moved from %s to %s when a context was added", objs[i].Name, first[i], second[i])
		}
	}
	// The same namespaces, new: about a quarter go to the new context.
	for i := range objs {
		objs[i].Previous, objs[i].HasPrevious = nil, false
	}
	fresh := contextsOf(t, grown, objs)
	onNew := 0
	for i := range objs {
		switch fresh[i] {
		case "shard-03":
			onNew++
		case first[i]:
		default:
			t.Errorf("new namespace %s placed on %s, neither where 3 contexts put it (%s) nor on the new context", objs[i].Name, fresh[i], first[i])
		}
	}
	if onNew == 0 {
		t.Error("no new namespace was placed on the new context")
	}
}

func TestRouteRemovingContextIsAMove(t *testing.T) {
	// team-b is on shard-01 with three equal contexts; remove shard-01.
	objs := []Object{namespace("team-b", nil, "shard-01"), {APIVersion: "v1", Kind: "Secret", Namespace: "team-b", Name: "s"}}
	cfg := placementConfig([]string{"shard-00", "shard-02"}, nil, nil)
	p := mustRouter(t, cfg).Route(objs)
	if p.Decisions[0].Reason != Failed || p.Decisions[1].Reason != Failed {
		t.Fatalf("decisions %+v, want both failed", p.Decisions)
	}
	if len(p.Problems) != 1 || p.Problems[0].Severity != Error ||
		!strings.Contains(p.Problems[0].Message, `would move from "shard-01" to "shard-00"`) ||
		!strings.Contains(p.Problems[0].Message, "allowMoves") {
		t.Fatalf("want one refused move naming both contexts, got:\n%s", problems(p))
	}

	cfg.Spec.AllowMoves = true
	p = mustRouter(t, cfg).Route(objs)
	d := p.Decisions[0]
	if d.Reason != Placed || len(d.Dropped) != 1 || d.Dropped[0] != "shard-01" || p.Decisions[1].Reason != FollowsNamespace {
		t.Fatalf("with allowMoves: decisions %+v", p.Decisions)
	}
	if len(p.Problems) != 1 || p.Problems[0].Severity != Warning {
		t.Fatalf("with allowMoves: want one warning, got:\n%s", problems(p))
	}
}

func TestRouteWeightZeroDrains(t *testing.T) {
	r := mustRouter(t, placementConfig(shards3, []int32{1, 0, 1}, nil))
	var objs []Object
	for i := range 300 {
		objs = append(objs, namespace(fmt.Sprintf("ns-%d", i), nil, ""))
	}
	objs = append(objs, namespace("old", nil, "shard-01"))
	got := contextsOf(t, r, objs)
	for i, c := range got[:300] {
		if c == "shard-01" {
			t.Errorf("%s placed on shard-01, which has weight 0", objs[i].Name)
		}
	}
	if got[300] != "shard-01" {
		t.Errorf("a namespace already on a drained context must stay: got %s", got[300])
	}
}

func labelConfig(mut func(*v1alpha1.ShardConfigSpec)) *v1alpha1.ShardConfig {
	return placementConfig(shards3, nil, func(s *v1alpha1.ShardConfigSpec) {
		s.Placement.Label = &v1alpha1.PlacementLabel{Key: "example.com/shard",
			Values: map[string]string{"shard-00": "00", "shard-01": "01", "shard-02": "02"}}
		if mut != nil {
			mut(s)
		}
	})
}

// TestRoutePlacementLabel is the section of the placementLabel check.
func TestRoutePlacementLabel(t *testing.T) {
	const key = "example.com/shard"
	// shard-01 selects its own label value, as a user migrating from
	// hand-labelled namespaces would have it.
	selectOwn := func(s *v1alpha1.ShardConfigSpec) {
		s.Contexts[1].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: "01"}}
	}
	for _, tc := range []struct {
		name    string
		mut     func(*v1alpha1.ShardConfigSpec)
		ns      Object
		reason  Reason
		ctx     string
		label   string // value stamped, "" for none
		problem string // substring of the only problem
	}{
		{name: "placed by hash gets the label", ns: namespace("team-a", nil, ""), reason: Placed, ctx: "shard-00", label: "00"},
		{name: "existing labels are kept", ns: namespace("team-a", map[string]string{"app": "x"}, ""), reason: Placed, ctx: "shard-00", label: "00"},
		{name: "a label naming a context chooses it", ns: namespace("team-a", map[string]string{key: "02"}, ""), reason: Placed, ctx: "shard-02"},
		{name: "a label naming no context is an error", ns: namespace("team-a", map[string]string{key: "07"}, ""), reason: Failed,
			problem: "example.com/shard=07, which is the label value of no context"},
		{name: "sticky namespace gets its context's label", ns: namespace("team-a", nil, "shard-02"), reason: Sticky, ctx: "shard-02", label: "02"},
		{name: "sticky namespace whose label disagrees", ns: namespace("team-a", map[string]string{key: "01"}, "shard-02"), reason: Failed,
			problem: `is in context "shard-02" (its shardrouter.dev/context annotation) but carries example.com/shard=01`},
		{name: "several contexts: no label, a warning", ns: namespace("team-a", nil, "shard-00,shard-02"), reason: Sticky, ctx: "shard-00,shard-02",
			problem: "is in several contexts"},
		{name: "label a selector of its own context matches", mut: selectOwn, ns: namespace("team-b", nil, "shard-01"), reason: Sticky, ctx: "shard-01", label: "01"},
		{name: "label that another context's selector would match",
			mut: func(s *v1alpha1.ShardConfigSpec) {
				s.Contexts[1].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}, MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{"00", "01"}}}}
			},
			ns: namespace("team-a", map[string]string{"team": "a"}, ""), reason: Failed,
			problem: `with example.com/shard=00 the selectors of "shard-01" would match it on the next run`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRouter(t, labelConfig(tc.mut))
			p := r.Route([]Object{tc.ns})
			d := p.Decisions[0]
			if d.Reason != tc.reason || strings.Join(r.cfg.NamesOf(d.Contexts), ",") != tc.ctx {
				t.Errorf("got %v %v, want %v %q\n%s", d.Reason, r.cfg.NamesOf(d.Contexts), tc.reason, tc.ctx, problems(p))
			}
			var got string
			if d.Label != nil {
				if d.Label.Key != key {
					t.Errorf("label key %q", d.Label.Key)
				}
				got = d.Label.Value
			}
			if got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
			switch {
			case tc.problem == "" && len(p.Problems) > 0:
				t.Errorf("unexpected problems:\n%s", problems(p))
			case tc.problem != "" && (len(p.Problems) != 1 || !strings.Contains(p.Problems[0].Message, tc.problem)):
				t.Errorf("want one problem containing %q, got:\n%s", tc.problem, problems(p))
			}
		})
	}
}

// TestRoutePlacementIsIdempotent routes, applies the decisions as the
// function would (annotation and label), and routes again: same contexts,
// nothing left to write.
func TestRoutePlacementIsIdempotent(t *testing.T) {
	r := mustRouter(t, labelConfig(func(s *v1alpha1.ShardConfigSpec) {
		s.Contexts[2].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/shard": "02"}}
	}))
	var objs []Object
	for i := range 60 {
		objs = append(objs, namespace(fmt.Sprintf("ns-%d", i), map[string]string{"team": fmt.Sprint(i)}, ""))
	}
	p := r.Route(objs)
	if len(p.Problems) > 0 {
		t.Fatalf("unexpected problems:\n%s", problems(p))
	}
	first := make([]string, len(objs))
	for i, d := range p.Decisions {
		first[i] = strings.Join(r.cfg.NamesOf(d.Contexts), ",")
		objs[i].Previous, objs[i].HasPrevious = r.cfg.NamesOf(d.Contexts), true
		if d.Label == nil {
			t.Fatalf("%s: no label stamped", objs[i].Name)
		}
		objs[i].Labels[d.Label.Key] = d.Label.Value
	}
	p = r.Route(objs)
	if len(p.Problems) > 0 {
		t.Fatalf("second run: unexpected problems:\n%s", problems(p))
	}
	for i, d := range p.Decisions {
		if got := strings.Join(r.cfg.NamesOf(d.Contexts), ","); got != first[i] || d.Label != nil {
			t.Errorf("%s: second run %s (label %v), first %s", objs[i].Name, got, d.Label, first[i])
		}
	}
}
