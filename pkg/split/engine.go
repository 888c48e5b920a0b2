package split

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// Engine is who applies the context packages.
func (p *Layout) Engine() gitops.Engine {
	if p.engine == "" {
		return gitops.Kpt
	}
	return p.engine
}

// EngineFiles are the engine's own objects, paths relative to gitops.Dir.
func (p *Layout) EngineFiles() []gitops.File { return p.engineFiles }

// targetName names context ctx's engine object (Kustomization,
// Application).
func (p *Layout) targetName(ctx string) string { return DNSName(p.name + "-" + ctx) }

// layEngine generates the engine's own objects from the config.
func (p *Layout) layEngine() error {
	if !p.engine.Pulls() {
		return nil
	}
	fleet := gitops.Fleet{Engine: p.engine, Source: p.source, Name: DNSName(p.name)}
	spec := &p.cfg.Source.Spec
	for _, pkg := range p.Packages {
		fleet.Targets = append(fleet.Targets, gitops.Target{Context: pkg.Context, Name: p.targetName(pkg.Context), Wave: spec.WaveOf(pkg.Context)})
	}
	if spec.Rollout != nil {
		for _, w := range spec.Waves() {
			gw := gitops.Wave{Name: w.Name, MaxParallel: w.MaxParallel}
			for _, c := range w.Contexts {
				if i := slices.IndexFunc(fleet.Targets, func(t gitops.Target) bool { return t.Context == c }); i >= 0 {
					gw.Targets = append(gw.Targets, i)
				}
			}
			fleet.Waves = append(fleet.Waves, gw)
		}
	}
	files, notes, err := gitops.Files(fleet)
	if err != nil {
		return fmt.Errorf("generating the %s objects: %w", p.engine, err)
	}
	record, err := p.handoffFile()
	if err != nil {
		return err
	}
	if record != nil {
		files = append(files, gitops.File{Path: HandoffFile, Data: record})
	}
	p.engineFiles = files
	for _, n := range notes {
		p.Results = append(p.Results, &framework.Result{Severity: framework.Warning, Message: n, Field: &framework.Field{Path: "spec.rollout"}})
	}
	return nil
}

// checkEngineDir refuses an engine directory that split did not write.
func checkEngineDir(d *outdir.OutDir) error {
	_, _, err := outdir.ReadOwnDir(filepath.Join(d.Path, gitops.Dir), filepath.Join(d.Given, gitops.Dir), gitops.Dir)
	return err
}

// writeEngineDir makes OUT_DIR/gitops.Dir hold exactly the engine's
// files: left as it is when it already does, removed when there are none
// (kpt), else staged in staged and swapped in (the old one to old).
func writeEngineDir(d *outdir.OutDir, files []gitops.File, staged, old string) error {
	target, shown := filepath.Join(d.Path, gitops.Dir), filepath.Join(d.Given, gitops.Dir)
	listed, exists, err := outdir.ReadOwnDir(target, shown, gitops.Dir)
	if err != nil {
		return err
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	slices.Sort(paths)
	marker := outdir.MarkerText([]string{gitops.Dir}, paths)
	if len(files) == 0 {
		if exists {
			return os.Rename(target, filepath.Join(old, gitops.Dir))
		}
		return nil
	}
	if exists && slices.Equal(listed, paths) && sameFile(filepath.Join(target, outdir.MarkerFile), marker) &&
		!slices.ContainsFunc(files, func(f gitops.File) bool { return !sameFile(filepath.Join(target, filepath.FromSlash(f.Path)), f.Data) }) {
		return nil // a second split changes nothing
	}
	dir := filepath.Join(staged, gitops.Dir)
	var made sync.Map
	for _, f := range files {
		if err := writeAt(filepath.Join(dir, filepath.FromSlash(f.Path)), f.Data, &made); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, outdir.MarkerFile), marker, fileMode); err != nil {
		return err
	}
	if err := outdir.ReplaceDir(target, dir, filepath.Join(old, gitops.Dir)); err != nil {
		return fmt.Errorf("replacing %s: %w", shown, err)
	}
	return nil
}

// sameFile reports whether the file at p holds exactly data.
func sameFile(p string, data []byte) bool {
	disk, err := os.ReadFile(p)
	return err == nil && bytes.Equal(disk, data)
}
