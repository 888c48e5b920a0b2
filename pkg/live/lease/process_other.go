//go:build !unix

package lease

// processRuns cannot tell on this system: every pid is taken as running.
func processRuns(int) bool { return true }
