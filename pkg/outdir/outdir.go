package outdir

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/route"
)

const (
	// MarkerFile marks the directories split wrote: one at the root of the
	// output directory, listing the context directories, and one in each
	// context directory, listing its files. Split deletes nothing else.
	MarkerFile = ".shard-router-split"
	// MarkerFormat is the first line of every marker file.
	MarkerFormat = "shard-router-split v1"
	// TmpPrefix names the staging directory inside the output directory.
	TmpPrefix = MarkerFile + "-tmp-"
	// LockFile is the lock split -o and apply hold on the output directory
	// while they write it (see LockOutDir); it is no context's file.
	LockFile = ".shard-router.lock"
	// RGFile is the inventory file name kpt live init writes.
	RGFile = "resourcegroup.yaml"
)

// OwnFiles are the files split writes itself in each context directory.
var OwnFiles = []string{yamlio.KptfileName, RGFile, v1alpha1.EtcdOverridesFile, MarkerFile}

// ErrNotSplitDir is returned for an output directory (or context
// directory) that split did not write.
var ErrNotSplitDir = errors.New("not written by shard-router split")

// OutDir is a split output directory and what a previous split left there.
type OutDir struct {
	// Path is the resolved absolute path.
	Path string
	// Given is the path as the user gave it, for messages.
	Given string
	// Marked is true when a previous split wrote the root marker.
	Marked   bool
	Previous []*PrevContext
	// Stale are staging directories of an interrupted split.
	Stale []string
	// read is how the previous split's files are read: parsed, parsed
	// and digested, or scanned (see scanFile).
	read ReadMode
}

// ReadMode is how the previous split's files are read.
type ReadMode int

const (
	// ReadParse parses every file (split's pipe form, or split when a
	// scan disagreed).
	ReadParse ReadMode = iota
	// ReadDigests parses every file and digests its objects (plan, when a
	// scan disagreed).
	ReadDigests
	// ReadScan reads the files split wrote with scanFile, and digests the
	// objects of the files it parses (plan).
	ReadScan
	// ReadScanKeys reads the files split wrote with scanFile, without
	// digests (split): Write checks every scanned file against the bytes
	// it writes or a parse before it changes anything.
	ReadScanKeys
)

// scans reports a mode that scans files.
func (m ReadMode) scans() bool { return m == ReadScan || m == ReadScanKeys }

// digests reports a mode that digests the objects of the files it parses.
func (m ReadMode) digests() bool { return m == ReadScan || m == ReadDigests }

// Mode is how the directory's files were read.
func (d *OutDir) Mode() ReadMode { return d.read }

// PrevContext is one context directory of the previous split.
type PrevContext struct {
	Name   string
	Exists bool
	Files  []string
	// Held maps each resource the directory holds to its datastore in this
	// context ("" when its annotations cannot say).
	Held  map[ObjKey]string
	First string // a resource it holds and its file, for messages
	// Objs are the resources' contents and places, read for plan only:
	// all of them, or with ReadScan those of the files parsed so far.
	Objs map[ObjKey]PrevObject
	// Scanned are the files read by scanFile (ReadScan, ReadScanKeys) and
	// not yet checked, by path.
	Scanned map[string]*ScannedFile
	// Overrides are the context's etcd overrides as the previous split
	// recorded them; HasOverrides is false when it did not.
	Overrides    []datastore.Entry
	HasOverrides bool
	// dir is the context directory's path; marker its marker's id.
	dir      string
	marker   fileID
	markerOK bool
	// strayDirs: the directory holds a directory none of its files is in.
	strayDirs bool
}

// ScannedFile is a file of the previous split that plan did not parse:
// the hash of its bytes and the resources scanFile found in it.
type ScannedFile struct {
	Sum  input.Digest
	Held []HeldResource
	// id is the file as it was when read (see Unchanged).
	id   fileID
	idOK bool
}

// PrevObject is a resource of a previous context directory as plan
// compares it: the digest of its data, and where to read it for a diff.
type PrevObject struct {
	Digest input.Digest
	File   string
	Pos    int // its position among the file's resources
}

// ObjKey identifies an object as kpt's inventory does.
type ObjKey struct{ Group, Kind, Namespace, Name string }

// KeyOf is the object's key.
func KeyOf(o *route.Object) ObjKey { return ObjKey{o.Group(), o.Kind, o.Namespace, o.Name} }

// Ref is the object's reference in plans and reports.
func (k ObjKey) Ref() v1alpha1.ObjectRef {
	return v1alpha1.ObjectRef{Group: k.Group, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
}

// OpenOutDir inspects an output directory. It must be absent, empty, or
// written by a previous split; every file in the context directories that
// split listed must be one it wrote (a regular file, never a symlink), since
// split will delete them. It reads the resources of the previous split,
// which count as their old placement: scanned where scanFile can (split's
// Write checks those files before it changes anything), else parsed.
func OpenOutDir(dir string) (*OutDir, error) { return openOutDir(dir, ReadScanKeys) }

// OpenPrevious inspects an output directory as OpenOutDir does, for
// Preview, which reads what each resource of the previous split holds. The
// directory must exist: a mistyped path would make every object a create
// and hide every prune. An empty directory is a first apply.
func OpenPrevious(dir string) (*OutDir, error) {
	if err := mustExist(dir); err != nil {
		return nil, err
	}
	return openOutDir(dir, ReadScan)
}

// OpenExisting inspects the previous split as OpenOutDir does, for the
// pipe form, which writes nothing there: the directory must exist, as in
// OpenPrevious.
func OpenExisting(dir string) (*OutDir, error) {
	if err := mustExist(dir); err != nil {
		return nil, err
	}
	return openOutDir(dir, ReadParse)
}

// mustExist refuses a previous split directory that does not exist.
func mustExist(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the previous split %s does not exist: give the directory split wrote (for a first apply, an empty directory: mkdir %s)", dir, dir)
	} else if err != nil {
		return fmt.Errorf("cannot use %s as the previous split: %w", dir, err)
	}
	return nil
}

func openOutDir(dir string, read ReadMode) (*OutDir, error) {
	abs, err := input.Resolve(dir)
	if err != nil {
		return nil, err
	}
	d := &OutDir{Path: abs, Given: dir, read: read}
	info, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot use %s as the output directory: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("the output directory %s is not a directory", dir)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("cannot read the output directory %s: %w", dir, err)
	}
	// The lock of a writer (this run's own) does not make it non-empty.
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() == LockFile })
	if len(entries) == 0 {
		return d, nil
	}
	root := filepath.Join(abs, MarkerFile)
	names, _, err := readMarker(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the output directory %s is not empty and was %w (it has no %s file): give a new or empty directory", dir, ErrNotSplitDir, MarkerFile)
	}
	if err != nil {
		return nil, err
	}
	d.Marked = true
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TmpPrefix) && e.IsDir() {
			if _, err := os.Lstat(filepath.Join(abs, e.Name(), MarkerFile)); err == nil {
				d.Stale = append(d.Stale, filepath.Join(abs, e.Name()))
			}
		}
	}
	// Read the context directories a few at a time: listing and checking
	// one waits on the filesystem (each reads its files on every core).
	pcs := make([]*PrevContext, len(names))
	errs := make([]error, len(names))
	_ = yamlio.ForEach(contextReaders, len(names), func(i int) error {
		pcs[i], errs[i] = d.readContext(names[i])
		return nil
	})
	for i := range names {
		if errs[i] != nil {
			return nil, errs[i] // the first in the marker's order, as one by one
		}
		d.Previous = append(d.Previous, pcs[i])
	}
	return d, nil
}

// contextReaders is how many context directories are read at once.
const contextReaders = 4

// readMarker reads a marker file: its context names and file list.
func readMarker(p string) (contexts, files []string, err error) {
	info, err := os.Lstat(p)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file: split never writes one like it", p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	first := true
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if first {
			if line != MarkerFormat {
				return nil, nil, fmt.Errorf("%s: line 1: expected %q, found %q (written by another version?)", p, MarkerFormat, line)
			}
			first = false
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch verb {
		case "context":
			contexts = append(contexts, arg)
		case "file":
			files = append(files, arg)
		default:
			return nil, nil, fmt.Errorf("%s: line %d: unknown entry %q", p, n, line)
		}
	}
	if first {
		return nil, nil, fmt.Errorf("%s is empty: expected %q", p, MarkerFormat)
	}
	return contexts, files, sc.Err()
}

// readContext checks one context directory of the previous split and reads
// what it holds.
func (d *OutDir) readContext(name string) (*PrevContext, error) {
	pc := &PrevContext{Name: name, Held: map[ObjKey]string{}}
	if d.read.digests() {
		pc.Objs = map[ObjKey]PrevObject{}
	}
	if d.read.scans() {
		pc.Scanned = map[string]*ScannedFile{}
	}
	if errs := v1alpha1.ValidateContextName(name, nil); len(errs) > 0 || strings.HasPrefix(name, MarkerFile) {
		return nil, fmt.Errorf("%s lists context %q, which is not a context directory name", filepath.Join(d.Given, MarkerFile), name)
	}
	dir := filepath.Join(d.Path, name)
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return pc, nil
	}
	if err != nil {
		return nil, err
	}
	shown := filepath.Join(d.Given, name)
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (a symlink?): split wrote a directory there and will not replace anything else", shown)
	}
	pc.Exists, pc.dir = true, dir
	if pc.Files, pc.strayDirs, err = checkContextDir(dir, shown, name); err != nil {
		return nil, err
	}
	// The marker's id is read before any file is scanned (see Unchanged).
	if info, err := os.Lstat(filepath.Join(dir, MarkerFile)); err == nil {
		pc.marker, pc.markerOK = idOf(info)
	}
	if err := pc.readOverrides(dir, shown); err != nil {
		return nil, err
	}
	if err := pc.readFiles(dir, shown, d.read); err != nil {
		return nil, err
	}
	return pc, nil
}

// checkContextDir reads a context directory's marker and checks that it
// holds only the files split listed there, which it returns; stray is set
// when it also holds a directory that none of them is in (allowed: split
// replaces the directory whole).
func checkContextDir(dir, shown, name string) (files []string, stray bool, err error) {
	contexts, files, err := readMarker(filepath.Join(dir, MarkerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("%s has no %s file, so it was %w: move it away", shown, MarkerFile, ErrNotSplitDir)
	}
	if err != nil {
		return nil, false, err
	}
	if !slices.Equal(contexts, []string{name}) {
		return nil, false, fmt.Errorf("%s: its %s names context(s) %q, not %q", shown, MarkerFile, contexts, name)
	}
	listed, parents := map[string]bool{}, map[string]bool{".": true}
	for _, f := range files {
		if f == "" || path.IsAbs(f) || slices.Contains(strings.Split(f, "/"), "..") {
			return nil, false, fmt.Errorf("%s lists %q, which is not a file inside it", filepath.Join(shown, MarkerFile), f)
		}
		listed[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			parents[d] = true
		}
	}
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case e.IsDir():
			stray = stray || !parents[rel]
			return nil
		case e.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink: split never writes one, so it will neither follow nor delete it; move it away", filepath.Join(shown, rel))
		case !e.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file: split never writes one; move it away", filepath.Join(shown, rel))
		case rel == MarkerFile || listed[rel]:
			return nil
		}
		return fmt.Errorf("%s was %w (its %s does not list it), and split regenerates %s completely: move the file away", filepath.Join(shown, rel), ErrNotSplitDir, MarkerFile, shown)
	})
	return files, stray, err
}

// readOverrides reads the etcd overrides the previous split recorded.
func (pc *PrevContext) readOverrides(dir, shown string) error {
	if !slices.Contains(pc.Files, v1alpha1.EtcdOverridesFile) {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, v1alpha1.EtcdOverridesFile))
	if err != nil {
		return err
	}
	if pc.Overrides, err = datastore.ReadRecord(data); err != nil {
		return fmt.Errorf("reading the previous split's %s: %w", filepath.Join(shown, v1alpha1.EtcdOverridesFile), err)
	}
	pc.HasOverrides = true
	return nil
}

// readFiles reads the resources of the context's files, scanned or
// parsed as mode says.
func (pc *PrevContext) readFiles(dir, shown string, mode ReadMode) error {
	files := pc.Files
	// Read the files on every core; merge in file order, so the first
	// file that holds a resource wins, as when reading one by one.
	held := make([][]HeldResource, len(files))
	scans := make([]*ScannedFile, len(files))
	errs := make([]error, len(files))
	_ = yamlio.Parallel(len(files), func(i int) error {
		if f := files[i]; !slices.Contains(OwnFiles, f) && yamlio.MatchesKRM(f) {
			if mode.scans() {
				if scans[i], errs[i] = scan(dir, f, pc.Name); scans[i] != nil || errs[i] != nil {
					return nil
				}
			}
			held[i], errs[i] = pc.readFile(dir, f, shown, mode.digests())
		}
		return nil
	})
	for i := range files {
		if errs[i] != nil {
			return errs[i]
		}
		if scans[i] != nil {
			pc.Scanned[files[i]] = scans[i]
			held[i] = scans[i].Held
		}
		for _, h := range held[i] {
			if _, dup := pc.Held[h.Key]; !dup {
				pc.Held[h.Key] = h.DataStore
				if pc.Objs != nil && scans[i] == nil {
					pc.Objs[h.Key] = h.Obj
				}
			}
			if pc.First == "" {
				pc.First = h.Desc + " in " + files[i]
			}
		}
	}
	return nil
}

// scan reads a file with scanFile; nil when scanFile does not take it.
func scan(dir, f, ctx string) (*ScannedFile, error) {
	if !strings.HasSuffix(f, ".yaml") && !strings.HasSuffix(f, ".yml") {
		return nil, nil
	}
	data, info, err := readWithInfo(filepath.Join(dir, filepath.FromSlash(f)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // readFile says the same
	}
	if err != nil {
		return nil, err
	}
	held, ok := scanFile(data, ctx)
	if !ok {
		return nil, nil
	}
	s := &ScannedFile{Sum: sha256.Sum256(data), Held: held}
	s.id, s.idOK = idOf(info)
	return s, nil
}

// readWithInfo reads a file as os.ReadFile does, and what fstat said of it
// before the first byte was read: a change during the read changes the
// file's ctime after that.
func readWithInfo(p string) ([]byte, fs.FileInfo, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	b.Grow(int(info.Size()) + bytes.MinRead) // room to see EOF without growing
	if _, err := b.ReadFrom(f); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), info, nil
}

// Dir is the context directory's path ("" when it does not exist).
func (pc *PrevContext) Dir() string { return pc.dir }

// OnlyListed reports whether the context directory holds nothing but the
// files its marker lists and the directories they are in.
func (pc *PrevContext) OnlyListed() bool { return pc.Exists && !pc.strayDirs }

// Unchanged reports, without reading it, whether the scanned file f, whose
// Lstat is info, still holds the bytes its scan read: it is the same file
// (device, inode, size, times), on the marker's device, and it was last
// changed before the context's marker was, as read before the scan. Any
// change since the scan sets the file's ctime to the filesystem's clock,
// which was past the marker's ctime by then, so it cannot give the file its
// old ctime; a file changed in the same clock tick as the marker is read
// instead, and so is a file on another filesystem (a mount inside the
// directory may keep coarser times). Split's Write trusts it to leave a
// file unread that it would write byte for byte as the scan read it.
func (pc *PrevContext) Unchanged(f string, info fs.FileInfo) bool {
	s := pc.Scanned[f]
	if s == nil || !s.idOK || !pc.markerOK || s.id.dev != pc.marker.dev || !s.id.changedBefore(pc.marker.ctime) {
		return false
	}
	id, ok := idOf(info)
	return ok && id == s.id
}

// scanAnnotations are the annotations scanFile reads.
var scanAnnotations = []string{v1alpha1.ContextAnnotation, v1alpha1.DataStoreAnnotation, filters.LocalConfigAnnotation}

// scanFile reads what a file of a previous context directory holds as
// readFile does, with yamlio.ScanObjects: ok false when ScanObjects is not
// sure of the file, which is then parsed. Each resource is described.
func scanFile(data []byte, ctx string) (out []HeldResource, ok bool) {
	objs, ok := yamlio.ScanObjects(data, scanAnnotations)
	if !ok {
		return nil, false
	}
	for _, so := range objs {
		o := route.Object{APIVersion: so.APIVersion, Kind: so.Kind, Name: so.Name, Namespace: so.Namespace}
		prev, ds, local := so.Annotations[0], so.Annotations[1], so.Annotations[2]
		if (local.Set && local.Value != "false") || o.Name == "" || isKptInternal(&o) {
			continue // as readFile
		}
		h := HeldResource{Key: KeyOf(&o), Desc: o.Describe()}
		if contexts := route.ParseContexts(prev.Value); ds.Set && len(contexts) > 0 {
			if m, err := datastore.ParseAnnotation(ds.Value, contexts); err == nil {
				h.DataStore = m[ctx]
			}
		}
		out = append(out, h)
	}
	return out, true
}

// ParseScanned parses the scanned files that Preview or Write cannot
// settle by their bytes (keep false), and checks what scanFile read from
// each against the parse; it digests their objects when the directory's
// mode digests.
func (pc *PrevContext) ParseScanned(d *OutDir, keep func(file string) bool) error {
	var files []string
	for f := range pc.Scanned {
		if !keep(f) {
			files = append(files, f)
		}
	}
	dir, shown := filepath.Join(d.Path, pc.Name), filepath.Join(d.Given, pc.Name)
	held := make([][]HeldResource, len(files))
	errs := make([]error, len(files))
	_ = yamlio.Parallel(len(files), func(i int) error {
		held[i], errs[i] = pc.readFile(dir, files[i], shown, pc.Objs != nil)
		return nil
	})
	for i, f := range files {
		if errs[i] != nil {
			return errs[i]
		}
		s := pc.Scanned[f]
		if len(s.Held) != len(held[i]) {
			return ErrScanMismatch
		}
		for k, h := range held[i] {
			if h.Key != s.Held[k].Key || h.DataStore != s.Held[k].DataStore {
				return ErrScanMismatch
			}
			if _, ok := pc.Objs[h.Key]; !ok && pc.Objs != nil {
				pc.Objs[h.Key] = h.Obj
			}
		}
		delete(pc.Scanned, f)
	}
	return nil
}

// ErrScanMismatch: scanFile read a file otherwise than the parser; Preview
// starts over, parsing every file.
var ErrScanMismatch = errors.New("scanned and parsed contents differ")

// HeldResource is a resource of a previous context directory and the
// datastore it had in that context.
type HeldResource struct {
	Key       ObjKey
	DataStore string
	Desc      string
	Obj       PrevObject
}

// readFile reads the resources of one file of a previous context
// directory, and the datastore each had in that context.
func (pc *PrevContext) readFile(dir, f, shown string, digests bool) ([]HeldResource, error) {
	p := filepath.Join(dir, filepath.FromSlash(f))
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true, WrapBareSeqNode: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("reading the previous split's %s: %w", filepath.Join(shown, f), err)
	}
	var out []HeldResource
	for pos, n := range nodes {
		if n.YNode().Kind != yaml.MappingNode {
			continue
		}
		it := function.ItemOf(n)
		if it.LocalConfig || it.Name == "" || isKptInternal(&it.Object) {
			continue
		}
		ds := ""
		if it.HasDataStore && it.HasPrevious {
			if m, err := datastore.ParseAnnotation(it.DataStore, it.Previous); err == nil {
				ds = m[pc.Name]
			}
		}
		h := HeldResource{Key: KeyOf(&it.Object), DataStore: ds}
		if digests {
			h.Obj = PrevObject{Digest: input.DigestOf(n), File: f, Pos: pos}
		}
		if len(out) == 0 {
			h.Desc = input.DescribeNode(n) // only a file's first can be the context's first
		}
		out = append(out, h)
	}
	return out, nil
}

// isKptInternal matches what route never routes as kpt's own: the Kptfile
// and the inventory ResourceGroup.
func isKptInternal(o *route.Object) bool {
	return (o.Kind == "Kptfile" && strings.HasPrefix(o.APIVersion, "kpt.dev/")) ||
		(o.Kind == "ResourceGroup" && o.APIVersion == "kpt.dev/v1alpha1")
}

// Contexts returns the names of the previous split's context directories.
func (d *OutDir) Contexts() []string {
	if d == nil {
		return nil
	}
	out := make([]string, len(d.Previous))
	for i, pc := range d.Previous {
		out[i] = pc.Name
	}
	return out
}

// Context is the previous split's context directory name, or nil.
func (d *OutDir) Context(name string) *PrevContext {
	if d == nil {
		return nil
	}
	for _, pc := range d.Previous {
		if pc.Name == name {
			return pc
		}
	}
	return nil
}

// Reparse reads the directory again, parsing every file (and digesting
// its objects when the directory's mode digests): plan's and split's way
// out when a scanned file disagrees with its parse.
func (d *OutDir) Reparse() (*OutDir, error) {
	if d.read.digests() {
		return openOutDir(d.Given, ReadDigests)
	}
	return openOutDir(d.Given, ReadParse)
}

// ParseAllScanned parses every scanned file not yet checked, and checks
// what scanFile read from each (see ParseScanned).
func (d *OutDir) ParseAllScanned() error {
	for _, pc := range d.Previous {
		if err := pc.ParseScanned(d, func(string) bool { return false }); err != nil {
			return err
		}
	}
	return nil
}

// ReadOwnDir checks a directory that split writes beside the contexts
// (such as the GitOps engine's): it exists or not, and when it does its
// marker names it (name) and it holds only the files the marker lists,
// which it returns.
func ReadOwnDir(dir, shown, name string) (files []string, exists bool, err error) {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !info.IsDir() {
		return nil, true, fmt.Errorf("%s is not a directory (a symlink?): split writes a directory there and will not replace anything else", shown)
	}
	files, _, err = checkContextDir(dir, shown, name)
	return files, true, err
}

// CheckTargets refuses, before anything is written, a directory of one of
// contexts that exists but that the root marker does not list: split did
// not write it, and nothing split did not write is replaced.
func (d *OutDir) CheckTargets(contexts []string) error {
	previous := d.Contexts()
	for _, c := range contexts {
		target := filepath.Join(d.Path, c)
		if _, err := os.Lstat(target); err == nil && !slices.Contains(previous, c) {
			return fmt.Errorf("%s exists and was %w (%s does not list it): move it away",
				filepath.Join(d.Given, c), ErrNotSplitDir, filepath.Join(d.Given, MarkerFile))
		}
	}
	return nil
}
