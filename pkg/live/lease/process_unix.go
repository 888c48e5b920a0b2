//go:build unix

package lease

import (
	"errors"
	"syscall"
)

// processRuns reports whether a process with this pid runs on this host
// (another user's included); a pid that cannot be told is taken as
// running.
func processRuns(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
