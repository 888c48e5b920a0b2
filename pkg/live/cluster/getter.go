package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	diskcached "k8s.io/client-go/discovery/cached/disk"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// contextGetter is what kubectl's ConfigFlags (with a persistent config,
// as kpt builds them) give a factory for one context: the REST config,
// then kpt's throttling (wrap), one discovery client with kubectl's disk
// cache, and one deferred REST mapper over it. The difference: the
// kubeconfig is the one LoadKubeconfig read once, not read and parsed
// again by every context's factory. A kubeconfig holds every context of
// the fleet, so parsing it per context grows with the contexts squared:
// at 256 contexts, 16% of a no-change apply's CPU and 27% of status'.
//
// Contexts of one kubeconfig that name the same cluster and user entries
// reach the same server with the same credentials: they share one REST
// config, one discovery client and one REST mapper (shared), as one
// context's factory shares them among its own callers. A fleet of many
// contexts on one cluster then reads discovery once per run, not once per
// context.
type contextGetter struct {
	loader clientcmd.ClientConfig
	wrap   func(*rest.Config) *rest.Config
	shared *sharedDiscovery
	// credentials are the context's, made from its first REST config;
	// configError words an error building that config.
	credentials func(*rest.Config) *Credentials
	configError func(error) error
}

// sharedDiscovery is the REST config (see ToRESTConfig), discovery client
// and REST mapper of one cluster and user entry of the kubeconfig.
type sharedDiscovery struct {
	configMu      sync.Mutex
	config        *rest.Config
	discoveryOnce sync.Once
	discovery     discovery.CachedDiscoveryInterface
	discoveryErr  error
	mapperOnce    sync.Once
	mapper        meta.RESTMapper
	mapperErr     error
}

func (g *contextGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return g.loader }

// ToRESTConfig is the context's config, sending through its credentials'
// transport, throttled as kpt throttles it. Each call starts from a copy
// of the config the loader made on the first successful call of any
// context naming the same cluster and user entries (they give the same
// config), its certificate authority read once: every client of a context
// (cli-utils' applier makes one per object) asked the loader again, which
// merges and validates the context's entries and reads the CA file, then
// the transport read that file again, for the same answer. A failed call
// is not remembered: the next one asks the loader again.
func (g *contextGetter) ToRESTConfig() (*rest.Config, error) {
	c, err := g.loaded()
	if err != nil {
		return nil, g.configError(err)
	}
	if c, err = g.credentials(c).config(c); err != nil {
		return nil, err
	}
	return g.wrap(c), nil
}

// loaded is a copy of the loader's config, made once.
func (g *contextGetter) loaded() (*rest.Config, error) {
	s := g.shared
	s.configMu.Lock()
	defer s.configMu.Unlock()
	if s.config == nil {
		c, err := g.loader.ClientConfig()
		if err != nil {
			return nil, err
		}
		// The trust anchor only: client certificates and tokens named by
		// file are still read where client-go reads them.
		if len(c.CAData) == 0 && c.CAFile != "" {
			if data, err := os.ReadFile(c.CAFile); err == nil && len(data) > 0 {
				c.CAData = data
			}
		}
		s.config = c
	}
	return rest.CopyConfig(s.config), nil
}

// ToDiscoveryClient is ConfigFlags': kubectl's disk cache under
// $KUBECACHEDIR (default ~/.kube/cache), per server, fresh for 6 hours,
// with the rate limits kpt's throttling gives the context (kpt sets
// ConfigFlags' discovery limits to them).
func (g *contextGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	s := g.shared
	s.discoveryOnce.Do(func() {
		config, err := g.ToRESTConfig()
		if err != nil {
			s.discoveryErr = err
			return
		}
		cacheDir := filepath.Join(homedir.HomeDir(), ".kube", "cache")
		if d := os.Getenv("KUBECACHEDIR"); d != "" {
			cacheDir = d
		}
		s.discovery, s.discoveryErr = diskcached.NewCachedDiscoveryClientForConfig(config,
			filepath.Join(cacheDir, "discovery", cacheDirOf(config.Host)), filepath.Join(cacheDir, "http"), 6*time.Hour)
	})
	return s.discovery, s.discoveryErr
}

// ToRESTMapper is ConfigFlags': a deferred discovery mapper with kubectl's
// short names.
func (g *contextGetter) ToRESTMapper() (meta.RESTMapper, error) {
	s := g.shared
	s.mapperOnce.Do(func() {
		d, err := g.ToDiscoveryClient()
		if err != nil {
			s.mapperErr = err
			return
		}
		s.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(d), d, func(string) {})
	})
	return s.mapper, s.mapperErr
}

var unsafeHostChars = regexp.MustCompile(`[^(\w/.)]`)

// cacheDirOf is ConfigFlags' name of a server's discovery cache, so that
// kubectl, kpt and shard-router share it.
func cacheDirOf(host string) string {
	h := strings.Replace(strings.Replace(host, "https://", "", 1), "http://", "", 1)
	return unsafeHostChars.ReplaceAllString(h, "_")
}
