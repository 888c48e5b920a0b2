//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/localfleet"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// fleetProc is one process of a local fleet, as its pid file records it.
type fleetProc struct {
	Name string   `json:"name"`
	Pid  int      `json:"pid"`
	Args []string `json:"args"`
}

// TestFleet starts the local fleet of `make fleet` from the datastores
// example (two contexts, the first with an events and a leases etcd),
// applies the example to it with shard-router apply, checks through
// etcd that Events and Leases are where the overrides send them, reads it
// back with shard-router status, and stops it with `make fleet-down`,
// which must leave no process behind.
func TestFleet(t *testing.T) {
	root := repoRoot(t)
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		toolPath(t, tool) // fails with a hint when it is not built
	}
	bin := shardRouter(t)
	dir := t.TempDir()
	fleetDir := filepath.Join(dir, "fleet")
	vars := []string{"--no-print-directory", "FLEET_PKG=examples/datastores", "FLEET_DIR=" + fleetDir}
	spec := cmdSpec{Dir: root, Timeout: 10 * time.Minute}

	up := runCmd(t, spec, "make", append(vars, "fleet")...)
	procs := fleetProcs(t, fleetDir)
	t.Cleanup(func() {
		if _, err := os.Stat(fleetDir); err == nil {
			runCmd(t, spec, "make", append(vars, "fleet-down")...)
		}
		for _, p := range procs { // whatever fleet-down left
			if fleetRunning(p) {
				_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
			}
		}
	})
	if up.ExitCode != 0 {
		t.Fatalf("make fleet:\n%s", up)
	}
	kubeconfig := filepath.Join(fleetDir, "kubeconfig")
	if want := "export KUBECONFIG=" + kubeconfig + "\n"; up.Stdout != want {
		t.Fatalf("make fleet printed %q on stdout, want %q", up.Stdout, want)
	}

	// One etcd per cluster and per datastore it declares, a kube-apiserver
	// and a controller manager per cluster, all still running after make
	// returned.
	var names []string
	for _, p := range procs {
		names = append(names, p.Name)
		if !fleetRunning(p) {
			t.Errorf("%s (pid %d) is not running after make fleet returned", p.Name, p.Pid)
		}
	}
	slices.Sort(names)
	want := []string{"eu-shard-00-1", "eu-shard-00-etcd", "eu-shard-00-etcd-events", "eu-shard-00-etcd-leases", "eu-shard-00-kcm",
		"eu-shard-01-1", "eu-shard-01-etcd", "eu-shard-01-kcm"}
	if !slices.Equal(names, want) {
		t.Fatalf("fleet processes %v, want %v", names, want)
	}

	// kube-apiserver runs with the value `shard-router overrides` prints,
	// the config's endpoints replaced by the local datastore etcds.
	printed := strings.TrimSpace(mustRun(t, cmdSpec{Dir: root}, bin, "overrides", "examples/datastores", "--context", "eu-shard-00").Stdout)
	events, leases := fleetClientURL(t, procs, "eu-shard-00-etcd-events"), fleetClientURL(t, procs, "eu-shard-00-etcd-leases")
	local := strings.NewReplacer("https://etcd-events-00-0:2379;https://etcd-events-00-1:2379", events, "https://etcd-leases-00-0:2379", leases).Replace(printed)
	if got := fleetFlag(procs, "eu-shard-00-1", "--etcd-servers-overrides"); got != local {
		t.Errorf("eu-shard-00's kube-apiserver has --etcd-servers-overrides %q, want %q (printed: %q)", got, local, printed)
	}
	if got := fleetFlag(procs, "eu-shard-01-1", "--etcd-servers-overrides"); got != "" {
		t.Errorf("eu-shard-01 declares no datastore, but its kube-apiserver has --etcd-servers-overrides %q", got)
	}

	// The example, scaled to 0 (the fleet has no scheduler or kubelet, so
	// no replica ever becomes ready), applied and read back.
	pkg, out := filepath.Join(dir, "pkg"), filepath.Join(dir, "out")
	copyTree(t, filepath.Join(root, "examples", "datastores"), pkg)
	workloads := filepath.Join(pkg, "workloads.yaml")
	writeFile(t, workloads, regexp.MustCompile(`replicas: \d+`).ReplaceAllString(clusterReadFile(t, workloads), "replicas: 0"))
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	applied := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, bin, "apply", pkg, "--out", out, "--kubeconfig", kubeconfig, "--reconcile-timeout", "2m", "-o", "json")
	var report v1alpha1.ApplyReport
	if err := json.Unmarshal([]byte(applied.Stdout), &report); err != nil || applied.ExitCode != 0 {
		t.Fatalf("apply (%v):\n%s", err, applied)
	}
	for _, c := range report.Contexts {
		if c.Status != v1alpha1.ApplyApplied || c.Objects == 0 {
			t.Errorf("apply: context %s: %s, %d objects, want Applied: %+v", c.Name, c.Status, c.Objects, c)
		}
	}
	if len(report.Contexts) != 2 {
		t.Errorf("apply reported %d contexts, want 2", len(report.Contexts))
	}
	for key, etcdURL := range map[string]string{
		"/registry/events/checkout/checkout-api.17a8f3c2b1": events,
		"/registry/leases/checkout/checkout-operator":       leases,
	} {
		if ok, err := (&localfleet.Etcd{Name: key, ClientURL: etcdURL}).Has(key); err != nil || !ok {
			t.Errorf("%s is not in its datastore's etcd %s (%v)", key, etcdURL, err)
		}
	}

	st := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, bin, "status", out, "--kubeconfig", kubeconfig, "-o", "json", "--detailed-exitcode")
	var status v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(st.Stdout), &status); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, st)
	}
	if st.ExitCode != 0 {
		for _, c := range status.Contexts {
			t.Errorf("status: context %s needs attention: %v", c.Name, attention(c))
		}
		t.Fatalf("status --detailed-exitcode: exit %d\n%s", st.ExitCode, st)
	}
	for _, c := range status.Contexts {
		if !c.Reachable || len(c.Objects) == 0 {
			t.Errorf("status: context %s reachable=%v with %d objects", c.Name, c.Reachable, len(c.Objects))
		}
	}

	down := runCmd(t, spec, "make", append(vars, "fleet-down")...)
	if down.ExitCode != 0 {
		t.Fatalf("make fleet-down:\n%s", down)
	}
	for _, p := range procs {
		if fleetRunning(p) {
			t.Errorf("%s (pid %d) still runs after make fleet-down", p.Name, p.Pid)
		}
	}
	if _, err := os.Stat(fleetDir); !os.IsNotExist(err) {
		t.Errorf("make fleet-down left %s (%v)", fleetDir, err)
	}
}

// TestFleetDownSparesOthers: a pid file whose pid now runs another
// program (the fleet crashed, the pid was reused) is not killed by `make
// fleet-down`, which still removes the fleet's directory.
func TestFleetDownSparesOthers(t *testing.T) {
	root := repoRoot(t)
	fleetDir := filepath.Join(t.TempDir(), "fleet")
	other := runSleep(t)
	writeFile(t, filepath.Join(fleetDir, "fleet.txt"), "a fleet\n")
	record, _ := json.Marshal(fleetProc{Name: "eu-shard-00-etcd", Pid: other.Pid, Args: []string{"/nonexistent/etcd", "--name", "eu-shard-00-etcd"}})
	writeFile(t, filepath.Join(fleetDir, "pids", "000-eu-shard-00-etcd.json"), string(record))
	down := runCmd(t, cmdSpec{Dir: root}, "make", "--no-print-directory", "FLEET_DIR="+fleetDir, "fleet-down")
	if down.ExitCode != 0 {
		t.Fatalf("make fleet-down:\n%s", down)
	}
	if err := syscall.Kill(other.Pid, 0); err != nil {
		t.Errorf("make fleet-down killed pid %d, which runs another program: %v", other.Pid, err)
	}
	if !strings.Contains(down.Stderr, "not running") {
		t.Errorf("make fleet-down does not say the recorded process is not running:\n%s", down)
	}
	if _, err := os.Stat(fleetDir); !os.IsNotExist(err) {
		t.Errorf("make fleet-down left %s (%v)", fleetDir, err)
	}
}

// runSleep starts a process that is not the fleet's, stopped with t.
func runSleep(t *testing.T) *os.Process {
	t.Helper()
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "300"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
	return p
}

// fleetProcs reads the fleet's pid files.
func fleetProcs(t *testing.T, dir string) []fleetProc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "pids", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []fleetProc
	for _, f := range files {
		var p fleetProc
		if err := json.Unmarshal([]byte(clusterReadFile(t, f)), &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, p)
	}
	return out
}

// fleetRunning reports whether p's pid still runs p's command line (a
// zombie does not).
func fleetRunning(p fleetProc) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Pid), "stat"))
	if err != nil || strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), " Z ") {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Pid), "cmdline"))
	return err == nil && string(cmdline) == strings.Join(p.Args, "\x00")+"\x00"
}

// fleetFlag returns the value of flag in the command line of process name.
func fleetFlag(procs []fleetProc, name, flag string) string {
	for _, p := range procs {
		if p.Name == name {
			if i := slices.Index(p.Args, flag); i >= 0 && i+1 < len(p.Args) {
				return p.Args[i+1]
			}
		}
	}
	return ""
}

// fleetClientURL returns the client URL of the fleet's etcd name.
func fleetClientURL(t *testing.T, procs []fleetProc, name string) string {
	t.Helper()
	if u := fleetFlag(procs, name, "--advertise-client-urls"); u != "" {
		return u
	}
	t.Fatalf("no etcd %s in the fleet", name)
	return ""
}

// TestFleetDownAfterCrash: the fleet program killed while it starts the
// clusters leaves detached servers behind; `make fleet-down` stops them
// all from the pid files.
func TestFleetDownAfterCrash(t *testing.T) {
	root := repoRoot(t)
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		toolPath(t, tool)
	}
	dir := t.TempDir()
	fleetBin, fleetDir := filepath.Join(dir, "fleet-bin"), filepath.Join(dir, "fleet")
	mustRun(t, cmdSpec{Dir: root, Timeout: buildTimeout}, "go", "build", "-o", fleetBin, "./hack/fleet")
	up := exec.Command(fleetBin, "up", "-package", "examples/per-namespace", "-dir", fleetDir, "-tools", filepath.Join(root, ".tools", "bin"))
	up.Dir = root
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once both clusters' kube-apiservers are started (pid files
	// 0-1: the etcds, 2-3: the kube-apiservers), before it is done.
	var procs []fleetProc
	for i := 0; i < 600 && len(procs) < 4; i++ {
		time.Sleep(50 * time.Millisecond)
		procs = fleetProcs(t, fleetDir)
	}
	_ = up.Process.Kill()
	_ = up.Wait()
	procs = fleetProcs(t, fleetDir)
	t.Cleanup(func() {
		for _, p := range procs {
			if fleetRunning(p) {
				_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
			}
		}
	})
	if len(procs) < 4 {
		t.Fatalf("the fleet program started %d processes before it was killed, want at least 4", len(procs))
	}
	for _, p := range procs {
		if !fleetRunning(p) {
			t.Errorf("%s (pid %d) died with the fleet program: it should be detached", p.Name, p.Pid)
		}
	}
	down := runCmd(t, cmdSpec{Dir: root, Timeout: 2 * time.Minute}, "make", "--no-print-directory", "FLEET_DIR="+fleetDir, "fleet-down")
	if down.ExitCode != 0 {
		t.Fatalf("make fleet-down:\n%s", down)
	}
	for _, p := range procs {
		if fleetRunning(p) {
			t.Errorf("%s (pid %d) still runs after make fleet-down", p.Name, p.Pid)
		}
	}
}
