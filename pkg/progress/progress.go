// Package progress shows how far a long run has come, on one line of a
// terminal's stderr that it rewrites and clears at the end. It writes
// nothing when stderr is not a terminal (a pipe, a file, a CI log), nor for
// a run on fewer than Threshold objects: a person waiting at a terminal
// sees it, a log or a script never does. Before the number of objects is
// known (while the input is read), a phase is shown once it has lasted
// slowPhase.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Threshold is the number of objects from which a run shows its progress.
const Threshold = 10000

// tick is how often the line is redrawn, with the phase's elapsed time.
const tick = 250 * time.Millisecond

// slowPhase is how long a phase of a run whose size is not known yet runs
// before it is shown.
const slowPhase = time.Second

// IsTerminal reports whether w is a terminal (an *os.File that is a TTY).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Meter is the progress of one run: a phase ("routing 12000 objects") and
// how long it has taken so far. Its methods do nothing on a nil Meter.
type Meter struct {
	w   io.Writer
	tty bool
	now func() time.Time

	mu      sync.Mutex
	objects int
	phase   string
	since   time.Time
	drawn   bool
	stop    chan struct{}
	stopped chan struct{}
}

// New returns the meter of a run whose progress goes to w, shown only
// when tty (see IsTerminal) and once the run has Threshold objects.
func New(w io.Writer, tty bool) *Meter {
	return &Meter{w: w, tty: tty, now: time.Now, objects: -1}
}

// Objects ends the reading phase with how many objects the run has: the
// line is cleared (the command may print the config's errors next), and
// below Threshold nothing more is shown.
func (m *Meter) Objects(n int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects, m.phase = n, ""
	m.clearLocked()
}

// Phase starts the next phase of the run; its text replaces the last.
func (m *Meter) Phase(format string, args ...any) {
	if m == nil || !m.tty {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.phase, m.since = fmt.Sprintf(format, args...), m.now()
	if m.stop == nil {
		m.stop, m.stopped = make(chan struct{}), make(chan struct{})
		go m.redraw(m.stop, m.stopped)
	}
	m.drawLocked()
}

// Done clears the line, so that what the run prints next starts on a clean
// one; call it before printing anything else to the terminal. Calling it
// again does nothing.
func (m *Meter) Done() {
	if m == nil {
		return
	}
	m.mu.Lock()
	stop, stopped := m.stop, m.stopped
	m.stop = nil
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clearLocked()
	m.phase = ""
}

func (m *Meter) clearLocked() {
	if m.drawn {
		fmt.Fprint(m.w, "\r\x1b[K")
		m.drawn = false
	}
}

func (m *Meter) redraw(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.mu.Lock()
			m.drawLocked()
			m.mu.Unlock()
		}
	}
}

// drawLocked rewrites the line: the phase and its elapsed time.
func (m *Meter) drawLocked() {
	if !m.tty || m.phase == "" {
		return
	}
	elapsed := m.now().Sub(m.since)
	if m.objects >= 0 && m.objects < Threshold || m.objects < 0 && elapsed < slowPhase {
		return
	}
	fmt.Fprintf(m.w, "\r\x1b[Kshard-router: %s (%.1fs)", m.phase, elapsed.Seconds())
	m.drawn = true
}
