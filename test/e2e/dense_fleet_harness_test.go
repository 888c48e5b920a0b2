//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/localfleet"
)

// denseFleet is a dense fleet (localfleet.Dense, issue 36) bound to a test:
// Clusters clusters shared by Contexts kube contexts, context i on cluster
// i % Clusters. It measures the cost of a context, not of a cluster process;
// real clusters are one context each. Each cluster is an etcd and a
// kube-apiserver writing its audit log (audit_test.go), without a
// controller manager: the dense packages hold Namespaces and ConfigMaps,
// Current as soon as they exist, and a Deployment never becomes Current.
type denseFleet struct {
	localfleet.Dense
	apis       []*clusterAPIServer
	etcds      []*clusterEtcd
	kubeconfig string
}

// startDenseFleet starts the clusters of d in dir, waits for them, and
// writes dir/kubeconfig with every context.
func startDenseFleet(t testing.TB, dir string, d localfleet.Dense) *denseFleet {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	f := &denseFleet{Dense: d, kubeconfig: filepath.Join(dir, "kubeconfig")}
	creds := clusterNewCreds(t, dir)
	for j := range d.Clusters {
		f.etcds = append(f.etcds, clusterStartEtcd(t, dir, d.ClusterName(j)+"-etcd"))
	}
	for _, e := range f.etcds {
		e.waitReady(t)
	}
	servers := make([]*localfleet.APIServer, d.Clusters)
	for j := range d.Clusters {
		f.apis = append(f.apis, clusterStartAPIServer(t, dir, d.ClusterName(j), creds, f.etcds[j], ""))
	}
	for j, a := range f.apis {
		a.waitReady(t)
		servers[j] = a.srv
	}
	if err := localfleet.WriteKubeconfigContexts(f.kubeconfig, creds, d.KubeContexts(servers)); err != nil {
		t.Fatal(err)
	}
	return f
}

// api is the kube-apiserver of context i.
func (f *denseFleet) api(i int) *clusterAPIServer { return f.apis[f.ClusterOf(i)] }

// stop stops every process of the fleet now (t's clean-up would at its
// end), so that a benchmark's next fleet does not share the machine with
// this one.
func (f *denseFleet) stop() {
	for _, a := range f.apis {
		a.proc.stop()
	}
	for _, e := range f.etcds {
		e.proc.stop()
	}
}

// auditMarks are where every cluster's audit log ends now.
func (f *denseFleet) auditMarks(t testing.TB) []int64 {
	t.Helper()
	marks := make([]int64, len(f.apis))
	for j, a := range f.apis {
		marks[j] = a.auditMark(t)
	}
	return marks
}

// objectWritesSince are the writes to the user's objects (shard-router's
// Leases left out) every cluster received since marks.
func (f *denseFleet) objectWritesSince(t testing.TB, marks []int64) []auditEvent {
	t.Helper()
	var out []auditEvent
	for j, a := range f.apis {
		out = append(out, a.objectWritesSince(t, marks[j])...)
	}
	return out
}

// requestCounts are the requests the clusters served so far, summed over
// them, by verb and resource ("LIST leases"), as kube-apiserver counts them
// (apiserver_request_total): reads too, which the audit logs leave out.
func (f *denseFleet) requestCounts(t testing.TB) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, a := range f.apis {
		code, body, err := a.do("GET", "/metrics", "", nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: GET /metrics: %d %v: %s", a.Name, code, err, body)
		}
		for _, m := range requestTotal.FindAllStringSubmatch(string(body), -1) {
			n, _ := strconv.ParseFloat(m[4], 64)
			counts[m[3]+" "+m[1]+m[2]] += int(n)
		}
	}
	return counts
}

var requestTotal = regexp.MustCompile(`(?m)^apiserver_request_total\{.*?resource="([^"]*)".*?subresource="([^"]*)".*?verb="([^"]*)".*?\} (\S+)$`)

// countsSince are the requests served since before, by verb and resource.
func (f *denseFleet) countsSince(t testing.TB, before map[string]int) map[string]int {
	t.Helper()
	d := map[string]int{}
	for k, n := range f.requestCounts(t) {
		if n > before[k] {
			d[k] = n - before[k]
		}
	}
	return d
}

// clustersCPU is the CPU time (user and system) the fleet's etcd and
// kube-apiserver processes have used so far, from /proc; 0 where it
// cannot be read. They share the machine with what is measured: on a
// dense fleet, the other half of a step's cost.
func (f *denseFleet) clustersCPU() time.Duration {
	var total time.Duration
	for _, p := range f.procs() {
		if p == nil || p.Cmd == nil || p.Cmd.Process == nil {
			continue
		}
		total += procCPU(p.Cmd.Process.Pid)
	}
	return total
}

func (f *denseFleet) procs() []*localfleet.Proc {
	var ps []*localfleet.Proc
	for _, a := range f.apis {
		ps = append(ps, a.proc.Proc)
	}
	for _, e := range f.etcds {
		ps = append(ps, e.proc.Proc)
	}
	return ps
}

// procCPU is a process's user and system time from /proc/<pid>/stat (in
// USER_HZ, 100 a second on Linux); 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis (field 3 is the state).
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / 100
}
