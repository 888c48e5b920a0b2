package yamlio

import (
	"bytes"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// yaml.v3 does not read back every comment where it wrote it: a comment
// block that ends a nested collection, written at an outer indentation (a
// commented-out container at the end of a Deployment's list), becomes the
// foot comment of another node when it is read again, so the next pass
// writes it elsewhere, re-indented, and drops the blank line after it. A
// package file is written once and read by the next split, or by kpt: its
// bytes must not change on that pass. Such comments are foot comments, so
// only files that hold one pay for the check.

// settleComments returns the bytes a read (as kpt reads a package file)
// and a write (kio.ByteWriter) of out give, once they no longer change:
// out itself when it is already a fixed point, which is the common case.
func settleComments(out []byte) []byte {
	for range 3 {
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(out), PreserveSeqIndent: true,
			WrapBareSeqNode: true, DisableUnwrapping: true}).Read()
		if err != nil || len(nodes) == 0 {
			return out
		}
		for _, n := range nodes {
			KeepScalars(n.YNode())
		}
		var buf bytes.Buffer
		if err := (kio.ByteWriter{Writer: &buf}).Write(nodes); err != nil || bytes.Equal(buf.Bytes(), out) {
			return out
		}
		out = buf.Bytes()
	}
	return out
}

// settleList is settleComments for function mode's output, a ResourceList:
// the bytes kyaml's reader and writer of a ResourceList (those of
// framework.Execute, the function's next pass and kpt) give, once they no
// longer change. A foot comment that ends an item is read as part of the
// next item there (no writer can keep it with its item: kpt's read of the
// output would move it all the same), and one that ends a nested list
// moves, so the first pass writes what every later pass leaves.
func settleList(out []byte) []byte {
	for range 3 {
		rw := &kio.ByteReadWriter{Reader: bytes.NewReader(out), KeepReaderAnnotations: true}
		nodes, err := rw.Read()
		if err != nil || rw.WrappingKind != kio.ResourceListKind {
			return out
		}
		for _, n := range nodes {
			KeepScalars(n.YNode())
		}
		KeepScalars(rw.FunctionConfig.YNode())
		var buf bytes.Buffer
		rw.Writer = &buf
		if err := rw.Write(nodes); err != nil || bytes.Equal(buf.Bytes(), out) {
			return out
		}
		out = buf.Bytes()
	}
	return out
}

// hasFootComments reports whether any node holds a foot comment.
func hasFootComments(nodes []*yaml.RNode) bool {
	for _, n := range nodes {
		if hasFootComment(n.YNode(), 0) {
			return true
		}
	}
	return false
}

func hasFootComment(n *yaml.Node, depth int) bool {
	if n == nil || n.Kind == yaml.AliasNode || depth > maxDepth {
		return false
	}
	if n.FootComment != "" {
		return true
	}
	for _, c := range n.Content {
		if hasFootComment(c, depth+1) {
			return true
		}
	}
	return false
}

// SettleStream is settleComments for a YAML stream that kio.ByteWriter
// wrote from nodes (split's stream form, read by `kpt live apply -`): out
// itself unless a node holds a foot comment.
func SettleStream(out []byte, nodes []*yaml.RNode) []byte {
	if !hasFootComments(nodes) {
		return out
	}
	return settleComments(out)
}
