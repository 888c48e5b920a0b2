package cluster

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	kptutil "github.com/kptdev/kpt/commands/util"
	"github.com/kptdev/kpt/pkg/lib/util/cfgflags"
	"k8s.io/cli-runtime/pkg/genericclioptions"
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
	// shared holds what is read once for the contexts that name the same
	// cluster and user entries: the cluster's identity, status' probe
	// (identity.go).
	shared sync.Map
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

// Factory returns the client factory of one context, built as kpt builds
// its own (kpt commands/util.NewFactory): what kubectl's config flags give
// for the context, kpt's client-side throttling (none when the apiserver
// has flow control, else at least 30 QPS), and a user agent.
// Each call returns a new factory, made from the kubeconfig read once
// (contextGetter); contexts that name the same cluster and user entries
// share one discovery client and REST mapper, and the apiserver is asked
// about flow control once per server, for every context that reaches it
// (see rememberFlowControl).
func (k *Kubeconfig) Factory(context string) cmdutil.Factory {
	flags := genericclioptions.NewConfigFlags(true)
	kptutil.UpdateQPS(flags)
	overrides := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults, CurrentContext: context}
	getter := &contextGetter{loader: clientcmd.NewNonInteractiveClientConfig(k.raw, context, overrides, nil),
		wrap: k.rememberFlowControl(flags.WrapConfigFn), shared: &sharedDiscovery{}}
	if c := k.raw.Contexts[context]; c != nil {
		shared, _ := k.discovery.LoadOrStore(c.Cluster+"\x00"+c.AuthInfo, getter.shared)
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
