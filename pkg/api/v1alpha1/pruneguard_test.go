package v1alpha1

import (
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestPruneGuardValidation(t *testing.T) {
	base := `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata: {name: shards}
spec:
  contexts: [{name: a}]
`
	cases := []struct {
		name, spec string
		want       string // "" when valid
		max, min   int
	}{
		{name: "defaults", spec: "", max: 50, min: 10},
		{name: "set", spec: "  pruneGuard: {maxPercent: 0, minObjects: 0}\n  allowMassPrune: true\n", max: 0, min: 0},
		{name: "100", spec: "  pruneGuard: {maxPercent: 100}\n", max: 100, min: 10},
		{name: "above 100", spec: "  pruneGuard: {maxPercent: 101}\n", want: "spec.pruneGuard.maxPercent: Invalid value: 101: must be a percentage from 0 to 100"},
		{name: "negative", spec: "  pruneGuard: {maxPercent: -1}\n", want: "spec.pruneGuard.maxPercent: Invalid value: -1"},
		{name: "negative minObjects", spec: "  pruneGuard: {minObjects: -3}\n", want: "spec.pruneGuard.minObjects: Invalid value: -3: must not be negative"},
		{name: "unknown field", spec: "  pruneGuard: {maxPercnt: 10}\n", want: "spec.pruneGuard.maxPercnt: Forbidden: unknown field"},
		{name: "not a number", spec: "  pruneGuard: {maxPercent: half}\n", want: "cannot decode the ShardConfig"},
		{name: "allowMassPrune not a bool", spec: "  allowMassPrune: yes please\n", want: "cannot decode the ShardConfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, errs := Load(yaml.MustParse(base + tc.spec))
			if tc.want != "" {
				if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
					t.Errorf("errors %v, want %q", errs, tc.want)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if max, min := cfg.Spec.PruneGuard.Limits(); max != tc.max || min != tc.min {
				t.Errorf("limits %d %d", max, min)
			}
		})
	}
}
