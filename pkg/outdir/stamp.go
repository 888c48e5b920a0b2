package outdir

import "io/fs"

// Stamp is a file as it was when its bytes were compared, to tell later,
// without reading it again, that it still holds them (Same), as Unchanged
// tells it of a scanned file.
type Stamp struct {
	id fileID
	ok bool
}

// StampOf stamps the file whose Lstat is info, as compared after ref was
// written (the Lstat of a file just written on the same filesystem): only
// a file last changed before ref can be told unchanged later, since any
// change from then on gives it a ctime at or past ref's. Its Stamp is
// otherwise never Same, and the file is read again.
func StampOf(info, ref fs.FileInfo) Stamp {
	id, ok := idOf(info)
	refID, refOK := idOf(ref)
	if !ok || !refOK || id.dev != refID.dev || !id.changedBefore(refID.ctime) {
		return Stamp{}
	}
	return Stamp{id: id, ok: true}
}

// Same reports whether the file whose Lstat is info is the stamped file,
// unchanged since.
func (s Stamp) Same(info fs.FileInfo) bool {
	if !s.ok {
		return false
	}
	id, ok := idOf(info)
	return ok && id == s.id
}
