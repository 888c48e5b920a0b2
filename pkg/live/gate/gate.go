// Package gate takes a promotion gate's measurements (spec.rollout.waves[].
// gates) in one context and judges them with Argo Rollouts' analysis
// semantics: each measurement is Successful, Failed, Inconclusive or Error;
// a gate fails past its failureLimit or its consecutiveErrorLimit, and is
// inconclusive past its inconclusiveLimit. An unreachable endpoint, a
// timeout or an empty result is an Error, never a pass.
package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// DefaultTimeout bounds one measurement.
const DefaultTimeout = 10 * time.Second

// keepMeasurements is how many of its last measurements a result keeps.
const keepMeasurements = 10

// Target is the context a gate measures.
type Target struct {
	Context   string
	Labels    map[string]string
	Endpoints map[string]string
	// Dynamic and Mapper read the kubernetes provider's object in the
	// context's cluster; only that provider needs them.
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}

// Gate is one compiled gate.
type Gate struct {
	Spec             v1alpha1.Gate
	success, failure cel.Program
	provider         provider
	// Timeout bounds one measurement (default DefaultTimeout).
	Timeout time.Duration
}

// provider takes one measurement's value: the variables the conditions
// see (result among them), the value as the report shows it, or the
// measurement's own verdict (an HTTP status outside expectStatus).
type provider interface {
	measure(ctx context.Context, t Target) (vars map[string]any, value string, verdict v1alpha1.GatePhase, err error)
}

// Compile compiles a validated gate's conditions and picks its provider.
func Compile(g v1alpha1.Gate) (*Gate, error) {
	out := &Gate{Spec: g, Timeout: DefaultTimeout}
	success, failure := g.Conditions()
	var err error
	if success != "" {
		if out.success, err = v1alpha1.CompileCondition(success); err != nil {
			return nil, fmt.Errorf("gate %s: successCondition %w", g.Name, err)
		}
	}
	if failure != "" {
		if out.failure, err = v1alpha1.CompileCondition(failure); err != nil {
			return nil, fmt.Errorf("gate %s: failureCondition %w", g.Name, err)
		}
	}
	switch {
	case g.Prometheus != nil:
		out.provider = &prometheus{query: g.Prometheus.Query}
	case g.HTTP != nil:
		out.provider = &httpProvider{spec: *g.HTTP, decode: success != "" || failure != ""}
	case g.Kubernetes != nil:
		out.provider = &kubernetes{spec: *g.Kubernetes}
	default:
		return nil, fmt.Errorf("gate %s: no provider", g.Name)
	}
	return out, nil
}

// Measure takes one measurement in the target's context.
func (g *Gate) Measure(ctx context.Context, t Target) v1alpha1.GateMeasurement {
	m := v1alpha1.GateMeasurement{At: metav1.Now()}
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	vars, value, verdict, err := g.provider.measure(ctx, t)
	m.Value = value
	switch {
	case err != nil:
		m.Phase, m.Message = v1alpha1.GateError, err.Error()
		return m
	case verdict != "":
		m.Phase = verdict
		return m
	}
	vars["context"] = t.Context
	labels := t.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	vars["labels"] = labels
	m.Phase, err = g.judge(vars)
	if err != nil {
		m.Message = err.Error()
	}
	return m
}

// judge applies the conditions as Argo Rollouts does: the failure
// condition first; with both, a measurement that meets neither is
// Inconclusive; with one, the other is its negation.
func (g *Gate) judge(vars map[string]any) (v1alpha1.GatePhase, error) {
	if g.failure != nil {
		failed, err := eval(g.failure, vars)
		if err != nil {
			return v1alpha1.GateError, fmt.Errorf("failureCondition: %w", err)
		}
		if failed {
			return v1alpha1.GateFailed, nil
		}
	}
	if g.success != nil {
		ok, err := eval(g.success, vars)
		if err != nil {
			return v1alpha1.GateError, fmt.Errorf("successCondition: %w", err)
		}
		switch {
		case ok:
			return v1alpha1.GateSuccessful, nil
		case g.failure != nil:
			return v1alpha1.GateInconclusive, nil
		default:
			return v1alpha1.GateFailed, nil
		}
	}
	return v1alpha1.GateSuccessful, nil
}

// eval runs a bool condition.
func eval(p cel.Program, vars map[string]any) (bool, error) {
	out, _, err := p.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("gave %v, not a bool", out.Value())
	}
	return b, nil
}
