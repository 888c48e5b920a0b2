package v1alpha1

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestApplyValidate(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name  string
		apply ApplyOptions
		want  []string
	}{
		{name: "every field", apply: ApplyOptions{ServerSide: &yes, ForceConflicts: &yes, FieldManager: "platform", InventoryPolicy: "adopt",
			PrunePropagationPolicy: "Orphan", PruneTimeout: &metav1.Duration{Duration: time.Minute}, StatusPolicy: "none"}},
		{name: "nothing", apply: ApplyOptions{}},
		{name: "forceConflicts without serverSide", apply: ApplyOptions{ForceConflicts: &yes},
			want: []string{"spec.apply.forceConflicts: Invalid value"}},
		{name: "forceConflicts with client-side apply", apply: ApplyOptions{ServerSide: &no, ForceConflicts: &yes},
			want: []string{"spec.apply.forceConflicts: Invalid value"}},
		{name: "unknown policies", apply: ApplyOptions{InventoryPolicy: "adopt-all", PrunePropagationPolicy: "orphan", StatusPolicy: "None"},
			want: []string{"spec.apply.inventoryPolicy: Unsupported value", "spec.apply.prunePropagationPolicy: Unsupported value", "spec.apply.statusPolicy: Unsupported value"}},
		{name: "a zero prune timeout", apply: ApplyOptions{PruneTimeout: &metav1.Duration{}},
			want: []string{"spec.apply.pruneTimeout: Invalid value"}},
		{name: "a field manager with spaces", apply: ApplyOptions{FieldManager: " platform"},
			want: []string{"spec.apply.fieldManager: Invalid value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			c.Spec.Apply = &tc.apply
			var got []string
			for _, e := range c.Validate() {
				got = append(got, e.Field+": "+e.Type.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors = %q, want %q", got, tc.want)
			}
		})
	}
}

// A flag wins over its spec.apply field; the rest keep spec.apply's, then
// kpt's defaults.
func TestApplyStrategyResolves(t *testing.T) {
	yes, no := true, false
	spec := &ApplyOptions{ServerSide: &yes, FieldManager: "platform", PruneTimeout: &metav1.Duration{Duration: time.Minute}, StatusPolicy: "all"}
	flags := &ApplyOptions{ServerSide: &no, InventoryPolicy: "adopt", StatusPolicy: "none"}
	got := ResolveStrategy(spec.Over(flags), 5*time.Minute)
	want := ApplyStrategy{ServerSide: false, FieldManager: "platform", InventoryPolicy: "adopt", PrunePropagationPolicy: "Background", PruneTimeout: "1m0s", StatusPolicy: "none"}
	if got != want {
		t.Errorf("ResolveStrategy = %+v, want %+v", got, want)
	}
	if got := ResolveStrategy(nil, 5*time.Minute); got != (ApplyStrategy{FieldManager: "kubectl", InventoryPolicy: "strict", PrunePropagationPolicy: "Background", PruneTimeout: "5m0s", StatusPolicy: "all"}) {
		t.Errorf("kpt's defaults: %+v", got)
	}
	if got.Options().Over(nil) == nil || ResolveStrategy(got.Options(), time.Hour) != got {
		t.Errorf("a strategy does not round-trip through Options: %+v", ResolveStrategy(got.Options(), time.Hour))
	}
	// --force-conflicts on spec.apply's server-side is fine; switched off
	// by --server-side=false it is refused, naming the flag.
	spec.ForceConflicts = &yes
	if err := spec.Over(flags).Check(); err == nil || !strings.Contains(err.Error(), "--force-conflicts") {
		t.Errorf("Check = %v, want --force-conflicts refused", err)
	}
	if err := spec.Over(nil).Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	if err := (&ApplyOptions{InventoryPolicy: "all"}).Check(); err == nil || !strings.Contains(err.Error(), `--inventory-policy "all": want strict or adopt`) {
		t.Errorf("Check = %v", err)
	}
	if err := (&ApplyOptions{StatusPolicy: "partial"}).Check(); err == nil || !strings.Contains(err.Error(), `--status-policy "partial": want all or none`) {
		t.Errorf("Check = %v", err)
	}
	if d := want.Describe(); d != "client-side apply, field manager platform, inventory policy adopt, prune propagation Background, prune timeout 1m0s, status policy none" {
		t.Errorf("Describe = %q", d)
	}
	// A rollout's record written before the status policy was recorded:
	// its runs stored every status, and its rollback does too.
	old := ApplyStrategy{FieldManager: "kubectl", InventoryPolicy: "strict", PrunePropagationPolicy: "Background", PruneTimeout: "5m0s"}
	if got := ResolveStrategy(old.Options(), time.Hour); got.StatusPolicy != StatusPolicyAll || !strings.HasSuffix(old.Describe(), "status policy all") {
		t.Errorf("an old record: resolved %+v, described %q", got, old.Describe())
	}
}
