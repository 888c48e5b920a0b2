package v1alpha1

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// rolloutConfig is validConfig with three contexts and the waves.
func rolloutConfig() *ShardConfig {
	c := validConfig()
	c.Spec.Contexts[0].Labels = map[string]string{"stage": "canary"}
	c.Spec.Contexts = append(c.Spec.Contexts, Context{Name: "foo_bar_baz_02"})
	four := int32(4)
	c.Spec.Rollout = &Rollout{Waves: []Wave{
		{Name: "canary", Contexts: &metav1.LabelSelector{MatchLabels: map[string]string{"stage": "canary"}},
			BakeTime: &metav1.Duration{Duration: 5 * time.Minute}},
		{Name: "rest", Contexts: &metav1.LabelSelector{}, MaxParallel: &four},
	}}
	return c
}

func TestRolloutValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *ShardConfig)
		want   []string // "field: type" of every error, in any order
	}{
		{name: "issue example is valid", mutate: func(*ShardConfig) {}},
		{name: "a context no wave selects", mutate: func(c *ShardConfig) { c.Spec.Rollout.Waves = c.Spec.Rollout.Waves[:1] },
			want: []string{"spec.contexts[1].labels: Invalid value", "spec.contexts[2].labels: Invalid value"}},
		{name: "a wave that selects nothing", mutate: func(c *ShardConfig) {
			c.Spec.Rollout.Waves = append(c.Spec.Rollout.Waves, Wave{Name: "late", Contexts: &metav1.LabelSelector{}})
		}, want: []string{"spec.rollout.waves[2].contexts: Invalid value"}},
		{name: "no waves", mutate: func(c *ShardConfig) { c.Spec.Rollout.Waves = nil },
			want: []string{"spec.rollout.waves: Required value"}},
		{name: "absent selector", mutate: func(c *ShardConfig) { c.Spec.Rollout.Waves[1].Contexts = nil },
			want: []string{"spec.rollout.waves[1].contexts: Required value", "spec.contexts[1].labels: Invalid value", "spec.contexts[2].labels: Invalid value"}},
		{name: "bad selector", mutate: func(c *ShardConfig) {
			c.Spec.Rollout.Waves[0].Contexts = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "stage", Operator: "Near"}}}
		}, want: []string{"spec.rollout.waves[0].contexts.matchExpressions[0].operator: Invalid value"}},
		{name: "duplicate and bad wave names", mutate: func(c *ShardConfig) {
			c.Spec.Rollout.Waves[1].Name = "canary"
			c.Spec.Rollout.Waves[0].Name = "Canary!"
		}, want: []string{"spec.rollout.waves[0].name: Invalid value"}},
		{name: "duplicate wave name", mutate: func(c *ShardConfig) { c.Spec.Rollout.Waves[1].Name = "canary" },
			want: []string{"spec.rollout.waves[1].name: Duplicate value"}},
		{name: "empty wave name", mutate: func(c *ShardConfig) { c.Spec.Rollout.Waves[1].Name = "" },
			want: []string{"spec.rollout.waves[1].name: Required value"}},
		{name: "negative bake time", mutate: func(c *ShardConfig) { c.Spec.Rollout.Waves[0].BakeTime.Duration = -time.Second },
			want: []string{"spec.rollout.waves[0].bakeTime: Invalid value"}},
		{name: "maxParallel 0", mutate: func(c *ShardConfig) { zero := int32(0); c.Spec.Rollout.Waves[1].MaxParallel = &zero },
			want: []string{"spec.rollout.waves[1].maxParallel: Invalid value"}},
		{name: "maxFailures negative", mutate: func(c *ShardConfig) { mf := intstr.FromInt32(-1); c.Spec.Rollout.MaxFailures = &mf },
			want: []string{"spec.rollout.maxFailures: Invalid value"}},
		{name: "maxFailures over 100%", mutate: func(c *ShardConfig) { mf := intstr.FromString("101%"); c.Spec.Rollout.MaxFailures = &mf },
			want: []string{"spec.rollout.maxFailures: Invalid value"}},
		{name: "maxFailures not a percentage", mutate: func(c *ShardConfig) { mf := intstr.FromString("ten"); c.Spec.Rollout.MaxFailures = &mf },
			want: []string{"spec.rollout.maxFailures: Invalid value"}},
		{name: "maxFailures 10%", mutate: func(c *ShardConfig) { mf := intstr.FromString("10%"); c.Spec.Rollout.MaxFailures = &mf }},
		{name: "unknown onFailure", mutate: func(c *ShardConfig) { c.Spec.Rollout.OnFailure = "Retry" },
			want: []string{"spec.rollout.onFailure: Unsupported value"}},
		{name: "bad context label", mutate: func(c *ShardConfig) { c.Spec.Contexts[1].Labels = map[string]string{"stage": "not valid!"} },
			want: []string{"spec.contexts[1].labels: Invalid value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rolloutConfig()
			tc.mutate(c)
			var got []string
			for _, e := range c.Validate() {
				got = append(got, e.Field+": "+e.Type.String())
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if tc.name == "duplicate and bad wave names" {
				// The bad name is reported; the other is then no duplicate.
				want = []string{"spec.rollout.waves[0].name: Invalid value"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("errors = %q, want %q\n%v", got, want, c.Validate())
			}
		})
	}
}

func TestWaves(t *testing.T) {
	c := rolloutConfig()
	got := c.Spec.Waves()
	want := []WavePlan{
		{Name: "canary", Contexts: []string{"foo_bar_baz_00"}, BakeTime: 5 * time.Minute},
		{Name: "rest", Contexts: []string{"foo_bar_baz_01", "foo_bar_baz_02"}, MaxParallel: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Waves() = %+v, want %+v", got, want)
	}
	if w := c.Spec.WaveOf("foo_bar_baz_02"); w != "rest" {
		t.Errorf("WaveOf = %q, want rest", w)
	}
	c.Spec.Rollout = nil
	if got := c.Spec.Waves(); len(got) != 1 || got[0].Name != DefaultWaveName || len(got[0].Contexts) != 3 {
		t.Errorf("without spec.rollout: %+v, want one wave of every context", got)
	}
}

func TestMaxFailuresOf(t *testing.T) {
	for _, tc := range []struct {
		mf   *intstr.IntOrString
		n    int
		want int
	}{
		{nil, 10, 0},
		{ptr(intstr.FromInt32(2)), 10, 2},
		{ptr(intstr.FromString("10%")), 10, 1},
		{ptr(intstr.FromString("10%")), 9, 0}, // rounded down
		{ptr(intstr.FromString("100%")), 3, 3},
	} {
		r := &Rollout{MaxFailures: tc.mf}
		if got := r.MaxFailuresOf(tc.n); got != tc.want {
			t.Errorf("MaxFailuresOf(%v, %d) = %d, want %d", tc.mf, tc.n, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestLoadRollout reads the YAML: strict decoding names an unknown
// field of a wave, and "10%" and 0 both decode as maxFailures.
func TestLoadRollout(t *testing.T) {
	doc := `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts:
  - name: eu-shard-00
    labels: {stage: canary}
  - name: eu-shard-01
  rollout:
    waves:
    - name: canary
      contexts: {matchLabels: {stage: canary}}
      bakeTime: 5m
    - name: rest
      contexts: {}
      maxParallel: 4
    maxFailures: "10%"
    onFailure: Rollback
`
	cfg, errs := Load(yaml.MustParse(doc))
	if len(errs) > 0 {
		t.Fatalf("Load: %v", errs)
	}
	if w := cfg.Spec.Waves(); len(w) != 2 || w[0].BakeTime != 5*time.Minute || w[1].Contexts[0] != "eu-shard-01" {
		t.Errorf("waves = %+v", w)
	}
	if cfg.Spec.Rollout.OnFailureOrDefault() != OnFailureRollback {
		t.Errorf("onFailure = %q", cfg.Spec.Rollout.OnFailure)
	}
	_, errs = Load(yaml.MustParse(strings.Replace(doc, "maxParallel: 4", "maxParalel: 4", 1)))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.rollout.waves[1].maxParalel") {
		t.Errorf("unknown field: %v, want one error naming spec.rollout.waves[1].maxParalel", errs)
	}
}
