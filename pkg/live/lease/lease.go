// Package lease keeps, in each cluster, the lock of the one run that may
// write a context's inventory, and the record of the last run that did.
// Both live in one coordination.k8s.io/v1 Lease beside the inventory (same
// namespace, named after it), written only with resourceVersion
// preconditions, as client-go's leader election writes its Leases: the
// lock is spec.holderIdentity with its renew time and duration; the record
// (a serial every writing run increments, the package digest, who and
// when, the cluster's identity, the OUT_DIR that owns the inventory) is in
// annotations. Taking the lock and incrementing the serial is one update,
// so two runs can never both believe they hold it.
//
// A holder that dies stops renewing: its lock expires after Duration,
// judged by the renew time the holder wrote (hosts are assumed to keep
// their clocks in sync, as Kubernetes' own Leases assume). While it holds
// the lock, a run also writes there where its rollout is (Progress), so
// that status tells a live rollout from a dead one from the clusters
// alone.
package lease

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

const (
	// Duration is how long a lock lasts without renewal: a killed run's
	// lock is free again that long after its last renewal.
	Duration = 30 * time.Second
	// retryEvery is how often --lock-timeout looks at a held lock again.
	retryEvery = time.Second

	prefix = "shardrouter.dev/"
	// The record's annotations on the Lease.
	SerialAnnotation    = prefix + "serial"
	DigestAnnotation    = prefix + "package-digest"
	AppliedByAnnotation = prefix + "applied-by"
	AppliedAtAnnotation = prefix + "applied-at"
	AppliedAsAnnotation = prefix + "applied-as"
	OutcomeAnnotation   = prefix + "outcome"
	ClusterAnnotation   = prefix + "cluster-uid"
	OwnerAnnotation     = prefix + "owner"
	OwnerNameAnnotation = prefix + "owner-name"
	// A record a later run settled (Settle): who, and when.
	SettledByAnnotation = prefix + "settled-by"
	SettledAtAnnotation = prefix + "settled-at"
	// Where the holder's rollout is (Progress), only while it holds the
	// lock.
	WaveAnnotation     = prefix + "wave"
	PhaseAnnotation    = prefix + "wave-phase"
	BakeEndsAnnotation = prefix + "bake-ends"
	// ManagedByLabel marks the Leases shard-router writes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "shard-router"
	// ManagedBySelector selects them.
	ManagedBySelector = ManagedByLabel + "=" + managedBy
)

// RenewEvery is how often a holder renews its lock (a third of Duration,
// as client-go's leader election renews well within its lease; tests
// shorten it).
var RenewEvery = 10 * time.Second

// Outcomes of the last run, in the record.
const (
	// OutcomeApplying: the run took the lock and has not finished (or was
	// killed).
	OutcomeApplying = "applying"
	OutcomeApplied  = "applied"
	OutcomeFailed   = "failed"
	// OutcomeRolledBack: the run rolled back what it had applied.
	OutcomeRolledBack = "rolled back"
)

// Name is the Lease of an inventory: its name with a prefix, so that it
// never takes the name of a Lease of the user's.
func Name(inventoryName string) string { return "shard-router." + inventoryName }

// Record is what a cluster says about the last run that wrote a context.
type Record struct {
	// Serial is incremented by every run that writes the context; 0: no
	// run of this release has.
	Serial int64 `json:"serial"`
	// Digest is the digest of the package that run applied.
	Digest string `json:"digest,omitempty"`
	// AppliedBy and AppliedAt say who took the serial, and when.
	AppliedBy string    `json:"appliedBy,omitempty"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// AppliedAs is the identity its requests impersonated (--as, or the
	// kubeconfig's as:), "" when none.
	AppliedAs string `json:"appliedAs,omitempty"`
	// Outcome is applying, applied or failed.
	Outcome string `json:"outcome,omitempty"`
	// ClusterUID is the cluster's identity (cluster.Identity).
	ClusterUID string `json:"clusterUID,omitempty"`
	// Owner is the id of the OUT_DIR whose package owns the inventory;
	// OwnerName describes it for messages.
	Owner     string `json:"owner,omitempty"`
	OwnerName string `json:"ownerName,omitempty"`
	// SettledBy and SettledAt name the later run that found the context
	// in sync after the run that took the serial died applying it, and set
	// its outcome right (Settle); empty otherwise.
	SettledBy string    `json:"settledBy,omitempty"`
	SettledAt time.Time `json:"settledAt,omitzero"`
}

// Phases of a wave, in Progress.
const (
	PhaseApplying    = "applying"
	PhaseBaking      = "baking"
	PhaseRollingBack = "rolling back"
)

// Progress is where the run that holds a lock is in its rollout: the
// wave it is on, applying or baking it, and when a bake ends. A run writes
// it on every lock it holds as each wave starts (Lock.Note).
type Progress struct {
	Wave     string
	Phase    string
	BakeEnds time.Time
}

// State is a read of a context's Lease.
type State struct {
	// Found is false when the cluster has no Lease for the inventory.
	Found  bool
	Record Record
	// Holder is who holds the lock, "" when nobody; Since when it took
	// it, Renewed its last renewal; Progress where its rollout is.
	Holder   string
	Since    time.Time
	Renewed  time.Time
	Progress Progress
	lease    *coordinationv1.Lease
}

// Held reports whether the lock is held and not expired at now.
func (s *State) Held(now time.Time) bool {
	return s.Found && s.Holder != "" && now.Before(s.Renewed.Add(Duration))
}

// Expires is when a held lock expires unless renewed.
func (s *State) Expires() time.Time { return s.Renewed.Add(Duration) }

// Read reads the Lease of an inventory; a missing one (or a missing
// namespace) is State{Found: false}.
func Read(ctx context.Context, c coordclient.LeasesGetter, namespace, inventoryName string) (*State, error) {
	l, err := c.Leases(namespace).Get(ctx, Name(inventoryName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Lease %s/%s: %w", namespace, Name(inventoryName), err)
	}
	return stateOf(l)
}

func stateOf(l *coordinationv1.Lease) (*State, error) {
	s := &State{Found: true, lease: l}
	a := l.Annotations
	if v := a[SerialAnnotation]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("Lease %s/%s: annotation %s is %q, not a serial: it is shard-router's record of the last write, not to be edited", l.Namespace, l.Name, SerialAnnotation, v)
		}
		s.Record.Serial = n
	}
	s.Record.Digest = a[DigestAnnotation]
	s.Record.AppliedBy = a[AppliedByAnnotation]
	s.Record.AppliedAs = a[AppliedAsAnnotation]
	if t, err := time.Parse(time.RFC3339, a[AppliedAtAnnotation]); err == nil {
		s.Record.AppliedAt = t
	}
	s.Record.Outcome = a[OutcomeAnnotation]
	s.Record.ClusterUID = a[ClusterAnnotation]
	s.Record.Owner = a[OwnerAnnotation]
	s.Record.OwnerName = a[OwnerNameAnnotation]
	s.Record.SettledBy = a[SettledByAnnotation]
	if t, err := time.Parse(time.RFC3339, a[SettledAtAnnotation]); err == nil {
		s.Record.SettledAt = t
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		s.Holder = *h
		if l.Spec.AcquireTime != nil {
			s.Since = l.Spec.AcquireTime.Time
		}
		if l.Spec.RenewTime != nil {
			s.Renewed = l.Spec.RenewTime.Time
		}
		s.Progress = Progress{Wave: a[WaveAnnotation], Phase: a[PhaseAnnotation]}
		if t, err := time.Parse(time.RFC3339, a[BakeEndsAnnotation]); err == nil {
			s.Progress.BakeEnds = t
		}
	}
	return s, nil
}

// rfc3339 is t as the annotations hold times; "" when zero.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// setAnnotation sets an annotation, or removes it when v is "".
func setAnnotation(l *coordinationv1.Lease, k, v string) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	if v == "" {
		delete(l.Annotations, k)
	} else {
		l.Annotations[k] = v
	}
}

// setProgress writes where the holder's rollout is.
func setProgress(l *coordinationv1.Lease, p Progress) {
	setAnnotation(l, WaveAnnotation, p.Wave)
	setAnnotation(l, PhaseAnnotation, p.Phase)
	setAnnotation(l, BakeEndsAnnotation, rfc3339(p.BakeEnds))
}

// free clears the lock: no holder, and no progress of one.
func free(l *coordinationv1.Lease) {
	l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil, nil
	setProgress(l, Progress{})
}

// setRecord writes rec into the Lease's annotations.
func setRecord(l *coordinationv1.Lease, rec Record) {
	set := func(k, v string) { setAnnotation(l, k, v) }
	set(SerialAnnotation, strconv.FormatInt(rec.Serial, 10))
	set(DigestAnnotation, rec.Digest)
	set(AppliedByAnnotation, rec.AppliedBy)
	set(AppliedAtAnnotation, rfc3339(rec.AppliedAt))
	set(AppliedAsAnnotation, rec.AppliedAs)
	set(OutcomeAnnotation, rec.Outcome)
	set(ClusterAnnotation, rec.ClusterUID)
	set(OwnerAnnotation, rec.Owner)
	set(OwnerNameAnnotation, rec.OwnerName)
	set(SettledByAnnotation, rec.SettledBy)
	set(SettledAtAnnotation, rfc3339(rec.SettledAt))
}

// Holder identifies a run: who, where, which process and CI job.
type Holder struct {
	User, Host string
	PID        int
	// Job is the CI job's id where the environment names one.
	Job string
	// Run makes two runs of one process (tests) tell their locks apart.
	Run string
}

// ciJobVars are the environment variables CI systems set to a job's id,
// with the system's name; the first one set names the job.
var ciJobVars = [][2]string{
	{"GITHUB_RUN_ID", "GitHub Actions run"},
	{"CI_JOB_ID", "GitLab CI job"},
	{"BUILDKITE_JOB_ID", "Buildkite job"},
	{"CIRCLE_WORKFLOW_JOB_ID", "CircleCI job"},
	{"BUILD_TAG", "Jenkins build"},
	{"BUILD_BUILDID", "Azure Pipelines build"},
	{"TEKTON_PIPELINE_RUN", "Tekton PipelineRun"},
	{"SHARD_ROUTER_JOB", "job"},
}

// Me is the running process as a holder.
func Me() Holder {
	h := Holder{PID: os.Getpid(), Run: rand.String(6)}
	if u, err := user.Current(); err == nil {
		h.User = u.Username
	} else {
		h.User = "uid " + strconv.Itoa(os.Getuid())
	}
	h.Host, _ = os.Hostname()
	for _, v := range ciJobVars {
		if id := os.Getenv(v[0]); id != "" {
			h.Job = v[1] + " " + id
			break
		}
	}
	return h
}

// String is the holder as the Lease's holderIdentity and messages show it:
// "alice@runner-1 pid 4242 (GitLab CI job 7) run x1y2z3".
func (h Holder) String() string {
	s := fmt.Sprintf("%s@%s pid %d", h.User, h.Host, h.PID)
	if h.Job != "" {
		s += " (" + h.Job + ")"
	}
	return s + " run " + h.Run
}

// Who is the holder without its run id, for the record.
func (h Holder) Who() string { s := h.String(); return s[:strings.LastIndex(s, " run ")] }

// RunID is the run id of a holder as String writes it ("x1y2z3"); ""
// when it has none.
func RunID(holder string) string {
	i := strings.LastIndex(holder, " run ")
	if i < 0 {
		return ""
	}
	return holder[i+len(" run "):]
}

// IsHolder reports whether who names holder: the holder as String writes
// it, or its run id alone.
func IsHolder(holder, who string) bool {
	return who != "" && (holder == who || RunID(holder) == who)
}

// hostAndPID reads the host and pid of a holder as String writes it.
func hostAndPID(holder string) (host string, pid int, ok bool) {
	at, p := strings.Index(holder, "@"), strings.Index(holder, " pid ")
	if at < 0 || p < at {
		return "", 0, false
	}
	host = holder[at+1 : p]
	rest := holder[p+len(" pid "):]
	if i := strings.IndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	pid, err := strconv.Atoi(rest)
	return host, pid, err == nil && pid > 0
}

// thisHost is the name of this machine, as Me names it.
var thisHost = sync.OnceValue(func() string { h, _ := os.Hostname(); return h })

// Gone returns the evidence that the run holding the lock is dead, "" when
// there is none (it may well be alive): its pid no longer runs on this
// host, or it has not renewed the lock for more than two renewal periods
// (a live holder renews every RenewEvery, each renewal bounded to a third
// of Duration). Only a held lock has a holder to judge.
func (s *State) Gone(now time.Time) string {
	if !s.Found || s.Holder == "" {
		return ""
	}
	if host, pid, ok := hostAndPID(s.Holder); ok && host != "" && host == thisHost() && !processRuns(pid) {
		return fmt.Sprintf("pid %d no longer runs on this host, %s", pid, host)
	}
	if since := now.Sub(s.Renewed); !s.Renewed.IsZero() && since > 2*RenewEvery {
		return fmt.Sprintf("it has not renewed its lock for %s, and a live run renews it every %s", since.Round(time.Second), RenewEvery)
	}
	return ""
}

// HeldLock is one lock another run holds.
type HeldLock struct {
	Context, Namespace, Lease string
	// Expires is when it frees itself unless its holder renews it.
	Expires time.Time
}

// HeldError says that another run holds the locks of contexts this run
// needs: every one of them that the same holder holds, in one error.
type HeldError struct {
	Locks  []HeldLock
	Holder string
	// Since is when it took the first, Renewed its last renewal, Progress
	// where its rollout is.
	Since, Renewed time.Time
	Progress       Progress
	// Gone is the evidence that the holder is dead ("" when there is
	// none); At is when the locks were read.
	Gone string
	At   time.Time
	// Waited is the --lock-timeout that ran out (0: none).
	Waited time.Duration
	// Adopting: --adopt-cluster-state, which never waits for a lock.
	Adopting bool
	// Unlock is the command that breaks the holder's locks; "" says it in
	// words.
	Unlock string
}

// NewHeldError is the refusal of context's lock, which cur's holder holds.
func NewHeldError(contextName, namespace, inventoryName string, cur *State, now time.Time) *HeldError {
	return &HeldError{Locks: []HeldLock{{Context: contextName, Namespace: namespace, Lease: Name(inventoryName), Expires: cur.Expires()}},
		Holder: cur.Holder, Since: cur.Since, Renewed: cur.Renewed, Progress: cur.Progress, Gone: cur.Gone(now), At: now}
}

// Add adds the locks of o, which the same holder holds.
func (e *HeldError) Add(o *HeldError) {
	e.Locks = append(e.Locks, o.Locks...)
	if o.Since.Before(e.Since) {
		e.Since = o.Since
	}
	if o.Renewed.After(e.Renewed) {
		e.Renewed, e.Progress = o.Renewed, o.Progress
	}
	if e.Gone == "" {
		e.Gone = o.Gone
	}
	e.Waited = max(e.Waited, o.Waited)
}

// Contexts are the contexts whose locks the holder holds.
func (e *HeldError) Contexts() []string {
	out := make([]string, len(e.Locks))
	for i, l := range e.Locks {
		out[i] = l.Context
	}
	return out
}

// Expires is when the last of the locks frees itself unless renewed.
func (e *HeldError) Expires() time.Time {
	var t time.Time
	for _, l := range e.Locks {
		if l.Expires.After(t) {
			t = l.Expires
		}
	}
	return t
}

// WaitFor is a --lock-timeout long enough to outlast the locks of a dead
// holder: the time until they free themselves, and a little more, in
// tens of seconds.
func (e *HeldError) WaitFor() time.Duration {
	d := e.Expires().Sub(e.At) + 2*time.Second
	return max(10*time.Second, (d + 9*time.Second).Truncate(10*time.Second))
}

func (e *HeldError) Error() string {
	var b strings.Builder
	quoted, leases := make([]string, len(e.Locks)), make([]string, len(e.Locks))
	for i, l := range e.Locks {
		quoted[i], leases[i] = strconv.Quote(l.Context), l.Namespace+"/"+l.Lease
	}
	it, frees := "it", "it frees itself"
	if len(e.Locks) == 1 {
		fmt.Fprintf(&b, "context %s is locked by another run: %s holds Lease %s", quoted[0], e.Holder, leases[0])
	} else {
		it, frees = "them", "they free themselves"
		fmt.Fprintf(&b, "contexts %s are locked by another run: %s holds their Leases %s", strings.Join(quoted, ", "), e.Holder, strings.Join(leases, ", "))
	}
	fmt.Fprintf(&b, " since %s, last renewed %s", when(e.Since), when(e.Renewed))
	switch p := e.Progress; {
	case p.Wave == "":
	case e.Gone != "":
		fmt.Fprintf(&b, "; it was in %s", p.Where())
	default:
		fmt.Fprintf(&b, "; its rollout is in %s", p.Text(e.At))
	}
	expires := e.Expires()
	free := fmt.Sprintf("%s at %s, in %s", frees, when(expires), expires.Sub(e.At).Round(time.Second))
	unlock := e.Unlock
	if unlock == "" {
		unlock = "apply --force-unlock-held-by " + orRun(e.Holder) + " --out OUT_DIR breaks " + it
	}
	switch {
	case e.Gone != "" && e.Adopting:
		fmt.Fprintf(&b, ". That run is gone (%s): %s. --adopt-cluster-state takes the cluster's state only while no run holds it: run again then, or break %s at once: %s", e.Gone, free, it, unlock)
	case e.Gone != "":
		fmt.Fprintf(&b, ". That run is gone (%s): %s; apply again then (or now with --lock-timeout %s, which waits for %s), or break %s at once: %s", e.Gone, free, e.WaitFor(), it, it, unlock)
	case e.Adopting:
		fmt.Fprintf(&b, "; %s, unless its holder renews %s. --adopt-cluster-state takes the cluster's state only while no run writes it: run again once that run is done; if it is gone and cannot release %s: %s", free, it, it, unlock)
	case e.Waited > 0:
		fmt.Fprintf(&b, "; still held after --lock-timeout %s; %s, unless its holder renews %s (a live run renews its locks every %s until it ends). If that run is gone and cannot release %s: %s", e.Waited, free, it, RenewEvery, it, unlock)
	default:
		fmt.Fprintf(&b, "; %s, unless its holder renews %s (a live run renews its locks every %s until it ends): wait for that run to finish, or apply again with --lock-timeout to wait for it; if it is gone and cannot release %s: %s", free, it, RenewEvery, it, unlock)
	}
	return b.String()
}

// orRun is the holder's run id, or the whole holder when it has none.
func orRun(holder string) string {
	if id := RunID(holder); id != "" {
		return id
	}
	return strconv.Quote(holder)
}

// Where is the wave and phase alone: "wave canary (baking)", for a run
// that is gone.
func (p Progress) Where() string {
	if p.Phase == "" {
		return "wave " + p.Wave
	}
	return "wave " + p.Wave + " (" + p.Phase + ")"
}

// Text is where the rollout is, in words, at now: "wave canary baking,
// 4m12s left"; "" when nothing is recorded.
func (p Progress) Text(now time.Time) string {
	if p.Wave == "" {
		return ""
	}
	s := "wave " + p.Wave
	if p.Phase != "" {
		s += " " + p.Phase
	}
	if p.Phase == PhaseBaking && !p.BakeEnds.IsZero() {
		if left := p.BakeEnds.Sub(now).Round(time.Second); left > 0 {
			s += fmt.Sprintf(", %s left (until %s)", left, when(p.BakeEnds))
		} else {
			s += fmt.Sprintf(", its bake ended at %s", when(p.BakeEnds))
		}
	}
	return s
}

func when(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// Check decides, just before the lock is taken, whether the run may
// write: given the cluster's current record, it returns the record to
// write (serial incremented), or an error that refuses the context
// without a write.
type Check func(cur *State) (Record, error)

// Request says which lock to take, for whom, and how.
type Request struct {
	// Context is the kube context, for messages; Namespace and Inventory
	// are the inventory's.
	Context, Namespace, Inventory string
	Me                            Holder
	// Timeout is how long to wait for a lock another run holds (0: fail
	// at once).
	Timeout time.Duration
	// Check decides whether the run may write (see Check).
	Check Check
	// Seen is the Lease as the run read it before (nil: not read). The
	// lock is first written from it, under its resourceVersion (created,
	// if the read found none), without reading the Lease again; a write
	// that finds it changed since (a conflict, "already exists"), a lock
	// another run held then, or a Check that refuses it, reads it again
	// and decides on that read, as without Seen.
	Seen *State
	// OnLost is called, once, when a renewal finds the lock taken away.
	OnLost func(error)
	// OnWait is called once, when the run starts waiting for a lock
	// another run holds (Timeout): with that lock as read, and the time
	// the run waits until.
	OnWait func(cur *State, until time.Time)
}

// Lock is a held lock on one context.
type Lock struct {
	client  coordclient.LeaseInterface
	context string
	me      string
	// mu orders the writes of the renewals, Note and Release.
	mu    sync.Mutex
	lease *coordinationv1.Lease
	rec   Record
	// before is the record the lock replaced (created: there was no
	// Lease), for Abandon.
	before  Record
	created bool
	// waited is how long Acquire waited for another run's lock.
	waited time.Duration
	onLost func(error)
	stop   chan struct{}
	done   chan struct{}
	// lostErr is set once an update finds the lock taken away.
	lostErr error
}

// claim reads the Lease until no other live run holds it (waiting up to
// req.Timeout), checks its record with req.Check, and writes write's
// change of it under a resourceVersion precondition: a conflict (another
// run wrote it meanwhile) starts over. Its first look may be req.Seen,
// whose write succeeds only if the Lease is still what was seen; any
// other outcome of it looks again. It returns what it wrote, the state it
// replaced and how long it waited.
func claim(ctx context.Context, client coordclient.LeaseInterface, req Request, write func(l *coordinationv1.Lease, rec Record)) (*coordinationv1.Lease, *State, Record, time.Duration, error) {
	name := Name(req.Inventory)
	start := time.Now()
	told := false
	seen := req.Seen
	for {
		l, cur, err := look(ctx, client, req, &seen)
		if err != nil {
			return nil, nil, Record{}, 0, err
		}
		fresh := cur != req.Seen // read now, not what the run saw before
		if now := time.Now(); cur.Held(now) && cur.Holder != req.Me.String() {
			if !fresh {
				continue
			}
			waited := time.Since(start)
			if waited >= req.Timeout {
				he := NewHeldError(req.Context, req.Namespace, req.Inventory, cur, now)
				he.Waited = req.Timeout
				return nil, nil, Record{}, 0, he
			}
			if !told && req.OnWait != nil {
				req.OnWait(cur, start.Add(req.Timeout))
			}
			told = true
			select {
			case <-ctx.Done():
				return nil, nil, Record{}, 0, ctx.Err()
			case <-time.After(min(retryEvery, req.Timeout-waited)):
			}
			continue
		}
		rec, err := req.Check(cur)
		if err != nil && !fresh {
			continue
		}
		if err != nil {
			return nil, nil, Record{}, 0, err
		}
		if l == nil {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: req.Namespace,
				Labels: map[string]string{ManagedByLabel: managedBy}}}
		}
		write(l, rec)
		var got *coordinationv1.Lease
		if l.ResourceVersion == "" {
			got, err = client.Create(ctx, l, metav1.CreateOptions{})
		} else {
			got, err = client.Update(ctx, l, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue // another run wrote it meanwhile: look again
		}
		if err != nil {
			return nil, nil, Record{}, 0, fmt.Errorf("context %q: writing Lease %s/%s: %w", req.Context, req.Namespace, name, err)
		}
		var waited time.Duration
		if told {
			waited = time.Since(start)
		}
		return got, cur, rec, waited, nil
	}
}

// look is claim's look at the Lease: *seen the first time, when given (a
// copy of it: the caller writes it), else a read.
func look(ctx context.Context, client coordclient.LeaseInterface, req Request, seen **State) (*coordinationv1.Lease, *State, error) {
	if s := *seen; s != nil {
		*seen = nil
		if !s.Found {
			return nil, s, nil
		}
		if s.lease != nil {
			return s.lease.DeepCopy(), s, nil
		}
	}
	name := Name(req.Inventory)
	l, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &State{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("context %q: reading Lease %s/%s: %w", req.Context, req.Namespace, name, err)
	}
	cur, err := stateOf(l)
	if err != nil {
		return nil, nil, fmt.Errorf("context %q: %w", req.Context, err)
	}
	return l, cur, nil
}

// Acquire takes the lock of a context's inventory, checking the record
// with req.Check first (a refusal writes nothing). A lock held by another
// run is a *HeldError at once, or after waiting up to req.Timeout. The
// lock is renewed until Release.
func Acquire(ctx context.Context, c coordclient.LeasesGetter, req Request) (*Lock, error) {
	client := c.Leases(req.Namespace)
	holder := req.Me.String()
	got, cur, rec, waited, err := claim(ctx, client, req, func(l *coordinationv1.Lease, rec Record) {
		now := metav1.NewMicroTime(time.Now())
		secs := int32(Duration / time.Second)
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &holder, &secs
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		setProgress(l, Progress{})
		setRecord(l, rec)
	})
	if err != nil {
		return nil, err
	}
	lk := &Lock{client: client, context: req.Context, me: holder, lease: got, rec: rec, onLost: req.OnLost,
		before: cur.Record, created: !cur.Found, waited: waited,
		stop: make(chan struct{}), done: make(chan struct{})}
	go lk.renew()
	return lk, nil
}

// Settle writes, in one update, what a run that took the lock and released
// it at once would leave: req.Check's record, and no holder. It is refused
// as Acquire is (a lock another live run holds, a Check that refuses), and
// renews nothing: it is how a run that needs no write to a context sets
// its record right (a dead run's `applying`) at the cost of one write.
func Settle(ctx context.Context, c coordclient.LeasesGetter, req Request) (Record, error) {
	_, _, rec, _, err := claim(ctx, c.Leases(req.Namespace), req, func(l *coordinationv1.Lease, rec Record) {
		setRecord(l, rec)
		free(l)
	})
	return rec, err
}

// Record is the record the lock wrote when it was taken.
func (l *Lock) Record() Record { return l.rec }

// Waited is how long Acquire waited for the lock another run held.
func (l *Lock) Waited() time.Duration { return l.waited }

// renew keeps the lock until Release; a renewal that finds the lock taken
// by another (force-unlocked) stops and is reported by Release.
func (l *Lock) renew() {
	defer close(l.done)
	every := RenewEvery
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), Duration/3)
		err := l.update(ctx, func(le *coordinationv1.Lease) {
			now := metav1.NewMicroTime(time.Now())
			le.Spec.RenewTime = &now
		})
		cancel()
		if lost := l.lost(); err != nil && lost != nil {
			if l.onLost != nil {
				l.onLost(lost)
			}
			return
		}
	}
}

// lost is the error of a lock taken away, nil while it is held.
func (l *Lock) lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// update changes the held Lease; it fails when another took it.
func (l *Lock) update(ctx context.Context, change func(*coordinationv1.Lease)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lostErr != nil {
		return l.lostErr
	}
	for range 5 {
		le := l.lease.DeepCopy()
		change(le)
		got, err := l.client.Update(ctx, le, metav1.UpdateOptions{})
		if err == nil {
			l.lease = got
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		cur, gerr := l.client.Get(ctx, l.lease.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if h := cur.Spec.HolderIdentity; h == nil || *h != l.me {
			holder := "nobody"
			if h != nil && *h != "" {
				holder = *h
			}
			l.lostErr = fmt.Errorf("context %q: the lock on Lease %s/%s was taken away (now held by %s): someone ran --force-unlock", l.context, l.lease.Namespace, l.lease.Name, holder)
			return l.lostErr
		}
		l.lease = cur
	}
	return fmt.Errorf("context %q: Lease %s/%s kept changing", l.context, l.lease.Namespace, l.lease.Name)
}

// Note records on the held lock where its run's rollout is, in one
// update; the renewals keep it, Release clears it.
func (l *Lock) Note(ctx context.Context, p Progress) error {
	return l.update(ctx, func(le *coordinationv1.Lease) { setProgress(le, p) })
}

// Release records the run's outcome and frees the lock.
func (l *Lock) Release(ctx context.Context, outcome string) error {
	if err := l.stopRenewing(); err != nil {
		return err
	}
	l.rec.Outcome = outcome
	return l.update(ctx, func(le *coordinationv1.Lease) {
		setRecord(le, l.rec)
		free(le)
	})
}

// stopRenewing stops the renewals; the error of a lock taken away.
func (l *Lock) stopRenewing() error {
	close(l.stop)
	<-l.done
	return l.lost()
}

// Abandon frees the lock of a run that wrote nothing under it: the
// record it replaced is put back (a Lease it created is deleted), so that
// the cluster's serial is the one before the run.
func (l *Lock) Abandon(ctx context.Context) error {
	if err := l.stopRenewing(); err != nil {
		return err
	}
	if l.created {
		rv := l.lease.ResourceVersion
		err := l.client.Delete(ctx, l.lease.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return l.update(ctx, func(le *coordinationv1.Lease) {
		setRecord(le, l.before)
		free(le)
	})
}

// ForceUnlock breaks a context's lock, keeping the record: whoever holds
// it when heldBy is "", else only when heldBy names its holder (IsHolder),
// so that a lock another run took since is left alone. It returns the
// state it found (Holder "": it was free; another holder than heldBy: it
// was left).
func ForceUnlock(ctx context.Context, c coordclient.LeasesGetter, namespace, inventoryName, heldBy string) (*State, error) {
	client := c.Leases(namespace)
	for {
		l, err := client.Get(ctx, Name(inventoryName), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return &State{}, nil
		}
		if err != nil {
			return nil, err
		}
		st, err := stateOf(l)
		if err != nil {
			return nil, err
		}
		if st.Holder == "" || (heldBy != "" && !IsHolder(st.Holder, heldBy)) {
			return st, nil
		}
		free(l)
		if _, err := client.Update(ctx, l, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		return st, nil
	}
}

// Mismatch is how the serial OUT_DIR recorded for a context disagrees
// with its cluster's record.
type Mismatch struct {
	// Stale: another run wrote the cluster since OUT_DIR recorded it;
	// else the cluster's record is older than OUT_DIR's.
	Stale bool
	What  string
}

// CompareSerials compares the serial OUT_DIR recorded for a context (0:
// none) with its cluster's record; nil when they agree, or when neither
// has one. apply refuses a mismatch before it writes, and status does not
// compare the context's objects with a stale OUT_DIR.
func CompareSerials(contextName, namespace, inventoryName string, cluster Record, outDir int64) *Mismatch {
	switch {
	case cluster.Serial == outDir:
		return nil
	case cluster.Serial > outDir:
		return &Mismatch{Stale: true, What: fmt.Sprintf("context %q: OUT_DIR is stale: another run wrote the cluster since OUT_DIR recorded it (cluster serial %d, OUT_DIR serial %d; last written by %s at %s, %s)",
			contextName, cluster.Serial, outDir, orUnknown(cluster.AppliedBy), when(cluster.AppliedAt), orUnknown(cluster.Outcome))}
	default:
		return &Mismatch{What: fmt.Sprintf("context %q: the cluster's record is older than OUT_DIR's (cluster serial %d, OUT_DIR serial %d): its Lease %s/%s was deleted or the cluster restored from a backup, so what it holds may not be what OUT_DIR says",
			contextName, cluster.Serial, outDir, namespace, Name(inventoryName))}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// UnlockCommand is the command that breaks every lock holder holds on
// OUT_DIR's contexts, and no other: what a message offers as the way out.
func UnlockCommand(holder, outDir, kubeconfig string) string {
	cmd := "shard-router apply --force-unlock-held-by " + orRun(holder) + " --out " + shellQuote(outDir)
	if kubeconfig != "" {
		cmd += " --kubeconfig " + shellQuote(kubeconfig)
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell where it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,@%+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Expires is when the lock expires unless renewed: Duration after its last
// renewal that reached the cluster. Ask it once Release or Abandon
// returned (a run whose credentials died cannot release its lock: it
// expires then).
func (l *Lock) Expires() time.Time {
	if rt := l.lease.Spec.RenewTime; rt != nil {
		return rt.Add(Duration)
	}
	return time.Time{}
}
