package outdir

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// FleetFile is OUT_DIR's record of the clusters it was applied to: the
// owner id of its inventories, and per context the serial, package digest
// and cluster identity of the last write this OUT_DIR's runs made. apply
// compares it with each cluster's own record (package lease) before it
// writes: a cluster written since by another OUT_DIR, a kube context that
// now reaches another cluster, and an inventory another OUT_DIR owns are
// refused. Copies of one OUT_DIR (committed, or kept as a CI artifact) are
// one owner.
const FleetFile = ".shard-router-fleet.json"

// fleetFormat is the record's format version.
const fleetFormat = "shard-router-fleet v1"

// FleetRecord is FleetFile.
type FleetRecord struct {
	Format string `json:"format"`
	// Owner is the id of this OUT_DIR's package: made once, by the first
	// apply that writes a cluster, and recorded in every Lease it writes.
	Owner string `json:"owner"`
	// OwnerName describes the owner in another run's messages.
	OwnerName string `json:"ownerName,omitempty"`
	// Contexts are what each cluster last received from this OUT_DIR.
	Contexts map[string]*FleetContext `json:"contexts"`

	path string
	mu   sync.Mutex
	// entries are the contexts' entries as the file holds them (see
	// encode), kept from one write to the next: a run locking 256
	// contexts writes the file a hundred times or more, and encoding
	// every entry each time made that cost grow with the square of the
	// contexts.
	entries map[string][]byte
	// writing is held by the one writing the file; changes counts the
	// changes made, written those the file holds (see Restore).
	writing          sync.Mutex
	changes, written uint64
}

// FleetContext is one context's entry.
type FleetContext struct {
	// Serial is the cluster's serial this OUT_DIR's last write took.
	Serial int64 `json:"serial"`
	// Digest is the digest of the package that write applied.
	Digest    string    `json:"digest,omitempty"`
	AppliedBy string    `json:"appliedBy,omitempty"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// AppliedAs is the identity the write impersonated (--as, or the
	// kubeconfig's as:), "" when none.
	AppliedAs string `json:"appliedAs,omitempty"`
	// Outcome is applying (the run did not finish), applied, failed or
	// "rolled back"; SettledBy and SettledAt name the later run that found
	// the context in sync after the one that wrote it died applying it,
	// and set the outcome right (as the cluster's record says).
	Outcome   string    `json:"outcome,omitempty"`
	SettledBy string    `json:"settledBy,omitempty"`
	SettledAt time.Time `json:"settledAt,omitzero"`
	// ClusterUID is the identity of the cluster the context reached;
	// Server the server URL it had then.
	ClusterUID string `json:"clusterUID,omitempty"`
	Server     string `json:"server,omitempty"`
}

// OpenFleet reads OUT_DIR's FleetFile; a missing one is an empty record
// (an OUT_DIR no apply of this release wrote).
func OpenFleet(d *OutDir) (*FleetRecord, error) {
	f := &FleetRecord{path: filepath.Join(d.Path, FleetFile), Contexts: map[string]*FleetContext{}}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.Format = fleetFormat
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.Given, FleetFile), err)
	}
	if f.Format != fleetFormat {
		return nil, fmt.Errorf("%s: format %q, want %q: written by another release of shard-router", filepath.Join(d.Given, FleetFile), f.Format, fleetFormat)
	}
	if f.Contexts == nil {
		f.Contexts = map[string]*FleetContext{}
	}
	return f, nil
}

// Context returns a copy of a context's entry, nil when there is none.
func (f *FleetRecord) Context(name string) *FleetContext {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.Contexts[name]; c != nil {
		cp := *c
		return &cp
	}
	return nil
}

// EnsureOwner gives the record an owner id when it has none, naming it
// with name; it returns the id. Nothing is written until Set.
func (f *FleetRecord) EnsureOwner(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Owner == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		f.Owner, f.OwnerName = hex.EncodeToString(b), name
	}
	return f.Owner
}

// Set records a context's entry and writes the file (atomically: a new
// file renamed over the old).
func (f *FleetRecord) Set(name string, c FleetContext) error {
	return f.Restore(name, &c)
}

// Restore puts a context's entry back as it was (nil: none) and writes
// the file. It returns once the file holds the change: changes made while
// another is being written are written together, by one of their callers
// (a group commit), so that a run locking or unlocking 256 contexts at
// once writes the file tens of times, not 512.
func (f *FleetRecord) Restore(name string, c *FleetContext) error {
	f.mu.Lock()
	if c == nil {
		delete(f.Contexts, name)
	} else {
		cp := *c // the encoded entry stays what the caller gave
		f.Contexts[name] = &cp
	}
	delete(f.entries, name)
	f.changes++
	mine := f.changes
	f.mu.Unlock()

	f.writing.Lock()
	defer f.writing.Unlock()
	f.mu.Lock()
	if f.written >= mine {
		f.mu.Unlock()
		return nil // written with another's change
	}
	data, err := f.encode()
	upto := f.changes
	f.mu.Unlock()
	if err == nil {
		err = writeFile(f.path, data)
	}
	if err != nil {
		return fmt.Errorf("recording context %q in %s: %w", name, f.path, err)
	}
	f.mu.Lock()
	f.written = upto
	f.mu.Unlock()
	return nil
}

// encode is the file's bytes: json.MarshalIndent(f, "", "  ") exactly,
// with each context's entry encoded once until it changes. f.mu is held.
func (f *FleetRecord) encode() ([]byte, error) {
	if f.entries == nil {
		f.entries = map[string][]byte{}
	}
	names := slices.Sorted(maps.Keys(f.Contexts))
	size := 0
	for _, name := range names {
		if f.entries[name] == nil {
			b, err := json.MarshalIndent(f.Contexts[name], "    ", "  ")
			if err != nil {
				return nil, err
			}
			f.entries[name] = b
		}
		size += len(name) + len(f.entries[name]) + 16
	}
	field := func(b *bytes.Buffer, name string, v any) error {
		enc, err := json.Marshal(v)
		b.WriteString("  \"" + name + "\": ")
		b.Write(enc)
		b.WriteString(",\n")
		return err
	}
	var b bytes.Buffer
	b.Grow(size + 256)
	b.WriteString("{\n")
	err := errors.Join(field(&b, "format", f.Format), field(&b, "owner", f.Owner))
	if f.OwnerName != "" {
		err = errors.Join(err, field(&b, "ownerName", f.OwnerName))
	}
	if f.Contexts == nil {
		b.WriteString("  \"contexts\": null\n}")
		return b.Bytes(), err
	}
	b.WriteString("  \"contexts\": {")
	for i, name := range names {
		key, kerr := json.Marshal(name)
		err = errors.Join(err, kerr)
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(key)
		b.WriteString(": ")
		b.Write(f.entries[name])
	}
	if len(names) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("}\n}")
	return b.Bytes(), err
}
