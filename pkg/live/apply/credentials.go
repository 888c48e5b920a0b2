package apply

import (
	"errors"
	"fmt"
	"time"

	"github.com/shard-router/shard-router/pkg/live/cluster"
)

// A context's credentials (cluster.Credentials) can fail before a run
// writes (rejected, an exec plugin missing or failing): the run is then
// refused, since that context would be found only once its wave starts,
// after the others were written. They can fail during a run (a token
// revoked, or expired for good): that context fails, said to be for its
// credentials, not as an object refused, lost health or a failed gate.

// credentials is the context's credentials failure: nil while they work.
func (t *target) credentials() *cluster.CredentialsError {
	if t.kc == nil {
		return nil
	}
	return t.kc.CredentialsFailure(t.name)
}

// blame puts a failure of the context down to its credentials when they
// failed: a 401 reaches cli-utils', kstatus' and the gates' errors as
// "Unauthorized", where it looks like an object refused, lost health or a
// failed gate, which it is not.
func (t *target) blame(err error) error {
	cerr := t.credentials()
	if cerr == nil || errors.As(err, new(*credentialsFailed)) {
		return err
	}
	return &credentialsFailed{cerr}
}

// credentialsFailed is a context's failure for want of credentials.
type credentialsFailed struct{ *cluster.CredentialsError }

func (e *credentialsFailed) Error() string {
	return e.CredentialsError.Error() + ": renew them (the kubeconfig's token, token file or exec plugin) and apply again"
}

func (e *credentialsFailed) Unwrap() error { return e.CredentialsError }

// refuseCredentials refuses the whole run when a context's credentials
// failed while it was read (rejected, an exec plugin missing or failing):
// found before any write, that context must not be left behind while the
// others, earlier waves included, are written. An unreachable cluster is
// not refused: that context fails alone. It reports whether it refused.
func (r *run) refuseCredentials(targets []*target) bool {
	refused := false
	for _, t := range targets {
		if cerr := t.credentials(); t.failed && cerr != nil {
			r.report.Errors = append(r.report.Errors, fmt.Sprintf("%v: found before any write, so no cluster was written; renew the credentials (the kubeconfig's token, token file or exec plugin) and run again", cerr))
			refused = true
		}
	}
	return refused
}

// warnExpiring warns, before any request, about the contexts whose bearer
// token (a JWT with an exp claim, in the kubeconfig or its token file)
// expires before the rollout's bakes can end: each context is written to
// until the run ends (its lock is renewed until then), so such a context
// would fail half-way with its credentials rejected.
func (r *run) warnExpiring(kc *cluster.Kubeconfig) {
	var bakes time.Duration
	for _, w := range r.waves {
		bakes += gateSpan(w)
	}
	if r.rollout() == nil || bakes <= 0 {
		return
	}
	end := time.Now().Add(bakes)
	for _, t := range r.targets {
		exp, from, ok := kc.TokenExpiry(t.name)
		if !ok || !exp.Before(end) {
			continue
		}
		r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("context %q: %s expires at %s (its JWT's exp), before the rollout's bakes can end (%s of bakes: not before %s); the cluster will then reject it and the context fail half-way: use credentials that outlive the rollout, or a kubeconfig exec plugin that renews them",
			t.name, from, exp.UTC().Format(time.RFC3339), bakes, end.UTC().Format(time.RFC3339)))
	}
}
