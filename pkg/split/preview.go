package split

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/route"
)

// PreviewOptions tune Preview.
type PreviewOptions struct {
	// Diff adds a unified diff of every update.
	Diff bool
}

// Preview routes the input exactly as Route does for split (same engine,
// same refusals, same mass-deletion guard), writes nothing, and compares
// each context's new package with what the previous split in opts.Out
// (opened with input.OpenPrevious) holds: what `kpt live apply` of each context
// would create, update and prune there. Objects are compared as data:
// formatting, comments, key order and the config.kubernetes.io/* and
// internal.config.kubernetes.io/* annotations (which never reach a cluster)
// are not changes, but for those that change what kpt does (yamlio.NotApplied). Results are Route's; the plan's Errors and Warnings are
// left for the caller to fill from them.
func Preview(in *input.Input, cfg *function.Config, opts Options, popts PreviewOptions) (*v1alpha1.SplitPlan, framework.Results, error) {
	sp, err := Build(in, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	doc := v1alpha1.NewSplitPlan()
	doc.OverrideChanges = append([]v1alpha1.OverrideChange{}, sp.OverrideChanges...)
	if sp.out == nil { // the packages could not even be named
		return doc, sp.Results, nil
	}
	if opts.Out != nil && opts.Out.Mode() != input.ReadScan && opts.Out.Mode() != input.ReadDigests {
		return nil, nil, fmt.Errorf("internal error: Preview needs the previous split opened with input.OpenPrevious")
	}
	pv := &preview{sp: sp, cfg: cfg, out: opts.Out, doc: doc}
	pv.place()
	if err := pv.settleScanned(); errors.Is(err, input.ErrScanMismatch) {
		// Never guess: read the previous split again, parsing every file.
		if opts.Out, err = opts.Out.Reparse(); err != nil {
			return nil, nil, err
		}
		return Preview(in, cfg, opts, popts)
	} else if err != nil {
		return nil, nil, err
	}
	if err := pv.digestNew(); err != nil {
		return nil, nil, err
	}
	counts := pv.compare()
	if !sp.guarded && opts.Out != nil {
		// Route stopped at an earlier error; run the guard on the plan's
		// own placement, so that its verdict is shown too.
		sp.checkMassPrune(cfg.Compiled.Policy, opts.AllowMassPrune, opts.Out, counts)
	}
	maxPercent, minObjects := cfg.Compiled.Policy.PruneMaxPercent, cfg.Compiled.Policy.PruneMinObjects
	for k := range doc.Contexts {
		c := &doc.Contexts[k]
		if c.State != v1alpha1.ContextDropped {
			c.MassPrune = massPrune(pruneCount{c.Name, c.Previous, len(c.Prune)}, maxPercent, minObjects)
		}
	}
	pv.movesAndDataStores()
	if popts.Diff {
		if err := pv.diffs(); err != nil {
			return nil, nil, err
		}
	}
	return doc, sp.Results, nil
}

type preview struct {
	sp  *Layout
	cfg *function.Config
	out *input.OutDir
	doc *v1alpha1.SplitPlan
	// contexts[i] are the contexts item i would be applied to: its route,
	// or for a refused move the route it was refused; nil when it has
	// none. unknown marks items whose route failed otherwise: the plan
	// cannot say where they go, so it claims no prune of them.
	contexts [][]int
	unknown  map[input.ObjKey]bool
	// bases are the items' digests without their route annotations.
	bases []input.Digest
	// updates are the updated items per context, for the diffs.
	updates map[string][]update
	// same are, per context of the config, the objects of files that the
	// new split would write byte for byte as the previous one did.
	same []map[input.ObjKey]bool
}

// settleScanned compares, with the previous split read by scanFile, each
// file the new split would write with the previous file at its path: when
// their bytes are equal, its objects are unchanged, and what scanFile read
// must be those objects. Every other scanned file is parsed and checked
// against what scanFile read. input.ErrScanMismatch reports a difference.
func (pv *preview) settleScanned() error {
	names := pv.cfg.Compiled.Names
	pv.same = make([]map[input.ObjKey]bool, len(names))
	if pv.out == nil || pv.out.Mode() != input.ReadScan {
		return nil
	}
	type job struct {
		pkg  *Package
		ctx  int
		k    int
		prev *input.ScannedFile
	}
	var jobs []job
	matched := map[*input.PrevContext]map[string]bool{}
	for _, pkg := range pv.sp.Packages { // none when the split has errors
		pc := pv.out.Context(pkg.Context)
		if pc == nil || len(pc.Scanned) == 0 {
			continue
		}
		ctx := slices.Index(names, pkg.Context)
		for k, f := range pkg.files {
			if s := pc.Scanned[f.path]; s != nil && f.items != nil {
				jobs = append(jobs, job{pkg, ctx, k, s})
			}
		}
		matched[pc] = map[string]bool{}
	}
	equal := make([]bool, len(jobs))
	err := yamlio.Parallel(len(jobs), func(j int) error {
		data, err := jobs[j].pkg.render(jobs[j].k)
		if err != nil {
			return err
		}
		equal[j] = sha256.Sum256(data) == jobs[j].prev.Sum
		return nil
	})
	if err != nil {
		return err
	}
	for j, jb := range jobs {
		if !equal[j] {
			continue
		}
		f := &jb.pkg.files[jb.k]
		if len(f.items) != len(jb.prev.Held) {
			return input.ErrScanMismatch
		}
		if pv.same[jb.ctx] == nil {
			pv.same[jb.ctx] = map[input.ObjKey]bool{}
		}
		for n, i := range f.items {
			it := &pv.sp.items[i]
			h := jb.prev.Held[n]
			if h.Key != input.KeyOf(&it.Object) || h.DataStore != datastore.Assign(pv.cfg.Compiled, jb.ctx, it.APIVersion, it.Kind) {
				return input.ErrScanMismatch
			}
			pv.same[jb.ctx][h.Key] = true
		}
		matched[pv.out.Context(jb.pkg.Context)][f.path] = true
	}
	for _, pc := range pv.out.Previous {
		if err := pc.ParseScanned(pv.out, func(f string) bool { return matched[pc][f] }); err != nil {
			return err
		}
	}
	return nil
}

type update struct {
	item int
	prev input.PrevObject
}

// place decides where each item would go.
func (pv *preview) place() {
	ds := pv.sp.out.Routing.Decisions
	pv.contexts = make([][]int, len(ds))
	pv.unknown = map[input.ObjKey]bool{}
	for i, d := range ds {
		switch {
		case d.Routed():
			pv.contexts[i] = d.Contexts
		case d.Reason == route.Failed && d.Refused != nil:
			pv.contexts[i] = d.Refused
		case d.Reason == route.Failed && pv.sp.items[i].Name != "":
			pv.unknown[input.KeyOf(&pv.sp.items[i].Object)] = true
		}
	}
}

// digestNew digests every item that goes somewhere, as split writes it,
// but for the two annotations that name its context and datastore: those
// differ per context, and digestIn adds them.
func (pv *preview) digestNew() error {
	pv.bases = make([]input.Digest, len(pv.contexts))
	return yamlio.Parallel(len(pv.contexts), func(i int) error {
		same := true
		for _, c := range pv.contexts[i] {
			same = same && pv.same[c][input.KeyOf(&pv.sp.items[i].Object)]
		}
		if pv.contexts[i] == nil || same {
			return nil // nowhere, or unchanged wherever it goes
		}
		n, err := pv.sp.prepare(i, pv.contexts[i][0])
		if err != nil {
			return err
		}
		pv.bases[i], _ = input.BaseDigestOf(n)
		return nil
	})
}

// digestIn is the digest of item i as context ctx's package holds it.
func (pv *preview) digestIn(i, ctx int) input.Digest {
	it := &pv.sp.items[i]
	return input.RoutedDigest(pv.bases[i], pv.cfg.Compiled.Names[ctx], datastore.Assign(pv.cfg.Compiled, ctx, it.APIVersion, it.Kind))
}

// compare fills the contexts of the plan and returns what each context of
// the config would lose, for the guard.
func (pv *preview) compare() []pruneCount {
	names := pv.cfg.Compiled.Names
	perCtx := make([]map[input.ObjKey]int, len(names))
	for i := range perCtx {
		perCtx[i] = map[input.ObjKey]int{}
	}
	for i, cs := range pv.contexts {
		for _, c := range cs {
			perCtx[c][input.KeyOf(&pv.sp.items[i].Object)] = i
		}
	}
	pv.updates = map[string][]update{}
	for c, name := range names {
		cp := v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextAdded}
		pc := pv.out.Context(name)
		if pc != nil && pc.Exists {
			cp.State = v1alpha1.ContextKept
		}
		var prev map[input.ObjKey]input.PrevObject
		var held map[input.ObjKey]string
		if pc != nil {
			prev, held = pc.Objs, pc.Held
		}
		for k, i := range perCtx[c] {
			p, ok := prev[k]
			switch {
			case pv.same[c][k]:
				cp.Unchanged++
			case !ok:
				cp.Create = append(cp.Create, refOf(k))
			case p.Digest != pv.digestIn(i, c):
				cp.Update = append(cp.Update, refOf(k))
				pv.updates[name] = append(pv.updates[name], update{i, p})
			default:
				cp.Unchanged++
			}
		}
		cp.Previous = len(held)
		for k := range held {
			if _, ok := perCtx[c][k]; !ok && !pv.unknown[k] {
				cp.Prune = append(cp.Prune, refOf(k))
			}
		}
		pv.doc.Contexts = append(pv.doc.Contexts, cp)
	}
	if pv.out != nil {
		var dropped []string
		for _, pc := range pv.out.Previous {
			if !slices.Contains(names, pc.Name) && pc.Exists {
				dropped = append(dropped, pc.Name)
			}
		}
		sort.Strings(dropped)
		for _, name := range dropped {
			pc := pv.out.Context(name)
			cp := v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextDropped, Previous: len(pc.Held)}
			for k := range pc.Held {
				cp.Prune = append(cp.Prune, refOf(k))
			}
			pv.doc.Contexts = append(pv.doc.Contexts, cp)
		}
	}
	for k := range pv.doc.Contexts {
		c := &pv.doc.Contexts[k]
		for _, l := range []*[]v1alpha1.ObjectRef{&c.Create, &c.Update, &c.Prune} {
			if *l == nil {
				*l = []v1alpha1.ObjectRef{}
			}
			sortRefs(*l)
		}
	}
	// The guard's counts, as split's: objects never routed (unknown) count
	// as pruned there too.
	return pruneCounts(names, pv.out, func(c int) map[input.ObjKey]bool {
		keys := make(map[input.ObjKey]bool, len(perCtx[c]))
		for k := range perCtx[c] {
			keys[k] = true
		}
		return keys
	})
}

// movesAndDataStores lists the objects whose contexts or datastores
// change, and whether the rules refuse them.
func (pv *preview) movesAndDataStores() {
	names := pv.cfg.Compiled.Names
	// applied are the contexts whose previous package holds each object:
	// where it is now, whatever its annotation says.
	applied := map[input.ObjKey][]string{}
	if pv.out != nil {
		for _, pc := range pv.out.Previous {
			for k := range pc.Held {
				applied[k] = append(applied[k], pc.Name)
			}
		}
	}
	for i := range pv.sp.items {
		it := &pv.sp.items[i]
		if pv.contexts[i] == nil {
			continue
		}
		key := input.KeyOf(&it.Object)
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
		ref := refOf(key)
		if !sameSet(from, to) && !pv.onlyContextsChanged(i, from, to) {
			sort.SliceStable(from, func(a, b int) bool { return ctxOrder(pv.cfg.Compiled, from[a]) < ctxOrder(pv.cfg.Compiled, from[b]) })
			refused := pv.sp.out.Routing.Decisions[i].Reason == route.Failed
			pv.doc.Moves = append(pv.doc.Moves, v1alpha1.Move{Ref: ref, From: from, To: to, Refused: refused})
		}
		if !it.HasPrevious {
			continue
		}
		if !it.HasDataStore || !pv.sp.out.Routing.Decisions[i].Routed() {
			continue
		}
		chs, err := datastore.Changes(pv.cfg.Compiled, it.APIVersion, it.Kind, it.DataStore, it.Previous, pv.contexts[i])
		if err != nil {
			continue // Decide reported it
		}
		for _, ch := range chs {
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
		return pv.cfg.Compiled.Index(x.Context) < pv.cfg.Compiled.Index(y.Context)
	})
}

// onlyContextsChanged reports a broadcast object whose contexts differ
// only by the contexts added to (no previous package) or dropped from the
// config: it goes to every context, so that is no move. The new context's
// creates and the dropped context's prunes show it.
func (pv *preview) onlyContextsChanged(i int, from, to []string) bool {
	if pv.sp.out.Routing.Decisions[i].Reason != route.Broadcast {
		return false
	}
	for _, c := range from {
		if !slices.Contains(to, c) && pv.cfg.Compiled.Index(c) >= 0 {
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
func (pv *preview) diffs() error {
	for k := range pv.doc.Contexts {
		c := &pv.doc.Contexts[k]
		ups := pv.updates[c.Name]
		ctx := pv.cfg.Compiled.Index(c.Name)
		diffs := make([]v1alpha1.ObjectDiff, len(ups))
		err := yamlio.Parallel(len(ups), func(j int) error {
			u := ups[j]
			n, err := pv.sp.prepare(u.item, ctx)
			if err != nil {
				return err
			}
			now, err := yamlio.Encode([]*yaml.RNode{n}, pv.sp.in.IO())
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
			diffs[j] = v1alpha1.ObjectDiff{Ref: refOf(input.KeyOf(&pv.sp.items[u.item].Object)), Diff: text}
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
func (pv *preview) previousText(ctx string, p input.PrevObject) ([]byte, error) {
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
	return yamlio.Encode(nodes[p.Pos:p.Pos+1], pv.sp.in.IO())
}

func refOf(k input.ObjKey) v1alpha1.ObjectRef {
	return v1alpha1.ObjectRef{Group: k.Group, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
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
