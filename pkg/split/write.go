package split

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	dirMode  = 0o755
	fileMode = 0o644
)

// WriteStream writes the package's resources and its inventory
// ResourceGroup as one YAML stream, for `kpt live apply -`.
func (pkg *Package) WriteStream(w io.Writer) error {
	rg, err := yaml.Parse(string(pkg.rg))
	if err != nil {
		return err
	}
	nodes := append([]*yaml.RNode{rg}, pkg.nodes...)
	return kio.ByteWriter{Writer: w}.Write(nodes)
}

// Write writes every context package of the plan to the output directory:
// each context directory is staged inside the output directory, then
// swapped in by rename, so that a failure never leaves a half-written
// context. Previous context directories are replaced whole; those of
// contexts that left the config are deleted. Nothing that split did not
// write is deleted or overwritten: every check runs before the first write.
func (d *OutDir) Write(plan *Plan) error {
	if plan.HasErrors() {
		return errors.New("the split has errors; nothing written")
	}
	previous := d.contexts()
	for _, pkg := range plan.Packages {
		target := filepath.Join(d.Path, pkg.Context)
		if _, err := os.Lstat(target); err == nil && !slices.Contains(previous, pkg.Context) {
			return fmt.Errorf("%s exists and was %w (%s does not list it): move it away",
				filepath.Join(d.given, pkg.Context), ErrNotSplitDir, filepath.Join(d.given, MarkerFile))
		}
	}
	if err := os.MkdirAll(d.Path, dirMode); err != nil {
		return err
	}
	if !d.marked {
		// Mark the directory before anything else, so that a failure
		// leaves a directory the next run may clean.
		if err := writeMarker(d.Path, nil, nil); err != nil {
			return err
		}
		d.marked = true
	}
	for _, stale := range d.stale {
		if err := os.RemoveAll(stale); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp(d.Path, tmpPrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := writeMarker(tmp, nil, nil); err != nil {
		return err
	}
	staged := filepath.Join(tmp, "new")
	old := filepath.Join(tmp, "old")
	for _, dir := range []string{staged, old} {
		if err := os.Mkdir(dir, dirMode); err != nil {
			return err
		}
	}
	for _, pkg := range plan.Packages {
		if err := stage(filepath.Join(staged, pkg.Context), pkg); err != nil {
			return fmt.Errorf("writing context %q: %w", pkg.Context, err)
		}
	}

	// List old and new contexts while swapping, so an interrupted run
	// leaves every directory it touched listed as split's.
	var current []string
	for _, pkg := range plan.Packages {
		current = append(current, pkg.Context)
	}
	all := slices.Clone(current)
	for _, c := range previous {
		if !slices.Contains(all, c) {
			all = append(all, c)
		}
	}
	if err := writeMarker(d.Path, all, nil); err != nil {
		return err
	}
	for _, pkg := range plan.Packages {
		if err := swap(filepath.Join(d.Path, pkg.Context), filepath.Join(staged, pkg.Context), filepath.Join(old, pkg.Context)); err != nil {
			return fmt.Errorf("replacing %s: %w", filepath.Join(d.given, pkg.Context), err)
		}
	}
	for _, c := range plan.dropped {
		target := filepath.Join(d.Path, c)
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Rename(target, filepath.Join(old, c)); err != nil {
			return fmt.Errorf("removing %s: %w", filepath.Join(d.given, c), err)
		}
	}
	return writeMarker(d.Path, current, nil)
}

// swap moves target (if any) to old, then staged to target, restoring
// target if the second step fails.
func swap(target, staged, old string) error {
	moved := false
	if _, err := os.Lstat(target); err == nil {
		if err := os.Rename(target, old); err != nil {
			return err
		}
		moved = true
	}
	if err := os.Rename(staged, target); err != nil {
		if moved {
			_ = os.Rename(old, target)
		}
		return err
	}
	return nil
}

// stage writes one context package to a new directory.
func stage(dir string, pkg *Package) error {
	if err := os.Mkdir(dir, dirMode); err != nil {
		return err
	}
	files := make([]string, 0, len(pkg.Files))
	for _, f := range pkg.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if rel, ok := within(dir, p); !ok || rel == "." {
			return fmt.Errorf("%s is outside the context directory", f.Path)
		}
		if err := os.MkdirAll(filepath.Dir(p), dirMode); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, fileMode); err != nil {
			return err
		}
		files = append(files, f.Path)
	}
	return writeMarker(dir, []string{pkg.Context}, files)
}

// writeMarker writes a marker file atomically.
func writeMarker(dir string, contexts, files []string) error {
	var b strings.Builder
	b.WriteString(markerFormat + "\n")
	b.WriteString("# Written by shard-router split, which deletes and rewrites what this file lists\n")
	b.WriteString("# on every run. Edit the source package, not these files.\n")
	for _, c := range contexts {
		b.WriteString("context " + c + "\n")
	}
	for _, f := range files {
		b.WriteString("file " + f + "\n")
	}
	tmp := filepath.Join(dir, MarkerFile+".new")
	if err := os.WriteFile(tmp, []byte(b.String()), fileMode); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, MarkerFile))
}
