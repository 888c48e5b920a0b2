package cluster

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Every request of a context goes through its Credentials: one transport,
// built once per context from the kubeconfig's user entry (and the
// impersonation asked for) as client-go builds it (rest.TransportFor:
// TLS, bearer token or token file, exec plugin, impersonation), and
// wrapped so that a request the cluster answers 401 is sent once more
// with the credentials read again. client-go's exec plugin support runs
// the plugin again on a 401 but returns the 401 to the caller, and a
// token file is read again only once a minute: without the retry, an
// exec token that expired without an expirationTimestamp, or a rotated
// token file, fails the request that found it. The retry wraps the fully
// built transport: rest.Config.WrapTransport sits inside the
// authentication wrappers, where a retry would send the same stale
// Authorization header again.

// CredentialsError says that a context's credentials do not work: the
// cluster rejected them (401, also once read again), or the kubeconfig's
// exec plugin is missing or failed, or its token file cannot be read. It
// names the context and the kubeconfig user entry.
type CredentialsError struct {
	Context string
	// User is the kubeconfig's user entry of the context.
	User string
	// Cause is what went wrong: "credentials rejected (401), also once
	// read again", "exec plugin /path: not found", ...
	Cause string
}

func (e *CredentialsError) Error() string {
	return fmt.Sprintf("context %q: kubeconfig user %q: %s", e.Context, e.User, e.Cause)
}

// Rejected reports whether the cluster answered 401 (as opposed to
// credentials that could not even be obtained).
func (e *CredentialsError) Rejected() bool { return strings.HasPrefix(e.Cause, causeRejected) }

const causeRejected = "credentials rejected (401)"

// Credentials are one context's credentials across a run.
type Credentials struct {
	context, user string
	// base is the context's REST config as the kubeconfig (and the
	// impersonation flags) give it: what the transport is built from.
	base *rest.Config
	// plugin is the exec plugin's command, "" without one.
	plugin string
	// placeholder: made only to record that the config could not be
	// built (Kubeconfig.configError); replaced by the first config built.
	placeholder bool

	mu sync.Mutex
	rt http.RoundTripper
	// gen counts the transports built: concurrent 401s rebuild it once.
	gen      int
	buildErr error
	// failure is the last credentials failure; a response other than
	// 401 clears it.
	failure atomic.Pointer[CredentialsError]
}

func newCredentials(context, user string, base *rest.Config) *Credentials {
	c := &Credentials{context: context, user: user, base: rest.CopyConfig(base)}
	if base.ExecProvider != nil {
		c.plugin = base.ExecProvider.Command
	}
	return c
}

// Failure is the context's credentials failure, nil while they work (or
// before any request).
func (c *Credentials) Failure() *CredentialsError {
	if c == nil {
		return nil
	}
	return c.failure.Load()
}

// Err is Failure as an error: nil while the credentials work.
func (c *Credentials) Err() error {
	if f := c.Failure(); f != nil {
		return f
	}
	return nil
}

// User is the kubeconfig's user entry of the context.
func (c *Credentials) User() string { return c.user }

// As is the identity the context's requests impersonate (the flags', else
// the kubeconfig user entry's as:); zero when none.
func (c *Credentials) As() Impersonation { return impersonationOf(c.base) }

// config turns a REST config of the context into one whose requests go
// through c: the transport carries the TLS settings, the credentials and
// the impersonation, so the config must not (client-go would add them
// again, outside the retry, or refuse a transport with TLS settings).
func (c *Credentials) config(cfg *rest.Config) (*rest.Config, error) {
	if _, _, err := c.transport(); err != nil {
		return nil, err
	}
	cfg.Transport = c
	cfg.WrapTransport = nil
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.BearerToken, cfg.BearerTokenFile, cfg.Username, cfg.Password = "", "", "", ""
	cfg.Impersonate = rest.ImpersonationConfig{}
	cfg.ExecProvider, cfg.AuthProvider, cfg.AuthConfigPersister = nil, nil, nil
	cfg.Dial, cfg.Proxy = nil, nil
	return cfg, nil
}

// transport is the current transport and its generation; it is built
// on first use.
func (c *Credentials) transport() (http.RoundTripper, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rt == nil && c.buildErr == nil {
		c.build()
	}
	return c.rt, c.gen, c.buildErr
}

// build makes the transport from base; c.mu is held. Building reads a
// token file, so a missing one is a credentials failure.
func (c *Credentials) build() {
	rt, err := rest.TransportFor(c.base)
	if err != nil {
		cerr := &CredentialsError{Context: c.context, User: c.user, Cause: "building its transport: " + err.Error()}
		if c.base.BearerTokenFile != "" && errors.Is(err, fs.ErrNotExist) {
			cerr.Cause = fmt.Sprintf("token file %s: not found", c.base.BearerTokenFile)
		}
		c.failure.Store(cerr)
		c.buildErr = cerr
		return
	}
	c.rt, c.buildErr = rt, nil
	c.gen++
}

// reread builds the transport again, unless another request did since
// generation gen: a token file is read again, and an exec plugin's
// credentials are those client-go refreshed on the 401 (its
// authenticators are cached per plugin configuration).
func (c *Credentials) reread(gen int) (http.RoundTripper, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.rt, c.buildErr = nil, nil
		c.build()
	}
	return c.rt, c.buildErr
}

// RoundTrip sends req through the context's transport; a 401 to a
// request that can be sent again is retried once with the credentials
// read again, and a second 401 records the failure.
func (c *Credentials) RoundTrip(req *http.Request) (*http.Response, error) {
	rt, gen, err := c.transport()
	if err != nil {
		return nil, err
	}
	// client-go's exec plugin support sets the Authorization header on
	// the request it is given: the retry starts from the header as given.
	header := req.Header.Clone()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, c.sendError(err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		c.worked()
		return resp, nil
	}
	again, ok := replayable(req, header)
	if !ok {
		c.failure.Store(c.rejected("the request could not be sent again"))
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if rt, err = c.reread(gen); err != nil {
		return nil, err
	}
	resp, err = rt.RoundTrip(again)
	switch {
	case err != nil:
		return nil, c.sendError(err)
	case resp.StatusCode == http.StatusUnauthorized:
		c.failure.Store(c.rejected("also once read again"))
	default:
		c.worked()
	}
	return resp, nil
}

// worked clears a recorded failure: the cluster took the credentials.
func (c *Credentials) worked() {
	if c.failure.Load() != nil {
		c.failure.Store(nil)
	}
}

func (c *Credentials) rejected(detail string) *CredentialsError {
	return &CredentialsError{Context: c.context, User: c.user, Cause: causeRejected + ", " + detail}
}

// replayable is a copy of req, with header, to send again: a request without a body,
// or one whose body can be had again (GetBody, as client-go's requests
// with a body have).
func replayable(req *http.Request, header http.Header) (*http.Request, bool) {
	again := req.Clone(req.Context())
	again.Header = header
	if req.Body == nil || req.Body == http.NoBody {
		return again, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	again.Body = body
	return again, true
}

// pluginExit finds client-go's words for an exec plugin that ran and
// failed.
var pluginExit = regexp.MustCompile(`exec: executable .* failed with exit code (\d+)`)

// sendError turns client-go's error about an exec plugin that could not
// give credentials (it says "getting credentials: exec: ...") into a
// CredentialsError, and records it; any other error (the cluster
// unreachable) is returned as it is.
func (c *Credentials) sendError(err error) error {
	msg := err.Error()
	if c.plugin == "" || !strings.HasPrefix(msg, "getting credentials: ") {
		return err
	}
	detail := strings.TrimPrefix(msg, "getting credentials: ")
	cause := fmt.Sprintf("exec plugin %s: ", c.plugin)
	switch m := pluginExit.FindStringSubmatch(detail); {
	case strings.Contains(firstLine(detail), " not found") || strings.Contains(detail, syscall.ENOENT.Error()):
		// "exec: executable X not found" (looked up in $PATH), or
		// "exec: fork/exec /path: no such file or directory"
		cause += "not found"
	case m != nil:
		cause += "failed with exit code " + m[1]
	default:
		cause += firstLine(detail)
	}
	cerr := &CredentialsError{Context: c.context, User: c.user, Cause: cause}
	c.failure.Store(cerr)
	return cerr
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Impersonation is who a run's requests act as (kubectl's --as, --as-group
// and --as-uid, or a kubeconfig user entry's as:).
type Impersonation struct {
	User   string   `json:"user,omitempty"`
	UID    string   `json:"uid,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// IsZero reports whether nobody is impersonated.
func (i Impersonation) IsZero() bool { return i.User == "" && i.UID == "" && len(i.Groups) == 0 }

// String is the identity as records and messages show it: the user, then
// its groups and UID when set: "team-a (groups: ci, deployers; uid: 42)".
func (i Impersonation) String() string {
	if i.IsZero() {
		return ""
	}
	var extra []string
	if len(i.Groups) > 0 {
		extra = append(extra, "groups: "+strings.Join(i.Groups, ", "))
	}
	if i.UID != "" {
		extra = append(extra, "uid: "+i.UID)
	}
	if len(extra) == 0 {
		return i.User
	}
	return i.User + " (" + strings.Join(extra, "; ") + ")"
}

func impersonationOf(c *rest.Config) Impersonation {
	if c == nil {
		return Impersonation{}
	}
	return Impersonation{User: c.Impersonate.UserName, UID: c.Impersonate.UID, Groups: append([]string(nil), c.Impersonate.Groups...)}
}

// TokenExpiry is when the bearer token of a context's user entry expires,
// where it is a JWT with an exp claim (its token, else its token file,
// read now); from says which token, for messages. ok is false when that
// is not known: no bearer token (an exec plugin's, a client certificate),
// or one that is not a JWT with an exp.
func (k *Kubeconfig) TokenExpiry(context string) (exp time.Time, from string, ok bool) {
	user := k.User(context)
	auth := k.raw.AuthInfos[user]
	if auth == nil {
		return time.Time{}, "", false
	}
	token := auth.Token
	from = fmt.Sprintf("the token of kubeconfig user %q", user)
	if token == "" && auth.TokenFile != "" {
		b, err := os.ReadFile(auth.TokenFile)
		if err != nil {
			return time.Time{}, "", false
		}
		token = strings.TrimSpace(string(b))
		from = fmt.Sprintf("the token in %s (kubeconfig user %q)", auth.TokenFile, user)
	}
	exp, ok = jwtExpiry(token)
	return exp, from, ok
}

// jwtExpiry reads the exp claim of a JWT, unverified: a warning needs no
// more (the cluster decides whether the token is good).
func jwtExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	secs, err := claims.Exp.Float64()
	if err != nil || secs <= 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(secs), 0), true
}
