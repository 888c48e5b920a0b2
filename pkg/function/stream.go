package function

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ReferenceEnv names the environment variable that, set to any non-empty
// value, makes Run always take the reference path (for benchmarks and for
// ruling the fast path out when debugging).
const ReferenceEnv = "SHARD_ROUTER_REFERENCE"

// Run is function mode: it reads a ResourceList from in and writes the
// routed ResourceList to out, returning what framework.Execute returns
// (framework.Results when a result is an error; the output is then written
// with the items unchanged; nothing is written when the input cannot be
// read).
//
// Its output is byte for byte that of RunReference. It reads the whole
// input, then takes the streaming path when the input is laid out as kpt
// writes it (see splitResourceList and prepareStream): items are decoded,
// routed and encoded one at a time, so time and memory grow linearly with
// the package. Any input it is not sure about goes to RunReference, on the
// same bytes.
func Run(in io.Reader, out io.Writer) error {
	if f, ok := in.(*os.File); ok {
		if data, unmap := mapInput(f); data != nil {
			release := sync.OnceFunc(unmap)
			defer release()
			return run(data, out, release)
		}
	}
	data, err := readAll(in)
	if err != nil {
		// Replay what was read and the error, so the reference path reports
		// it in its own words.
		return RunReference(io.MultiReader(bytes.NewReader(data), errReader{err}), out)
	}
	return run(data, out, nil)
}

// run is Run on the whole input. release, when not nil, unmaps a mapped
// input: the streaming path calls it once it no longer needs the input.
func run(data []byte, out io.Writer, release func()) error {
	if os.Getenv(ReferenceEnv) == "" {
		inHeap := len(data)
		if release != nil {
			inHeap = 0
		}
		restore := limitMemory(len(data), inHeap)
		// prepareStream writes nothing; its only errors are refusals.
		s, err := prepareStream(data, release)
		if err == nil {
			defer restore()
			return s.write(out)
		}
		restore() // the reference path holds the whole list: no limit
	}
	return RunReference(bytes.NewReader(data), out)
}

// limitMemory sets a soft memory limit for the streaming path, unless one
// is set already (GOMEMLIMIT), and returns what restores the previous one.
// At the end of the first pass the heap holds the input (inHeap bytes of
// it: none when it is mapped), the packed items (about the input's size)
// and the items' routing facts (more than half of it); without a limit the
// collector lets the heap grow to twice that before collecting. With it, it
// collects more often near the end of the first pass instead.
func limitMemory(input, inHeap int) func() {
	prev := debug.SetMemoryLimit(-1)
	if prev != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(int64(inHeap) + 3*int64(input) + 64<<20)
	return func() { debug.SetMemoryLimit(prev) }
}

// RunReference is function mode on the plain kyaml framework path: the
// reference that the streaming path must match, and its fallback.
func RunReference(in io.Reader, out io.Writer) error {
	// framework.Execute also accepts bare resources, and writes them back
	// with reader annotations added: hold the output until the input is
	// known to be a ResourceList, so that stdout only ever holds one.
	var buf bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: in, Writer: &buf, KeepReaderAnnotations: true}
	err := framework.Execute(Processor{}, rw)
	if buf.Len() > 0 && rw.WrappingKind != kio.ResourceListKind {
		return fmt.Errorf("the input is not a ResourceList (kind: %s with items or functionConfig)", kio.ResourceListKind)
	}
	if _, werr := out.Write(buf.Bytes()); werr != nil && err == nil {
		err = werr
	}
	return err
}

// readAll reads the whole input in blocks copied once at the end, rather
// than into a buffer grown (and copied) again and again.
func readAll(in io.Reader) ([]byte, error) {
	const block = 4 << 20
	var blocks [][]byte
	total := 0
	for {
		b := make([]byte, block)
		n, err := io.ReadFull(in, b)
		blocks = append(blocks, b[:n])
		total += n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return join(blocks, total), err
		}
	}
	return join(blocks, total), nil
}

func join(blocks [][]byte, total int) []byte {
	if len(blocks) == 1 {
		return blocks[0]
	}
	out := make([]byte, 0, total)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// streamRun is an input accepted by the streaming path, read and routed,
// ready to be written.
type streamRun struct {
	data   []byte
	layout *layout
	// wrapAPIVersion and wrapKind are the ResourceList's, echoed back.
	wrapAPIVersion, wrapKind string
	functionConfig           *yaml.RNode
	// format is the internal-annotation format kyaml reconciles every item
	// to (determined from all items, as ReconcileInternalAnnotations does).
	format map[string]string
	// bothFormats: items are reconciled to carry both the internal and the
	// legacy annotations, which canonical items already do.
	bothFormats bool
	// canonical[i]: kyaml's annotation bookkeeping does nothing to item i
	// but add and remove its resource id (see canonical).
	canonical []bool
	// packed[i] is item i as the first pass parsed it (stream_pack.go);
	// the second pass rebuilds it from there and drops it.
	packed [][]byte
	// release, when not nil, unmaps data.
	release func()

	results framework.Results
	// retErr is what Process returned.
	retErr error
	// outcome is the routing to apply, nil when the items are left
	// unchanged (an error result).
	outcome *Outcome
}

// prepareStream does everything the reference path does before writing:
// it reads the config, reads every item (as kyaml would, after its
// internal-annotation preprocessing) and routes them. It returns a fallback
// error, and writes nothing, whenever the input is not one it can stream
// exactly; then the reference path takes over.
func prepareStream(data []byte, release func()) (*streamRun, error) {
	s, err := newStreamRun(data)
	if err != nil {
		return nil, err
	}
	s.release = release
	items, err := s.readItems()
	if err != nil {
		return nil, err
	}
	s.process(items)
	return s, nil
}

// newStreamRun splits the input and reads everything but the items.
func newStreamRun(data []byte) (*streamRun, error) {
	l, err := splitResourceList(data)
	if err != nil {
		return nil, err
	}
	s := &streamRun{data: data, layout: l}
	// The skeleton is small: read it as the reference does.
	br := &kio.ByteReader{Reader: bytes.NewReader(l.skeleton)}
	rest, err := br.Read()
	switch {
	case err != nil:
		return nil, fallback("cannot read the ResourceList: " + err.Error())
	case len(rest) != 0 || br.WrappingKind != kio.ResourceListKind:
		return nil, fallback("not a ResourceList")
	case br.Results != nil:
		return nil, fallback("results in the input")
	}
	s.wrapAPIVersion, s.wrapKind, s.functionConfig = br.WrappingAPIVersion, br.WrappingKind, br.FunctionConfig
	return s, nil
}

// readItems is the first pass: it reads every item as the reference path
// sees it when Process runs (after kyaml's internal-annotation
// preprocessing), records which items kyaml's bookkeeping leaves alone, and
// the annotation format kyaml will reconcile them to.
func (s *streamRun) readItems() ([]Item, error) {
	n := len(s.layout.items)
	items := make([]Item, n)
	formats := make([]annoFormat, n)
	s.canonical = make([]bool, n)
	s.packed = make([][]byte, n)
	var scratch sync.Pool
	err := parallel(n, func(i int) error {
		rn, err := s.readItem(i)
		if err != nil {
			return err
		}
		buf, _ := scratch.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		*buf = packItem((*buf)[:0], rn.YNode())
		s.packed[i] = bytes.Clone(*buf)
		scratch.Put(buf)
		if canonical(rn.YNode()) {
			// kyaml's preprocessing only adds its resource id: do just that.
			if err := rn.PipeE(yaml.SetAnnotation(kioutil.InternalAnnotationsMigrationResourceIDAnnotation, "0")); err != nil {
				return fallback("kyaml refuses an item: " + err.Error())
			}
			s.canonical[i] = true
			formats[i] = annoFormat{any: true, internal: true, legacy: true}
		} else {
			annos, err := kio.PreprocessResourcesForInternalAnnotationMigration([]*yaml.RNode{rn})
			if err != nil {
				return fallback("kyaml refuses an item: " + err.Error())
			}
			formats[i] = formatOf(annos["0"])
		}
		items[i] = ItemOf(rn)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.format, err = reconcileFormat(formats); err != nil {
		return nil, err
	}
	s.bothFormats = len(s.format) == 2
	// The packed items replace the input: from here on the streaming path
	// cannot refuse the input any more.
	s.data = nil
	if s.release != nil {
		s.release()
	}
	return items, nil
}

// process is Processor.Process on items already read.
func (s *streamRun) process(items []Item) {
	s.outcome, s.results = LoadAndDecide(s.functionConfig, items)
	if s.outcome == nil {
		s.retErr = s.results
	}
}

// readItem decodes item i alone. Its lines are a one-entry block sequence,
// so the item is parsed in the same context as inside the whole list.
func (s *streamRun) readItem(i int) (*yaml.RNode, error) {
	r := s.layout.items[i]
	chunk := s.data[r[0]:r[1]]
	var doc yaml.Node
	// Unmarshal parses the bytes in place; the ByteReader's Decoder would
	// copy them through a reader first. Both run the same parser.
	if err := yaml.Unmarshal(chunk, &doc); err != nil {
		return nil, fallback(fmt.Sprintf("item %d does not parse alone: %v", i, err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode ||
		len(doc.Content[0].Content) != 1 {
		return nil, fallback(fmt.Sprintf("item %d is not one sequence entry", i))
	}
	item := doc.Content[0].Content[0]
	if item.Kind != yaml.MappingNode {
		return nil, fallback(fmt.Sprintf("item %d is not a mapping", i))
	}
	if bytes.ContainsAny(chunk, "&*") && hasAnchors(item) {
		return nil, fallback(fmt.Sprintf("item %d has anchors or aliases", i))
	}
	return yaml.NewRNode(item), nil
}

func hasAnchors(n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if hasAnchors(c) {
			return true
		}
	}
	return false
}

// annoFormat records which path/index/id annotation forms one item carried
// before preprocessing, as kyaml's determineAnnotationsFormat reads them.
type annoFormat struct{ any, internal, legacy bool }

func formatOf(annos map[string]string) annoFormat {
	has := func(k string) bool { _, ok := annos[k]; return ok }
	f := annoFormat{
		internal: has(kioutil.PathAnnotation) || has(kioutil.IndexAnnotation) || has(kioutil.IdAnnotation),
		legacy:   has(kioutil.LegacyPathAnnotation) || has(kioutil.LegacyIndexAnnotation) || has(kioutil.LegacyIdAnnotation),
	}
	f.any = f.internal || f.legacy
	return f
}

// reconcileFormat returns the annotations of a stand-in entry that makes
// kio.ReconcileInternalAnnotations, called on one item, format it as it
// formats every item when called on the whole list. Inputs it would reject
// as inconsistent are refused, so the reference path reports them.
func reconcileFormat(formats []annoFormat) (map[string]string, error) {
	var first *annoFormat
	for i := range formats {
		f := &formats[i]
		if !f.any {
			continue
		}
		if first == nil {
			first = f
		} else if *f != *first {
			return nil, fallback("inconsistent internal annotation formats")
		}
	}
	out := map[string]string{}
	if first != nil && first.internal {
		out[kioutil.PathAnnotation] = ""
	}
	if first != nil && first.legacy {
		out[kioutil.LegacyPathAnnotation] = ""
	}
	return out, nil
}

// write writes the ResourceList: header, each item as the reference writes
// it, then functionConfig and results. Items are rendered in parallel and
// written in order.
func (s *streamRun) write(out io.Writer) error {
	var head bytes.Buffer
	if err := encodeNode(&head, mappingNode(
		scalarNode("apiVersion"), scalarNode(s.wrapAPIVersion),
		scalarNode("kind"), scalarNode(s.wrapKind))); err != nil {
		return err
	}
	head.WriteString("items:\n")
	if _, err := out.Write(head.Bytes()); err != nil {
		return err
	}
	if err := s.writeItems(out); err != nil {
		return err
	}
	var tail bytes.Buffer
	if s.functionConfig != nil {
		if err := encodeNode(&tail, mappingNode(scalarNode("functionConfig"), s.functionConfig.YNode())); err != nil {
			return err
		}
	}
	if len(s.results) > 0 {
		tail.WriteString("results:\n")
		if err := writeResults(&tail, s.results); err != nil {
			return err
		}
	}
	if _, err := out.Write(tail.Bytes()); err != nil {
		return err
	}
	return s.retErr
}

// resultsBatch results are marshalled at a time: yaml.v3's emitter keeps
// every event of a document, so one document of thousands of results (one
// per context and datastore) would hold them all.
const resultsBatch = 64

// writeResults writes the entries of the results sequence as the reference
// does (it marshals the results, parses that, and encodes the node within
// the ResourceList), a batch at a time: each result is marshalled and
// parsed on its own, so batches give the same nodes.
func writeResults(buf *bytes.Buffer, results framework.Results) error {
	for lo := 0; lo < len(results); lo += resultsBatch {
		b, err := yaml.Marshal(results[lo:min(lo+resultsBatch, len(results))])
		if err != nil {
			return err
		}
		seq, err := yaml.Parse(string(b))
		if err != nil {
			return err
		}
		if err := encodeEntries(buf, "results", seq.YNode().Content...); err != nil {
			return err
		}
	}
	return nil
}

// batchSize items are rendered into one buffer by one worker.
const batchSize = 64

func (s *streamRun) writeItems(out io.Writer) error {
	n := len(s.layout.items)
	workers := runtime.GOMAXPROCS(0)
	type batch struct {
		lo, hi int
		done   chan struct{}
		buf    *bytes.Buffer
		err    error
	}
	// Batch buffers are reused: about 2*workers of them are in flight.
	pool := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	// order bounds the batches in flight, so memory does not grow with N.
	order := make(chan *batch, 2*workers)
	jobs := make(chan *batch, 2*workers)
	var stop atomic.Bool
	go func() {
		defer close(order)
		defer close(jobs)
		for lo := 0; lo < n && !stop.Load(); lo += batchSize {
			b := &batch{lo: lo, hi: min(lo+batchSize, n), done: make(chan struct{})}
			b.buf = pool.Get().(*bytes.Buffer)
			b.buf.Reset()
			order <- b
			jobs <- b
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range jobs {
				// The output is about the size of the input.
				b.buf.Grow(s.layout.items[b.hi-1][1] - s.layout.items[b.lo][0] + 128*(b.hi-b.lo))
				for i := b.lo; i < b.hi && b.err == nil; i++ {
					b.err = s.renderItem(i, b.buf)
				}
				close(b.done)
			}
		}()
	}
	var err error
	for b := range order {
		<-b.done
		if err == nil {
			err = b.err
			if err == nil {
				_, err = out.Write(b.buf.Bytes())
			}
			if err != nil {
				stop.Store(true)
			}
		}
		pool.Put(b.buf)
	}
	wg.Wait()
	return err
}

// renderItem does to item i what the reference path does between reading
// and writing it (kyaml's preprocessing, ApplyItem, kyaml's reconciliation,
// the writer's cleanup) and appends its encoding as an entry of `items:`.
// prepareStream ran the same kyaml steps on the same bytes without error,
// and ApplyItem only touches labels and annotations kyaml does not
// reconcile, so an error here is a bug, not an input to refuse.
func (s *streamRun) renderItem(i int, buf *bytes.Buffer) error {
	node, err := unpackItem(s.packed[i])
	if err != nil {
		return err
	}
	s.packed[i] = nil
	rn := yaml.NewRNode(node)
	if s.canonical[i] && s.bothFormats {
		// Preprocessing and reconciliation would only add and remove the
		// resource id; every check they make holds.
		id := kioutil.InternalAnnotationsMigrationResourceIDAnnotation
		if err := rn.PipeE(yaml.SetAnnotation(id, "0")); err != nil {
			return err
		}
		if err := s.apply(i, rn); err != nil {
			return err
		}
		if err := rn.PipeE(yaml.ClearAnnotation(id)); err != nil {
			return err
		}
	} else {
		annos, err := kio.PreprocessResourcesForInternalAnnotationMigration([]*yaml.RNode{rn})
		if err != nil {
			return err
		}
		if err := s.apply(i, rn); err != nil {
			return err
		}
		annos["format"] = s.format
		if err := kio.ReconcileInternalAnnotations([]*yaml.RNode{rn}, annos); err != nil {
			return err
		}
	}
	if err := yaml.ClearEmptyAnnotations(rn); err != nil {
		return err
	}
	return encodeItem(buf, rn.YNode())
}

// apply is Process's per-item step. Preprocessing succeeded on this node, so
// the metadata.annotations mapping exists and setting annotations cannot
// fail; an error here is a bug.
func (s *streamRun) apply(i int, rn *yaml.RNode) error {
	if s.outcome == nil {
		return nil
	}
	if err := s.outcome.ApplyItem(i, rn); err != nil {
		return fmt.Errorf("item %d: %w", i, err)
	}
	return nil
}

// canonical reports whether kyaml's internal-annotation preprocessing and
// reconciliation (when every item carries both forms) leave an item as they
// found it, but for their resource id: metadata.annotations, with unique
// keys and scalar values, already carries the internal and the legacy path
// and index annotations with equal, non-empty values, the id annotations
// both or neither, and no resource id. kpt writes items so.
func canonical(item *yaml.Node) bool {
	meta := uniqueField(item, "metadata")
	if meta == nil || meta.Kind != yaml.MappingNode {
		return false
	}
	annos := uniqueField(meta, "annotations")
	if annos == nil || annos.Kind != yaml.MappingNode {
		return false
	}
	if !uniqueKeys(annos) {
		return false
	}
	var path, lpath, index, lindex, id, lid *yaml.Node
	for k := 0; k+1 < len(annos.Content); k += 2 {
		key, v := annos.Content[k], annos.Content[k+1]
		if key.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return false
		}
		switch key.Value {
		case kioutil.PathAnnotation:
			path = v
		case kioutil.LegacyPathAnnotation:
			lpath = v
		case kioutil.IndexAnnotation:
			index = v
		case kioutil.LegacyIndexAnnotation:
			lindex = v
		case kioutil.IdAnnotation:
			id = v
		case kioutil.LegacyIdAnnotation:
			lid = v
		case kioutil.InternalAnnotationsMigrationResourceIDAnnotation:
			return false
		}
	}
	same := func(a, b *yaml.Node) bool { return a != nil && b != nil && a.Value != "" && a.Value == b.Value }
	return same(path, lpath) && same(index, lindex) && (id == nil && lid == nil || same(id, lid))
}

// uniqueKeys reports whether no key of a mapping repeats.
func uniqueKeys(m *yaml.Node) bool {
	c := m.Content
	if len(c) > 64 {
		seen := make(map[string]bool, len(c)/2)
		for k := 0; k < len(c); k += 2 {
			if seen[c[k].Value] {
				return false
			}
			seen[c[k].Value] = true
		}
		return true
	}
	for k := 0; k < len(c); k += 2 {
		for j := k + 2; j < len(c); j += 2 {
			if c[j].Value == c[k].Value {
				return false
			}
		}
	}
	return true
}

// uniqueField returns the value of a mapping's key when the key appears
// exactly once, nil otherwise.
func uniqueField(m *yaml.Node, name string) *yaml.Node {
	var v *yaml.Node
	for k := 0; k+1 < len(m.Content); k += 2 {
		if key := m.Content[k]; key.Kind == yaml.ScalarNode && key.Value == name {
			if v != nil {
				return nil
			}
			v = m.Content[k+1]
		}
	}
	return v
}

// encodeItem appends n as the reference encoder writes it as an entry of
// the top-level `items:` sequence.
func encodeItem(buf *bytes.Buffer, n *yaml.Node) error { return encodeEntries(buf, "items", n) }

// encodeEntries appends nodes as the reference encoder writes them as
// entries of the top-level sequence `key:`: it encodes `key: [nodes...]`
// with kyaml's encoder settings and drops the key line, so the entries are
// emitted in exactly the same context as in the whole list.
func encodeEntries(buf *bytes.Buffer, key string, nodes ...*yaml.Node) error {
	start := buf.Len()
	doc := mappingNode(scalarNode(key), &yaml.Node{Kind: yaml.SequenceNode, Content: nodes})
	if err := encodeNode(buf, doc); err != nil {
		return err
	}
	b := buf.Bytes()
	keyLine := len(key) + len(":\n")
	if len(b)-start < keyLine || string(b[start:start+keyLine]) != key+":\n" {
		return fmt.Errorf("internal error: unexpected encoding of %s entries: %.40q", key, b[start:])
	}
	copy(b[start:], b[start+keyLine:])
	buf.Truncate(len(b) - keyLine)
	return nil
}

func encodeNode(w io.Writer, n *yaml.Node) error {
	enc := yaml.NewEncoder(w) // kyaml's settings: indent 2, compact sequences
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}); err != nil {
		return err
	}
	return enc.Close()
}

func mappingNode(content ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: content}
}

func scalarNode(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// parallel calls f(i) for i in [0, n) on GOMAXPROCS workers, batchSize
// indexes at a time, and returns one of the errors, stopping early after
// the first.
func parallel(n int, f func(i int) error) error {
	return forEach(runtime.GOMAXPROCS(0), batchSize, n, f)
}

// forEach calls f(i) for i in [0, n) on the given number of workers, each
// taking batch indexes at a time, and returns one of the errors, stopping
// early after the first.
func forEach(workers, batch, n int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				lo := int(next.Add(int64(batch))) - batch
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+batch, n); i++ {
					if err := f(i); err != nil {
						once.Do(func() { first = err })
						failed.Store(true)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}
