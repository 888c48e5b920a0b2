package outdir

import (
	"io/fs"
	"syscall"
)

// fileID is what tells, without reading it, that a file still holds the
// bytes read from it: its inode, size and times. Changing a file's bytes
// sets its change time (ctime) to the filesystem's clock, and no system
// call sets it back.
type fileID struct {
	dev, ino     uint64
	size         int64
	ctime, mtime syscall.Timespec
}

// idOf is the file's id; false where the system does not say.
func idOf(info fs.FileInfo) (fileID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, ctime: st.Ctim, mtime: st.Mtim}, true // Dev is uint32 on some architectures
}

// changedBefore reports whether the file's last change is older than
// time t, a ctime of the same filesystem.
func (id fileID) changedBefore(t syscall.Timespec) bool {
	return id.ctime.Sec < t.Sec || (id.ctime.Sec == t.Sec && id.ctime.Nsec < t.Nsec)
}

// SingleLink reports whether the file has no other name (hard link).
func SingleLink(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}
