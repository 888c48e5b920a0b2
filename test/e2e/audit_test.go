//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every kube-apiserver the harness starts writes an audit log of the
// requests that are not reads (kube-apiserver's own audit log backend, in
// its default blocking mode: an event is on disk before the response is
// sent), so that a test can count the writes a command sent to a cluster.

const clusterAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// clusterAuditArgs are the audit flags of apiserver a; its log is
// a.auditLog().
func clusterAuditArgs(t testing.TB, a *clusterAPIServer) []string {
	t.Helper()
	policy := filepath.Join(a.dir, "audit-policy.yaml")
	writeFile(t, policy, clusterAuditPolicy)
	return []string{"--audit-policy-file", policy, "--audit-log-path", a.auditLog(), "--audit-log-maxbackup", "0"}
}

func (a *clusterAPIServer) auditLog() string { return filepath.Join(a.dir, a.Name+"-audit.log") }

// auditEvent is what a test reads of one audit event.
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	// ImpersonatedUser is whom the request acted as (--as, as:).
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser,omitempty"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ObjectRef struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	Received time.Time `json:"requestReceivedTimestamp"`
	Stage    time.Time `json:"stageTimestamp"`
}

func (e auditEvent) String() string {
	return fmt.Sprintf("%s %s (%d, %s)", e.Verb, e.RequestURI, e.ResponseStatus.Code, e.UserAgent)
}

// auditMark is where a's audit log ends now: writes() counts from there.
func (a *clusterAPIServer) auditMark(t testing.TB) int64 {
	t.Helper()
	info, err := os.Stat(a.auditLog())
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// writesSince are the write requests the e2e user sent to a since mark,
// leaving out the controller manager's (it runs as the same user), the
// apiserver's own, and the requests that persist nothing: the dry runs
// and access reviews with which apply asks each cluster before it writes
// (requestsSince keeps them).
func (a *clusterAPIServer) writesSince(t testing.TB, mark int64) []auditEvent {
	t.Helper()
	return withoutAsks(a.requestsSince(t, mark))
}

// withoutAsks are evs without the requests that persist nothing.
func withoutAsks(evs []auditEvent) []auditEvent {
	var out []auditEvent
	for _, e := range evs {
		if !e.asks() {
			out = append(out, e)
		}
	}
	return out
}

// asks reports a request that persists nothing: a dry run, or a
// SelfSubjectAccessReview.
func (e auditEvent) asks() bool {
	return strings.Contains(e.RequestURI, "dryRun=All") || e.ObjectRef.Resource == "selfsubjectaccessreviews"
}

// requestsSince are writesSince with the dry runs and access reviews.
func (a *clusterAPIServer) requestsSince(t testing.TB, mark int64) []auditEvent {
	t.Helper()
	return a.eventsSince(t, mark, func(e auditEvent) bool { return e.User.Username == "e2e-admin" })
}

// eventsSince are the events since mark of the senders by keeps, leaving
// out the controller manager's (it runs as the e2e user).
func (a *clusterAPIServer) eventsSince(t testing.TB, mark int64, by func(auditEvent) bool) []auditEvent {
	t.Helper()
	var out []auditEvent
	for _, e := range a.auditEventsSince(t, mark) {
		if by(e) && !strings.HasPrefix(e.UserAgent, "kube-controller-manager") {
			out = append(out, e)
		}
	}
	return out
}

// auditEventsSince are the events a's audit log holds since mark: its
// write requests, whoever sent them.
func (a *clusterAPIServer) auditEventsSince(t testing.TB, mark int64) []auditEvent {
	t.Helper()
	f, err := os.Open(a.auditLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(mark, 0); err != nil {
		t.Fatal(err)
	}
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", a.auditLog(), err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shardRouterLease reports a write to one of the Leases apply locks its
// contexts with (coordination.k8s.io/v1, named shard-router.<inventory>),
// as opposed to a write to an object of the user's.
func (e auditEvent) shardRouterLease() bool {
	return e.ObjectRef.APIGroup == "coordination.k8s.io" && e.ObjectRef.Resource == "leases" &&
		strings.HasPrefix(e.ObjectRef.Name, "shard-router.")
}

// splitLeaseWrites splits writes into those to shard-router's Leases and
// the others: the writes to the user's objects.
func splitLeaseWrites(evs []auditEvent) (objects, leases []auditEvent) {
	for _, e := range evs {
		if e.shardRouterLease() {
			leases = append(leases, e)
		} else {
			objects = append(objects, e)
		}
	}
	return objects, leases
}

// objectWritesSince are writesSince without the writes to shard-router's
// Leases: the writes to the user's objects.
func (a *clusterAPIServer) objectWritesSince(t testing.TB, mark int64) []auditEvent {
	t.Helper()
	objects, _ := splitLeaseWrites(a.writesSince(t, mark))
	return objects
}
