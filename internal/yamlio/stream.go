package yamlio

import (
	"bytes"
	"io"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ReadStream reads a ResourceList or a plain YAML stream and returns
// read's value for every resource, in order, and the functionConfig (nil
// when absent or empty). A ResourceList laid out as kpt writes it is read
// one item at a time on every core (see ReadList), read being called from
// several goroutines with fast true; anything else, and every input under
// opts.Reference, is read whole by kyaml's reader (the reference path),
// read being called in order with fast false.
func ReadStream[T any](r io.Reader, opts Options, read func(n *yaml.RNode, fast bool) T) ([]T, *yaml.RNode, error) {
	data, release, err := readInput(r)
	if err != nil {
		return nil, nil, err
	}
	defer release() // what read keeps must be copies
	if !opts.Reference {
		if out, fc, err := readList(data, read); err == nil || !IsFallback(err) {
			return out, fc, err
		}
	}
	return readStreamReference(bytes.NewReader(data), read)
}

// readList is ReadStream's fast path.
func readList[T any](data []byte, read func(*yaml.RNode, bool) T) ([]T, *yaml.RNode, error) {
	l, err := ReadList(data)
	if err != nil {
		return nil, nil, err
	}
	out := make([]T, l.Len())
	// An item CheckResource refuses is reported only when no item needs
	// the reference path, and then the first one, as the reference does.
	refused := make([]error, l.Len())
	err = Parallel(l.Len(), func(i int) error {
		n, err := l.Item(i)
		if err != nil {
			return err
		}
		if err := CheckResource(n.YNode()); err != nil {
			refused[i] = resourceError("item", i, n.YNode(), err)
			return nil
		}
		out[i] = read(n, true)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, err := range refused {
		if err != nil {
			return nil, nil, err
		}
	}
	return out, l.FunctionConfig(), nil
}

// readStreamReference reads a ResourceList or YAML stream whole with
// kyaml's ByteReader: the reference that ReadStream's fast path must match.
func readStreamReference[T any](r io.Reader, read func(*yaml.RNode, bool) T) ([]T, *yaml.RNode, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	rr := &kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true, WrapBareSeqNode: true}
	nodes, err := rr.Read()
	if err != nil {
		if shape := explainReadError(data); shape != nil {
			return nil, nil, shape
		}
		return nil, nil, err
	}
	if rr.WrappingKind == "List" {
		// kyaml unwraps a lone kind: List; kpt does not (neither in
		// function mode nor from a package), so it stays one resource
		// here too, which routing refuses as a List: one answer for one
		// input, whichever way it is read.
		rr = &kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true, WrapBareSeqNode: true, DisableUnwrapping: true}
		if nodes, err = rr.Read(); err != nil {
			return nil, nil, err
		}
	}
	var fc *yaml.RNode
	if rr.FunctionConfig != nil && !rr.FunctionConfig.IsNilOrEmpty() {
		fc = rr.FunctionConfig
	}
	what := "resource"
	if rr.WrappingKind == kio.ResourceListKind {
		what = "item"
	}
	if err := checkResources(nodes, what); err != nil {
		return nil, nil, err
	}
	out := make([]T, len(nodes))
	for i, n := range nodes {
		out[i] = read(n, false)
	}
	return out, fc, nil
}
