package yamlio

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Function is a KRM function in the two forms function mode runs: on the
// whole list through kyaml's framework (the reference path), and item by
// item (the streaming path). Both forms must do the same to the items.
type Function[T any] interface {
	// Process is the function on the whole list: the reference path.
	framework.ResourceListProcessor
	// ReadItem takes what Decide needs from one item, as the reference
	// path's Process sees it (after kyaml's internal-annotation
	// preprocessing). It is called from several goroutines.
	ReadItem(item *yaml.RNode) T
	// Decide is Process on the items read. It returns the edit to make to
	// each item (nil: every item is written unchanged), the results to
	// write, and the error RunFunction returns.
	Decide(functionConfig *yaml.RNode, items []T) (edit Edit, results framework.Results, err error)
}

// Edit changes item i before it is written. It is called from several
// goroutines, once per item.
type Edit func(i int, item *yaml.RNode) error

// RunFunction is function mode: it reads a ResourceList from in and writes
// fn's ResourceList to out, returning what framework.Execute returns
// (framework.Results when a result is an error; the output is then written
// with the items unchanged; nothing is written when the input cannot be
// read).
//
// Its output is byte for byte that of the reference path. It reads the
// whole input, then takes the streaming path when the input is laid out as
// kpt writes it (see splitResourceList and prepareStream): items are
// decoded, decided and encoded one at a time, so time and memory grow
// linearly with the package. Any input it is not sure about goes to the
// reference path, on the same bytes; opts.Reference sends every input
// there.
func RunFunction[T any](in io.Reader, out io.Writer, fn Function[T], opts Options) error {
	if f, ok := in.(*os.File); ok {
		if data, unmap := mapInput(f); data != nil {
			release := sync.OnceFunc(unmap)
			defer release()
			return runFunction(data, out, fn, opts, release)
		}
	}
	data, err := readAll(in)
	if err != nil {
		// Replay what was read and the error, so the reference path reports
		// it in its own words.
		return runReference(io.MultiReader(bytes.NewReader(data), errReader{err}), nil, out, fn)
	}
	return runFunction(data, out, fn, opts, nil)
}

// runFunction is RunFunction on the whole input. release, when not nil,
// unmaps a mapped input: the streaming path calls it once it no longer
// needs the input.
func runFunction[T any](data []byte, out io.Writer, fn Function[T], opts Options, release func()) error {
	if !opts.Reference {
		done := func() {}
		if opts.Streaming != nil {
			inHeap := len(data)
			if release != nil {
				inHeap = 0
			}
			done = opts.Streaming(len(data), inHeap)
		}
		// prepareStream writes nothing; its only errors are refusals.
		s, err := prepareStream(data, fn, release)
		if err == nil {
			defer done()
			if !s.footComments.Load() {
				return s.write(out)
			}
			var buf bytes.Buffer
			err := s.write(&buf)
			if _, werr := out.Write(settleList(buf.Bytes())); werr != nil && err == nil {
				err = werr
			}
			return err
		}
		done() // the reference path holds the whole list
	}
	return runReference(bytes.NewReader(data), data, out, fn)
}

// runReference is function mode on the plain kyaml framework path: the
// reference that the streaming path must match, and its fallback. data is
// what in reads, when known (for a clearer error).
//
// An item that is not an object (CheckResource) is refused before p sees
// it, and nothing is written: kyaml would refuse some of them with an
// error that names no item, and hand p the others.
func runReference(in io.Reader, data []byte, out io.Writer, p framework.ResourceListProcessor) error {
	// framework.Execute also accepts bare resources, and writes them back
	// with reader annotations added: hold the output until the input is
	// known to be a ResourceList, so that stdout only ever holds one.
	var buf bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: in, Writer: &buf, KeepReaderAnnotations: true}
	var refused error
	var settle bool
	err := framework.Execute(framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
		if refused = CheckItems(rl.Items); refused != nil {
			return refused
		}
		settle = hasFootComments(rl.Items) || hasFootComments([]*yaml.RNode{rl.FunctionConfig})
		return keepingScalars{p}.Process(rl)
	}), rw)
	switch {
	case refused != nil:
		return refused
	case err != nil && buf.Len() == 0 && data != nil:
		if shape := explainReadError(data); shape != nil {
			return shape
		}
	}
	if buf.Len() > 0 && rw.WrappingKind != kio.ResourceListKind {
		return fmt.Errorf("the input is not a ResourceList (kind: %s with items or functionConfig)", kio.ResourceListKind)
	}
	written := buf.Bytes()
	if settle {
		written = settleList(written)
	}
	if _, werr := out.Write(written); werr != nil && err == nil {
		err = werr
	}
	return err
}

// keepingScalars is a processor that leaves every item and the function
// config with scalars the writer keeps (KeepScalars).
type keepingScalars struct {
	framework.ResourceListProcessor
}

func (p keepingScalars) Process(rl *framework.ResourceList) error {
	err := p.ResourceListProcessor.Process(rl)
	for _, item := range rl.Items {
		KeepScalars(item.YNode())
	}
	KeepScalars(rl.FunctionConfig.YNode())
	return err
}

// streamRun is an input accepted by the streaming path, read and decided,
// ready to be written.
type streamRun struct {
	*List
	// format is the internal-annotation format kyaml reconciles every item
	// to (determined from all items, as ReconcileInternalAnnotations does).
	format map[string]string
	// bothFormats: items are reconciled to carry both the internal and the
	// legacy annotations, which canonical items already do.
	bothFormats bool
	// canonical[i]: kyaml's annotation bookkeeping does nothing to item i
	// but add and remove its resource id (see canonical).
	canonical []bool
	// packed[i] is item i as the first pass parsed it (pack.go); the second
	// pass rebuilds it from there and drops it.
	packed [][]byte
	// release, when not nil, unmaps data.
	release func()

	results framework.Results
	// retErr is what Decide returned as the error.
	retErr error
	// edit is the edit to apply, nil when the items are left unchanged
	// (an error result).
	edit Edit
	// footComments: an item or the function config holds a foot comment,
	// which the next read may move, so the output is settled (settleList).
	footComments atomic.Bool
}

// prepareStream does everything the reference path does before writing:
// it reads the config, reads every item (as kyaml would, after its
// internal-annotation preprocessing) and decides them. It returns a
// fallback error, and writes nothing, whenever the input is not one it can
// stream exactly; then the reference path takes over.
func prepareStream[T any](data []byte, fn Function[T], release func()) (*streamRun, error) {
	l, err := ReadList(data)
	if err != nil {
		return nil, err
	}
	s := &streamRun{List: l, release: release}
	items := make([]T, l.Len())
	if err := s.readItems(func(i int, rn *yaml.RNode) { items[i] = fn.ReadItem(rn) }); err != nil {
		return nil, err
	}
	s.edit, s.results, s.retErr = fn.Decide(s.functionConfig, items)
	return s, nil
}

// readItems is the first pass: it reads every item as the reference path
// sees it when Process runs (after kyaml's internal-annotation
// preprocessing) and passes it to read, records which items kyaml's
// bookkeeping leaves alone, and the annotation format kyaml will reconcile
// them to.
func (s *streamRun) readItems(read func(i int, rn *yaml.RNode)) error {
	n := s.Len()
	formats := make([]annoFormat, n)
	s.canonical = make([]bool, n)
	s.packed = make([][]byte, n)
	var scratch sync.Pool
	err := Parallel(n, func(i int) error {
		rn, err := s.Item(i)
		if err != nil {
			return err
		}
		if err := CheckResource(rn.YNode()); err != nil {
			return fallback(fmt.Sprintf("item %d: %v", i, err)) // the reference refuses it
		}
		buf, _ := scratch.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		*buf = packItem((*buf)[:0], rn.YNode())
		s.packed[i] = bytes.Clone(*buf)
		scratch.Put(buf)
		if hasFootComment(rn.YNode(), 0) {
			s.footComments.Store(true)
		}
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
		read(i, rn)
		return nil
	})
	if err != nil {
		return err
	}
	if s.format, err = reconcileFormat(formats); err != nil {
		return err
	}
	s.bothFormats = len(s.format) == 2
	if s.functionConfig != nil && hasFootComment(s.functionConfig.YNode(), 0) {
		s.footComments.Store(true)
	}
	// The packed items replace the input: from here on the streaming path
	// cannot refuse the input any more.
	s.data = nil
	if s.release != nil {
		s.release()
	}
	return nil
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
		KeepScalars(s.functionConfig.YNode())
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

func (s *streamRun) writeItems(out io.Writer) error {
	n := s.Len()
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
// and writing it (kyaml's preprocessing, the function's edit, kyaml's
// reconciliation, the writer's cleanup) and appends its encoding as an
// entry of `items:`. prepareStream ran the same kyaml steps on the same
// bytes without error, and the edit must only touch labels and annotations
// kyaml does not reconcile, so an error here is a bug, not an input to
// refuse.
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
	KeepScalars(rn.YNode())
	return encodeItem(buf, rn.YNode())
}

// apply is Process's per-item step, the edit Decide returned.
func (s *streamRun) apply(i int, rn *yaml.RNode) error {
	if s.edit == nil {
		return nil
	}
	return s.edit(i, rn)
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

// StreamRefusal reports why function mode's streaming path would leave
// data to the reference path (a fallback error), or nil when it streams
// it. Whether it streams does not depend on the function.
func StreamRefusal(data []byte) error {
	l, err := ReadList(data)
	if err != nil {
		return err
	}
	s := &streamRun{List: l}
	return s.readItems(func(int, *yaml.RNode) {})
}
