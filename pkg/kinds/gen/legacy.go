package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// The kinds older releases served: the top-level types of the k8s.io/api
// module at each release, as client-gen reads them (a type whose comments
// say +genclient is a served resource, cluster-scoped when they also say
// +genclient:nonNamespaced; +genclient:noVerbs without onlyVerbs is a type
// no server serves, such as imagepolicy's ImageReview). Every group and
// kind the current table does not serve becomes a legacy row, so that an
// old manifest still gets its scope. The module has no plural names, and
// these kinds are never stored by the current release, so Resource is
// left empty.

// apiKind is one served type of one k8s.io/api release.
type apiKind struct {
	group, version, kind string
	namespaced           bool
	release              string // the module version it was read from
}

// parseAPIModule reads every <group>/<version> package of a k8s.io/api
// source tree.
func parseAPIModule(dir, release string) ([]apiKind, error) {
	var out []apiKind
	regs, err := filepath.Glob(filepath.Join(dir, "*", "*", "register.go"))
	if err != nil {
		return nil, err
	}
	for _, reg := range regs {
		pkgDir := filepath.Dir(reg)
		group, err := groupName(pkgDir)
		if err != nil {
			return nil, err
		}
		ks, err := servedTypes(pkgDir)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			k.group, k.version, k.release = group, filepath.Base(pkgDir), release
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no +genclient type in any <group>/<version> package: not a k8s.io/api source tree", dir)
	}
	return out, nil
}

// servedTypes returns the +genclient types of one package.
func servedTypes(pkgDir string) ([]apiKind, error) {
	files, err := filepath.Glob(filepath.Join(pkgDir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []apiKind
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(filepath.Base(f), "zz_generated") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE || len(gd.Specs) != 1 {
				continue
			}
			markers := markersOf(fset, file, gd)
			if !slices.Contains(markers, "+genclient") ||
				slices.Contains(markers, "+genclient:noVerbs") && !slices.ContainsFunc(markers, func(m string) bool { return strings.HasPrefix(m, "+genclient:onlyVerbs") }) {
				continue
			}
			out = append(out, apiKind{kind: gd.Specs[0].(*ast.TypeSpec).Name.Name,
				namespaced: !slices.Contains(markers, "+genclient:nonNamespaced")})
		}
	}
	return out, nil
}

// markersOf returns the +marker lines of a type's comments: its doc
// comment and the comment block just above it, as gengo reads them.
func markersOf(fset *token.FileSet, file *ast.File, gd *ast.GenDecl) []string {
	line := fset.Position(gd.Pos()).Line
	var out []string
	for k := len(file.Comments) - 1; k >= 0; k-- {
		c := file.Comments[k]
		if end := fset.Position(c.End()).Line; end >= line || end < line-2 {
			if end < line-2 {
				break
			}
			continue
		}
		for _, l := range c.List {
			if t := strings.TrimSpace(strings.TrimPrefix(l.Text, "//")); strings.HasPrefix(t, "+") {
				out = append(out, t)
			}
		}
		line = fset.Position(c.Pos()).Line
	}
	return out
}

// GenerateLegacy returns the gofmt'd source of zz_generated_legacy.go: the
// kinds the k8s.io/api trees at dirs (module versions in releases) serve
// and served, but not (by group and kind) the current table.
func GenerateLegacy(served []kind, dirs, releases []string) ([]byte, error) {
	current := map[[2]string]bool{}
	for _, k := range served {
		current[[2]string{k.Group, k.Kind}] = true
	}
	rows := map[[3]string]apiKind{}
	for i, dir := range dirs {
		ks, err := parseAPIModule(dir, releases[i])
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if current[[2]string{k.group, k.kind}] {
				continue
			}
			key := [3]string{k.group, k.version, k.kind}
			if was, ok := rows[key]; ok && was.namespaced != k.namespaced {
				return nil, fmt.Errorf("%s/%s %s: namespaced %t in %s, %t in %s", k.group, k.version, k.kind, was.namespaced, was.release, k.namespaced, k.release)
			}
			rows[key] = k // the last release that serves it
		}
	}
	var out []apiKind
	for _, k := range rows {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b apiKind) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		if c := strings.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		return -version.CompareKubeAwareVersionStrings(a.version, b.version)
	})
	for i := 1; i < len(out); i++ {
		if a, b := out[i-1], out[i]; a.group == b.group && a.kind == b.kind && a.namespaced != b.namespaced {
			return nil, fmt.Errorf("%s %s changes scope between %s and %s", a.group, a.kind, a.version, b.version)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by gen/legacy.go from the k8s.io/api module at %s; DO NOT EDIT.\n", strings.Join(releases, ", "))
	b.WriteString("// Regenerate with: go generate ./pkg/kinds\n\npackage kinds\n\n")
	b.WriteString("// generatedLegacyKinds are the kinds that older releases served and the table's release\n")
	b.WriteString("// serves in no version, with the last release that served each version.\n")
	b.WriteString("var generatedLegacyKinds = []Kind{\n")
	for _, k := range out {
		fmt.Fprintf(&b, "\t{Group: %q, Version: %q, Kind: %q, Namespaced: %t, Legacy: true}, // to %s\n",
			k.group, k.version, k.kind, k.namespaced, k.release)
	}
	b.WriteString("}\n")
	return formatSource(b.Bytes())
}

// apiRelease names a k8s.io/api tree by its module directory
// (".../k8s.io/api@v0.30.0" is "v0.30.0").
func apiRelease(dir string) string {
	if i := strings.LastIndexByte(dir, '@'); i >= 0 {
		return dir[i+1:]
	}
	return filepath.Base(dir)
}
