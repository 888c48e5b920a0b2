package route

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// Label is a label that routing stamps on an object (spec.placement.label).
type Label struct{ Key, Value string }

// place decides a Namespace that no selector matched, under spec.placement:
//  1. an annotation that names only declared contexts is kept (sticky);
//  2. else a placement label whose value names a context chooses it;
//  3. else Rendezvous chooses among the contexts of weight > 0.
//
// In 2 and 3 an annotation naming an undeclared context (a removed one) is
// a move, which the moves check refuses unless allowMoves; the
// placementLabel check then sets the label.
func (r *Router) place(p *Routing, i int, o *Object) Decision {
	pl := r.cfg.Placement
	if o.HasPrevious {
		if ctx, ok := r.declared(o.Previous); ok {
			return Decision{Reason: Sticky, Contexts: ctx}
		}
	}
	c := -1
	if pl.Label != nil {
		if v, ok := o.Labels[pl.Label.Key]; ok {
			if k, known := pl.Label.Context(v); known {
				c = k
			} else if !o.HasPrevious {
				p.errorf(i, "metadata.labels["+pl.Label.Key+"]", "%s carries %s=%s, which is the label value of no context (spec.placement.label.values: %s): fix or remove the label so that placement can choose",
					o.Describe(), pl.Label.Key, v, quoteList(pl.Label.Values))
				return Decision{Reason: Failed}
			}
		}
	}
	if c < 0 {
		if c = Rendezvous(o.Name, r.cfg.Names, pl.Weights); c < 0 { // Validate prevents it
			p.errorf(i, "metadata.name", "%s cannot be placed: every context has weight 0", o.Describe())
			return Decision{Reason: Failed}
		}
	}
	return Decision{Reason: Placed, Contexts: []int{c}}
}

// declared maps context names to sorted indexes, if all are declared.
func (r *Router) declared(names []string) ([]int, bool) {
	ctx := make([]int, 0, len(names))
	for _, name := range names {
		c := r.cfg.Index(name)
		if c < 0 {
			return nil, false
		}
		ctx = append(ctx, c)
	}
	slices.Sort(ctx)
	return slices.Compact(ctx), true
}

// withLabel sets the placement label a Namespace must carry. It refuses a
// label that disagrees with the annotation (unless replace), and a label
// that would make some other context's selector match the Namespace on the
// next run, which would then move it or add a context.
func (r *Router) withLabel(p *Routing, i int, o *Object, d Decision, replace bool) Decision {
	label := r.cfg.Placement.Label
	if label == nil {
		return d
	}
	key := label.Key
	fieldPath := "metadata.labels[" + key + "]"
	if len(d.Contexts) != 1 {
		p.Problems = append(p.Problems, Problem{Object: i, Severity: Warning, Field: fieldPath,
			Message: fmt.Sprintf("%s is in several contexts (%s), so spec.placement.label %s is not set on it", o.Describe(), quoteList(r.cfg.NamesOf(d.Contexts)), key)})
		return d
	}
	c := d.Contexts[0]
	want := label.Values[c]
	cur, has := o.Labels[key]
	if has && cur == want {
		return d
	}
	if has && !replace {
		p.errorf(i, fieldPath, "%s is in context %q (its %s annotation) but carries %s=%s, which names another context; context %q has %s=%s: fix the label or the annotation",
			o.Describe(), r.cfg.Names[c], v1alpha1.ContextAnnotation, key, cur, r.cfg.Names[c], key, want)
		return Decision{Reason: Failed}
	}
	stamped := labels.Set(maps.Clone(o.Labels))
	if stamped == nil {
		stamped = labels.Set{}
	}
	stamped[key] = want
	var others []int
	ns, res := r.cfg.NamespaceSelectors, r.cfg.ResourceSelectors
	for k := range r.cfg.Names {
		if k != c && ((ns[k] != nil && ns[k].Matches(stamped)) || (res[k] != nil && res[k].Matches(stamped))) {
			others = append(others, k)
		}
	}
	if len(others) > 0 {
		p.errorf(i, fieldPath, "%s goes to context %q, but with %s=%s the selectors of %s would match it on the next run: choose spec.placement.label values that only their own context's selectors match",
			o.Describe(), r.cfg.Names[c], key, want, quoteList(r.cfg.NamesOf(others)))
		return Decision{Reason: Failed}
	}
	d.Label = &Label{Key: key, Value: want}
	return d
}

// Rendezvous returns the index of the context that weighted rendezvous
// (highest random weight) hashing chooses for key, the Namespace name. It
// is fixed, so that the same name lands on the same context on any machine
// and Go version:
//
//	h(c)     = first 8 bytes, big-endian, of SHA-256(key + "\x00" + names[c])
//	u(c)     = (floor(h(c) / 2^11) + 1/2) / 2^53          (in (0, 1))
//	score(c) = weights[c] / -log2(u(c))
//
// and the context with the highest score wins; on equal scores the one
// declared first. A context of weight 0 never wins. This is the standard
// logarithmic method, score = -w / ln(u), divided by ln 2, which changes no
// winner. -log2(u) is computed in 48-bit fixed point by integer arithmetic
// (binary logarithm by repeated squaring, truncating) and scores are
// compared exactly by cross-multiplication, so no floating-point rounding
// takes part. It returns -1 when every weight is 0.
//
// Adding a context moves a name only onto the new context; removing one
// moves only the names that were on it; scaling all weights moves nothing.
func Rendezvous(key string, names []string, weights []uint32) int {
	best := -1
	var bestW, bestL uint64
	for c, name := range names {
		w := uint64(weights[c])
		if w == 0 {
			continue
		}
		l := negLog2U(hash64(key, name))
		// w/l > bestW/bestL  <=>  w*bestL > bestW*l (all positive).
		ahi, alo := bits.Mul64(w, bestL)
		bhi, blo := bits.Mul64(bestW, l)
		if best < 0 || greater128(ahi, alo, bhi, blo) {
			best, bestW, bestL = c, w, l
		}
	}
	return best
}

// hash64 is the first 8 bytes, big-endian, of SHA-256(key NUL name).
func hash64(key, name string) uint64 {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(name))
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}

// fracBits is the fixed-point precision of negLog2U.
const fracBits = 48

// negLog2U returns -log2(u) in units of 2^-fracBits, for u derived from h
// as u = x / 2^54 with x = 2*floor(h/2^11) + 1 (odd, in [1, 2^54)). The
// result is at least 1: log2(x) < 54 and its fraction is truncated.
func negLog2U(h uint64) uint64 {
	x := (h>>11)<<1 | 1
	n := bits.Len64(x) - 1 // integer part of log2(x), 0..53
	m := x << (62 - n)     // x / 2^n in [1, 2), as Q62
	var frac uint64
	for range fracBits {
		hi, lo := bits.Mul64(m, m) // m^2 as Q124, in [1, 4)
		m = hi<<2 | lo>>62         // back to Q62
		frac <<= 1
		if m >= 1<<63 { // m^2 >= 2: the next bit of the logarithm is 1
			m >>= 1
			frac |= 1
		}
	}
	return 54<<fracBits - (uint64(n)<<fracBits | frac)
}

// greater128 reports whether the 128-bit a = (ahi, alo) exceeds b.
func greater128(ahi, alo, bhi, blo uint64) bool {
	return ahi > bhi || (ahi == bhi && alo > blo)
}
