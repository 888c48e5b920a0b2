package v1alpha1

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// contextNameForbidden are the characters that would break the annotation
// formats ("a,b", "ctx=store") or the per-context directories split writes.
const contextNameForbidden = `,=/\`

// Validate reports every structural problem of the config at once. Checks that
// need the table of built-in resources (dataStoreOverrides[].resource) live in
// the datastore package.
func (c *ShardConfig) Validate() field.ErrorList {
	spec := field.NewPath("spec")
	errs, seen, declared := validateContexts(c.Spec.Contexts, spec.Child("contexts"))
	if d := c.Spec.DefaultContext; d != "" {
		if _, ok := seen[d]; !ok {
			errs = append(errs, field.NotFound(spec.Child("defaultContext"), d))
		}
	}
	errs = append(errs, c.validatePlacementAndBudgets()...)
	errs = append(errs, c.validateRollout()...)
	if g := c.Spec.GitOps; g != nil {
		errs = append(errs, g.Validate(spec.Child("gitops"))...)
	}
	if a := c.Spec.Apply; a != nil {
		errs = append(errs, validateApply(a, spec.Child("apply"))...)
	}
	if g := c.Spec.PruneGuard; g != nil {
		errs = append(errs, validatePruneGuard(g, spec.Child("pruneGuard"))...)
	}
	return append(errs, validateOverrides(c.Spec.DataStoreOverrides, spec.Child("dataStoreOverrides"), declared)...)
}

// validateContexts checks spec.contexts, and returns the contexts' names
// (to their index) and the datastore names any context declares.
func validateContexts(contexts []Context, ctxPath *field.Path) (errs field.ErrorList, seen map[string]int, declared map[string]bool) {
	if len(contexts) == 0 {
		errs = append(errs, field.Required(ctxPath, "at least one context is needed; expected "+AcceptedKinds))
	}
	seen, declared = map[string]int{}, map[string]bool{}
	for i, ctx := range contexts {
		p := ctxPath.Index(i)
		errs = append(errs, ValidateContextName(ctx.Name, p.Child("name"))...)
		if j, dup := seen[ctx.Name]; dup && ctx.Name != "" {
			errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also spec.contexts[%d])", ctx.Name, j)))
		}
		seen[ctx.Name] = i
		opts := metav1validation.LabelSelectorValidationOptions{}
		if ctx.NamespaceSelector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(ctx.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
		}
		if ctx.ResourceSelector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(ctx.ResourceSelector, opts, p.Child("resourceSelector"))...)
		}
		errs = append(errs, validateDataStores(ctx.DataStores, p.Child("dataStores"), declared)...)
		if ctx.Inventory != nil {
			errs = append(errs, validateInventory(ctx.Inventory, p.Child("inventory"))...)
		}
		errs = append(errs, validateEndpoints(ctx.Endpoints, p.Child("endpoints"))...)
	}
	return errs, seen, declared
}

// validateDataStores checks one context's dataStores, and adds their names
// to declared.
func validateDataStores(stores []DataStore, p *field.Path, declared map[string]bool) field.ErrorList {
	var errs field.ErrorList
	index := map[string]int{}
	for k, ds := range stores {
		dp := p.Index(k)
		errs = append(errs, validateDataStoreName(ds.Name, dp.Child("name"))...)
		if j, dup := index[ds.Name]; dup {
			errs = append(errs, field.Duplicate(dp.Child("name"), fmt.Sprintf("%s (also dataStores[%d] of this context)", ds.Name, j)))
		}
		index[ds.Name] = k
		declared[ds.Name] = true
		if len(ds.Endpoints) == 0 {
			errs = append(errs, field.Required(dp.Child("endpoints"), "a datastore needs at least one etcd endpoint"))
		}
		for e, ep := range ds.Endpoints {
			if err := ValidateEndpoint(ep); err != nil {
				errs = append(errs, field.Invalid(dp.Child("endpoints").Index(e), ep, err.Error()))
			}
		}
		if ds.KamajiDataStore != "" {
			for _, msg := range validation.IsDNS1123Subdomain(ds.KamajiDataStore) {
				errs = append(errs, field.Invalid(dp.Child("kamajiDataStore"), ds.KamajiDataStore, msg))
			}
		}
	}
	return errs
}

// validateInventory checks a context's inventory: names kube-apiserver
// accepts, an id without whitespace.
func validateInventory(inv *Inventory, ip *field.Path) field.ErrorList {
	var errs field.ErrorList
	if inv.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(inv.Name) {
			errs = append(errs, field.Invalid(ip.Child("name"), inv.Name, msg))
		}
	}
	if inv.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(inv.Namespace) {
			errs = append(errs, field.Invalid(ip.Child("namespace"), inv.Namespace, msg))
		}
	}
	if inv.ID != "" && strings.IndexFunc(inv.ID, unicode.IsSpace) >= 0 {
		errs = append(errs, field.Invalid(ip.Child("id"), inv.ID, "must not contain whitespace"))
	}
	return errs
}

// validatePruneGuard checks spec.pruneGuard's limits.
func validatePruneGuard(g *PruneGuard, gp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g.MaxPercent != nil && (*g.MaxPercent < 0 || *g.MaxPercent > 100) {
		errs = append(errs, field.Invalid(gp.Child("maxPercent"), *g.MaxPercent, "must be a percentage from 0 to 100"))
	}
	if g.MinObjects != nil && *g.MinObjects < 0 {
		errs = append(errs, field.Invalid(gp.Child("minObjects"), *g.MinObjects, "must not be negative"))
	}
	return errs
}

// validateOverrides checks spec.dataStoreOverrides: each names a resource
// and a datastore some context declares (not "default").
func validateOverrides(overrides []DataStoreOverride, op *field.Path, declared map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i, o := range overrides {
		p := op.Index(i)
		if o.Resource == "" {
			errs = append(errs, field.Required(p.Child("resource"), `a storage group/resource such as "/events" or "coordination.k8s.io/leases"`))
		}
		switch {
		case o.DataStore == "":
			errs = append(errs, field.Required(p.Child("dataStore"), "the logical datastore name"))
		case o.DataStore == DefaultDataStore:
			errs = append(errs, field.Invalid(p.Child("dataStore"), o.DataStore, `"default" is the main etcd; remove the override instead`))
		case !declared[o.DataStore]:
			errs = append(errs, field.Invalid(p.Child("dataStore"), o.DataStore, "no context declares this datastore in its dataStores"))
		}
	}
	return errs
}

// ValidateContextName checks a kube context name as shard-router uses it: in
// annotations, in directory names and as kpt's --context value.
func ValidateContextName(name string, p *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "a kubeconfig context name")}
	case name == "." || name == "..":
		return field.ErrorList{field.Invalid(p, name, "must not be . or ..")}
	case strings.ContainsAny(name, contextNameForbidden):
		return field.ErrorList{field.Invalid(p, name, `must not contain ',', '=', '/' or '\'`)}
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return field.ErrorList{field.Invalid(p, name, "must not contain whitespace or control characters")}
	case len(name) > 253:
		return field.ErrorList{field.TooLong(p, name, 253)}
	}
	return nil
}

func validateDataStoreName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "a logical datastore name")}
	}
	if name == DefaultDataStore {
		return field.ErrorList{field.Invalid(p, name, `"default" is reserved for the main etcd`)}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// ValidateEndpoint checks an etcd client URL as it must appear in
// --etcd-servers-overrides: the flag splits entries on ',', servers on ';',
// resource from servers on '#', and is read as CSV (so '"' breaks it).
func ValidateEndpoint(ep string) error {
	if ep == "" {
		return fmt.Errorf("an endpoint must not be empty")
	}
	if i := strings.IndexAny(ep, "#;,\""); i >= 0 {
		return fmt.Errorf("must not contain %q: the --etcd-servers-overrides flag uses it as a separator", ep[i])
	}
	if strings.IndexFunc(ep, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("must not contain whitespace or control characters")
	}
	u, err := url.Parse(ep)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("must be an http:// or https:// URL such as https://etcd-0:2379")
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("must name a host, as in https://etcd-0:2379")
	}
	return nil
}
