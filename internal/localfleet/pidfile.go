package localfleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidRecord is what a pid file holds: enough to tell, after a crash or a
// reboot, whether the pid still names the process that was started, and
// not some other one that got its number since.
type pidRecord struct {
	Name string   `json:"name"`
	Pid  int      `json:"pid"`
	Args []string `json:"args"`
	// file is the pid file it was read from.
	file string
}

// writePidFile records p in dir as NNN-<name>.json, NNN its start order.
func writePidFile(dir string, p *Proc) error {
	if dir == "" {
		return fmt.Errorf("%s: a detached process needs a pid directory", p.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	data, err := json.Marshal(pidRecord{Name: p.Name, Pid: p.Cmd.Process.Pid, Args: p.Cmd.Args})
	if err != nil {
		return err
	}
	// Written whole or not at all: a crash never leaves half a record, and
	// a reader never sees one (they skip the .tmp name).
	path := filepath.Join(dir, fmt.Sprintf("%03d-%s.json", len(entries), p.Name))
	if err := os.WriteFile(path+".tmp", append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// awaitExec returns once /proc shows p's command line, so that the record
// of it is recognised (running) from the moment it is written. Start
// returns when the kernel closes the close-on-exec pipe, which it does
// before the new program's arguments are in place: until then the pid's
// cmdline reads empty. A process that exits first needs no wait.
func awaitExec(p *Proc) error {
	r := pidRecord{Name: p.Name, Pid: p.Cmd.Process.Pid, Args: p.Cmd.Args}
	for range execAttempts {
		if r.running() {
			return nil
		}
		select {
		case <-p.exited:
			return nil
		case <-time.After(time.Millisecond):
		}
	}
	return fmt.Errorf("%s: /proc/%d/cmdline never showed the command line it was started with, so its pid file could not be told from another program's", p.Name, r.Pid)
}

// execAttempts bounds awaitExec's polls (about 10 s); it only stops a
// start that never completes.
const execAttempts = 10000

// readPidFiles returns the records of dir in start order.
func readPidFiles(dir string) ([]pidRecord, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []pidRecord
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var r pidRecord
		if err := json.Unmarshal(data, &r); err != nil || r.Pid <= 0 || len(r.Args) == 0 {
			return nil, fmt.Errorf("%s: not a pid file of the fleet (%v)", path, err)
		}
		r.file = path
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b pidRecord) int { return strings.Compare(a.file, b.file) })
	return out, nil
}

// running reports whether r's pid is alive and still runs r's command
// line: a zombie, a missing pid or another program is not r's process.
func (r pidRecord) running() bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.Pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r.Pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	return slices.Equal(args, r.Args)
}

// processGroup returns r's process group id, 0 when unknown.
func (r pidRecord) processGroup() int {
	pgid, err := syscall.Getpgid(r.Pid)
	if err != nil {
		return 0
	}
	return pgid
}

// signal sends sig to r's process group when r leads it (a detached
// process leads its own session), else to r alone; never to a process
// that is not r's.
func (r pidRecord) signal(sig syscall.Signal) {
	if !r.running() {
		return
	}
	if r.processGroup() == r.Pid {
		_ = syscall.Kill(-r.Pid, sig)
		return
	}
	_ = syscall.Kill(r.Pid, sig)
}

// stopAll stops the processes of records: SIGTERM to all, then SIGKILL to
// those still running after StopGrace. It returns those it could not stop.
func stopAll(records []pidRecord) []pidRecord {
	for _, r := range records {
		r.signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(StopGrace)
	for _, r := range records {
		for r.running() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	var left []pidRecord
	for _, r := range records {
		if r.running() {
			r.signal(syscall.SIGKILL)
		}
	}
	for _, r := range records {
		for i := 0; r.running() && i < 100; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if r.running() {
			left = append(left, r)
		}
	}
	return left
}

func (r pidRecord) String() string { return r.Name + " (pid " + strconv.Itoa(r.Pid) + ")" }
