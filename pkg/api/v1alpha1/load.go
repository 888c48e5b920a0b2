package v1alpha1

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// AcceptedKinds names the function config kinds, for error messages.
const AcceptedKinds = "shardrouter.dev/v1alpha1 ShardConfig, or v1 ConfigMap (data: context name -> label selector)"

// Load reads a function config node: a ShardConfig (strict: unknown fields
// are errors) or a v1 ConfigMap whose data maps each context name to a label
// selector in kubectl -l syntax, used for both the resource's and its
// Namespace's labels. The result is validated.
func Load(node *yaml.RNode) (*ShardConfig, field.ErrorList) {
	if node == nil || node.IsNilOrEmpty() {
		return nil, field.ErrorList{field.Required(nil, "no function config: expected "+AcceptedKinds)}
	}
	if node.YNode().Kind != yaml.MappingNode {
		return nil, field.ErrorList{field.TypeInvalid(nil, node.YNode().Tag, "the function config must be a mapping: expected "+AcceptedKinds)}
	}
	apiVersion, kind := node.GetApiVersion(), node.GetKind()
	var cfg *ShardConfig
	var errs field.ErrorList
	configMap := apiVersion == "v1" && kind == "ConfigMap"
	switch {
	case apiVersion == APIVersion && kind == Kind:
		cfg, errs = decodeStrict(node)
	case configMap:
		cfg, errs = fromConfigMap(node)
	default:
		return nil, field.ErrorList{field.Invalid(field.NewPath("kind"), apiVersion+" "+kind,
			"unknown function config: expected "+AcceptedKinds)}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		if configMap {
			// Validation reports the paths of the typed form; map them
			// back to what the user wrote.
			for _, e := range errs {
				e.Field = configMapPath(e.Field, cfg)
			}
		}
		return nil, errs
	}
	return cfg, nil
}

func decodeStrict(node *yaml.RNode) (*ShardConfig, field.ErrorList) {
	data, err := node.MarshalJSON()
	if err != nil {
		return nil, field.ErrorList{field.InternalError(nil, fmt.Errorf("cannot read the ShardConfig: %w", err))}
	}
	cfg := &ShardConfig{}
	strictErrs, err := sigsjson.UnmarshalStrict(data, cfg)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(nil, nil, fmt.Sprintf("cannot decode the ShardConfig: %v", err))}
	}
	var errs field.ErrorList
	for _, e := range strictErrs {
		errs = append(errs, strictError(e))
	}
	return cfg, errs
}

// strictError turns sigs.k8s.io/json's `unknown field "spec.foo"` into a field error.
func strictError(e error) *field.Error {
	msg := e.Error()
	for _, prefix := range []string{"unknown field ", "duplicate field "} {
		if strings.HasPrefix(msg, prefix) {
			name := strings.Trim(strings.TrimPrefix(msg, prefix), `"`)
			if strings.HasPrefix(prefix, "unknown") {
				return field.Forbidden(field.NewPath(name), "unknown field (ShardConfig is strict: check its spelling against the reference)")
			}
			return field.Forbidden(field.NewPath(name), "field given more than once")
		}
	}
	return field.Invalid(nil, nil, msg)
}

func fromConfigMap(node *yaml.RNode) (*ShardConfig, field.ErrorList) {
	cfg := &ShardConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: metadataName(node)},
	}
	data := node.Field("data")
	if data == nil || data.Value.IsNilOrEmpty() {
		return nil, field.ErrorList{field.Required(field.NewPath("data"),
			"no contexts: each data key is a context name, each value a label selector such as 'shard=00'; expected "+AcceptedKinds)}
	}
	if data.Value.YNode().Kind != yaml.MappingNode {
		return nil, field.ErrorList{field.TypeInvalid(field.NewPath("data"), nil, "must be a mapping of context name to label selector")}
	}
	var errs field.ErrorList
	// Visit in document order: kpt writes `-- k=v` arguments in order, and the
	// order of contexts is the order of the annotation.
	content := data.Value.YNode().Content
	for i := 0; i+1 < len(content); i += 2 {
		name, value := content[i].Value, content[i+1].Value
		p := field.NewPath("data").Key(name)
		if content[i+1].Kind != yaml.ScalarNode {
			errs = append(errs, field.TypeInvalid(p, nil, "must be a label selector string"))
			continue
		}
		if strings.TrimSpace(value) == "" {
			errs = append(errs, field.Required(p, "a label selector such as 'shard=00' (an empty selector would match everything)"))
			continue
		}
		sel, err := parseSelector(value)
		if err != nil {
			errs = append(errs, field.Invalid(p, value, "not a label selector: "+err.Error()))
			continue
		}
		cfg.Spec.Contexts = append(cfg.Spec.Contexts, Context{Name: name, NamespaceSelector: sel, ResourceSelector: sel.DeepCopy()})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// metadataName is a mapping's metadata.name, "" when either is missing or
// of another kind: kyaml's GetName reads a metadata sequence as a mapping
// and panics on one of one entry.
func metadataName(node *yaml.RNode) string {
	meta := node.Field(yaml.MetadataField)
	if meta == nil || meta.Value.YNode().Kind != yaml.MappingNode {
		return ""
	}
	if name := meta.Value.Field(yaml.NameField); name != nil && !yaml.IsYNodeNilOrEmpty(name.Value.YNode()) {
		return name.Value.YNode().Value
	}
	return ""
}

// configMapPath rewrites "spec.contexts[i].<x>" to "data[<name>]" for a config
// that came from a ConfigMap, so errors point at what the user wrote.
func configMapPath(p string, cfg *ShardConfig) string {
	var i int
	if _, err := fmt.Sscanf(p, "spec.contexts[%d]", &i); err == nil && i < len(cfg.Spec.Contexts) {
		return field.NewPath("data").Key(cfg.Spec.Contexts[i].Name).String()
	}
	if p == "spec.contexts" {
		return "data"
	}
	return p
}

// parseSelector reads kubectl -l syntax. metav1.ParseToLabelSelector rejects
// "a!=b", which kubectl accepts; it is the same as "a notin (b)". It also
// folds equalities into matchLabels, where "a=,a=b" (which matches nothing)
// would silently become "a=b": a key given twice keeps every requirement.
func parseSelector(s string) (*metav1.LabelSelector, error) {
	reqs, err := labels.ParseToRequirements(s)
	if err != nil {
		return nil, err
	}
	sel := &metav1.LabelSelector{}
	for _, r := range reqs {
		var op metav1.LabelSelectorOperator
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals:
			v := r.Values().List()[0]
			if _, dup := sel.MatchLabels[r.Key()]; !dup {
				if sel.MatchLabels == nil {
					sel.MatchLabels = map[string]string{}
				}
				sel.MatchLabels[r.Key()] = v
				continue
			}
			op = metav1.LabelSelectorOpIn
		case selection.In:
			op = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			op = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			op = metav1.LabelSelectorOpExists
		case selection.DoesNotExist:
			op = metav1.LabelSelectorOpDoesNotExist
		default:
			return nil, fmt.Errorf("%q is not a valid label selector operator", r.Operator())
		}
		req := metav1.LabelSelectorRequirement{Key: r.Key(), Operator: op}
		if r.Values().Len() > 0 {
			req.Values = r.Values().List()
		}
		sel.MatchExpressions = append(sel.MatchExpressions, req)
	}
	return sel, nil
}
