package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/datastore"
	"github.com/shard-router/shard-router/pkg/function"
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
	var node *yaml.RNode
	var err error
	if f.config != "" {
		node, err = input.ReadConfigFile(f.config)
	} else {
		var in *input.Input
		if in, err = input.ReadPackage(dir, ioOptions()); err == nil {
			node, err = in.Config()
		}
	}
	if err != nil {
		return err
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		printResults(s.Err, results)
		return errAlreadyReported{errors.New("invalid config")}
	}
	for _, n := range cfg.Notices {
		fmt.Fprintf(s.Err, "shard-router: warning: %s: %s\n", n.Field, n.Message)
	}
	t := cfg.Compiled
	contexts := t.Names
	if f.context != "" {
		if t.Index(f.context) < 0 {
			return unknownContext(f.context, contexts)
		}
		contexts = []string{f.context}
	}
	if f.previous != "" {
		return reportChanges(s, f, cfg, contexts)
	}
	switch f.output {
	case "json":
		values := make([]string, len(contexts))
		for i, c := range contexts {
			values[i] = datastore.FormatFlag(datastore.Entries(t, t.Index(c)))
		}
		data, err := datastore.FormatJSON(contexts, values)
		if err != nil {
			return err
		}
		_, err = s.Out.Write(data)
		return err
	case "kamaji":
		var text string
		all := make([][]datastore.KamajiOverride, len(contexts))
		var errs []error
		for i, c := range contexts {
			all[i], err = datastore.Kamaji(t, t.Index(c))
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("-o kamaji: %w", err)
		}
		if f.context != "" {
			text, err = datastore.KamajiFragment(all[0]).String()
		} else {
			text, err = datastore.FormatKamaji(contexts, all)
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(s.Out, text)
		return err
	}
	if f.context != "" {
		_, err = fmt.Fprintln(s.Out, datastore.FormatFlag(datastore.Entries(t, t.Index(f.context))))
		return err
	}
	for _, c := range contexts {
		if _, err := fmt.Fprintf(s.Out, "%s\t%s\n", c, datastore.FormatFlag(datastore.Entries(t, t.Index(c)))); err != nil {
			return err
		}
	}
	return nil
}

// reportChanges compares the config's overrides with --previous.
func reportChanges(s Streams, f *overridesFlags, cfg *function.Config, contexts []string) error {
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
	t := cfg.Compiled
	if prev.IsBare {
		switch {
		case f.context != "":
		case len(t.Names) == 1:
			contexts = t.Names
		default:
			return fmt.Errorf("--previous %s is one flag value, which names no context: say which with --context", f.previous)
		}
		prev.ByContext = map[string][]datastore.Entry{contexts[0]: prev.Bare}
	}
	allow := t.Policy.AllowDataStoreChanges
	reports := []v1alpha1.OverrideChange{}
	refused := 0
	for _, c := range contexts {
		before, ok := prev.ByContext[c]
		if !ok {
			fmt.Fprintf(s.Err, "shard-router: context %q is not in --previous %s: nothing to compare (a new cluster has no data to lose)\n", c, f.previous)
			continue
		}
		for _, r := range datastore.Report(c, before, datastore.Entries(t, t.Index(c)), allow) {
			if r.Severity == framework.Error {
				refused++
			}
			reports = append(reports, r)
		}
	}
	var gone []string
	for c := range prev.ByContext {
		if t.Index(c) < 0 {
			gone = append(gone, c)
		}
	}
	slices.Sort(gone)
	for _, c := range gone {
		fmt.Fprintf(s.Err, "shard-router: context %q of --previous is not in the config: not compared\n", c)
	}
	doc := &v1alpha1.OverridesChangeReport{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.OverridesChangeReportKind), Changes: reports}
	p := output.Printer{Formats: []string{"flag", output.JSON}, Text: map[string]output.Renderer{
		"flag": func(w io.Writer) error {
			for _, r := range reports {
				if _, err := fmt.Fprintln(w, r.Message); err != nil {
					return err
				}
			}
			return nil
		}}}
	if err := p.Print(s.Out, f.output, doc); err != nil {
		return err
	}
	if refused > 0 {
		return fmt.Errorf("%d datastore change(s) refused: %s", refused, datastore.RefusedAdvice)
	}
	if len(reports) == 0 {
		fmt.Fprintln(s.Err, "shard-router: no datastore changes")
	}
	return nil
}
