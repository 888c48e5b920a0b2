package v1alpha1

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Gate judges each context of a wave by measurements taken for that
// context while the wave bakes, with Argo Rollouts' analysis semantics:
// every Interval from InitialDelay on (Count of them, or until the bake
// ends, then once more at its end), each measurement Successful, Failed,
// Inconclusive or Error; the gate fails past FailureLimit failed
// measurements or ConsecutiveErrorLimit errors in a row, and is
// inconclusive past InconclusiveLimit inconclusive ones.
type Gate struct {
	// Name names the gate in progress lines and reports; a DNS-1123 label,
	// unique in its wave.
	Name string `json:"name"`
	// Exactly one provider: Prometheus, HTTP or Kubernetes.
	Prometheus *PrometheusGate `json:"prometheus,omitempty"`
	HTTP       *HTTPGate       `json:"http,omitempty"`
	Kubernetes *KubernetesGate `json:"kubernetes,omitempty"`
	// Interval between two measurements; without it (and without Count)
	// the gate measures once, at the end of the bake.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Count is how many measurements to take; the wave bakes at least
	// InitialDelay + (Count-1) x Interval. Default: every Interval for the
	// bake, and once at its end.
	Count *int32 `json:"count,omitempty"`
	// InitialDelay is how long after the wave became Current the first
	// measurement is taken (default 0).
	InitialDelay *metav1.Duration `json:"initialDelay,omitempty"`
	// SuccessCondition and FailureCondition are CEL expressions over the
	// measurement (GateConditionVariables). With both, a measurement that
	// meets neither is Inconclusive; with one, the other is its negation.
	SuccessCondition string `json:"successCondition,omitempty"`
	FailureCondition string `json:"failureCondition,omitempty"`
	// FailureLimit is how many Failed measurements the gate tolerates
	// (default 0).
	FailureLimit *int32 `json:"failureLimit,omitempty"`
	// InconclusiveLimit is how many Inconclusive measurements it tolerates
	// before it pauses the rollout (default 0).
	InconclusiveLimit *int32 `json:"inconclusiveLimit,omitempty"`
	// ConsecutiveErrorLimit is how many measurements in a row may end in an
	// Error (unreachable, timeout, empty result) before the gate fails
	// (default 4).
	ConsecutiveErrorLimit *int32 `json:"consecutiveErrorLimit,omitempty"`
}

// PrometheusGate is an instant query (/api/v1/query) against the context's
// endpoints.prometheus. The measurement's result is the number of a scalar
// or of a one-sample vector, a list of numbers for a longer vector; an
// empty vector is an Error.
type PrometheusGate struct {
	// Query is PromQL; {{.context}} and {{.labels.KEY}} are replaced.
	Query string `json:"query"`
}

// HTTPGate is a GET of URL: a status outside ExpectStatus is a Failed
// measurement.
type HTTPGate struct {
	// URL is http(s); {{.context}} and {{.labels.KEY}} are replaced.
	URL string `json:"url"`
	// ExpectStatus are the status codes that may pass (default [200]).
	ExpectStatus []int32 `json:"expectStatus,omitempty"`
	// SuccessCondition is CEL over the JSON body (body, result) and the
	// status; it is the gate's successCondition (set one of the two).
	SuccessCondition string `json:"successCondition,omitempty"`
}

// KubernetesGate reads one object in the context's own cluster: an Argo
// Rollouts Rollout, a Flagger Canary, anything that reports in a status.
type KubernetesGate struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is empty for a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// SuccessCondition (required, here or on the gate) and FailureCondition
	// are CEL over object (the object as JSON) and are the gate's.
	SuccessCondition string `json:"successCondition,omitempty"`
	FailureCondition string `json:"failureCondition,omitempty"`
}

// DefaultConsecutiveErrorLimit is Argo Rollouts' default.
const DefaultConsecutiveErrorLimit = 4

// PrometheusEndpoint is the key of spec.contexts[].endpoints the
// prometheus provider queries.
const PrometheusEndpoint = "prometheus"

// GateConditionVariables are the variables a gate's CEL conditions see:
// result (the provider's value: a number or list of numbers for prometheus,
// the JSON body for http, the object for kubernetes), body and status
// (http), object (kubernetes), context (its name) and labels (its labels).
var GateConditionVariables = []string{"result", "body", "status", "object", "context", "labels"}

var gateEnv *cel.Env

// GateEnv is the CEL environment of gate conditions.
func GateEnv() (*cel.Env, error) {
	if gateEnv != nil {
		return gateEnv, nil
	}
	env, err := cel.NewEnv(
		cel.Variable("result", cel.DynType),
		cel.Variable("body", cel.DynType),
		cel.Variable("status", cel.IntType),
		cel.Variable("object", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("context", cel.StringType),
		cel.Variable("labels", cel.MapType(cel.StringType, cel.StringType)),
	)
	if err != nil {
		return nil, err
	}
	gateEnv = env
	return env, nil
}

// CompileCondition compiles and type-checks a gate condition; it must be
// a bool.
func CompileCondition(expr string) (cel.Program, error) {
	env, err := GateEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %v", strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("is a %s, not a bool", t)
	}
	return env.Program(ast)
}

// Provider names the gate's provider, "" for none or several.
func (g *Gate) Provider() string {
	var names []string
	if g.Prometheus != nil {
		names = append(names, "prometheus")
	}
	if g.HTTP != nil {
		names = append(names, "http")
	}
	if g.Kubernetes != nil {
		names = append(names, "kubernetes")
	}
	if len(names) != 1 {
		return ""
	}
	return names[0]
}

// Conditions are the gate's effective success and failure conditions:
// its own, or its provider's.
func (g *Gate) Conditions() (success, failure string) {
	success, failure = g.SuccessCondition, g.FailureCondition
	if g.HTTP != nil && g.HTTP.SuccessCondition != "" {
		success = g.HTTP.SuccessCondition
	}
	if k := g.Kubernetes; k != nil {
		if k.SuccessCondition != "" {
			success = k.SuccessCondition
		}
		if k.FailureCondition != "" {
			failure = k.FailureCondition
		}
	}
	return success, failure
}

// Describe is the gate in one line, as plan lists it: its name, provider,
// what it measures, when, and its conditions.
func (g *Gate) Describe() string {
	var what string
	switch {
	case g.Prometheus != nil:
		what = "prometheus " + g.Prometheus.Query
	case g.HTTP != nil:
		what = "http " + g.HTTP.URL
	case g.Kubernetes != nil:
		k := g.Kubernetes
		what = fmt.Sprintf("kubernetes %s %s %s", k.APIVersion, k.Kind, k.Name)
		if k.Namespace != "" {
			what = fmt.Sprintf("kubernetes %s %s %s/%s", k.APIVersion, k.Kind, k.Namespace, k.Name)
		}
	}
	interval, delay := g.Durations()
	parts := []string{g.Name + ": " + what}
	switch {
	case g.Count != nil:
		parts = append(parts, fmt.Sprintf("%d measurement(s) every %s", *g.Count, interval))
	case interval > 0:
		parts = append(parts, fmt.Sprintf("every %s and at the end of the bake", interval))
	default:
		parts = append(parts, "once at the end of the bake")
	}
	if delay > 0 {
		parts = append(parts, "after "+delay.String())
	}
	success, failure := g.Conditions()
	if success != "" {
		parts = append(parts, "success: "+success)
	}
	if failure != "" {
		parts = append(parts, "failure: "+failure)
	}
	f, i, e := g.Limits()
	return strings.Join(parts, "; ") + fmt.Sprintf("; limits: %d failed, %d inconclusive, %d errors in a row", f, i, e)
}

// Durations are the gate's interval and initialDelay, 0 when unset.
func (g *Gate) Durations() (interval, initialDelay time.Duration) {
	if g.Interval != nil {
		interval = g.Interval.Duration
	}
	if g.InitialDelay != nil {
		initialDelay = g.InitialDelay.Duration
	}
	return interval, initialDelay
}

// Limits are failureLimit, inconclusiveLimit and consecutiveErrorLimit,
// defaults applied.
func (g *Gate) Limits() (failure, inconclusive, consecutiveErrors int) {
	consecutiveErrors = DefaultConsecutiveErrorLimit
	if g.FailureLimit != nil {
		failure = int(*g.FailureLimit)
	}
	if g.InconclusiveLimit != nil {
		inconclusive = int(*g.InconclusiveLimit)
	}
	if g.ConsecutiveErrorLimit != nil {
		consecutiveErrors = int(*g.ConsecutiveErrorLimit)
	}
	return failure, inconclusive, consecutiveErrors
}

// Span is how long the gate needs after its wave became Current when it
// has a count (initialDelay + (count-1) x interval); 0 without one.
func (g *Gate) Span() time.Duration {
	if g.Count == nil || *g.Count < 1 {
		return 0
	}
	interval, delay := g.Durations()
	return delay + time.Duration(*g.Count-1)*interval
}

// ExpandPlaceholders replaces {{.context}} and {{.labels.KEY}} in s with
// the context's name and labels. Validation rejected any other
// placeholder, and a label a context of the wave lacks.
func ExpandPlaceholders(s, context string, labels map[string]string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	pairs := []string{"{{.context}}", context}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pairs = append(pairs, "{{.labels."+k+"}}", labels[k])
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// placeholders lists the placeholders of s ("context", "labels.KEY"), or
// says what is wrong with one.
func placeholders(s string) ([]string, error) {
	var out []string
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			if strings.Contains(s, "}}") {
				return nil, fmt.Errorf(`"}}" without "{{"`)
			}
			return out, nil
		}
		if strings.Contains(s[:i], "}}") {
			return nil, fmt.Errorf(`"}}" without "{{"`)
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf(`"{{" without "}}"`)
		}
		name := s[i+2 : i+j]
		switch {
		case name == ".context":
		case strings.HasPrefix(name, ".labels.") && len(name) > len(".labels."):
		default:
			return nil, fmt.Errorf("unknown placeholder {{%s}}: the placeholders are {{.context}} and {{.labels.KEY}}", name)
		}
		out = append(out, name[1:])
		s = s[i+j+2:]
	}
}

// validateGates checks one wave's gates against the contexts the wave
// selects.
func validateGates(gates []Gate, members []Context, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]int{}
	for i := range gates {
		g := &gates[i]
		gp := p.Index(i)
		if g.Name == "" {
			errs = append(errs, field.Required(gp.Child("name"), "a gate name (a DNS-1123 label, such as error-rate)"))
		}
		for _, msg := range validation.IsDNS1123Label(g.Name) {
			if g.Name != "" {
				errs = append(errs, field.Invalid(gp.Child("name"), g.Name, msg))
			}
		}
		if j, dup := names[g.Name]; dup && g.Name != "" {
			errs = append(errs, field.Duplicate(gp.Child("name"), fmt.Sprintf("%s (also gates[%d] of this wave)", g.Name, j)))
		}
		names[g.Name] = i
		errs = append(errs, validateGateProvider(g, members, gp)...)
		errs = append(errs, validateGateTiming(g, gp)...)
	}
	return errs
}

// validateGateProvider checks the one provider and the conditions.
func validateGateProvider(g *Gate, members []Context, gp *field.Path) field.ErrorList {
	var errs field.ErrorList
	var set []string
	for _, p := range []struct {
		name string
		on   bool
	}{{"prometheus", g.Prometheus != nil}, {"http", g.HTTP != nil}, {"kubernetes", g.Kubernetes != nil}} {
		if p.on {
			set = append(set, p.name)
		}
	}
	switch len(set) {
	case 0:
		return append(errs, field.Required(gp, "exactly one provider: prometheus, http or kubernetes"))
	case 1:
	default:
		return append(errs, field.Invalid(gp, strings.Join(set, ", "), "exactly one provider: prometheus, http or kubernetes, not "+strings.Join(set, " and ")))
	}
	success, failure := g.SuccessCondition, g.FailureCondition
	switch {
	case g.Prometheus != nil:
		pp := gp.Child("prometheus")
		if g.Prometheus.Query == "" {
			errs = append(errs, field.Required(pp.Child("query"), "a PromQL instant query"))
		}
		errs = append(errs, validatePlaceholders(g.Prometheus.Query, members, pp.Child("query"))...)
		for _, c := range members {
			if c.Endpoints[PrometheusEndpoint] == "" {
				errs = append(errs, field.Required(pp, fmt.Sprintf("context %s of this wave has no endpoints.%s to query (spec.contexts[].endpoints)", c.Name, PrometheusEndpoint)))
			}
		}
		if success == "" && failure == "" {
			errs = append(errs, field.Required(gp.Child("successCondition"), "a successCondition or failureCondition over result, such as result < 0.01"))
		}
	case g.HTTP != nil:
		hp := gp.Child("http")
		errs = append(errs, validatePlaceholders(g.HTTP.URL, members, hp.Child("url"))...)
		if u, err := url.Parse(ExpandPlaceholders(g.HTTP.URL, "x", sampleLabels(g.HTTP.URL))); g.HTTP.URL == "" {
			errs = append(errs, field.Required(hp.Child("url"), "an http(s) URL"))
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(hp.Child("url"), g.HTTP.URL, "must be an http:// or https:// URL with a host"))
		}
		for k, s := range g.HTTP.ExpectStatus {
			if s < 100 || s > 599 {
				errs = append(errs, field.Invalid(hp.Child("expectStatus").Index(k), s, "must be an HTTP status code (100-599)"))
			}
		}
		if g.HTTP.SuccessCondition != "" {
			if success != "" {
				errs = append(errs, field.Invalid(gp.Child("successCondition"), success, "set it or http.successCondition, not both"))
			}
			success = g.HTTP.SuccessCondition
			errs = append(errs, validateCondition(success, hp.Child("successCondition"))...)
		}
	case g.Kubernetes != nil:
		kp := gp.Child("kubernetes")
		k := g.Kubernetes
		for _, f := range []struct{ name, value string }{{"apiVersion", k.APIVersion}, {"kind", k.Kind}, {"name", k.Name}} {
			if f.value == "" {
				errs = append(errs, field.Required(kp.Child(f.name), "the object to read in each context's cluster"))
			}
		}
		if k.SuccessCondition != "" {
			if success != "" {
				errs = append(errs, field.Invalid(gp.Child("successCondition"), success, "set it or kubernetes.successCondition, not both"))
			}
			success = k.SuccessCondition
			errs = append(errs, validateCondition(success, kp.Child("successCondition"))...)
		}
		if k.FailureCondition != "" {
			if failure != "" {
				errs = append(errs, field.Invalid(gp.Child("failureCondition"), failure, "set it or kubernetes.failureCondition, not both"))
			}
			failure = k.FailureCondition
			errs = append(errs, validateCondition(failure, kp.Child("failureCondition"))...)
		}
		if success == "" {
			errs = append(errs, field.Required(kp.Child("successCondition"), "a CEL condition over object, such as object.status.phase == \"Succeeded\""))
		}
	}
	errs = append(errs, validateCondition(g.SuccessCondition, gp.Child("successCondition"))...)
	return append(errs, validateCondition(g.FailureCondition, gp.Child("failureCondition"))...)
}

// validateGateTiming checks the durations and counts.
func validateGateTiming(g *Gate, gp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if g.Interval != nil && g.Interval.Duration <= 0 {
		errs = append(errs, field.Invalid(gp.Child("interval"), g.Interval.Duration.String(), "must be positive"))
	}
	if g.InitialDelay != nil && g.InitialDelay.Duration < 0 {
		errs = append(errs, field.Invalid(gp.Child("initialDelay"), g.InitialDelay.Duration.String(), "must not be negative"))
	}
	if g.Count != nil {
		switch {
		case *g.Count < 1:
			errs = append(errs, field.Invalid(gp.Child("count"), *g.Count, "must be 1 or more"))
		case *g.Count > 1 && g.Interval == nil:
			errs = append(errs, field.Required(gp.Child("interval"), "the time between the count's measurements"))
		}
	}
	for _, l := range []struct {
		name string
		v    *int32
	}{{"failureLimit", g.FailureLimit}, {"inconclusiveLimit", g.InconclusiveLimit}, {"consecutiveErrorLimit", g.ConsecutiveErrorLimit}} {
		if l.v != nil && *l.v < 0 {
			errs = append(errs, field.Invalid(gp.Child(l.name), *l.v, "must be 0 or more"))
		}
	}
	return errs
}

// validateCondition compiles a non-empty condition.
func validateCondition(expr string, p *field.Path) field.ErrorList {
	if expr == "" {
		return nil
	}
	if _, err := CompileCondition(expr); err != nil {
		return field.ErrorList{field.Invalid(p, expr, "a CEL condition over "+strings.Join(GateConditionVariables, ", ")+": "+err.Error())}
	}
	return nil
}

// validatePlaceholders checks s's placeholders, and that every context of
// the wave has each label s names.
func validatePlaceholders(s string, members []Context, p *field.Path) field.ErrorList {
	names, err := placeholders(s)
	if err != nil {
		return field.ErrorList{field.Invalid(p, s, err.Error())}
	}
	var errs field.ErrorList
	for _, n := range names {
		key, ok := strings.CutPrefix(n, "labels.")
		if !ok {
			continue
		}
		for _, c := range members {
			if _, has := c.Labels[key]; !has {
				errs = append(errs, field.Invalid(p, s, fmt.Sprintf("context %s of this wave has no label %s for {{.%s}}", c.Name, key, n)))
			}
		}
	}
	return errs
}

// sampleLabels gives every label s names the value "x", to check the
// shape of s with its placeholders filled.
func sampleLabels(s string) map[string]string {
	names, _ := placeholders(s)
	out := map[string]string{}
	for _, n := range names {
		if key, ok := strings.CutPrefix(n, "labels."); ok {
			out[key] = "x"
		}
	}
	return out
}

// validateEndpoints checks a context's endpoints: http(s) URLs.
func validateEndpoints(eps map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	keys := make([]string, 0, len(eps))
	for k := range eps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		u, err := url.Parse(eps[k])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, field.Invalid(p.Key(k), eps[k], "must be an http:// or https:// URL with a host"))
		}
	}
	return errs
}
