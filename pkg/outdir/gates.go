package outdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// GatesFile is OUT_DIR's record of the promotion gates apply measured: per
// wave, what the last apply that baked it measured in each of its
// contexts. A finished rollout removes its rollout record, but not this:
// status shows it, so that what let a change through (or stopped it)
// stays visible after the run's own report is gone.
const GatesFile = ".shard-router-gates.json"

// gatesFormat is the record's format version.
const gatesFormat = "shard-router-gates v1"

type gatesRecord struct {
	Format string               `json:"format"`
	Waves  []v1alpha1.WaveGates `json:"waves"`
}

// ReadGates reads OUT_DIR's GatesFile: nil when no apply measured a gate.
func ReadGates(d *OutDir) ([]v1alpha1.WaveGates, error) {
	b, err := os.ReadFile(filepath.Join(d.Path, GatesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r gatesRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.Given, GatesFile), err)
	}
	if r.Format != gatesFormat {
		return nil, fmt.Errorf("%s: format %q, want %q: written by another release of shard-router", filepath.Join(d.Given, GatesFile), r.Format, gatesFormat)
	}
	return r.Waves, nil
}

// RecordGates replaces, in GatesFile, the waves measured now, keeps the
// others that are still among waves (the rollout's wave names, in order:
// a wave this run did not bake keeps what it last measured), and drops
// the waves the config no longer has. A file written by another release
// is replaced.
func RecordGates(d *OutDir, waves []string, measured []v1alpha1.WaveGates) error {
	old, err := ReadGates(d)
	if err != nil {
		old = nil
	}
	if len(measured) == 0 && len(old) == 0 {
		return nil
	}
	byName := map[string]v1alpha1.WaveGates{}
	for _, w := range old {
		byName[w.Wave] = w
	}
	for _, w := range measured {
		byName[w.Wave] = w
	}
	r := gatesRecord{Format: gatesFormat, Waves: []v1alpha1.WaveGates{}}
	for _, name := range waves {
		if w, ok := byName[name]; ok {
			r.Waves = append(r.Waves, w)
		}
	}
	if len(r.Waves) == 0 {
		err := os.Remove(filepath.Join(d.Path, GatesFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if slices.EqualFunc(r.Waves, old, func(a, b v1alpha1.WaveGates) bool { return a.Wave == b.Wave && a.MeasuredAt.Equal(&b.MeasuredAt) }) {
		return nil
	}
	return writeJSON(filepath.Join(d.Path, GatesFile), r)
}
