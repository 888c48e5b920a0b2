package localfleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/input"
)

// The layout of a fleet directory.
const (
	// markerFile tells Up and Down that a directory is a fleet's, so that
	// neither ever removes a directory it did not make.
	markerFile = "fleet.txt"
	pidDir     = "pids"
	// KubeconfigFile has one context per cluster, named as the config's.
	KubeconfigFile = "kubeconfig"
	// User is the admin user of every cluster of the fleet.
	User = "fleet-admin"
)

// Options say which fleet Up starts.
type Options struct {
	// Package is the kpt package whose ShardConfig names the clusters.
	Package string
	// Dir holds everything Up writes: data, logs, pid files, kubeconfig.
	Dir string
	// ToolPath finds etcd, kube-apiserver and kube-controller-manager.
	ToolPath func(name string) (string, error)
	// Log receives a line per step.
	Log func(format string, args ...any)
	// Dense, when set, starts a dense fleet instead of one cluster per
	// context of Package: Dense.Clusters clusters shared by Dense.Contexts
	// contexts, and the package Dense describes, written into the fleet
	// directory (Fleet.Package). Package is then not read.
	Dense *DensePackage
}

// Cluster is one cluster of a running fleet.
type Cluster struct {
	Context string
	API     *APIServer
	Main    *Etcd
	// DataStores are the etcds of the datastores the context declares, by
	// logical name.
	DataStores map[string]*Etcd
	// Overrides is kube-apiserver's --etcd-servers-overrides value.
	Overrides string
}

// Fleet is what Up started.
type Fleet struct {
	Dir        string
	Kubeconfig string
	Clusters   []*Cluster
	// Package is the generated package of a dense fleet ("" otherwise).
	Package string
	// Contexts are the kubeconfig's contexts.
	Contexts []KubeContext
}

// Up starts one cluster per context of the package's ShardConfig: its
// main etcd, an etcd per datastore the context declares, kube-apiserver
// with the --etcd-servers-overrides value the datastore package computes
// from the config (with the datastores' endpoints replaced by the local
// etcds), and kube-controller-manager, all on 127.0.0.1. The processes are
// detached: they keep running after this program exits, until Down. On
// an error Up stops what it started.
func Up(opts Options) (*Fleet, error) {
	var cfg *config.Config
	what := opts.Package
	if opts.Dense != nil {
		if err := opts.Dense.Validate(); err != nil {
			return nil, fmt.Errorf("dense fleet: %w", err)
		}
		what = fmt.Sprintf("a dense fleet of %d contexts on %d clusters", opts.Dense.Contexts, opts.Dense.Clusters)
	} else {
		var err error
		if cfg, err = loadConfig(opts.Package); err != nil {
			return nil, err
		}
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dir, what); err != nil {
		return nil, err
	}
	l := &Launcher{ToolPath: opts.ToolPath, Detach: true, PidDir: filepath.Join(dir, pidDir), Log: opts.Log}
	var f *Fleet
	if opts.Dense != nil {
		f, err = startDense(l, *opts.Dense, dir)
	} else {
		f, err = start(l, cfg, dir)
	}
	if err != nil {
		if _, downErr := Down(dir, nil); downErr != nil {
			err = fmt.Errorf("%w; stopping what was started: %v", err, downErr)
		}
		return nil, err
	}
	return f, nil
}

func loadConfig(pkg string) (*config.Config, error) {
	in, err := input.ReadPackage(pkg, yamlio.Options{})
	if err != nil {
		return nil, err
	}
	node, err := in.Config()
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", pkg, err)
	}
	cfg, _, errs := config.Load(node)
	if len(errs) > 0 {
		return nil, fmt.Errorf("package %s: invalid ShardConfig (run shard-router split for details): %w", pkg, errs.ToAggregate())
	}
	return cfg, nil
}

// prepareDir makes dir a fresh fleet directory for what (a package, or
// a dense fleet). It refuses when a fleet
// runs there, or when dir exists and is not a fleet's.
func prepareDir(dir, what string) error {
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
			return fmt.Errorf("%s exists and is not a fleet directory (no %s): remove it or choose another", dir, markerFile)
		}
		records, err := readPidFiles(filepath.Join(dir, pidDir))
		if err != nil {
			return err
		}
		for _, r := range records {
			if r.running() {
				return fmt.Errorf("a fleet is running in %s (%s): stop it first (make fleet-down)", dir, r)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, pidDir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, markerFile), []byte("A local fleet started by `make fleet` ("+what+"); `make fleet-down` stops it.\n"), 0o644)
}

// unsafeFileChars are those a context name may hold that a file name
// should not.
var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// fileName is a context name made safe for a file name.
func fileName(name string) string { return unsafeFileChars.ReplaceAllString(name, "_") }

func start(l *Launcher, cfg *config.Config, dir string) (*Fleet, error) {
	seen := map[string]string{}
	for _, name := range cfg.Names {
		if other, ok := seen[fileName(name)]; ok {
			return nil, fmt.Errorf("contexts %q and %q would share the files of %s: rename one", other, name, fileName(name))
		}
		seen[fileName(name)] = name
	}
	creds, err := NewCreds(dir, User)
	if err != nil {
		return nil, err
	}
	clusters, err := startEtcds(l, cfg, dir)
	if err != nil {
		return nil, err
	}
	flagOf := func(i int, c *Cluster) string { return overrides(cfg, i, c.DataStores) }
	if err := startControlPlanes(l, flagOf, dir, creds, clusters); err != nil {
		return nil, err
	}
	f := &Fleet{Dir: dir, Kubeconfig: filepath.Join(dir, KubeconfigFile), Clusters: clusters}
	for _, c := range clusters {
		f.Contexts = append(f.Contexts, KubeContext{Name: c.API.Name, Server: c.API})
	}
	return f, WriteKubeconfigContexts(f.Kubeconfig, creds, f.Contexts)
}

// DensePackageDir is where a dense fleet's directory holds its package.
const DensePackageDir = "package"

// startDense starts the clusters of a dense fleet, each with one etcd, a
// kube-apiserver and a kube-controller-manager, writes its package and a
// kubeconfig of every context.
func startDense(l *Launcher, p DensePackage, dir string) (*Fleet, error) {
	creds, err := NewCreds(dir, User)
	if err != nil {
		return nil, err
	}
	clusters := make([]*Cluster, p.Clusters)
	for j := range clusters {
		c := &Cluster{Context: p.ClusterName(j), DataStores: map[string]*Etcd{}}
		if c.Main, err = l.StartEtcd(dir, c.Context+"-etcd"); err != nil {
			return nil, err
		}
		clusters[j] = c
	}
	for _, c := range clusters {
		if err := c.Main.WaitReady(); err != nil {
			return nil, err
		}
	}
	if err := startControlPlanes(l, func(int, *Cluster) string { return "" }, dir, creds, clusters); err != nil {
		return nil, err
	}
	servers := make([]*APIServer, len(clusters))
	for j, c := range clusters {
		servers[j] = c.API
	}
	f := &Fleet{Dir: dir, Kubeconfig: filepath.Join(dir, KubeconfigFile), Clusters: clusters,
		Package: filepath.Join(dir, DensePackageDir), Contexts: p.KubeContexts(servers)}
	if err := p.Write(f.Package); err != nil {
		return nil, err
	}
	return f, WriteKubeconfigContexts(f.Kubeconfig, creds, f.Contexts)
}

// startEtcds starts every etcd of the fleet, then waits for them
// together: they start in parallel.
func startEtcds(l *Launcher, cfg *config.Config, dir string) ([]*Cluster, error) {
	var clusters []*Cluster
	var etcds []*Etcd
	for i, name := range cfg.Names {
		c := &Cluster{Context: name, DataStores: map[string]*Etcd{}}
		var err error
		if c.Main, err = l.StartEtcd(dir, fileName(name)+"-etcd"); err != nil {
			return nil, err
		}
		etcds = append(etcds, c.Main)
		for _, ds := range cfg.Contexts()[i].DataStores {
			e, err := l.StartEtcd(dir, fileName(name)+"-etcd-"+fileName(ds.Name))
			if err != nil {
				return nil, err
			}
			c.DataStores[ds.Name] = e
			etcds = append(etcds, e)
		}
		clusters = append(clusters, c)
	}
	for _, e := range etcds {
		if err := e.WaitReady(); err != nil {
			return nil, err
		}
	}
	return clusters, nil
}

// startControlPlanes starts every kube-apiserver, each with the
// --etcd-servers-overrides value overrides gives it, waits for them, then
// starts their controller managers.
func startControlPlanes(l *Launcher, overrides func(int, *Cluster) string, dir string, creds *Creds, clusters []*Cluster) error {
	for i, c := range clusters {
		c.Overrides = overrides(i, c)
		var err error
		if c.API, err = l.StartAPIServer(dir, c.Context, creds, c.Main, c.Overrides); err != nil {
			return err
		}
	}
	for _, c := range clusters {
		if err := c.API.WaitReady(); err != nil {
			return err
		}
		l.logf("kube-apiserver %s is ready", c.Context)
	}
	for _, c := range clusters {
		if _, err := l.StartControllerManager(c.API); err != nil {
			return err
		}
	}
	return nil
}

// overrides is the --etcd-servers-overrides value of context ctx, as
// `shard-router overrides` prints it, with each datastore served by its
// local etcd instead of the endpoints the config names.
func overrides(cfg *config.Config, ctx int, local map[string]*Etcd) string {
	entries := datastore.Entries(cfg, ctx)
	for i := range entries {
		entries[i].Servers = []string{local[entries[i].DataStore].ClientURL}
	}
	return datastore.FormatFlag(entries)
}

// Down stops every process of the fleet in dir, also after a crash of
// Up or of the machine: it reads the pid files, and a pid that now runs
// another command line is left alone. It stops the control planes before
// the etcds, then removes dir. It returns the processes it stopped; log
// receives a line per process.
func Down(dir string, log func(format string, args ...any)) ([]string, error) {
	if log == nil {
		log = func(string, ...any) {}
	}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
		return nil, fmt.Errorf("%s is not a fleet directory (no %s): not touching it", dir, markerFile)
	}
	records, err := readPidFiles(filepath.Join(dir, pidDir))
	if err != nil {
		return nil, err
	}
	var servers, stores []pidRecord
	for _, r := range records {
		switch {
		case !r.running():
			log("%s: not running", r)
		case filepath.Base(r.Args[0]) == "etcd":
			stores = append(stores, r)
		default:
			servers = append(servers, r)
		}
	}
	var stopped []string
	var left []pidRecord
	for _, group := range [][]pidRecord{servers, stores} {
		notStopped := stopAll(group)
		left = append(left, notStopped...)
		for _, r := range group {
			if !containsRecord(notStopped, r) {
				log("stopped %s", r)
				stopped = append(stopped, r.Name)
			}
		}
	}
	if len(left) > 0 {
		names := make([]string, len(left))
		for i, r := range left {
			names[i] = r.String()
		}
		return stopped, fmt.Errorf("could not stop %s; %s is kept", strings.Join(names, ", "), dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return stopped, err
	}
	return stopped, nil
}

func containsRecord(rs []pidRecord, r pidRecord) bool {
	for _, x := range rs {
		if x.file == r.file {
			return true
		}
	}
	return false
}

// ErrNoTool is returned by ToolIn for a tool that is not built.
var ErrNoTool = errors.New("not built")

// ToolIn finds the tools as the tests do: the environment variable named
// after the tool (etcd: ETCD, kube-apiserver: KUBE_APISERVER), else
// dir/<name>.
func ToolIn(dir string) func(name string) (string, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return func(name string) (string, error) {
		env := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if p := os.Getenv(env); p != "" {
			return p, nil
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w (make tools-cluster builds it into %s, or set %s)", p, ErrNoTool, dir, env)
		}
		return p, nil
	}
}
