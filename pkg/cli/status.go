//go:build !nolive

package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/status"
	"github.com/shard-router/shard-router/pkg/output"
)

// statusFlags are the flags of `shard-router status`.
type statusFlags struct {
	// kubeconfig is the kubeconfig file; "" follows kubectl's rules.
	kubeconfig string
	// contexts are the contexts to report; default: every context of OUT_DIR.
	contexts []string
	// output is table, markdown, html, json or yaml.
	output string
	// detailedExitCode exits 2 when anything needs attention.
	detailedExitCode bool
	// timeout bounds each context.
	timeout time.Duration
	// parallel is how many contexts are read at once.
	parallel int
	// fluxContext is the cluster that holds the Flux Kustomizations.
	fluxContext string
	// as is the identity every read acts as (--as).
	as impersonateFlags
}

var statusFormats = []string{"table", "markdown", output.HTML, output.JSON, output.YAML}

const statusLong = `status reads each context package of OUT_DIR (a split's output, as applied
with kpt live apply or shard-router apply), the context's live ResourceGroup
inventory, and every object of either from the cluster of the kube context of
the same name, and reports per object:

  status     kstatus' verdict, as kpt live status computes it: Current,
             InProgress, Failed, Terminating, NotFound or Unknown
  drift      the fields the package sets that an apply would change: false
             when none. Objects whose set fields all hold the package's
             values are in sync without a request; for the others a
             server-side dry-run apply (field manager kubectl, as kpt's)
             says what an apply would make of the object, and the fields
             where that differs from the live object are listed. Fields the
             package does not set (a Deployment's defaults, a Service's
             clusterIP) are never drift. Values are not printed.
  inventory  applied (in the package and the live inventory), extra (in the
             live inventory only: the next apply prunes it) or notApplied
             (in the package only: never applied)

and per context whether it was reachable and its inventory found (or
missing: never applied, or deleted).

For a fleet shard-router apply writes, each context also shows what its
cluster records of the last apply (the Lease shard-router.<inventory> beside
the inventory): the serial, who applied and when, the outcome, the cluster's
identity (the UID of its kube-system Namespace) and, while a run holds it,
the lock (holder, since, last renewal, expiry). The runs that hold locks are
shown first: in progress (with spec.rollout: which wave it is applying or
baking, and the time its bake has left), or killed (its pid no longer runs on
this host, or it stopped renewing: when its locks free themselves, and the
command that breaks them). A context whose record says applying while no live
run holds its lock was last written by a run that died: apply again (a run
that finds it in sync settles its record). A kube context that now reaches
another cluster than OUT_DIR recorded (OUT_DIR/.shard-router-fleet.json) is
failed, its objects not read. Where OUT_DIR's serial for a context is older
than its cluster's (another run applied since: OUT_DIR is stale, as apply
would refuse it), its objects are listed as its cluster's inventory holds
them, with their health, and not compared with OUT_DIR. An unfinished rollout
OUT_DIR records (an apply with spec.rollout that halted, paused or was killed)
is shown next, in progress, killed, halted or paused, with how to go on.
What each wave's promotion gates measured in the last apply that baked it
(OUT_DIR/.shard-router-gates.json) follows the records: per gate and
context, its verdict, its measurements counted and the last one.

For a split for Flux (split --engine flux, found by OUT_DIR/_gitops), each
context also shows its Kustomization's Ready condition and the revision it
last applied, read from --flux-context (the management cluster) or each
context's own cluster, and the Kustomization's inventory stands for the
ResourceGroup: an object is applied when Flux's inventory holds it.

For a split for Argo CD or Config Sync (split --engine argocd|configsync),
health and drift are read for every object of each context's directory as
above, but the engine keeps the inventory where status cannot read it
without the engine (Argo CD in its Application and a tracking annotation
on each object; Config Sync in a ResourceGroup of its own, named after the
RootSync): the inventory is unknown, extras and not applied say unknown,
the output says so for each context, and such a context is never in sync
(--detailed-exitcode exits 2).

Every read acts as --as USER (with --as-group and --as-uid), as kubectl's
do, else as the kubeconfig user entry's as:; the record says whom the last
apply acted as. A context whose credentials fail (rejected with 401, an
exec plugin missing or failing) is reported with its kubeconfig user entry
and the cause.

Contexts are read in parallel (--parallel), each bounded by --timeout;
objects are read with one list per kind and namespace (a get each when
there are fewer than 16; a list reads at most a page of 500 objects, or 4
for each it looks for when that is more, then gets the ones it has not
found: a read costs what the package holds, not what the cluster holds).
A context that cannot be reached is reported as unreachable and never
hides the others.

Formats: table (default: the headline, one line per context, unreachable or
failed first, then those that need attention, then those in sync; then the
objects that need attention, 50 per context at most), markdown (for a pull request or an incident channel), html (one
self-contained page: the fleet matrix, then the objects that need attention;
no script, nothing loaded from elsewhere), json and yaml (a FleetStatus,
apiVersion shardrouter.dev/v1alpha1).

Exit status: 1 when a context is unreachable or could not be read in full;
else 0, or with --detailed-exitcode 2 when any object is drifted, not
Current, extra or not applied, an inventory is missing, OUT_DIR is stale for
a context (or its cluster's record older), or a context's record says a run
is applying it (in progress, or killed before it finished).`

const statusExample = `  # Every context of the split output, against the clusters of ~/.kube/config.
  shard-router status out

  # Two contexts, for a script: exit 2 when anything needs attention.
  shard-router status out --context eu-shard-00 --context eu-shard-01 --detailed-exitcode

  # For an incident channel; the drifted objects with jq.
  shard-router status out -o markdown > status.md
  shard-router status out -o html > status.html
  shard-router status out -o json | jq '.contexts[].objects[] | select(.drift != false)'`

func newStatusCommand(s Streams) *cobra.Command {
	f := &statusFlags{}
	cmd := &cobra.Command{
		Use:     "status OUT_DIR [--kubeconfig FILE] [--context NAME ...] [-o table|markdown|html|json|yaml] [--detailed-exitcode] [--timeout DURATION] [--as USER [--as-group GROUP ...] [--as-uid UID]]",
		Short:   "Show every cluster's health and drift against what was applied",
		Long:    statusLong,
		Example: statusExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), s, f, args[0])
		},
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "the kubeconfig file; default: $KUBECONFIG, else ~/.kube/config")
	cmd.Flags().StringArrayVar(&f.contexts, "context", nil, "a context to report (repeatable); default: every context of OUT_DIR")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "output format: table, markdown, html, json or yaml")
	cmd.Flags().BoolVar(&f.detailedExitCode, "detailed-exitcode", false, "exit 2 when anything is drifted, missing, extra or not Current, OUT_DIR is stale, or a run is applying or died applying a context (0: in sync, 1: unreachable or error)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", status.DefaultTimeout, "how long each context may take")
	cmd.Flags().IntVar(&f.parallel, "parallel", status.DefaultParallel, "how many contexts are read at once")
	cmd.Flags().StringVar(&f.fluxContext, "flux-context", "", "for a split for Flux (split --engine flux): the kube context of the management cluster that holds the Kustomizations; default: each context's own cluster")
	f.as.add(cmd.Flags(), "")
	return cmd
}

func runStatus(ctx context.Context, s Streams, f *statusFlags, outDir string) error {
	if err := output.Check(f.output, statusFormats...); err != nil {
		return err
	}
	if err := f.as.check(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	doc, err := status.Run(ctx, status.Options{OutDir: outDir, Kubeconfig: f.kubeconfig, Contexts: f.contexts,
		Timeout: f.timeout, Parallel: f.parallel, FluxContext: f.fluxContext, Impersonate: f.as.impersonation()})
	if err != nil {
		return err
	}
	p := output.Printer{Formats: statusFormats, Text: map[string]output.Renderer{
		"table":     func(w io.Writer) error { return withEngine(w, doc, "", output.RenderStatusTable) },
		"markdown":  func(w io.Writer) error { return withEngine(w, doc, "- ", output.RenderStatusMarkdown) },
		output.HTML: func(w io.Writer) error { return output.RenderStatusHTML(w, doc) },
	}}
	if err := p.Print(s.Out, f.output, doc); err != nil {
		return err
	}
	failed := 0
	for _, c := range doc.Contexts {
		if c.Failed() {
			failed++
			fmt.Fprintf(s.Err, "shard-router: error: context %s: %s\n", c.Name, contextError(c.Error))
		}
	}
	if failed > 0 {
		return errAlreadyReported{fmt.Errorf("status: %d context(s) unreachable or failed", failed)}
	}
	if f.detailedExitCode && !doc.InSync() {
		return exitCode(2)
	}
	return nil
}

// contextError is a failed context's error, or a note that some of its
// objects could not be read.
// withEngine renders doc, then a line per context with the GitOps
// engine's own status of its sync (a split for Flux).
func withEngine(w io.Writer, doc *v1alpha1.FleetStatus, bullet string, render func(io.Writer, *v1alpha1.FleetStatus) error) error {
	if err := render(w, doc); err != nil {
		return err
	}
	for _, c := range doc.Contexts {
		if e := c.Engine; e != nil {
			ready := e.Ready
			if ready == "" {
				ready = "missing"
			}
			fmt.Fprintf(w, "%s%s: %s %s %s/%s Ready=%s", bullet, c.Name, e.Engine, e.Kind, e.Namespace, e.Name, ready)
			if e.Reason != "" {
				fmt.Fprintf(w, " (%s)", e.Reason)
			}
			if e.Revision != "" {
				fmt.Fprintf(w, " at %s", e.Revision)
			}
			if e.Ready != "True" && e.Message != "" {
				fmt.Fprintf(w, ": %s", e.Message)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func contextError(msg string) string {
	if msg == "" {
		return "some objects could not be read (see their error)"
	}
	return msg
}
