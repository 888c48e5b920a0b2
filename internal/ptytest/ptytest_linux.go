// Package ptytest opens a pseudo-terminal for tests that must see what a
// program writes to a terminal. Only tests import it.
package ptytest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Open returns a pty's controlling side and its terminal, both closed at
// the end of the test.
func Open(t testing.TB) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("the pty's number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// Capture reads everything written to the terminal of ptmx until the
// returned function is called, after every writer is done and the terminal
// closed; it returns what was read.
func Capture(ptmx *os.File) func() string {
	var b bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Reading the controlling side ends with EIO once the terminal
		// is closed.
		if _, err := io.Copy(&b, ptmx); err != nil && !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) {
			b.WriteString("\nptytest: " + err.Error())
		}
	}()
	return func() string {
		wg.Wait()
		return b.String()
	}
}
