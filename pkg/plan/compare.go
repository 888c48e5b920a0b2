package plan

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/route"
	"github.com/shard-router/shard-router/pkg/split"
)

// comparison compares a layout with the previous split into a plan.
type comparison struct {
	l     *split.Layout
	items []function.Item
	cfg   *config.Config
	out   *outdir.OutDir
	doc   *v1alpha1.SplitPlan
	// contexts[i] are the contexts item i would be applied to: its route,
	// or for a refused move the route it was refused; nil when it has
	// none. unknown marks items whose route failed otherwise: the plan
	// cannot say where they go, so it claims no prune of them.
	contexts [][]int
	unknown  map[outdir.ObjKey]bool
	// bases are the items' digests without their route annotations.
	bases []input.Digest
	// updates are the updated items per context, for the diffs.
	updates map[string][]update
	// same are, per context of the config, the objects of files that the
	// new split would write byte for byte as the previous one did.
	same []map[outdir.ObjKey]bool
	// perCtx are, per context of the config, the objects it would hold
	// and their items.
	perCtx []map[outdir.ObjKey]int
}

func newComparison(l *split.Layout, cfg *config.Config, out *outdir.OutDir, doc *v1alpha1.SplitPlan) *comparison {
	pv := &comparison{l: l, items: l.Items(), cfg: cfg, out: out, doc: doc}
	pv.place()
	return pv
}

// settleScanned settles the previous split read by scanFile
// (split.SettleScanned): the objects of each file the new split would
// write byte for byte as the previous one did are unchanged.
// outdir.ErrScanMismatch reports a file that differs from its scan.
func (pv *comparison) settleScanned() error {
	pv.same = make([]map[outdir.ObjKey]bool, len(pv.cfg.Names))
	if pv.out == nil || pv.out.Mode() != outdir.ReadScan {
		return nil
	}
	return split.SettleScanned(pv.out, pv.l, func(pkg *split.Package, s *outdir.ScannedFile) {
		ctx := pv.cfg.Index(pkg.Context)
		if pv.same[ctx] == nil {
			pv.same[ctx] = map[outdir.ObjKey]bool{}
		}
		for _, h := range s.Held {
			pv.same[ctx][h.Key] = true
		}
	})
}

type update struct {
	item int
	prev outdir.PrevObject
}

// place decides where each item would go.
func (pv *comparison) place() {
	ds := pv.l.Outcome().Routing.Decisions
	pv.contexts = make([][]int, len(ds))
	pv.unknown = map[outdir.ObjKey]bool{}
	for i, d := range ds {
		switch {
		case d.Routed():
			pv.contexts[i] = d.Contexts
			if kept := pv.l.Kept(i); kept != nil {
				// A move handing off: the old contexts keep their copies.
				pv.contexts[i] = append(slices.Clone(d.Contexts), kept...)
				slices.Sort(pv.contexts[i])
			}
		case d.Reason == route.Failed && d.Refused != nil:
			pv.contexts[i] = d.Refused
		case d.Reason == route.Failed && pv.items[i].Name != "":
			pv.unknown[outdir.KeyOf(&pv.items[i].Object)] = true
		}
	}
}

// digestNew digests every item that goes somewhere, as split writes it,
// but for the two annotations that name its context and datastore: those
// differ per context, and digestIn adds them.
func (pv *comparison) digestNew() error {
	pv.bases = make([]input.Digest, len(pv.contexts))
	return yamlio.Parallel(len(pv.contexts), func(i int) error {
		same := true
		for _, c := range pv.contexts[i] {
			same = same && pv.same[c][outdir.KeyOf(&pv.items[i].Object)]
		}
		if pv.contexts[i] == nil || same {
			return nil // nowhere, or unchanged wherever it goes
		}
		n, err := pv.l.Prepare(i, pv.contexts[i][0])
		if err != nil {
			return err
		}
		pv.bases[i], _ = input.BaseDigestOf(n)
		return nil
	})
}

// digestIn is the digest of item i as context ctx's package holds it.
func (pv *comparison) digestIn(i, ctx int) input.Digest {
	ds, ok := pv.l.StoreIn(i, ctx)
	if !ok { // a refused move: Decide assigned it nothing
		ds = datastore.Assign(pv.cfg, ctx, pv.items[i].APIVersion, pv.items[i].Kind)
	}
	return input.RoutedDigest(pv.bases[i], pv.cfg.Names[ctx], ds)
}

// compare fills the contexts of the plan: those of the config, then those
// dropped from it.
func (pv *comparison) compare() {
	pv.perCtx = make([]map[outdir.ObjKey]int, len(pv.cfg.Names))
	for i := range pv.perCtx {
		pv.perCtx[i] = map[outdir.ObjKey]int{}
	}
	for i, cs := range pv.contexts {
		for _, c := range cs {
			pv.perCtx[c][outdir.KeyOf(&pv.items[i].Object)] = i
		}
	}
	pv.updates = map[string][]update{}
	for c := range pv.cfg.Names {
		pv.doc.Contexts = append(pv.doc.Contexts, pv.compareContext(c))
	}
	pv.dropped()
	for k := range pv.doc.Contexts {
		c := &pv.doc.Contexts[k]
		for _, l := range []*[]v1alpha1.ObjectRef{&c.Create, &c.Update, &c.Prune} {
			if *l == nil {
				*l = []v1alpha1.ObjectRef{}
			}
			sortRefs(*l)
		}
	}
}

// compareContext compares context c's new package with its previous one.
func (pv *comparison) compareContext(c int) v1alpha1.ContextPlan {
	name := pv.cfg.Names[c]
	cp := v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextAdded}
	pc := pv.out.Context(name)
	if pc != nil && pc.Exists {
		cp.State = v1alpha1.ContextKept
	}
	var prev map[outdir.ObjKey]outdir.PrevObject
	var held map[outdir.ObjKey]string
	if pc != nil {
		prev, held = pc.Objs, pc.Held
	}
	for k, i := range pv.perCtx[c] {
		p, ok := prev[k]
		switch {
		case pv.same[c][k]:
			cp.Unchanged++
		case !ok:
			cp.Create = append(cp.Create, k.Ref())
		case p.Digest != pv.digestIn(i, c):
			cp.Update = append(cp.Update, k.Ref())
			pv.updates[name] = append(pv.updates[name], update{i, p})
		default:
			cp.Unchanged++
		}
	}
	cp.Previous = len(held)
	for k := range held {
		if _, ok := pv.perCtx[c][k]; !ok && !pv.unknown[k] {
			cp.Prune = append(cp.Prune, k.Ref())
		}
	}
	return cp
}

// dropped adds the contexts that the previous split wrote and the config
// no longer has: everything they held is pruned.
func (pv *comparison) dropped() {
	if pv.out == nil {
		return
	}
	var dropped []string
	for _, pc := range pv.out.Previous {
		if pv.cfg.Index(pc.Name) < 0 && pc.Exists {
			dropped = append(dropped, pc.Name)
		}
	}
	sort.Strings(dropped)
	for _, name := range dropped {
		pc := pv.out.Context(name)
		cp := v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextDropped, Previous: len(pc.Held)}
		for k := range pc.Held {
			cp.Prune = append(cp.Prune, k.Ref())
		}
		pv.doc.Contexts = append(pv.doc.Contexts, cp)
	}
}

// placedKeys are the objects the plan places in context ctx: for the
// guard, as split's, objects never routed (unknown) count as pruned.
func (pv *comparison) placedKeys(ctx int) map[outdir.ObjKey]bool {
	keys := make(map[outdir.ObjKey]bool, len(pv.perCtx[ctx]))
	for k := range pv.perCtx[ctx] {
		keys[k] = true
	}
	return keys
}

// movesAndDataStores lists the objects whose contexts or datastores
// change, and whether the rules refuse them.
func (pv *comparison) movesAndDataStores() {
	names := pv.cfg.Names
	// applied are the contexts whose previous package holds each object:
	// where it is now, whatever its annotation says.
	applied := map[outdir.ObjKey][]string{}
	if pv.out != nil {
		for _, pc := range pv.out.Previous {
			for k := range pc.Held {
				applied[k] = append(applied[k], pc.Name)
			}
		}
	}
	for i := range pv.items {
		it := &pv.items[i]
		if pv.contexts[i] == nil {
			continue
		}
		key := outdir.KeyOf(&it.Object)
		from := applied[key]
		if from == nil && it.HasPrevious {
			from = slices.Clone(it.Previous)
		}
		if from == nil {
			continue // a new object: creates, not a move
		}
		to := make([]string, len(pv.contexts[i]))
		for k, c := range pv.contexts[i] {
			to[k] = names[c]
		}
		ref := key.Ref()
		if !sameSet(from, to) && !pv.onlyContextsChanged(i, from, to) {
			sort.SliceStable(from, func(a, b int) bool { return ctxOrder(pv.cfg, from[a]) < ctxOrder(pv.cfg, from[b]) })
			refused := pv.l.Outcome().Routing.Decisions[i].Reason == route.Failed
			pv.doc.Moves = append(pv.doc.Moves, v1alpha1.Move{Ref: ref, From: from, To: to, Refused: refused})
		}
		for _, ch := range pv.l.Outcome().StoreChanges[i] { // Decide's, for routed objects
			pv.doc.DataStoreChanges = append(pv.doc.DataStoreChanges, v1alpha1.DataStoreChange{Ref: ref, Context: ch.Context, From: ch.From, To: ch.To,
				Refused: ch.Verdict == datastore.Refused})
		}
	}
	sort.SliceStable(pv.doc.Moves, func(a, b int) bool { return pv.doc.Moves[a].Ref.Less(pv.doc.Moves[b].Ref) })
	sort.SliceStable(pv.doc.DataStoreChanges, func(a, b int) bool {
		x, y := pv.doc.DataStoreChanges[a], pv.doc.DataStoreChanges[b]
		if x.Ref != y.Ref {
			return x.Ref.Less(y.Ref)
		}
		return pv.cfg.Index(x.Context) < pv.cfg.Index(y.Context)
	})
}

// onlyContextsChanged reports a broadcast object whose contexts differ
// only by the contexts added to (no previous package) or dropped from the
// config: it goes to every context, so that is no move. The new context's
// creates and the dropped context's prunes show it.
func (pv *comparison) onlyContextsChanged(i int, from, to []string) bool {
	if pv.l.Outcome().Routing.Decisions[i].Reason != route.Broadcast {
		return false
	}
	for _, c := range from {
		if !slices.Contains(to, c) && pv.cfg.Index(c) >= 0 {
			return false
		}
	}
	for _, c := range to {
		if pc := pv.out.Context(c); !slices.Contains(from, c) && pc != nil && pc.Exists {
			return false
		}
	}
	return true
}

// diffs renders a unified diff of every update, both sides as split writes
// the object.
func (pv *comparison) diffs() error {
	for k := range pv.doc.Contexts {
		c := &pv.doc.Contexts[k]
		ups := pv.updates[c.Name]
		ctx := pv.cfg.Index(c.Name)
		diffs := make([]v1alpha1.ObjectDiff, len(ups))
		err := yamlio.Parallel(len(ups), func(j int) error {
			u := ups[j]
			n, err := pv.l.Prepare(u.item, ctx)
			if err != nil {
				return err
			}
			now, err := yamlio.Encode([]*yaml.RNode{n}, pv.l.Input().IO())
			if err != nil {
				return err
			}
			was, err := pv.previousText(c.Name, u.prev)
			if err != nil {
				return err
			}
			file := filepath.ToSlash(filepath.Join(c.Name, u.prev.File))
			text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: difflib.SplitLines(string(was)), B: difflib.SplitLines(string(now)),
				FromFile: "previous/" + file, ToFile: "new/" + file, Context: 3})
			if err != nil {
				return err
			}
			diffs[j] = v1alpha1.ObjectDiff{Ref: outdir.KeyOf(&pv.items[u.item].Object).Ref(), Diff: text}
			return nil
		})
		if err != nil {
			return err
		}
		sort.Slice(diffs, func(a, b int) bool { return diffs[a].Ref.Less(diffs[b].Ref) })
		c.Diffs = diffs
	}
	return nil
}

// previousText reads one resource of the previous split and encodes it
// as split writes it.
func (pv *comparison) previousText(ctx string, p outdir.PrevObject) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(pv.out.Path, ctx, filepath.FromSlash(p.File)))
	if err != nil {
		return nil, err
	}
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), WrapBareSeqNode: true, PreserveSeqIndent: true}).Read()
	if err != nil {
		return nil, err
	}
	if p.Pos >= len(nodes) {
		return nil, fmt.Errorf("%s changed while reading it", filepath.Join(pv.out.Given, ctx, p.File))
	}
	return yamlio.Encode(nodes[p.Pos:p.Pos+1], pv.l.Input().IO())
}

func sortRefs(refs []v1alpha1.ObjectRef) {
	sort.Slice(refs, func(a, b int) bool { return refs[a].Less(refs[b]) })
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// ctxOrder orders contexts as the config does, then those it no longer has.
func ctxOrder(cfg *config.Config, name string) int {
	if i := cfg.Index(name); i >= 0 {
		return i
	}
	return len(cfg.Names)
}
