package status

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// fleet is what status reads: OUT_DIR's context packages, and the
// kubeconfig's contexts of the same names.
type fleet struct {
	outDir string
	// names are the contexts to read, in order.
	names []string
	kc    *cluster.Kubeconfig
	// flux maps each context to its Kustomization when OUT_DIR is a split
	// for Flux (engine.go); nil otherwise.
	flux map[string]types.NamespacedName
	// untracked maps each context to its engine's object when OUT_DIR is a
	// split for Argo CD or Config Sync, whose inventory status does not
	// read (engine.go); nil otherwise.
	untracked map[string]untracked
	// record is OUT_DIR's record of the clusters apply wrote (empty when
	// no apply of this release did); rollout its unfinished rollout.
	record  *outdir.FleetRecord
	rollout *v1alpha1.RolloutSummary
	// gates are what the waves' gates last measured in these contexts.
	gates []v1alpha1.WaveGates
}

// openFleet reads OUT_DIR's contexts, checks that each of names (default:
// all of them) has a package, then loads the kubeconfig.
func openFleet(outDir, kubeconfig string, names []string) (*fleet, error) {
	all, err := outdir.Contexts(outDir)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		names = all
	}
	var missing []string
	for _, n := range names {
		if !slices.Contains(all, n) {
			missing = append(missing, fmt.Sprintf("%q", n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no package for context %s in %s (it holds %s)", strings.Join(missing, ", "), outDir, strings.Join(all, ", "))
	}
	kc, err := cluster.LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	flux, err := fluxTargets(outDir)
	if err != nil {
		return nil, err
	}
	var untr map[string]untracked
	if flux == nil {
		if untr, err = untrackedTargets(outDir); err != nil {
			return nil, err
		}
	}
	// OUT_DIR's records are read without the scan of its packages that
	// outdir.OpenOutDir makes: they are files at its root.
	d := &outdir.OutDir{Path: outDir, Given: outDir}
	record, err := outdir.OpenFleet(d)
	if err != nil {
		return nil, err
	}
	rollout, err := outdir.OpenRollout(d)
	if err != nil {
		return nil, err
	}
	gates, err := outdir.ReadGates(d)
	if err != nil {
		return nil, err
	}
	return &fleet{outDir: outDir, names: names, kc: kc, flux: flux, untracked: untr,
		record: record, rollout: rolloutSummary(rollout, outDir), gates: gatesOf(gates, names)}, nil
}

// conn is one context: its client factory (built as kpt builds its own),
// its dynamic client and its REST mapper.
type conn struct {
	name, dir string
	factory   cmdutil.Factory
	dynamic   dynamic.Interface
	mapper    meta.RESTMapper
	// clients and server probe the cluster and read the context's
	// identity and Lease.
	clients *cluster.ReadClients
	server  string
}

// connect builds the context's clients and asks the cluster its version:
// an error means the context is unreachable (or not in the kubeconfig),
// or its credentials failed (a *cluster.CredentialsError).
func (fl *fleet) connect(ctx context.Context, name string) (*conn, error) {
	c, err := fl.clients(name)
	if err != nil {
		return nil, err
	}
	if err := fl.probe(ctx, name, c); err != nil {
		return nil, err
	}
	return c, nil
}

// probe asks context name's cluster its version, once for the contexts
// that name the same cluster and user entries; a failure of the
// context's credentials (rejected, an exec plugin missing or failing) is
// said as such (a *cluster.CredentialsError).
func (fl *fleet) probe(ctx context.Context, name string, c *conn) error {
	err := fl.kc.SharedProbe(ctx, name, func() error { return c.probe(ctx) })
	if err != nil {
		if cerr := fl.kc.CredentialsFailure(name); cerr != nil {
			return cerr
		}
	}
	return err
}

// clients builds the context's clients, asking the cluster nothing.
func (fl *fleet) clients(name string) (*conn, error) {
	if err := fl.kc.Require([]string{name}); err != nil {
		return nil, err
	}
	f := fl.kc.Factory(name)
	cfg, err := f.ToRESTConfig() // once: each call asks the cluster about flow control
	if err != nil {
		return nil, err
	}
	cs, err := cluster.NewReadClients(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	// The inventory is read with this dynamic client too.
	return &conn{name: name, dir: filepath.Join(fl.outDir, name), factory: cluster.WithDynamic(f, dyn, nil), dynamic: dyn,
		mapper: cluster.MemoMapper(mapper), clients: cs, server: cfg.Host}, nil
}

// probe asks the cluster its version: an error means it is unreachable.
func (c *conn) probe(ctx context.Context) error {
	return c.clients.Discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Error()
}

// readInventory reads, with f (c.factory, or what answers from a list of
// several contexts' inventories: cluster.ReadTogether), the objects the
// context's live ResourceGroup lists;
// found is false when the cluster has none (or not even its CRD).
func (c *conn) readInventory(f cmdutil.Factory, pkg *cluster.Package) (refs []v1alpha1.ObjectRef, found bool, err error) {
	live, err := cluster.ReadLiveInventory(f, pkg.Inventory)
	if err != nil {
		return nil, false, err
	}
	for _, id := range live.Objects {
		refs = append(refs, v1alpha1.ObjectRef{Group: id.GroupKind.Group, Kind: id.GroupKind.Kind, Namespace: id.Namespace, Name: id.Name})
	}
	return refs, live.Found, nil
}
