package outdir

// ScanFile is scanFile, for the differential tests.
var ScanFile = scanFile

// ReadFile is the parsing reader scanFile must agree with: file f of a
// previous context directory dir of context ctx, without digests.
func ReadFile(ctx, dir, f string) ([]HeldResource, error) {
	return (&PrevContext{Name: ctx}).readFile(dir, f, dir, false)
}
