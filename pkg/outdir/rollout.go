package outdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// RolloutDir, inside OUT_DIR, records an unfinished rollout: the package
// each context it changed held before it, so that a rollback, even after
// a kill, can apply those packages again. It is no context's directory,
// and split leaves it alone.
const RolloutDir = ".shard-router-rollout"

const rolloutFile = "rollout.json"

// RolloutRecord is OUT_DIR's record of an unfinished rollout.
type RolloutRecord struct {
	d   *OutDir
	dir string
	mu  sync.Mutex
	// Waves are the rollout's wave names, in order.
	Waves []string `json:"waves"`
	// Contexts are the contexts the rollout changed (or began to), in the
	// order it got to them.
	Contexts []RecordedContext `json:"contexts"`
	// Baked are the waves that finished their bake since they last
	// changed a context.
	Baked []string `json:"baked,omitempty"`
	// Apply is how the rollout wrote (kpt live apply's flags): a rollback
	// by hand writes the same way unless told otherwise.
	Apply *v1alpha1.ApplyStrategy `json:"apply,omitempty"`
}

// RecordedContext is one context a rollout changed.
type RecordedContext struct {
	Name string `json:"name"`
	Wave string `json:"wave"`
	// Previous is false when the context had no package before the
	// rollout: there is nothing to roll it back to.
	Previous bool `json:"previous"`
}

// OpenRollout reads OUT_DIR's rollout record; Exists is false when there is
// none (the last rollout finished, or none ran).
func OpenRollout(d *OutDir) (*RolloutRecord, error) {
	r := &RolloutRecord{d: d, dir: filepath.Join(d.Path, RolloutDir)}
	data, err := os.ReadFile(filepath.Join(r.dir, rolloutFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.Given, RolloutDir, rolloutFile), err)
	}
	if r.Contexts == nil {
		r.Contexts = []RecordedContext{}
	}
	return r, nil
}

// Exists reports whether an unfinished rollout is recorded.
func (r *RolloutRecord) Exists() bool {
	_, err := os.Stat(filepath.Join(r.dir, rolloutFile))
	return err == nil
}

// Recorded returns the record of a context, nil when the rollout did not
// change it.
func (r *RolloutRecord) Recorded(context string) *RecordedContext {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.Contexts {
		if r.Contexts[i].Name == context {
			c := r.Contexts[i]
			return &c
		}
	}
	return nil
}

// Save records that the rollout is about to change context, keeping a
// copy of OUT_DIR/<context> first, and that its wave has not baked since.
// A context already recorded keeps the copy of the package it held before
// the rollout began.
func (r *RolloutRecord) Save(context, wave string, waves []string) error {
	recorded := r.Recorded(context) != nil
	r.mu.Lock()
	defer r.mu.Unlock()
	if recorded {
		// Changed again: its wave must bake again.
		if !slices.Contains(r.Baked, wave) {
			return nil
		}
		r.Baked = slices.DeleteFunc(r.Baked, func(w string) bool { return w == wave })
		return r.write()
	}
	if len(r.Waves) == 0 {
		r.Waves = slices.Clone(waves)
	}
	rc := RecordedContext{Name: context, Wave: wave}
	src := filepath.Join(r.d.Path, context)
	if _, err := os.Stat(filepath.Join(src, RGFile)); err == nil {
		dst := r.PreviousDir(context)
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := copyDir(src, dst); err != nil {
			return fmt.Errorf("keeping %s's previous package for a rollback: %w", context, err)
		}
		rc.Previous = true
	}
	r.Contexts = append(r.Contexts, rc)
	r.Baked = slices.DeleteFunc(r.Baked, func(w string) bool { return w == wave })
	return r.write()
}

// WritesWith sets how the rollout writes, recorded with the next Save.
func (r *RolloutRecord) WritesWith(how v1alpha1.ApplyStrategy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Apply = &how
}

// HasBaked reports whether wave finished its bake since it last changed
// a context.
func (r *RolloutRecord) HasBaked(wave string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.Baked, wave)
}

// MarkBaked records that wave finished its bake; nothing when the record
// holds no context (the rollout changed nothing yet).
func (r *RolloutRecord) MarkBaked(wave string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.Contexts) == 0 || slices.Contains(r.Baked, wave) {
		return nil
	}
	r.Baked = append(r.Baked, wave)
	return r.write()
}

// PreviousDir is the copy of the package context held before the rollout.
func (r *RolloutRecord) PreviousDir(context string) string {
	return filepath.Join(r.dir, "previous", context)
}

// Restore puts the previous package of context back into OUT_DIR/<context>,
// in one rename where the system can, keeping the record's copy.
func (r *RolloutRecord) Restore(context string) error {
	tmp := filepath.Join(r.dir, "restore-"+context)
	aside := filepath.Join(r.dir, "aside-"+context)
	for _, p := range []string{tmp, aside} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	if err := copyDir(r.PreviousDir(context), tmp); err != nil {
		return err
	}
	if err := ReplaceDir(filepath.Join(r.d.Path, context), tmp, aside); err != nil {
		return fmt.Errorf("putting back %s: %w", filepath.Join(r.d.Given, context), err)
	}
	_ = os.RemoveAll(aside)
	return os.RemoveAll(tmp) // after an exchange: the package it replaced
}

// Remove deletes the record: the rollout finished, or was rolled back.
func (r *RolloutRecord) Remove() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Waves, r.Contexts = nil, nil
	return os.RemoveAll(r.dir)
}

// write replaces the record file in one rename.
func (r *RolloutRecord) write() error {
	if err := os.MkdirAll(r.dir, DirMode); err != nil {
		return err
	}
	return writeJSON(filepath.Join(r.dir, rolloutFile), r)
}

// writeJSON replaces the file at path with v as indented JSON, in one
// rename: a reader sees the old record or the new one, never a part.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, data)
}

// writeFile writes data and a newline to path atomically: a new file
// renamed over the old.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), FileMode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// copyDir copies the regular files and directories of src to dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, DirMode)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, FileMode)
	})
}
