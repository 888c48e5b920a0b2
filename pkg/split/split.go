// Package split turns a kpt package into one ready package per kube
// context: it routes the package with the function's own engine (package
// function's LoadConfig, ItemOf and Decide), then writes each context's
// resources, a Kptfile and an inventory ResourceGroup to OUT_DIR/<context>/,
// or one context as a stream, so that `kpt live apply` needs no other step.
//
// A big package is never held as one tree: the readers of package yamlio
// keep each resource packed (yamlio.Pack) with its routing facts, and each
// file is built and encoded when it is written, on every core.
package split

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// Options tune Route.
type Options struct {
	// PackageName names the per-context packages and inventories; default:
	// Input.PackageName().
	PackageName string
	// Out is the output directory; its previous split counts as the old
	// placement of resources. Nil when there is none.
	Out *outdir.OutDir
	// Engine is who applies the context directories (default kpt: each gets
	// a Kptfile and an inventory ResourceGroup).
	Engine gitops.Engine
	// Source is the repository a pulling engine reads, resolved.
	// With a pulling engine, Current says which moved objects are Current
	// in their new contexts, so that the old copies may go (handoff.go);
	// nil: none is known to be.
	Source  gitops.Source
	Current CurrentFunc
}

// Layout is the input laid out as one package per context, ready to be
// written (Write) or compared with the previous split (package plan).
type Layout struct {
	// Results are the function's results plus split's own; on any error
	// the plan must not be written.
	Results framework.Results
	// Packages are the context packages, in config order.
	Packages []*Package
	// OverrideChanges are the changes of the contexts' etcd overrides since
	// the previous split (checkOverrides).
	OverrideChanges []v1alpha1.OverrideChange
	// dropped are previous context directories whose context left the config.
	dropped []string
	// in and out render the resource files: each file is built from the
	// input when it is written, so the plan never holds the package.
	in  *input.Input
	out *function.Outcome
	// items are the routing facts, with the previous split's placement
	// adopted.
	items []function.Item
	// cfg names the contexts and assigns the datastores.
	cfg *config.Config
	// name is the packages' name; invs and routed (input indexes) are per
	// context of the config, for Lay.
	name   string
	invs   []v1alpha1.Inventory
	routed [][]int
	// engine applies the packages; engineFiles are its own objects, for
	// gitops.Dir (none for kpt).
	engine      gitops.Engine
	source      gitops.Source
	engineFiles []gitops.File
	// keptIn[i][ctx] is the datastore of item i's copy that context ctx
	// keeps while a move hands off; handoffs are the pending hand-offs.
	keptIn   map[int]map[int]string
	handoffs []Handoff
}

// Package is one context's package.
type Package struct {
	Context   string
	Inventory v1alpha1.Inventory
	// Resources counts the package's resources (Kptfile and inventory aside).
	Resources int
	// files are the package's files, sorted by path.
	files  []plannedFile
	layout *Layout
	index  int // the context's index in the config
	rg     []byte
}

// plannedFile is one file of a context package: its resources (input
// indexes, in file order), or its data for the Kptfile and inventory.
type plannedFile struct {
	path  string
	items []int
	data  []byte
	// shared, when not nil, is the template of a file that several
	// contexts hold with the same resources (template.go).
	shared *sharedFile
}

// File is one file of a context package.
type File struct {
	Path string
	Data []byte
}

// Package returns the named context's package.
func (p *Layout) Package(ctx string) (*Package, bool) {
	for _, pkg := range p.Packages {
		if pkg.Context == ctx {
			return pkg, true
		}
	}
	return nil, false
}

// Route routes the input with cfg exactly as function mode does, and
// places each resource in its contexts' packages; Lay then lays the
// packages out (package plan runs the mass-deletion guard in between). A
// resource with no context annotation takes the contexts whose previous
// output held it as its previous placement (and their datastores as its
// previous datastores), so that a package that was never annotated cannot
// silently move. The returned error is for failures that are not the
// input's fault; the input's problems are error results.
func Route(in *input.Input, cfg *function.Engine, opts Options) (*Layout, error) {
	layout := &Layout{in: in, cfg: cfg.Config, name: opts.PackageName, engine: opts.Engine, source: opts.Source}
	if layout.name == "" {
		layout.name = in.PackageName()
	}
	if layout.name == "" {
		layout.errorf("", "cannot name the context packages: the input has no Kptfile; give a package name with --name")
		return layout, nil
	}
	items := in.Items()
	for i := range items {
		adoptPrevious(&items[i], cfg.Config, opts.Out)
	}
	out := cfg.Decide(items)
	layout.out, layout.items = out, items
	layout.Results = append(layout.Results, out.Results...)
	layout.checkDropped(cfg.Config, opts.Out)
	layout.checkOverrides(cfg.Config, opts.Out)
	layout.invs = layout.inventories(layout.name, cfg.Config)
	if layout.Results.ExitCode() != 0 {
		return layout, nil
	}
	layout.routed = make([][]int, len(cfg.Config.Names))
	for i := range items {
		d := out.Routing.Decisions[i]
		if !d.Routed() {
			continue
		}
		if err := in.Loc(i).Err; err != nil {
			return nil, fmt.Errorf("naming a file for %s: %w", layout.describe(i), err)
		}
		if !layout.checkPath(i, &items[i]) {
			continue
		}
		for _, ctx := range d.Contexts {
			layout.routed[ctx] = append(layout.routed[ctx], i)
		}
	}
	if layout.engine.Pulls() {
		if err := layout.handOff(opts.Out, opts.Current); err != nil {
			return nil, err
		}
	}
	return layout, nil
}

// Lay lays out the context packages of a routed input without errors; with
// errors, Packages stays empty.
func (p *Layout) Lay() error {
	if p.Results.ExitCode() != 0 {
		return nil
	}
	for ctx, routed := range p.routed {
		pkg, err := p.build(p.cfg.Names[ctx], p.name, p.invs[ctx], routed)
		if err != nil {
			return err
		}
		if pkg != nil {
			p.Packages = append(p.Packages, pkg)
		}
	}
	if p.Results.ExitCode() != 0 {
		p.Packages = nil
		return nil
	}
	p.share()
	return p.layEngine()
}

// Placed reports whether Route got to placing the resources in their
// packages (it stops earlier at errors of the config or of routing).
// Name is the package name the context packages and inventories are
// named after.
func (p *Layout) Name() string { return p.name }

func (p *Layout) Placed() bool { return p.routed != nil }

// Routed are the input indexes that context ctx's package holds.
func (p *Layout) Routed(ctx int) []int { return p.routed[ctx] }

// Input is the routed input.
func (p *Layout) Input() *input.Input { return p.in }

// Outcome is the routing; nil when the packages could not be named.
func (p *Layout) Outcome() *function.Outcome { return p.out }

// Items are the routing facts, the previous split's placement adopted.
func (p *Layout) Items() []function.Item { return p.items }

// Prepare returns resource i as context ctx's package holds it.
func (p *Layout) Prepare(i, ctx int) (*yaml.RNode, error) { return p.prepare(i, ctx) }

// StoreIn is routed item i's datastore in context ctx; ok is false when
// the item does not go there.
func (p *Layout) StoreIn(i, ctx int) (string, bool) { return p.storeIn(i, ctx) }

// prepare returns resource i as context ctx's package holds it: a copy,
// annotated with that context and its datastore there (never the other
// contexts it goes to: adding or removing a context must not change what
// the others apply), with kpt's default path when it had none.
func (p *Layout) prepare(i, ctx int) (*yaml.RNode, error) {
	n, err := p.in.Node(i)
	if err != nil {
		return nil, err
	}
	if ds, ok := p.storeIn(i, ctx); ok {
		if err := p.out.ApplyItemIn(i, n, p.cfg.Names[ctx], ds); err != nil {
			return nil, fmt.Errorf("annotating %s: %w", input.DescribeNode(n), err)
		}
	}
	if p.in.Loc(i).Defaulted {
		// A stream without paths: kpt's own default, <namespace>/<kind>_<name>.yaml.
		if err := kioutil.DefaultPathAnnotation("", []*yaml.RNode{n}); err != nil {
			return nil, fmt.Errorf("naming a file for %s: %w", input.DescribeNode(n), err)
		}
	}
	return n, nil
}

// storeIn is routed item i's datastore in context ctx (Outcome.StoreIn),
// or that of the old copy ctx keeps while a move hands off (handoff.go).
func (p *Layout) storeIn(i, ctx int) (string, bool) {
	if p.out == nil {
		return "", false
	}
	if ds, ok := p.out.StoreIn(i, ctx); ok {
		return ds, true
	}
	ds, ok := p.keptIn[i][ctx]
	return ds, ok
}

// describe names resource i and its file for messages.
func (p *Layout) describe(i int) string {
	n, err := p.in.Node(i)
	if err != nil {
		return fmt.Sprintf("item %d", i)
	}
	if p.in.Loc(i).Defaulted {
		_ = kioutil.DefaultPathAnnotation("", []*yaml.RNode{n})
	}
	return input.DescribeNode(n)
}

// adoptPrevious gives an item without a context annotation the placement
// the previous split gave it: the contexts (config order, then any the
// config no longer has) whose directories held it.
func adoptPrevious(it *function.Item, cfg *config.Config, out *outdir.OutDir) {
	if it.HasPrevious || out == nil || it.Name == "" {
		return
	}
	k := outdir.KeyOf(&it.Object)
	var held, gone []string
	stores := map[string]string{}
	for _, pc := range out.Previous {
		ds, ok := pc.Held[k]
		if !ok {
			continue
		}
		stores[pc.Name] = ds
		if cfg.Index(pc.Name) >= 0 {
			held = append(held, pc.Name)
		} else {
			gone = append(gone, pc.Name)
		}
	}
	if len(held)+len(gone) == 0 {
		return
	}
	sort.Slice(held, func(a, b int) bool { return cfg.Index(held[a]) < cfg.Index(held[b]) })
	sort.Strings(gone)
	it.Previous, it.HasPrevious = append(held, gone...), true
	if it.HasDataStore {
		return
	}
	ds := make([]string, len(it.Previous))
	for i, c := range it.Previous {
		if ds[i] = stores[c]; ds[i] == "" {
			return // the previous output does not say; nothing to compare
		}
	}
	it.DataStore, it.HasDataStore = datastore.FormatAnnotation(it.Previous, ds), true
}

// checkDropped treats a context that left the config, but whose previous
// directory holds resources, as a move of them all.
func (p *Layout) checkDropped(cfg *config.Config, out *outdir.OutDir) {
	if out == nil {
		return
	}
	for _, pc := range out.Previous {
		if cfg.Index(pc.Name) >= 0 {
			continue
		}
		p.dropped = append(p.dropped, pc.Name)
		if len(pc.Held) == 0 {
			continue
		}
		dir := path.Join(out.Given, pc.Name)
		msg := fmt.Sprintf("context %q is no longer in the config, but the previous split wrote %d resource(s) for it to %s (such as %s): dropping the context moves them out of that cluster's package",
			pc.Name, len(pc.Held), dir, pc.First)
		if cfg.Policy.AllowMoves {
			p.Results = append(p.Results, &framework.Result{Severity: framework.Warning, File: &framework.File{Path: dir},
				Message: msg + fmt.Sprintf(" (allowMoves): %s is deleted, so `kpt live apply` no longer manages them there", dir)})
			continue
		}
		p.Results = append(p.Results, &framework.Result{Severity: framework.Error, File: &framework.File{Path: dir},
			Message: msg + fmt.Sprintf("; to remove them from that cluster run `kpt live destroy %s --context %s` first, then set spec.allowMoves: true", dir, pc.Name)})
	}
}

// inventories derives each context's inventory and refuses two contexts
// that would share an inventory id.
func (p *Layout) inventories(pkgName string, cfg *config.Config) []v1alpha1.Inventory {
	contexts := cfg.Contexts()
	invs := make([]v1alpha1.Inventory, len(contexts))
	byID := map[string]int{}
	for i, c := range contexts {
		invs[i] = InventoryFor(pkgName, c)
		if p.engine.Pulls() && c.Name == gitops.Dir {
			p.errorf(fmt.Sprintf("spec.contexts[%d].name", i), "context %q: with --engine %s, split writes the engine's own objects to the directory %s: rename the context", c.Name, p.engine, gitops.Dir)
		}
		if strings.HasPrefix(c.Name, outdir.MarkerFile) {
			p.errorf(fmt.Sprintf("spec.contexts[%d].name", i), "context %q: names starting with %q are reserved for split's own files", c.Name, outdir.MarkerFile)
		}
		if j, dup := byID[invs[i].ID]; dup {
			p.errorf(fmt.Sprintf("spec.contexts[%d].inventory", i), "contexts %q and %q would share the inventory id %q (name %q, namespace %q): kpt live apply to one would prune the other's resources; give them distinct inventory names or ids",
				contexts[j].Name, c.Name, invs[i].ID, invs[i].Name, invs[i].Namespace)
			continue
		}
		byID[invs[i].ID] = i
	}
	return invs
}

// checkOverrides compares each context's --etcd-servers-overrides with
// what the previous split recorded, and judges each change as `overrides
// --previous` does: kube-apiserver never migrates data, so a refused change
// fails the split. A context the previous split did not record (a new one,
// or an output of an older release) has nothing to compare.
func (p *Layout) checkOverrides(cfg *config.Config, out *outdir.OutDir) {
	if out == nil {
		return
	}
	allow := cfg.Policy.AllowDataStoreChanges
	for ctx, name := range cfg.Names {
		pc := out.Context(name)
		if pc == nil || !pc.HasOverrides {
			continue
		}
		for _, ch := range datastore.Report(name, pc.Overrides, datastore.Entries(cfg, ctx), allow) {
			p.OverrideChanges = append(p.OverrideChanges, ch)
			r := &framework.Result{Severity: ch.Severity, Message: ch.Message, Field: &framework.Field{Path: "spec.dataStoreOverrides"},
				File: &framework.File{Path: path.Join(out.Given, name, v1alpha1.EtcdOverridesFile)}}
			if ch.Severity == framework.Error {
				r.Message += ": " + datastore.RefusedAdvice
			}
			p.Results = append(p.Results, r)
		}
	}
}

// windowsAbs matches a Windows drive path such as C:\x or C:/x.
var windowsAbs = regexp.MustCompile(`^[A-Za-z]:[/\\]`)

// checkPath refuses a path annotation that would write outside the context
// directory or over split's own files.
func (p *Layout) checkPath(i int, it *function.Item) bool {
	file := p.in.Loc(i).Path
	why := ""
	switch {
	case strings.IndexFunc(file, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		why = "contains control characters"
	case strings.HasPrefix(file, "/") || strings.HasPrefix(file, `\`) || windowsAbs.MatchString(file):
		why = "is absolute: split writes each resource at its path inside the context directory"
	case slices.Contains(strings.Split(file, "/"), ".."):
		why = "contains '..': split never writes outside the context directory"
	case path.Clean(file) == ".":
		why = "names no file"
	case slices.Contains(outdir.OwnFiles, path.Clean(file)):
		why = "is a file that split writes itself in each context directory (" + strings.Join(outdir.OwnFiles, ", ") + "): rename the resource's file"
	}
	if why == "" {
		return true
	}
	r := &framework.Result{Severity: framework.Error,
		Message: fmt.Sprintf("%s: its path annotation %q %s", p.describe(i), file, why),
		ResourceRef: &yaml.ResourceIdentifier{TypeMeta: yaml.TypeMeta{APIVersion: it.APIVersion, Kind: it.Kind},
			NameMeta: yaml.NameMeta{Name: it.Name, Namespace: it.Namespace}},
		Field: &framework.Field{Path: "metadata.annotations[" + kioutil.PathAnnotation + "]"},
		File:  &framework.File{Path: file, Index: it.Index}}
	p.Results = append(p.Results, r)
	return false
}

// build plans one context's package from its resources (input indexes):
// which file holds which resources, in which order. Nothing is encoded yet.
func (p *Layout) build(ctx, pkgName string, inv v1alpha1.Inventory, routed []int) (*Package, error) {
	type placed struct {
		file  string
		index int
		item  int
	}
	ps := make([]placed, len(routed))
	for k, i := range routed {
		index, err := strconv.Atoi(p.in.Loc(i).Index)
		if err != nil {
			index = -1
		}
		ps[k] = placed{path.Clean(p.in.Loc(i).Path), index, i}
	}
	sort.SliceStable(ps, func(a, b int) bool {
		if ps[a].file != ps[b].file {
			return ps[a].file < ps[b].file
		}
		return ps[a].index < ps[b].index
	})
	pkg := &Package{Context: ctx, index: p.cfg.Index(ctx), Inventory: inv, Resources: len(routed), layout: p}
	for i := 1; i < len(ps); i++ {
		if ps[i].file == ps[i-1].file && ps[i].index == ps[i-1].index && ps[i].index >= 0 {
			p.errorf("", "%s and %s would both be item %d of %s in context %q", p.describe(ps[i-1].item), p.describe(ps[i].item), ps[i].index, ps[i].file, ctx)
			return nil, nil
		}
	}
	for start := 0; start < len(ps); {
		f := plannedFile{path: ps[start].file}
		end := start
		for ; end < len(ps) && ps[end].file == ps[start].file; end++ {
			f.items = append(f.items, ps[end].item)
		}
		pkg.files = append(pkg.files, f)
		start = end
	}
	if !p.engine.Pulls() {
		// kpt live apply's own files; a pulling engine would apply the
		// ResourceGroup as an object of the cluster.
		kf, err := kptfile(inv.Name, pkgName, ctx)
		if err != nil {
			return nil, err
		}
		rg, err := resourceGroup(inv)
		if err != nil {
			return nil, err
		}
		pkg.rg = rg
		pkg.files = append(pkg.files, plannedFile{path: yamlio.KptfileName, data: kf}, plannedFile{path: outdir.RGFile, data: rg})
	}
	pkg.files = append(pkg.files, plannedFile{path: v1alpha1.EtcdOverridesFile, data: datastore.Record(p.cfg, pkg.index)})
	sort.Slice(pkg.files, func(a, b int) bool { return pkg.files[a].path < pkg.files[b].path })
	for i := 1; i < len(pkg.files); i++ {
		if a, b := pkg.files[i-1].path, pkg.files[i].path; strings.HasPrefix(b, a+"/") {
			p.errorf("", "context %q: %s is both a file and a directory of resources", ctx, a)
			return nil, nil
		}
	}
	return pkg, nil
}

// Files renders every file of the package, sorted by path.
func (pkg *Package) Files() ([]File, error) {
	out := make([]File, len(pkg.files))
	for i := range pkg.files {
		data, err := pkg.render(i)
		if err != nil {
			return nil, err
		}
		out[i] = File{Path: pkg.files[i].path, Data: data}
	}
	return out, nil
}

// render encodes file k of the package.
func (pkg *Package) render(k int) ([]byte, error) {
	f := &pkg.files[k]
	if f.items == nil {
		return f.data, nil
	}
	if f.shared != nil {
		if data, ok, err := pkg.renderShared(f); ok || err != nil {
			return data, err
		}
	}
	return pkg.encodeFile(f)
}

// encodeFile builds and encodes one file of resources.
func (pkg *Package) encodeFile(f *plannedFile) ([]byte, error) {
	nodes, err := pkg.nodes(f)
	if err != nil {
		return nil, err
	}
	data, err := yamlio.Encode(nodes, pkg.layout.in.IO())
	if err != nil {
		return nil, fmt.Errorf("writing %s for context %q: %w", f.path, pkg.Context, err)
	}
	return data, nil
}

// nodes prepares the resources of one file.
func (pkg *Package) nodes(f *plannedFile) ([]*yaml.RNode, error) {
	nodes := make([]*yaml.RNode, len(f.items))
	for j, i := range f.items {
		n, err := pkg.layout.prepare(i, pkg.index)
		if err != nil {
			return nil, err
		}
		nodes[j] = n
	}
	return nodes, nil
}

// streamNodes returns the nodes of one file for the stream form, which is
// written by another ByteWriter: cleaned as encode cleans them, but for the
// sequence indentation annotation, which keeps each resource's style.
func streamNodes(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
	clear := yamlio.ClearedAnnotations(nodes)
	for _, n := range nodes {
		for _, k := range clear {
			if k == kioutil.SeqIndentAnnotation {
				continue
			}
			if err := n.PipeE(yaml.ClearAnnotation(k)); err != nil {
				return nil, err
			}
		}
		if err := yaml.ClearEmptyAnnotations(n); err != nil {
			return nil, err
		}
		yamlio.KeepScalars(n.YNode()) // as Encode does
	}
	return nodes, nil
}

func (p *Layout) errorf(field, format string, args ...any) {
	r := &framework.Result{Severity: framework.Error, Message: fmt.Sprintf(format, args...)}
	if field != "" {
		r.Field = &framework.Field{Path: field}
	}
	p.Results = append(p.Results, r)
}
