package split

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// kptfileName is the package file kpt looks for in every package directory.
const kptfileName = "Kptfile"

// matchAllKRM is kpt's pkg.MatchAllKRM: the Kptfile and every YAML or JSON
// file.
var matchAllKRM = append([]string{kptfileName}, kio.MatchAll...)

// Input is a package as split reads it.
type Input struct {
	// Nodes are the resources, in the order kpt fn source gives them.
	Nodes []*yaml.RNode
	// FunctionConfig is the functionConfig of a ResourceList on stdin.
	FunctionConfig *yaml.RNode
	// Dir is the package directory; "" for a stream.
	Dir string
}

// ReadPackage reads a package directory as `kpt fn source` does (kyaml's
// LocalPackageReader with kpt's options: .krmignore, subpackages, the
// Kptfile, YAML and JSON files). Files under the output directories outDirs
// (resolved absolute paths) are never read; the package must not be one of
// them or inside one.
func ReadPackage(dir string, outDirs ...string) (*Input, error) {
	abs, err := resolve(dir)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("reading package: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("reading package: %s is not a directory", dir)
	}
	var skipRel []string
	for _, s := range outDirs {
		if _, ok := within(s, abs); ok {
			return nil, fmt.Errorf("the package %s is inside the output directory %s, which split rewrites", dir, s)
		}
		if rel, ok := within(abs, s); ok {
			skipRel = append(skipRel, rel)
		}
	}
	nodes, err := kio.LocalPackageReader{
		PackagePath:        abs,
		MatchFilesGlob:     matchAllKRM,
		PreserveSeqIndent:  true,
		PackageFileName:    kptfileName,
		IncludeSubpackages: true,
		WrapBareSeqNode:    true,
		FileSkipFunc: func(relPath string) bool {
			relPath = filepath.ToSlash(relPath)
			for _, s := range skipRel {
				if relPath == s || strings.HasPrefix(relPath, s+"/") {
					return true
				}
			}
			return false
		},
	}.Read()
	if err != nil {
		return nil, fmt.Errorf("reading package %s: %w", dir, err)
	}
	return &Input{Nodes: nodes, Dir: abs}, nil
}

// ReadStream reads a ResourceList or a plain YAML stream.
func ReadStream(r io.Reader) (*Input, error) {
	rr := &kio.ByteReader{Reader: r, PreserveSeqIndent: true, WrapBareSeqNode: true}
	nodes, err := rr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	in := &Input{Nodes: nodes}
	if rr.FunctionConfig != nil && !rr.FunctionConfig.IsNilOrEmpty() {
		in.FunctionConfig = rr.FunctionConfig
	}
	return in, nil
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
	for _, n := range in.Nodes {
		if n.GetApiVersion() == v1alpha1.APIVersion && n.GetKind() == v1alpha1.Kind {
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
		where[i] = describeNode(n)
	}
	return nil, fmt.Errorf("the input holds %d %s resources (%s); keep one, or choose with --config FILE", len(found), v1alpha1.Kind, strings.Join(where, ", "))
}

// PackageName returns the name of the input package: its root Kptfile's
// name (or its only Kptfile's), else the directory's name.
func (in *Input) PackageName() string {
	var kptfiles []*yaml.RNode
	for _, n := range in.Nodes {
		if n.GetKind() == "Kptfile" && strings.HasPrefix(n.GetApiVersion(), "kpt.dev/") {
			kptfiles = append(kptfiles, n)
		}
	}
	for _, n := range kptfiles {
		if p, _, _ := kioutil.GetFileAnnotations(n); p == kptfileName && n.GetName() != "" {
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

// describeNode names a resource and its file for messages.
func describeNode(n *yaml.RNode) string {
	s := n.GetKind() + " " + n.GetName()
	if ns := n.GetNamespace(); ns != "" {
		s = n.GetKind() + " " + ns + "/" + n.GetName()
	}
	if p, i, _ := kioutil.GetFileAnnotations(n); p != "" {
		s += fmt.Sprintf(" in %s[%s]", p, i)
	}
	return s
}

// resolve returns the absolute path with symlinks resolved as far as the
// path exists.
func resolve(p string) (string, error) {
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

// within reports whether path p is base or under it, and p relative to base
// (slash-separated). Both must be resolved.
func within(base, p string) (string, bool) {
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
