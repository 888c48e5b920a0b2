package v1alpha1

import (
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rollout orders the contexts into waves that apply one after the other.
type Rollout struct {
	// Waves are applied in this order. A context belongs to the first wave
	// whose selector matches its labels; every context must belong to one.
	Waves []Wave `json:"waves"`
	// MaxFailures is how many contexts of one wave may fail before the
	// rollout halts: a count, or a percentage of the wave's contexts
	// ("10%", rounded down). Default 0.
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`
	// OnFailure is what a halted rollout does: Halt (default) leaves the
	// contexts it changed as they are, Rollback applies their previous
	// packages again.
	OnFailure OnFailure `json:"onFailure,omitempty"`
}

// Wave is one step of a rollout.
type Wave struct {
	// Name names the wave in reports and in --until-wave.
	Name string `json:"name"`
	// Contexts selects contexts by their labels (spec.contexts[].labels).
	// Required; {} selects every context no earlier wave took.
	Contexts *metav1.LabelSelector `json:"contexts"`
	// BakeTime is how long the wave's objects must stay Current after the
	// wave reconciled before the next wave starts (default 0).
	BakeTime *metav1.Duration `json:"bakeTime,omitempty"`
	// MaxParallel bounds how many of the wave's contexts are applied at
	// once; default: apply's --parallel.
	MaxParallel *int32 `json:"maxParallel,omitempty"`
	// Gates judge each context of the wave by its own measurements while
	// the wave bakes (see gates.go): a failed gate fails its context, an
	// inconclusive one pauses the rollout.
	Gates []Gate `json:"gates,omitempty"`
}

// OnFailure names what a halted rollout does.
type OnFailure string

const (
	// OnFailureHalt stops the rollout; later waves get no write.
	OnFailureHalt OnFailure = "Halt"
	// OnFailureRollback stops the rollout and applies, newest wave first,
	// the previous package of every context the run changed.
	OnFailureRollback OnFailure = "Rollback"
)

// DefaultWaveName is the name of the one wave of a config without
// spec.rollout.
const DefaultWaveName = "all"

// WavePlan is one resolved wave: its contexts in config order.
type WavePlan struct {
	Name     string
	Contexts []string
	// BakeTime is 0 when the wave has none.
	BakeTime time.Duration
	// MaxParallel is 0 when the wave sets none (apply's --parallel).
	MaxParallel int
	// Gates are the wave's gates, as the config gives them.
	Gates []Gate
}

// MaxFailuresOf is how many of n contexts of a wave may fail before the
// rollout halts.
func (r *Rollout) MaxFailuresOf(n int) int {
	if r == nil || r.MaxFailures == nil {
		return 0
	}
	if r.MaxFailures.Type == intstr.Int {
		return int(r.MaxFailures.IntVal)
	}
	// Validated: "N%" with 0 <= N <= 100. Rounded down: a percentage never
	// allows more failures than it says.
	pct, _ := percent(r.MaxFailures.StrVal)
	return int(math.Floor(float64(n) * float64(pct) / 100))
}

// OnFailureOrDefault is OnFailure, Halt when unset.
func (r *Rollout) OnFailureOrDefault() OnFailure {
	if r == nil || r.OnFailure == "" {
		return OnFailureHalt
	}
	return r.OnFailure
}

// Waves resolves spec.rollout into waves, each with its contexts in config
// order. Without spec.rollout there is one wave, DefaultWaveName, with
// every context. The config must have been validated (Validate reports a
// context no wave selects); waves that select nothing are omitted.
func (s *ShardConfigSpec) Waves() []WavePlan {
	if s.Rollout == nil {
		w := WavePlan{Name: DefaultWaveName}
		for _, c := range s.Contexts {
			w.Contexts = append(w.Contexts, c.Name)
		}
		return []WavePlan{w}
	}
	owner := s.waveOfContexts()
	var waves []WavePlan
	for i, w := range s.Rollout.Waves {
		plan := WavePlan{Name: w.Name}
		if w.BakeTime != nil {
			plan.BakeTime = w.BakeTime.Duration
		}
		if w.MaxParallel != nil {
			plan.MaxParallel = int(*w.MaxParallel)
		}
		plan.Gates = w.Gates
		for k, c := range s.Contexts {
			if owner[k] == i {
				plan.Contexts = append(plan.Contexts, c.Name)
			}
		}
		if len(plan.Contexts) > 0 {
			waves = append(waves, plan)
		}
	}
	return waves
}

// WaveOf returns the name of the wave that context belongs to, "" when it
// is not a context of the config.
func (s *ShardConfigSpec) WaveOf(context string) string {
	for _, w := range s.Waves() {
		for _, c := range w.Contexts {
			if c == context {
				return w.Name
			}
		}
	}
	return ""
}

// waveOfContexts maps each context's index to the index of the first wave
// whose selector matches its labels, -1 for none.
func (s *ShardConfigSpec) waveOfContexts() []int {
	owner := make([]int, len(s.Contexts))
	var sels []labels.Selector
	for _, w := range s.Rollout.Waves {
		var sel labels.Selector = labels.Nothing()
		if w.Contexts != nil {
			if parsed, err := metav1.LabelSelectorAsSelector(w.Contexts); err == nil {
				sel = parsed
			}
		}
		sels = append(sels, sel)
	}
	for k, c := range s.Contexts {
		owner[k] = -1
		for i, sel := range sels {
			if sel.Matches(labels.Set(c.Labels)) {
				owner[k] = i
				break
			}
		}
	}
	return owner
}

// validateRollout checks spec.contexts[].labels and spec.rollout.
func (c *ShardConfig) validateRollout() field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for i, ctx := range c.Spec.Contexts {
		errs = append(errs, metav1validation.ValidateLabels(ctx.Labels, spec.Child("contexts").Index(i).Child("labels"))...)
	}
	r := c.Spec.Rollout
	if r == nil {
		return errs
	}
	rp := spec.Child("rollout")
	if len(r.Waves) == 0 {
		errs = append(errs, field.Required(rp.Child("waves"), "at least one wave; remove spec.rollout to apply every context at once"))
	}
	names := map[string]int{}
	selectorsValid := true
	for i, w := range r.Waves {
		wp := rp.Child("waves").Index(i)
		switch {
		case w.Name == "":
			errs = append(errs, field.Required(wp.Child("name"), "a wave name (a DNS-1123 label, such as canary)"))
		default:
			for _, msg := range validation.IsDNS1123Label(w.Name) {
				errs = append(errs, field.Invalid(wp.Child("name"), w.Name, msg))
			}
		}
		if j, dup := names[w.Name]; dup && w.Name != "" {
			errs = append(errs, field.Duplicate(wp.Child("name"), fmt.Sprintf("%s (also spec.rollout.waves[%d])", w.Name, j)))
		}
		names[w.Name] = i
		if w.Contexts == nil {
			errs = append(errs, field.Required(wp.Child("contexts"), "a label selector over the contexts' labels; {} selects every context"))
		} else if serrs := metav1validation.ValidateLabelSelector(w.Contexts, metav1validation.LabelSelectorValidationOptions{}, wp.Child("contexts")); len(serrs) > 0 {
			errs = append(errs, serrs...)
			selectorsValid = false
		}
		if w.BakeTime != nil && w.BakeTime.Duration < 0 {
			errs = append(errs, field.Invalid(wp.Child("bakeTime"), w.BakeTime.Duration.String(), "must not be negative"))
		}
		if w.MaxParallel != nil && *w.MaxParallel < 1 {
			errs = append(errs, field.Invalid(wp.Child("maxParallel"), *w.MaxParallel, "must be 1 or more"))
		}
	}
	if mf := r.MaxFailures; mf != nil {
		fp := rp.Child("maxFailures")
		switch mf.Type {
		case intstr.Int:
			if mf.IntVal < 0 {
				errs = append(errs, field.Invalid(fp, mf.IntVal, "must be 0 or more"))
			}
		default:
			if _, err := percent(mf.StrVal); err != nil {
				errs = append(errs, field.Invalid(fp, mf.StrVal, err.Error()))
			}
		}
	}
	switch r.OnFailure {
	case "", OnFailureHalt, OnFailureRollback:
	default:
		errs = append(errs, field.NotSupported(rp.Child("onFailure"), r.OnFailure, []OnFailure{OnFailureHalt, OnFailureRollback}))
	}
	if !selectorsValid || len(r.Waves) == 0 {
		return errs
	}
	owner := c.Spec.waveOfContexts()
	for i, w := range r.Waves {
		var members []Context
		for k, o := range owner {
			if o == i {
				members = append(members, c.Spec.Contexts[k])
			}
		}
		errs = append(errs, validateGates(w.Gates, members, rp.Child("waves").Index(i).Child("gates"))...)
	}
	used := make([]bool, len(r.Waves))
	for k, i := range owner {
		if i < 0 {
			ctx := c.Spec.Contexts[k]
			errs = append(errs, field.Invalid(spec.Child("contexts").Index(k).Child("labels"), labels.Set(ctx.Labels).String(),
				fmt.Sprintf("context %s belongs to no wave of spec.rollout.waves: give it labels a wave selects, or add a wave that selects it (contexts: {} selects every context)", ctx.Name)))
			continue
		}
		used[i] = true
	}
	for i, w := range r.Waves {
		if !used[i] && w.Contexts != nil {
			errs = append(errs, field.Invalid(rp.Child("waves").Index(i).Child("contexts"), metav1.FormatLabelSelector(w.Contexts),
				fmt.Sprintf("wave %s selects no context (a context belongs to the first wave that selects it)", w.Name)))
		}
	}
	return errs
}

// percent reads "N%" with 0 <= N <= 100.
func percent(s string) (int, error) {
	num, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf(`must be a count (0 or more) or a percentage such as "10%%"`)
	}
	var n int
	if _, err := fmt.Sscanf(num, "%d", &n); err != nil || fmt.Sprint(n) != num {
		return 0, fmt.Errorf(`must be a count (0 or more) or a percentage such as "10%%"`)
	}
	if n < 0 || n > 100 {
		return 0, fmt.Errorf("a percentage must be from 0%% to 100%%")
	}
	return n, nil
}
