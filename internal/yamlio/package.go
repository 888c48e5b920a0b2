package yamlio

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// KptfileName is the package file kpt looks for in every package directory.
const KptfileName = "Kptfile"

// matchAllKRM is kpt's pkg.MatchAllKRM: the Kptfile and every YAML or JSON
// file.
var matchAllKRM = append([]string{KptfileName}, kio.MatchAll...)

// MatchesKRM reports whether kpt reads the file f of a package: the
// Kptfile and every YAML or JSON file.
func MatchesKRM(f string) bool {
	for _, g := range matchAllKRM {
		if ok, _ := path.Match(g, path.Base(f)); ok {
			return true
		}
	}
	return false
}

// ReadPackage reads the package directory abs (absolute, symlinks
// resolved) as `kpt fn source` does (kyaml's LocalPackageReader with kpt's
// options: .krmignore, subpackages, the Kptfile, YAML and JSON files) and
// returns read's value for every resource, in order. Files for which skip
// (given paths relative to abs) is true are never read. The fast path reads
// one file at a time on every core, read being called from several
// goroutines with fast true; under opts.Reference, the LocalPackageReader
// reads the package whole (the reference path), read being called in order
// with fast false.
func ReadPackage[T any](abs string, skip func(rel string) bool, opts Options, read func(n *yaml.RNode, fast bool) T) ([]T, error) {
	if opts.Reference {
		return readPackageReference(abs, skip, read)
	}
	// kyaml's own walk (ignore files, subpackages, the skip function)
	// lists the files; each is then read as its readFile reads it.
	var files []string
	_, err := packageReader(abs, func(rel string) bool {
		if !skip(rel) && MatchesKRM(filepath.ToSlash(rel)) { // the reader's last check
			files = append(files, rel)
		}
		return true
	}).Read()
	if err != nil {
		return nil, err
	}
	perFile := make([][]T, len(files))
	errs, refused := make([]error, len(files)), make([]error, len(files))
	_ = Parallel(len(files), func(i int) error {
		perFile[i], errs[i], refused[i] = readPackageFile(abs, files[i], read)
		return nil
	})
	// The reference reads every file, then checks every resource: a file
	// kyaml cannot read is reported before a resource CheckResource refuses.
	for _, errs := range [][]error{errs, refused} {
		for i, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(abs, files[i]), err)
			}
		}
	}
	var out []T
	for i := range files {
		out = append(out, perFile[i]...)
		perFile[i] = nil
	}
	return out, nil
}

// readPackageFile reads one file of a package as kyaml's LocalPackageReader
// does. It returns kyaml's error, or else the error of the first resource
// CheckResource refuses.
func readPackageFile[T any](abs, rel string, read func(*yaml.RNode, bool) T) (_ []T, readErr, refused error) {
	f, err := os.Open(filepath.Join(abs, rel))
	if err != nil {
		return nil, err, nil
	}
	defer f.Close()
	nodes, err := (&kio.ByteReader{
		DisableUnwrapping: true,
		Reader:            f,
		SetAnnotations:    map[string]string{kioutil.PathAnnotation: rel, kioutil.LegacyPathAnnotation: rel},
		PreserveSeqIndent: true,
		WrapBareSeqNode:   true,
	}).Read()
	if err != nil {
		return nil, err, nil // it names the node, and the caller the file
	}
	if err := checkResources(nodes, "resource"); err != nil {
		return nil, nil, err
	}
	out := make([]T, len(nodes))
	for i, n := range nodes {
		out[i] = read(n, true)
	}
	return out, nil, nil
}

// readPackageReference reads a package directory whole with kyaml's
// LocalPackageReader: the reference that ReadPackage's fast path must
// match.
func readPackageReference[T any](abs string, skip func(string) bool, read func(*yaml.RNode, bool) T) ([]T, error) {
	nodes, err := packageReader(abs, skip).Read()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if err := CheckResource(n.YNode()); err != nil {
			return nil, packageResourceError(abs, n, err)
		}
	}
	out := make([]T, len(nodes))
	for i, n := range nodes {
		out[i] = read(n, false)
	}
	return out, nil
}

// packageReader is kpt fn source's reader of the package at abs.
func packageReader(abs string, skip func(string) bool) kio.LocalPackageReader {
	return kio.LocalPackageReader{
		PackagePath:        abs,
		MatchFilesGlob:     matchAllKRM,
		PreserveSeqIndent:  true,
		PackageFileName:    KptfileName,
		IncludeSubpackages: true,
		WrapBareSeqNode:    true,
		FileSkipFunc:       skip,
	}
}

// packageResourceError names a resource of the package that CheckResource
// refuses as the fast path does: its file, from the reader's annotations,
// and its index in that file.
func packageResourceError(abs string, n *yaml.RNode, err error) error {
	annos := Lookup(Lookup(n.YNode(), yaml.MetadataField), yaml.AnnotationsField)
	rel := scalarField(annos, kioutil.PathAnnotation)
	i, _ := strconv.Atoi(scalarField(annos, kioutil.IndexAnnotation))
	return fmt.Errorf("%s: %w", filepath.Join(abs, filepath.FromSlash(rel)), resourceError("resource", i, n.YNode(), err))
}
