//go:build !linux

package outdir

import (
	"io/fs"
	"syscall"
)

// fileID: elsewhere than on Linux, files are always read to be compared.
type fileID struct {
	dev   uint64
	ctime syscall.Timespec
}

func idOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }

func (fileID) changedBefore(syscall.Timespec) bool { return false }

// SingleLink: elsewhere than on Linux, links are not counted, so no file
// is known to have a single name (and split writes every context again).
func SingleLink(fs.FileInfo) bool { return false }
