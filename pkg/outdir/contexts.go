package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Contexts returns the contexts of a split's output directory, in the
// order its marker lists them (the config's). It reads only the marker,
// not the packages.
func Contexts(dir string) ([]string, error) {
	names, _, err := readMarker(filepath.Join(dir, MarkerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s was %w (it has no %s file): give the output directory of shard-router split", dir, ErrNotSplitDir, MarkerFile)
	}
	return names, err
}
