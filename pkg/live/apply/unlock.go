package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// ForceUnlock breaks contexts' locks by hand (apply --force-unlock,
// --force-unlock-held-by); the clusters' records of the last write are
// kept. With heldBy, only the locks that holder holds are broken (it names
// the holder as lock errors do, or its run id alone), of the given
// contexts, or of every context of OUT_DIR when none is given: a lock
// another run took since is left alone. It returns a line per context, in
// the order asked, saying whose lock it broke or why it broke none. as is
// who its requests act as (--as).
func ForceUnlock(ctx context.Context, out *outdir.OutDir, kubeconfig string, as cluster.Impersonation, contexts []string, heldBy string) ([]string, error) {
	if len(contexts) == 0 {
		if heldBy == "" {
			return nil, errors.New("--force-unlock needs a context")
		}
		all, err := outdir.Contexts(out.Path)
		if err != nil {
			return nil, err
		}
		contexts = all
	}
	var pkgless []string
	for _, name := range contexts {
		if _, err := os.Stat(filepath.Join(out.Path, name, outdir.RGFile)); err != nil {
			pkgless = append(pkgless, name)
		}
	}
	if len(pkgless) > 0 {
		return nil, fmt.Errorf("--force-unlock %s: %s has no package for it (no %s), so its inventory is unknown", strings.Join(pkgless, ","), out.Given, outdir.RGFile)
	}
	kc, err := cluster.LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	kc.Impersonate(as)
	if err := kc.Require(contexts); err != nil {
		return nil, err
	}
	lines := make([]string, len(contexts))
	broke := make([]bool, len(contexts))
	var g errgroup.Group
	g.SetLimit(DefaultParallel)
	for i, name := range contexts {
		g.Go(func() error {
			var err error
			lines[i], broke[i], err = forceUnlock(ctx, kc, filepath.Join(out.Path, name), name, heldBy)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if heldBy != "" && !slices.Contains(broke, true) {
		return lines, fmt.Errorf("--force-unlock-held-by %s: it holds no lock on %s: nothing was broken", heldBy, strings.Join(contexts, ", "))
	}
	return lines, nil
}

// forceUnlock breaks one context's lock, says whose it was, and reports
// whether it broke one.
func forceUnlock(ctx context.Context, kc *cluster.Kubeconfig, dir, name, heldBy string) (string, bool, error) {
	f := kc.Factory(name)
	pkg, err := cluster.ReadPackage(f, name, dir)
	if err != nil {
		return "", false, err
	}
	cs, err := f.KubernetesClientSet()
	if err != nil {
		return "", false, err
	}
	ns, lname := pkg.Inventory.Namespace(), lease.Name(pkg.Inventory.Name())
	st, err := lease.ForceUnlock(ctx, cs.CoordinationV1(), ns, pkg.Inventory.Name(), heldBy)
	if err != nil {
		return "", false, fmt.Errorf("context %q: breaking Lease %s/%s: %w", name, ns, lname, err)
	}
	switch {
	case st.Holder == "":
		return fmt.Sprintf("context %q: Lease %s/%s was not locked: nothing to break", name, ns, lname), false, nil
	case heldBy != "" && !lease.IsHolder(st.Holder, heldBy):
		return fmt.Sprintf("context %q: Lease %s/%s is held by %s, not %s: left alone", name, ns, lname, st.Holder, heldBy), false, nil
	}
	now := time.Now()
	state := fmt.Sprintf("held, last renewed %s ago", now.Sub(st.Renewed).Round(time.Second))
	switch gone := st.Gone(now); {
	case !st.Held(now):
		state = "expired"
	case gone != "":
		state += "; that run is gone: " + gone
	}
	return fmt.Sprintf("context %q: broke the lock of %s on Lease %s/%s (%s, taken at %s)", name, st.Holder, ns, lname, state, when(st.Since)), true, nil
}
