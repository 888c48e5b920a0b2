package outdir

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps two directories in one rename(2) (RENAME_EXCHANGE).
// errNoExchange: the filesystem cannot.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoExchange
	}
	return err
}
