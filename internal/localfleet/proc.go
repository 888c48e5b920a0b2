// Package localfleet runs real Kubernetes control planes on 127.0.0.1:
// etcd, kube-apiserver and kube-controller-manager processes with free
// ports, token auth, service-account keys generated on the spot and a
// kubeconfig with one context per cluster. The end-to-end tests start
// them for the length of a test; `make fleet` starts them detached, with
// pid files, for a user to try the live commands on (see Up and Down).
package localfleet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of the readiness polls. They only stop a server that never gets
// ready; nothing is asserted on time.
const (
	readyAttempts = 240
	pollMax       = time.Second
	// StopGrace is how long a server has to exit after SIGTERM before it
	// is killed.
	StopGrace = 10 * time.Second
)

// Proc is one server process.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	// exited is closed once the process has been reaped; err is then set.
	exited chan struct{}
	err    error
}

// Launcher starts server processes. The zero value starts them bound to
// this program's life and finds the tools on PATH.
type Launcher struct {
	// ToolPath returns the path of a program (etcd, kube-apiserver,
	// kube-controller-manager); nil looks it up on PATH.
	ToolPath func(name string) (string, error)
	// Detach lets the processes outlive this program: each runs in a
	// session of its own, with no parent-death signal, and its pid is
	// recorded in PidDir. Otherwise the kernel kills each one when this
	// program dies (go test -timeout panics without running clean-ups).
	Detach bool
	// PidDir is where Detach writes a pid file per process (see Down).
	PidDir string
	// OnStart, when set, is called with every process started: the tests
	// register its stop as a clean-up.
	OnStart func(*Proc)
	// Log, when set, receives a line per step, for a user to follow.
	Log func(format string, args ...any)
}

func (l *Launcher) logf(format string, args ...any) {
	if l.Log != nil {
		l.Log(format, args...)
	}
}

func (l *Launcher) tool(name string) (string, error) {
	if l.ToolPath != nil {
		return l.ToolPath(name)
	}
	return exec.LookPath(name)
}

// StartProc starts bin with its output in dir/<name>.log.
func (l *Launcher) StartProc(dir, name, bin string, args ...string) (*Proc, error) {
	return l.StartProcEnv(dir, name, nil, bin, args...)
}

// StartProcEnv is StartProc with env added to this program's environment
// (later entries win).
func (l *Launcher) StartProcEnv(dir, name string, env []string, bin string, args ...string) (*Proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if l.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	fmt.Fprintf(logFile, "=== %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, LogPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	if l.Detach {
		if err := awaitExec(p); err != nil {
			p.Stop()
			return nil, err
		}
		if err := writePidFile(l.PidDir, p); err != nil {
			p.Stop()
			return nil, err
		}
	}
	if l.OnStart != nil {
		l.OnStart(p)
	}
	return p, nil
}

// Kill sends SIGKILL to the process group at once.
func (p *Proc) Kill() { _ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL) }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended; read it only once Exited is closed.
func (p *Proc) Err() error { return p.err }

// Stop terminates the process group: SIGTERM, then SIGKILL after
// StopGrace. It is idempotent.
func (p *Proc) Stop() {
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(StopGrace):
			p.Kill()
			<-p.exited
		}
	}
	// Children that outlived the leader, if any.
	p.Kill()
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Wait polls check until it succeeds, with a growing interval and a
// bounded number of attempts; it fails at once when the process exits.
// Its error ends with the last lines of the process's log.
func Wait(p *Proc, what string, check func() error) error {
	interval := 50 * time.Millisecond
	var err error
	for range readyAttempts {
		if err = check(); err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited (%v) before %s:\n%s", p.Name, p.err, what, Tail(p.LogPath, 40))
		case <-time.After(interval):
		}
		interval = min(2*interval, pollMax)
	}
	return fmt.Errorf("%s: no %s after %d attempts: %v\n%s", p.Name, what, readyAttempts, err, Tail(p.LogPath, 40))
}

// FreePort returns a TCP port free on 127.0.0.1 right now, for a server
// about to be started. It is taken below the kernel's ephemeral range, so
// that the source port of an outgoing connection cannot take it before the
// server binds it (a port the kernel picks with ":0" can), and it is never
// handed out twice by one process.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	lo, hi := serverPorts()
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		if portsGiven[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		portsGiven[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free TCP port on 127.0.0.1 in %d-%d after 1000 tries", lo, hi-1)
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// serverPorts is the range FreePort picks from: [lo, hi), where hi is the
// first port of the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range; 32768 when it cannot be read).
func serverPorts() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil && first > lo+1000 {
				hi = first
			}
		}
	}
	return lo, hi
}
