package v1alpha1

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePlacementAndBudgets checks spec.placement, the contexts' weights
// and every budget.
func (c *ShardConfig) validatePlacementAndBudgets() field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	ctxPath := spec.Child("contexts")
	pl := c.Spec.Placement
	positive := 0
	for i := range c.Spec.Contexts {
		ctx := &c.Spec.Contexts[i]
		p := ctxPath.Index(i)
		if ctx.Weight != nil {
			switch {
			case pl == nil:
				errs = append(errs, field.Forbidden(p.Child("weight"), "weight is only used by spec.placement, which is not set"))
			case *ctx.Weight < 0:
				errs = append(errs, field.Invalid(p.Child("weight"), *ctx.Weight, "must be 0 (no new Namespaces) or more"))
			}
		}
		if ctx.PlacementWeight() > 0 {
			positive++
		}
		errs = append(errs, validateBudget(ctx.Budget, p.Child("budget"))...)
		errs = append(errs, validateBudget(ctx.DefaultDataStoreBudget, p.Child("defaultDataStoreBudget"))...)
		for k := range ctx.DataStores {
			errs = append(errs, validateBudget(ctx.DataStores[k].Budget, p.Child("dataStores").Index(k).Child("budget"))...)
		}
	}
	if pl == nil {
		return errs
	}
	pp := spec.Child("placement")
	switch pl.Strategy {
	case RendezvousPlacement:
	case "":
		errs = append(errs, field.Required(pp.Child("strategy"), `"Rendezvous"`))
	default:
		errs = append(errs, field.NotSupported(pp.Child("strategy"), pl.Strategy, []PlacementStrategy{RendezvousPlacement}))
	}
	if positive == 0 && len(c.Spec.Contexts) > 0 {
		errs = append(errs, field.Required(ctxPath, "spec.placement needs at least one context with a weight above 0 (the default weight is 1)"))
	}
	if pl.Label != nil {
		errs = append(errs, c.validatePlacementLabel(pl.Label, pp.Child("label"))...)
	}
	return errs
}

// validatePlacementLabel checks the label stamped on placed Namespaces. A
// value must name one context unambiguously, and must not make another
// context's selector match the Namespace once stamped: that would route it
// elsewhere on the next run. The router repeats the second check on each
// Namespace with all its labels; here only the label alone is checked.
func (c *ShardConfig) validatePlacementLabel(l *PlacementLabel, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), "a label key such as example.com/cluster-shard"))
	} else {
		for _, msg := range validation.IsQualifiedName(l.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), l.Key, msg))
		}
	}
	vp := p.Child("values")
	errs = append(errs, c.validatePlacementValues(l.Values, vp)...)
	if len(errs) > 0 || l.Key == "" {
		return errs
	}
	return c.validateStampedLabel(l, vp)
}

// validatePlacementValues checks that every context has a label value of
// its own, and that every value names a context.
func (c *ShardConfig) validatePlacementValues(values map[string]string, vp *field.Path) field.ErrorList {
	var errs field.ErrorList
	owner := map[string]string{} // label value -> context
	for i, ctx := range c.Spec.Contexts {
		v, ok := values[ctx.Name]
		if !ok {
			errs = append(errs, field.Required(vp.Key(ctx.Name), fmt.Sprintf("every context needs a label value (spec.contexts[%d])", i)))
			continue
		}
		if v == "" {
			errs = append(errs, field.Required(vp.Key(ctx.Name), "an empty label value cannot name a context"))
			continue
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(vp.Key(ctx.Name), v, msg))
		}
		if other, dup := owner[v]; dup {
			errs = append(errs, field.Duplicate(vp.Key(ctx.Name), fmt.Sprintf("%s (also the value of context %q)", v, other)))
			continue
		}
		owner[v] = ctx.Name
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.ContainsFunc(c.Spec.Contexts, func(ctx Context) bool { return ctx.Name == name }) {
			errs = append(errs, field.NotFound(vp.Key(name), name))
		}
	}
	return errs
}

// validateStampedLabel refuses a label value that makes another context's
// selector match the Namespace it is stamped on.
func (c *ShardConfig) validateStampedLabel(l *PlacementLabel, vp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, ctx := range c.Spec.Contexts {
		stamped := labels.Set{l.Key: l.Values[ctx.Name]}
		for j, other := range c.Spec.Contexts {
			if other.Name == ctx.Name {
				continue
			}
			for _, s := range []struct {
				name string
				sel  *metav1.LabelSelector
			}{{"namespaceSelector", other.NamespaceSelector}, {"resourceSelector", other.ResourceSelector}} {
				if matchesOnlyWith(s.sel, stamped) {
					errs = append(errs, field.Invalid(vp.Key(ctx.Name), l.Values[ctx.Name], fmt.Sprintf(
						"spec.contexts[%d].%s (context %q) matches %s=%s, so a Namespace placed on %q would be routed to %q on the next run",
						j, s.name, other.Name, l.Key, l.Values[ctx.Name], ctx.Name, other.Name)))
				}
			}
		}
	}
	return errs
}

// matchesOnlyWith reports whether sel matches set but not an empty label
// set: the stamped label is what makes it match.
func matchesOnlyWith(sel *metav1.LabelSelector, set labels.Set) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false // reported by Validate
	}
	return s.Matches(set) && !s.Matches(labels.Set{})
}

func validateBudget(b *Budget, p *field.Path) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	if b.MaxObjects == nil && b.MaxBytes == nil {
		errs = append(errs, field.Required(p, "a budget needs maxObjects, maxBytes or both"))
	}
	if b.MaxObjects != nil && *b.MaxObjects < 0 {
		errs = append(errs, field.Invalid(p.Child("maxObjects"), *b.MaxObjects, "must be 0 or more"))
	}
	if q := b.MaxBytes; q != nil {
		switch {
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(p.Child("maxBytes"), q.String(), "must be 0 or more"))
		case q.Cmp(*resource.NewQuantity(q.Value(), resource.BinarySI)) != 0:
			errs = append(errs, field.Invalid(p.Child("maxBytes"), q.String(), "must be a whole number of bytes below 8Ei, such as 512Mi or 2G"))
		}
	}
	return errs
}
