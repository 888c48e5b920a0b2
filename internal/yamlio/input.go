package yamlio

import (
	"io"
	"os"
	"sync"
)

// readInput reads all of r: a regular file is mapped into memory (release
// unmaps it; nothing read from it may be used after that), anything else
// is read in blocks (release does nothing). On a read error, data is what
// was read before it.
func readInput(r io.Reader) (data []byte, release func(), err error) {
	if f, ok := r.(*os.File); ok {
		if data, unmap := mapInput(f); data != nil {
			return data, sync.OnceFunc(unmap), nil
		}
	}
	data, err = readAll(r)
	return data, func() {}, err
}

// readAll reads the whole input in blocks copied once at the end, rather
// than into a buffer grown (and copied) again and again. An input that
// knows its length (a bytes.Reader, as in tests and fuzzing) is read into
// one block of that size: zeroing a 4 MiB block for a small input took
// most of a fuzz execution.
func readAll(in io.Reader) ([]byte, error) {
	block := 4 << 20
	if l, ok := in.(interface{ Len() int }); ok && l.Len() < block {
		block = l.Len() + 1 // the extra byte sees the end in the same read
	}
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
