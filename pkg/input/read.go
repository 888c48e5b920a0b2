// Package input reads what the commands route: a package directory, a
// ResourceList or YAML stream, and a function config file.
package input

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/route"
)

// Input is a package as split reads it: every resource's routing facts
// and file location, and the resource itself, packed (see yamlio.Pack) by
// the fast readers or as kyaml's reader gave it, so that a big package is
// never held as one tree.
type Input struct {
	// FunctionConfig is the functionConfig of a ResourceList on stdin.
	FunctionConfig *yaml.RNode
	// Dir is the package directory; "" for a stream.
	Dir string

	// io are the options the input was read with, and its files are
	// written with.
	io yamlio.Options

	items []function.Item
	locs  []Loc
	// Resource i is packed[i] when that is not nil, else nodes[i].
	packed [][]byte
	nodes  []*yaml.RNode
	// kept are the resources Config and PackageName look at (ShardConfigs
	// and Kptfiles), in input order.
	kept []*yaml.RNode
}

// Loc is where split writes a resource in its context directory: its
// path and index annotations as kioutil.GetFileAnnotations reads them once
// the resource is annotated (kpt's default path when it has none).
type Loc struct {
	Path, Index string
	// Defaulted: the resource has no path annotation; kpt's default was
	// taken, and is set on the resource when split writes it.
	Defaulted bool
	Err       error // from kpt's default path
}

// Loc is where resource i is written.
func (in *Input) Loc(i int) Loc { return in.locs[i] }

// IO are the options the input was read with, and its files are written
// with.
func (in *Input) IO() yamlio.Options { return in.io }

// Len is the number of resources.
func (in *Input) Len() int { return len(in.items) }

// Items returns a copy of the resources' routing facts, in order.
func (in *Input) Items() []function.Item { return slices.Clone(in.items) }

// Node returns a new copy of resource i, as the reader gave it.
func (in *Input) Node(i int) (*yaml.RNode, error) {
	if in.packed != nil && in.packed[i] != nil {
		n, err := yamlio.Unpack(in.packed[i])
		if err != nil {
			return nil, err
		}
		return yaml.NewRNode(n), nil
	}
	// Annotating a copy must never change the original nor another copy
	// (a resource of several contexts), even when it has anchors.
	return yaml.NewRNode(yamlio.CopyNode(in.nodes[i].Document())), nil
}

// Nodes returns a copy of every resource.
func (in *Input) Nodes() ([]*yaml.RNode, error) {
	out := make([]*yaml.RNode, in.Len())
	for i := range out {
		n, err := in.Node(i)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// read is one resource as a reader gives it.
type read struct {
	item   function.Item
	loc    Loc
	packed []byte
	node   *yaml.RNode
	keep   bool
}

// readNode takes what split needs from a resource node. With pack (a fast
// reader's node), the node is kept packed when yamlio.Pack can keep it.
func readNode(n *yaml.RNode, pack bool) read {
	r := read{loc: locate(n), node: n}
	r.keep = isKptfile(n) || isShardConfig(n)
	if pack {
		// The document node, when the reader kept one, holds the comments
		// above the resource.
		if p, ok := yamlio.Pack(n.Document()); ok {
			r.item = function.ItemOf(n) // no anchors
			r.packed, r.node = p, nil
			return r
		}
	}
	r.item = function.ItemOfShared(n)
	return r
}

// newInput assembles the reads, in order.
func newInput(reads []read, fc *yaml.RNode, dir string, opts yamlio.Options) *Input {
	in := &Input{FunctionConfig: fc, Dir: dir, io: opts,
		items: make([]function.Item, len(reads)), locs: make([]Loc, len(reads)),
		packed: make([][]byte, len(reads)), nodes: make([]*yaml.RNode, len(reads))}
	for i := range reads {
		r := &reads[i]
		in.items[i], in.locs[i], in.packed[i], in.nodes[i] = r.item, r.loc, r.packed, r.node
		if r.keep {
			kept := r.node
			if kept == nil {
				kept, _ = in.Node(i) // just packed: cannot fail
			}
			in.kept = append(in.kept, kept)
		}
	}
	return in
}

// locate finds where split writes n, as kpt would name its file: the path
// and index annotations, else kpt's default path for the resource.
func locate(n *yaml.RNode) Loc {
	p, idx, _ := kioutil.GetFileAnnotations(n)
	if p != "" {
		return Loc{Path: p, Index: idx}
	}
	c := n.Copy()
	if err := kioutil.DefaultPathAnnotation("", []*yaml.RNode{c}); err != nil {
		return Loc{Defaulted: true, Err: err}
	}
	p, idx, _ = kioutil.GetFileAnnotations(c)
	return Loc{Path: p, Index: idx, Defaulted: true}
}

func isKptfile(n *yaml.RNode) bool {
	return n.GetKind() == "Kptfile" && strings.HasPrefix(n.GetApiVersion(), "kpt.dev/")
}

func isShardConfig(n *yaml.RNode) bool {
	return n.GetApiVersion() == v1alpha1.APIVersion && n.GetKind() == v1alpha1.Kind
}

// ReadPackage reads a package directory as `kpt fn source` does (see
// yamlio.ReadPackage). Files under the output directories outDirs
// (resolved absolute paths) are never read; the package must not be one of
// them or inside one.
func ReadPackage(dir string, opts yamlio.Options, outDirs ...string) (*Input, error) {
	abs, skip, err := openPackage(dir, outDirs)
	if err != nil {
		return nil, err
	}
	reads, err := yamlio.ReadPackage(abs, skip, opts, readNode)
	if err != nil {
		return nil, fmt.Errorf("reading package %s: %w", dir, err)
	}
	return newInput(reads, nil, abs, opts), nil
}

// openPackage checks the package directory and returns it resolved, with
// the function that skips the output directories inside it.
func openPackage(dir string, outDirs []string) (string, func(string) bool, error) {
	abs, err := Resolve(dir)
	if err != nil {
		return "", nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", nil, fmt.Errorf("reading package: %w", err)
	}
	if !info.IsDir() {
		return "", nil, fmt.Errorf("reading package: %s is not a directory", dir)
	}
	var skipRel []string
	for _, s := range outDirs {
		if _, ok := Within(s, abs); ok {
			return "", nil, fmt.Errorf("the package %s is inside the output directory %s, which split rewrites", dir, s)
		}
		if rel, ok := Within(abs, s); ok {
			skipRel = append(skipRel, rel)
		}
	}
	return abs, func(relPath string) bool {
		relPath = filepath.ToSlash(relPath)
		for _, s := range skipRel {
			if relPath == s || strings.HasPrefix(relPath, s+"/") {
				return true
			}
		}
		return false
	}, nil
}

// ReadStream reads a ResourceList or a plain YAML stream (see
// yamlio.ReadStream).
func ReadStream(r io.Reader, opts yamlio.Options) (*Input, error) {
	reads, fc, err := yamlio.ReadStream(r, opts, readNode)
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	return newInput(reads, fc, "", opts), nil
}

// ReadConfigFile reads a function config file (one resource). Its path
// annotation is the path as given, so that errors name it.
func ReadConfigFile(path string) (*yaml.RNode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	defer f.Close()
	nodes, err := (&kio.ByteReader{Reader: f, OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("reading the config %s: %w", path, err)
	}
	if len(nodes) != 1 {
		return nil, fmt.Errorf("the config %s holds %d resources; expected exactly one %s", path, len(nodes), v1alpha1.Kind)
	}
	if nodes[0].YNode().Kind == yaml.MappingNode {
		if err := nodes[0].PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, path)); err != nil {
			return nil, err
		}
	}
	return nodes[0], nil
}

// ErrNoConfig is returned by Config when the input has no config.
var ErrNoConfig = errors.New("no config")

// Config returns the input's function config: the ResourceList's
// functionConfig, else the package's single ShardConfig. More than one
// ShardConfig is an error that names their files.
func (in *Input) Config() (*yaml.RNode, error) {
	if in.FunctionConfig != nil {
		return in.FunctionConfig, nil
	}
	var found []*yaml.RNode
	for _, n := range in.kept {
		if isShardConfig(n) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: the input holds no %s %s; give one with --config FILE", ErrNoConfig, v1alpha1.APIVersion, v1alpha1.Kind)
	case 1:
		return found[0], nil
	}
	where := make([]string, len(found))
	for i, n := range found {
		where[i] = DescribeNode(n)
	}
	return nil, fmt.Errorf("the input holds %d %s resources (%s); keep one, or choose with --config FILE", len(found), v1alpha1.Kind, strings.Join(where, ", "))
}

// ConfigsBesides describes the configs of the input that --config file
// replaces, for a warning: the ResourceList's functionConfig and the
// package's ShardConfigs, but file itself when it is one of them (the
// package's own config given with --config).
func (in *Input) ConfigsBesides(file string) []string {
	given, _ := Resolve(file)
	var out []string
	if in.FunctionConfig != nil {
		out = append(out, "the ResourceList's functionConfig ("+DescribeNode(in.FunctionConfig)+")")
	}
	for _, n := range in.kept {
		if !isShardConfig(n) {
			continue
		}
		if p, _, _ := kioutil.GetFileAnnotations(n); p != "" && in.Dir != "" {
			if abs, err := Resolve(filepath.Join(in.Dir, p)); err == nil && abs == given {
				continue
			}
		}
		out = append(out, DescribeNode(n))
	}
	return out
}

// PackageName returns the name of the input package: its root Kptfile's
// name (or its only Kptfile's), else the directory's name.
func (in *Input) PackageName() string {
	var kptfiles []*yaml.RNode
	for _, n := range in.kept {
		if isKptfile(n) {
			kptfiles = append(kptfiles, n)
		}
	}
	for _, n := range kptfiles {
		if p, _, _ := kioutil.GetFileAnnotations(n); p == yamlio.KptfileName && n.GetName() != "" {
			return n.GetName()
		}
	}
	if len(kptfiles) == 1 && kptfiles[0].GetName() != "" {
		return kptfiles[0].GetName()
	}
	if in.Dir != "" {
		return filepath.Base(in.Dir)
	}
	return ""
}

// Resolve returns the absolute path with symlinks resolved as far as the
// path exists.
func Resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within reports whether path p is base or under it, and p relative to base
// (slash-separated). Both must be resolved.
func Within(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// DescribeNode names a resource as every message does
// (route.Object.Describe), and its file.
func DescribeNode(n *yaml.RNode) string {
	s := (&route.Object{Kind: n.GetKind(), Namespace: n.GetNamespace(), Name: n.GetName()}).Describe()
	if p, i, _ := kioutil.GetFileAnnotations(n); p != "" {
		s += fmt.Sprintf(" in %s[%s]", p, i)
	}
	return s
}
