package localfleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// sleepPath is a program that runs until it is stopped.
func sleepPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/sleep", "/usr/bin/sleep"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no sleep program")
	return ""
}

// TestDownStopsWhatUpStarted: a detached process has a pid file; Down
// stops it, removes the fleet directory, and a second Up in the same
// directory is refused while a recorded process still runs.
func TestDownStopsWhatUpStarted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := prepareDir(dir, "pkg"); err != nil {
		t.Fatal(err)
	}
	l := &Launcher{Detach: true, PidDir: filepath.Join(dir, pidDir)}
	p, err := l.StartProc(dir, "sleeper", sleepPath(t), "300")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := prepareDir(dir, "pkg"); err == nil || !strings.Contains(err.Error(), "a fleet is running") {
		t.Errorf("prepareDir over a running fleet: %v, want a refusal", err)
	}
	stopped, err := Down(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stopped, []string{"sleeper"}) {
		t.Fatalf("Down stopped %v, want [sleeper]", stopped) // the clean-up kills it
	}
	<-p.Exited()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Down left %s: %v", dir, err)
	}
}

// TestDownSparesAReusedPid: a pid file whose pid runs another command
// line is not signalled.
func TestDownSparesAReusedPid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := prepareDir(dir, "pkg"); err != nil {
		t.Fatal(err)
	}
	// Another program, started outside the fleet.
	other, err := (&Launcher{}).StartProc(t.TempDir(), "other", sleepPath(t), "300")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	// The fleet's record of a process that had the same pid.
	fake := &Proc{Name: "etcd", Cmd: other.Cmd}
	saved := other.Cmd.Args
	other.Cmd.Args = []string{"/nonexistent/etcd", "--name", "etcd"}
	err = writePidFile(filepath.Join(dir, pidDir), fake)
	other.Cmd.Args = saved
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	stopped, err := Down(dir, func(format string, args ...any) { lines = append(lines, format) })
	if err != nil || len(stopped) != 0 {
		t.Fatalf("Down: stopped %v, %v; want nothing stopped", stopped, err)
	}
	if err := syscall.Kill(other.Cmd.Process.Pid, 0); err != nil {
		t.Errorf("Down signalled pid %d, which runs another command line: %v", other.Cmd.Process.Pid, err)
	}
	select {
	case <-other.Exited():
		t.Error("the other program exited")
	default:
	}
	if !slices.Contains(lines, "%s: not running") {
		t.Errorf("Down logged %q, want the record reported as not running", lines)
	}
}

// TestDownRefusesAStrangeDirectory: Down never removes a directory that
// Up did not make.
func TestDownRefusesAStrangeDirectory(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Down(dir, nil); err == nil || !strings.Contains(err.Error(), "not a fleet directory") {
		t.Errorf("Down on a directory without %s: %v, want a refusal", markerFile, err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("Down removed %s: %v", keep, err)
	}
	if err := prepareDir(dir, "pkg"); err == nil {
		t.Error("prepareDir took over a directory that is not a fleet's")
	}
}
