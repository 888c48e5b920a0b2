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
// their clocks in sync, as Kubernetes' own Leases assume).
package lease

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
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
	// ManagedByLabel marks the Leases shard-router writes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "shard-router"
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
}

// State is a read of a context's Lease.
type State struct {
	// Found is false when the cluster has no Lease for the inventory.
	Found  bool
	Record Record
	// Holder is who holds the lock, "" when nobody; Since when it took
	// it, Renewed its last renewal.
	Holder  string
	Since   time.Time
	Renewed time.Time
	lease   *coordinationv1.Lease
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
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		s.Holder = *h
		if l.Spec.AcquireTime != nil {
			s.Since = l.Spec.AcquireTime.Time
		}
		if l.Spec.RenewTime != nil {
			s.Renewed = l.Spec.RenewTime.Time
		}
	}
	return s, nil
}

// setRecord writes rec into the Lease's annotations.
func setRecord(l *coordinationv1.Lease, rec Record) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	set := func(k, v string) {
		if v == "" {
			delete(l.Annotations, k)
		} else {
			l.Annotations[k] = v
		}
	}
	set(SerialAnnotation, strconv.FormatInt(rec.Serial, 10))
	set(DigestAnnotation, rec.Digest)
	set(AppliedByAnnotation, rec.AppliedBy)
	at := ""
	if !rec.AppliedAt.IsZero() {
		at = rec.AppliedAt.UTC().Format(time.RFC3339)
	}
	set(AppliedAtAnnotation, at)
	set(AppliedAsAnnotation, rec.AppliedAs)
	set(OutcomeAnnotation, rec.Outcome)
	set(ClusterAnnotation, rec.ClusterUID)
	set(OwnerAnnotation, rec.Owner)
	set(OwnerNameAnnotation, rec.OwnerName)
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

// HeldError says that another run holds a context's lock.
type HeldError struct {
	Context, Namespace, Lease string
	Holder                    string
	Since, Expires            time.Time
	Waited                    time.Duration
	// Adopting: --adopt-cluster-state, which never waits for a lock.
	Adopting bool
}

func (e *HeldError) Error() string {
	wait := "wait for it to finish (or pass --lock-timeout to wait)"
	switch {
	case e.Adopting:
		wait = "--adopt-cluster-state takes the cluster's state only while no run writes it: run again once that run is done"
	case e.Waited > 0:
		wait = fmt.Sprintf("still held after --lock-timeout %s", e.Waited)
	}
	return fmt.Sprintf("context %q is locked by another run: %s holds Lease %s/%s since %s (it expires at %s unless renewed); %s; if that run is gone and cannot release it, apply --force-unlock %s breaks it",
		e.Context, e.Holder, e.Namespace, e.Lease, e.Since.UTC().Format(time.RFC3339), e.Expires.UTC().Format(time.RFC3339), wait, e.Context)
}

// Check decides, under the lock, whether the run may write: given the
// cluster's current record, it returns the record to write (serial
// incremented), or an error that refuses the context without a write.
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
	// OnLost is called, once, when a renewal finds the lock taken away.
	OnLost func(error)
}

// Lock is a held lock on one context.
type Lock struct {
	client  coordclient.LeaseInterface
	context string
	me      string
	lease   *coordinationv1.Lease
	rec     Record
	// before is the record the lock replaced (created: there was no
	// Lease), for Abandon.
	before  Record
	created bool
	onLost  func(error)
	stop    chan struct{}
	done    chan struct{}
	// lostErr is set by the renewing goroutine, read after done.
	lostErr error
}

// Acquire takes the lock of a context's inventory, checking the record
// with req.Check first (a refusal writes nothing). A lock held by another
// run is a *HeldError at once, or after waiting up to req.Timeout. The
// lock is renewed until Release.
func Acquire(ctx context.Context, c coordclient.LeasesGetter, req Request) (*Lock, error) {
	contextName, namespace, me, timeout, check := req.Context, req.Namespace, req.Me, req.Timeout, req.Check
	client := c.Leases(namespace)
	name := Name(req.Inventory)
	start := time.Now()
	for {
		l, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("context %q: reading Lease %s/%s: %w", contextName, namespace, name, err)
		}
		var cur *State
		if apierrors.IsNotFound(err) {
			l, cur = nil, &State{}
		} else if cur, err = stateOf(l); err != nil {
			return nil, fmt.Errorf("context %q: %w", contextName, err)
		}
		if now := time.Now(); cur.Held(now) && cur.Holder != me.String() {
			waited := time.Since(start)
			if waited >= timeout {
				return nil, &HeldError{Context: contextName, Namespace: namespace, Lease: name, Holder: cur.Holder,
					Since: cur.Since, Expires: cur.Expires(), Waited: timeout}
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(min(retryEvery, timeout-waited)):
			}
			continue
		}
		rec, err := check(cur)
		if err != nil {
			return nil, err
		}
		now := metav1.NewMicroTime(time.Now())
		secs := int32(Duration / time.Second)
		holder := me.String()
		if l == nil {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
				Labels: map[string]string{ManagedByLabel: managedBy}}}
		}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &holder, &secs
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		setRecord(l, rec)
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
			return nil, fmt.Errorf("context %q: taking Lease %s/%s: %w", contextName, namespace, name, err)
		}
		lk := &Lock{client: client, context: contextName, me: holder, lease: got, rec: rec, onLost: req.OnLost,
			before: cur.Record, created: !cur.Found,
			stop: make(chan struct{}), done: make(chan struct{})}
		go lk.renew()
		return lk, nil
	}
}

// Record is the record the lock wrote when it was taken.
func (l *Lock) Record() Record { return l.rec }

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
		if err != nil && l.lostErr != nil {
			if l.onLost != nil {
				l.onLost(l.lostErr)
			}
			return
		}
	}
}

// update changes the held Lease; it fails when another took it.
func (l *Lock) update(ctx context.Context, change func(*coordinationv1.Lease)) error {
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

// Release records the run's outcome and frees the lock.
func (l *Lock) Release(ctx context.Context, outcome string) error {
	if err := l.stopRenewing(); err != nil {
		return err
	}
	l.rec.Outcome = outcome
	return l.update(ctx, func(le *coordinationv1.Lease) {
		setRecord(le, l.rec)
		le.Spec.HolderIdentity, le.Spec.AcquireTime, le.Spec.RenewTime = nil, nil, nil
	})
}

// stopRenewing stops the renewals; the error of a lock taken away.
func (l *Lock) stopRenewing() error {
	close(l.stop)
	<-l.done
	return l.lostErr
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
		le.Spec.HolderIdentity, le.Spec.AcquireTime, le.Spec.RenewTime = nil, nil, nil
	})
}

// ForceUnlock breaks a context's lock whoever holds it, keeping the
// record; it returns the holder it removed ("" when it was free).
func ForceUnlock(ctx context.Context, c coordclient.LeasesGetter, namespace, inventoryName string) (*State, error) {
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
		if st.Holder == "" {
			return st, nil
		}
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil, nil
		if _, err := client.Update(ctx, l, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		return st, nil
	}
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
