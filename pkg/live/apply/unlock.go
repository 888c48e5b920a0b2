package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// ForceUnlock breaks a context's lock by hand (apply --force-unlock),
// whoever holds it; the cluster's record of the last write is kept. It
// says whose lock it broke. as is who its requests act as (--as).
func ForceUnlock(ctx context.Context, out *outdir.OutDir, kubeconfig string, as cluster.Impersonation, name string) (string, error) {
	dir := filepath.Join(out.Path, name)
	if _, err := os.Stat(filepath.Join(dir, outdir.RGFile)); err != nil {
		return "", fmt.Errorf("--force-unlock %s: %s has no package for the context (no %s), so its inventory is unknown", name, filepath.Join(out.Given, name), outdir.RGFile)
	}
	kc, err := cluster.LoadKubeconfig(kubeconfig)
	if err != nil {
		return "", err
	}
	kc.Impersonate(as)
	if err := kc.Require([]string{name}); err != nil {
		return "", err
	}
	f := kc.Factory(name)
	pkg, err := cluster.ReadPackage(f, name, dir)
	if err != nil {
		return "", err
	}
	cs, err := f.KubernetesClientSet()
	if err != nil {
		return "", err
	}
	ns, lname := pkg.Inventory.Namespace(), lease.Name(pkg.Inventory.Name())
	st, err := lease.ForceUnlock(ctx, cs.CoordinationV1(), ns, pkg.Inventory.Name())
	if err != nil {
		return "", fmt.Errorf("context %q: breaking Lease %s/%s: %w", name, ns, lname, err)
	}
	if st.Holder == "" {
		return fmt.Sprintf("context %q: Lease %s/%s was not locked: nothing to break", name, ns, lname), nil
	}
	state := "held"
	if !st.Held(time.Now()) {
		state = "expired"
	}
	return fmt.Sprintf("context %q: broke the lock of %s on Lease %s/%s (%s, taken at %s)", name, st.Holder, ns, lname, state, when(st.Since)), nil
}
