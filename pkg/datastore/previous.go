package datastore

import (
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
)

// Values renders the --etcd-servers-overrides of contexts in an
// `overrides -o` format: flag ("context<TAB>value" lines, or with one the
// value alone), json or kamaji.
func Values(c *config.Config, contexts []string, format string, one bool) (string, error) {
	switch format {
	case "json":
		values := make([]string, len(contexts))
		for i, ctx := range contexts {
			values[i] = FormatFlag(Entries(c, c.Index(ctx)))
		}
		data, err := FormatJSON(contexts, values)
		return string(data), err
	case "kamaji":
		return kamajiValues(c, contexts, one)
	}
	if one {
		return FormatFlag(Entries(c, c.Index(contexts[0]))) + "\n", nil
	}
	text := ""
	for _, ctx := range contexts {
		text += ctx + "\t" + FormatFlag(Entries(c, c.Index(ctx))) + "\n"
	}
	return text, nil
}

// kamajiValues renders the contexts' Kamaji dataStoreOverrides: one
// fragment, or a mapping of context -> fragment.
func kamajiValues(c *config.Config, contexts []string, one bool) (string, error) {
	all := make([][]KamajiOverride, len(contexts))
	var errs []error
	for i, ctx := range contexts {
		var err error
		all[i], err = Kamaji(c, c.Index(ctx))
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("-o kamaji: %w", err)
	}
	if one {
		return KamajiFragment(all[0]).String()
	}
	return FormatKamaji(contexts, all)
}

// Comparison is what `overrides --previous` reports.
type Comparison struct {
	// Report lists every change, judged.
	Report *v1alpha1.OverridesChangeReport
	// Refused counts the refused changes.
	Refused int
	// Skipped say which contexts were not compared, and why.
	Skipped []string
}

// ComparePrevious compares the overrides of contexts with prev, read from
// the file named file: a bare flag value names no context, so it is the
// one context given (one) or the config's only one.
func ComparePrevious(c *config.Config, contexts []string, prev *Previous, file string, one bool) (*Comparison, error) {
	if prev.IsBare {
		switch {
		case one:
		case len(c.Names) == 1:
			contexts = c.Names
		default:
			return nil, fmt.Errorf("--previous %s is one flag value, which names no context: say which with --context", file)
		}
		prev.ByContext = map[string][]Entry{contexts[0]: prev.Bare}
	}
	cmp := &Comparison{Report: &v1alpha1.OverridesChangeReport{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.OverridesChangeReportKind),
		Changes: []v1alpha1.OverrideChange{}}}
	for _, ctx := range contexts {
		before, ok := prev.ByContext[ctx]
		if !ok {
			cmp.Skipped = append(cmp.Skipped, fmt.Sprintf("context %q is not in --previous %s: nothing to compare (a new cluster has no data to lose)", ctx, file))
			continue
		}
		for _, r := range Report(ctx, before, Entries(c, c.Index(ctx)), c.Policy.AllowDataStoreChanges) {
			if r.Severity == framework.Error {
				cmp.Refused++
			}
			cmp.Report.Changes = append(cmp.Report.Changes, r)
		}
	}
	var gone []string
	for ctx := range prev.ByContext {
		if c.Index(ctx) < 0 {
			gone = append(gone, ctx)
		}
	}
	slices.Sort(gone)
	for _, ctx := range gone {
		cmp.Skipped = append(cmp.Skipped, fmt.Sprintf("context %q of --previous is not in the config: not compared", ctx))
	}
	return cmp, nil
}
