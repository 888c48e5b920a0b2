package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	kptutil "github.com/kptdev/kpt/commands/util"
	"github.com/kptdev/kpt/pkg/lib/util/cfgflags"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// UserAgent is sent with every request, as kpt sends "kpt/<version>".
const UserAgent = "shard-router"

// Kubeconfig is a loaded kubeconfig: where it was read from and the
// contexts it defines.
type Kubeconfig struct {
	// Path is the file given with --kubeconfig, or "" when the default
	// loading rules ($KUBECONFIG, else ~/.kube/config) found it.
	Path string
	raw  clientcmdapi.Config
	// flowControl holds the servers found to have flow control (see
	// rememberFlowControl), shared by every context on the same server.
	flowControl sync.Map
	// discovery holds the discovery client and REST mapper of each cluster
	// and user entry, shared by the contexts that name both (getter.go).
	discovery sync.Map
	// as is the impersonation every context's requests carry (--as,
	// --as-group, --as-uid); zero: the user entries' own as:, if any.
	as Impersonation
	// credentials holds each context's Credentials (credentials.go),
	// made with its first REST config.
	credentials sync.Map
	// shared holds what is read once for the contexts that name the same
	// cluster and user entries: the cluster's identity, status' probe
	// (identity.go).
	shared sync.Map
	// together is ReadTogether's plan: the group of each context whose
	// first inventory and Lease reads are one list (together.go).
	together atomic.Value
	// newMetadata makes a context's metadata client (ReadTogether's list
	// of names); nil: from the context's REST config.
	newMetadata func(context string) (metadata.Interface, error)
}

// LoadKubeconfig reads the kubeconfig at path; when path is "", it follows
// kubectl's loading rules: $KUBECONFIG (a list of files), else
// ~/.kube/config. A file that cannot be read or parsed is an error naming
// it; so is a kubeconfig without any context.
func LoadKubeconfig(path string) (*Kubeconfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", describe(rules), err)
	}
	if len(raw.Contexts) == 0 {
		return nil, fmt.Errorf("kubeconfig %s defines no context", describe(rules))
	}
	return &Kubeconfig{Path: path, raw: *raw}, nil
}

// describe names where a kubeconfig was looked for, for messages.
func describe(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return fmt.Sprintf("%s (from $%s)", env, clientcmd.RecommendedConfigPathEnvVar)
	}
	return clientcmd.RecommendedHomeFile
}

// Contexts returns the names of the kubeconfig's contexts, sorted.
func (k *Kubeconfig) Contexts() []string {
	names := make([]string, 0, len(k.raw.Contexts))
	for name := range k.raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// MissingContextError names the contexts a command needs that the
// kubeconfig does not define.
type MissingContextError struct {
	Missing    []string
	Kubeconfig string
	Defined    []string
}

func (e *MissingContextError) Error() string {
	return fmt.Sprintf("kube context %s not found in kubeconfig %s (it defines %s); each shard-router context is applied with the kubeconfig context of the same name",
		strings.Join(quote(e.Missing), ", "), e.Kubeconfig, strings.Join(quote(e.Defined), ", "))
}

func quote(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return q
}

// Require returns a *MissingContextError listing every name in contexts
// the kubeconfig does not define, or nil.
func (k *Kubeconfig) Require(contexts []string) error {
	var missing []string
	for _, name := range contexts {
		if _, ok := k.raw.Contexts[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	where := k.Path
	if where == "" {
		where = describe(clientcmd.NewDefaultClientConfigLoadingRules())
	}
	return &MissingContextError{Missing: missing, Kubeconfig: where, Defined: k.Contexts()}
}

// Impersonate makes every request of every context act as who (kubectl's
// --as, --as-group and --as-uid, which take precedence over a user
// entry's as:). Call it before the first Factory.
func (k *Kubeconfig) Impersonate(who Impersonation) { k.as = who }

// User is the kubeconfig's user entry of a context ("" when the context
// names none).
func (k *Kubeconfig) User(context string) string {
	if c := k.raw.Contexts[context]; c != nil {
		return c.AuthInfo
	}
	return ""
}

// Entries are the cluster and user entries of the kubeconfig a context
// names, as one key: the contexts with the same key reach one cluster as
// one identity (the run's impersonation applies to every context alike),
// and share what is read or asked once for both (discovery, identity,
// access reviews). ok is false for a context the kubeconfig lacks.
func (k *Kubeconfig) Entries(context string) (key string, ok bool) {
	if c := k.raw.Contexts[context]; c != nil {
		return c.Cluster + "\x00" + c.AuthInfo, true
	}
	return "", false
}

// Credentials are the context's credentials as its requests use them; nil
// before its factory built a REST config. Their Failure says why a
// context's requests fail for want of credentials.
func (k *Kubeconfig) Credentials(context string) *Credentials {
	if c, ok := k.credentials.Load(context); ok {
		return c.(*Credentials)
	}
	return nil
}

// CredentialsFailure is the context's credentials failure, nil when its
// credentials worked (or were never used).
func (k *Kubeconfig) CredentialsFailure(context string) *CredentialsError {
	return k.Credentials(context).Failure()
}

// As is who the context's requests act as: the flags' impersonation, else
// its user entry's as:; zero when nobody is impersonated.
func (k *Kubeconfig) As(context string) Impersonation {
	if c := k.Credentials(context); c != nil {
		return c.As()
	}
	cfg, err := k.loader(context).ClientConfig()
	if err != nil {
		return Impersonation{}
	}
	return impersonationOf(cfg)
}

// loader is kubectl's client config of one context, with the
// impersonation flags.
func (k *Kubeconfig) loader(context string) clientcmd.ClientConfig {
	overrides := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults, CurrentContext: context}
	overrides.AuthInfo.Impersonate = k.as.User
	overrides.AuthInfo.ImpersonateUID = k.as.UID
	overrides.AuthInfo.ImpersonateGroups = k.as.Groups
	return clientcmd.NewNonInteractiveClientConfig(k.raw, context, overrides, nil)
}

// credentialsOf is the context's Credentials, made from its first REST
// config cfg.
func (k *Kubeconfig) credentialsOf(context string, cfg *rest.Config) *Credentials {
	c := k.Credentials(context)
	if c != nil && !c.placeholder {
		return c
	}
	made := newCredentials(context, k.User(context), cfg)
	if c != nil && k.credentials.CompareAndSwap(context, c, made) {
		return made // the token file that could not be read now can
	}
	got, _ := k.credentials.LoadOrStore(context, made)
	return got.(*Credentials)
}

// configError words an error of client-go building a context's REST
// config: a token file that cannot be read (client-go reads it then) is
// a credentials failure of the context, recorded as such.
func (k *Kubeconfig) configError(context string, err error) error {
	user := k.User(context)
	auth := k.raw.AuthInfos[user]
	if auth == nil || auth.TokenFile == "" || auth.Token != "" || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	c := newCredentials(context, user, &rest.Config{})
	c.placeholder = true
	cerr := &CredentialsError{Context: context, User: user, Cause: fmt.Sprintf("token file %s: not found", auth.TokenFile)}
	c.failure.Store(cerr)
	if got, loaded := k.credentials.LoadOrStore(context, c); loaded {
		got.(*Credentials).failure.Store(cerr)
	}
	return cerr
}

// Factory returns the client factory of one context, built as kpt builds
// its own (kpt commands/util.NewFactory): what kubectl's config flags give
// for the context, kpt's client-side throttling (none when the apiserver
// has flow control, else at least 30 QPS), and a user agent.
// Each call returns a new factory, made from the kubeconfig read once
// (contextGetter); contexts that name the same cluster and user entries
// share one discovery client and REST mapper, and the apiserver is asked
// about flow control once per server, for every context that reaches it
// (see rememberFlowControl). Every client of the context sends through
// its Credentials (credentials.go), built once.
//
// The discovery key needs no impersonation: --as applies to every context
// of the kubeconfig alike, and a user entry's as: is part of the entry.
// Discovery is the same for every identity anyway (the apiserver does
// not filter it by RBAC; kubectl's disk cache is per server, not per
// user), so no identity learns from it what another may do.
func (k *Kubeconfig) Factory(context string) cmdutil.Factory {
	flags := genericclioptions.NewConfigFlags(true)
	kptutil.UpdateQPS(flags)
	getter := &contextGetter{loader: k.loader(context), wrap: k.rememberFlowControl(flags.WrapConfigFn), shared: &sharedDiscovery{},
		credentials: func(cfg *rest.Config) *Credentials { return k.credentialsOf(context, cfg) },
		configError: func(err error) error { return k.configError(context, err) }}
	if key, ok := k.Entries(context); ok {
		shared, _ := k.discovery.LoadOrStore(key, getter.shared)
		getter.shared = shared.(*sharedDiscovery)
	}
	return cmdutil.NewFactory(&cfgflags.UserAgentKubeConfigFlags{Delegate: getter, UserAgent: UserAgent})
}

// rememberFlowControl wraps kpt's throttling (UpdateQPS), which asks the
// apiserver whether it has flow control (a HEAD /livez/ping) on every
// ToRESTConfig: cli-utils' applier calls it once per object it applies, so
// a serial apply pays a round trip per object for an answer that does not
// change during a run. Once kpt found flow control on a server (throttling
// off: QPS and burst -1), later configs of any context on that server get
// that answer without asking; any other answer (no flow control, or a ping
// that failed) is asked again, as kpt does.
func (k *Kubeconfig) rememberFlowControl(kptWrap func(*rest.Config) *rest.Config) func(*rest.Config) *rest.Config {
	return func(c *rest.Config) *rest.Config {
		if _, known := k.flowControl.Load(c.Host); known {
			c.QPS, c.Burst = -1, -1
			return c
		}
		c = kptWrap(c)
		if c.QPS < 0 && c.Burst < 0 {
			k.flowControl.Store(c.Host, true)
		}
		return c
	}
}
