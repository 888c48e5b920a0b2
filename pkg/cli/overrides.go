package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/output"
)

// overridesFlags are the flags of `shard-router overrides`.
type overridesFlags struct {
	// config is the function config file; default: PKG_DIR's ShardConfig.
	config string
	// context selects one context; default: all, one a line.
	context string
	// output is flag, json or kamaji.
	output string
	// previous is a previous config or printed value to compare against.
	previous string
}

var overridesFormats = []string{"flag", output.JSON, "kamaji"}

func newOverridesCommand(s Streams) *cobra.Command {
	f := &overridesFlags{}
	cmd := &cobra.Command{
		Use:   "overrides [--config FILE | PKG_DIR] [--context NAME] [-o flag|json|kamaji] [--previous FILE]",
		Short: "Print each cluster's kube-apiserver --etcd-servers-overrides value",
		Long: `overrides prints, from the same ShardConfig that routes the package, the value
of kube-apiserver's --etcd-servers-overrides flag for each context: entries
group/resource#url;url joined by ",", in dataStoreOverrides order, for the
datastores that context declares.

  -o flag    (default) with --context, the value alone on one line (an empty
             line when the context has no overrides: leave the flag out);
             without, one "context<TAB>value" line per context.
  -o json    a JSON object of context -> value.
  -o kamaji  the dataStoreOverrides fragment of a Kamaji TenantControlPlane
             spec (resource, dataStore: the context's kamajiDataStore for the
             logical datastore, else its logical name); without --context, a
             mapping of context -> fragment.

The config is --config FILE, else the single ShardConfig of PKG_DIR (default ".").

With --previous FILE (the previous ShardConfig, or a value that overrides
printed before: a bare flag value, context<TAB>value lines or -o json), it
prints instead, per context, every group/resource whose etcd servers change
(an override added, removed, or pointed at other servers), and exits non-zero
if any does, unless the config sets allowDataStoreChanges or the override is
ephemeral: kube-apiserver never migrates data between datastores, so the
objects would vanish from the API. Run it in CI before rolling kube-apiserver.`,
		Example: `  # The flag for one cluster.
  kube-apiserver ... --etcd-servers-overrides="$(shard-router overrides --config shards.yaml --context ctx-00)"

  # Every cluster, then check a config change before rolling the API servers.
  shard-router overrides my-pkg > overrides.txt
  shard-router overrides my-pkg --previous overrides.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && f.config != "" {
				return errors.New("give either --config FILE or PKG_DIR, not both")
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runOverrides(s, f, dir)
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "the ShardConfig (or ConfigMap) file; default: the single ShardConfig of PKG_DIR")
	cmd.Flags().StringVar(&f.context, "context", "", "print only this context's value")
	cmd.Flags().StringVarP(&f.output, "output", "o", "flag", "output format: flag, json or kamaji")
	cmd.Flags().StringVar(&f.previous, "previous", "", "a previous ShardConfig or printed value: report the resources whose datastore changes")
	return cmd
}

func runOverrides(s Streams, f *overridesFlags, dir string) error {
	if err := output.Check(f.output, overridesFormats...); err != nil {
		return err
	}
	cfg, err := loadOverridesConfig(s, f, dir)
	if err != nil {
		return err
	}
	contexts := cfg.Names
	if f.context != "" {
		if cfg.Index(f.context) < 0 {
			return unknownContext(f.context, contexts)
		}
		contexts = []string{f.context}
	}
	if f.previous != "" {
		return reportChanges(s, f, cfg, contexts)
	}
	text, err := datastore.Values(cfg, contexts, f.output, f.context != "")
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(s.Out, text)
	return err
}

// loadOverridesConfig loads --config FILE, else PKG_DIR's config, and warns
// about its notices.
func loadOverridesConfig(s Streams, f *overridesFlags, dir string) (*config.Config, error) {
	var in *input.Input
	if f.config == "" {
		var err error
		if in, err = input.ReadPackage(dir, ioOptions()); err != nil {
			return nil, err
		}
	}
	cfg, err := loadConfig(s, in, f.config)
	if err != nil {
		return nil, err
	}
	for _, n := range cfg.Notices {
		fmt.Fprintf(s.Err, "shard-router: warning: %s: %s\n", n.Field, n.Message)
	}
	return cfg.Config, nil
}

// reportChanges compares the config's overrides with --previous.
func reportChanges(s Streams, f *overridesFlags, cfg *config.Config, contexts []string) error {
	if f.output == "kamaji" {
		return errors.New("--previous reports changes: use -o flag (text) or -o json")
	}
	data, err := os.ReadFile(f.previous)
	if err != nil {
		return fmt.Errorf("reading --previous: %w", err)
	}
	prev, err := datastore.ParsePrevious(data)
	if err != nil {
		return fmt.Errorf("reading --previous %s: %w", f.previous, err)
	}
	cmp, err := datastore.ComparePrevious(cfg, contexts, prev, f.previous, f.context != "")
	if err != nil {
		return err
	}
	for _, msg := range cmp.Skipped {
		fmt.Fprintf(s.Err, "shard-router: %s\n", msg)
	}
	p := output.Printer{Formats: []string{"flag", output.JSON}, Text: map[string]output.Renderer{
		"flag": func(w io.Writer) error { return output.RenderOverrideChanges(w, cmp.Report) }}}
	if err := p.Print(s.Out, f.output, cmp.Report); err != nil {
		return err
	}
	if cmp.Refused > 0 {
		return fmt.Errorf("%d datastore change(s) refused: %s", cmp.Refused, datastore.RefusedAdvice)
	}
	if len(cmp.Report.Changes) == 0 {
		fmt.Fprintln(s.Err, "shard-router: no datastore changes")
	}
	return nil
}
