package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func wavedPlan(waves bool) *v1alpha1.SplitPlan {
	p := v1alpha1.NewSplitPlan()
	p.Contexts = []v1alpha1.ContextPlan{{Name: "eu-0", State: v1alpha1.ContextKept, Unchanged: 1}, {Name: "us-0", State: v1alpha1.ContextAdded}}
	if waves {
		p.Waves = []v1alpha1.PlanWave{{Name: "canary", Contexts: []string{"eu-0"}}, {Name: "rest", Contexts: []string{"us-0"}}}
	}
	return p
}

// The plan shows the waves only with spec.rollout: without, its bytes are
// as before.
func TestPlanWaves(t *testing.T) {
	var table, md bytes.Buffer
	if err := RenderPlanTable(&table, wavedPlan(true)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table.String(), "\n")
	for i, want := range []string{"No changes.", "", "WAVE    CONTEXT", "canary  eu-0", "rest    us-0"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("table line %d = %q, want it to start with %q\n%s", i, lines[i], want, table.String())
		}
	}
	if err := RenderPlanMarkdown(&md, wavedPlan(true)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 1 | `canary` | `eu-0` |\n| 2 | `rest` | `us-0` |\n") {
		t.Errorf("markdown lacks the waves in order:\n%s", md.String())
	}

	table.Reset()
	md.Reset()
	if err := RenderPlanTable(&table, wavedPlan(false)); err != nil {
		t.Fatal(err)
	}
	if err := RenderPlanMarkdown(&md, wavedPlan(false)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "WAVE") || strings.Contains(md.String(), "wave") {
		t.Errorf("a plan without waves shows waves:\n%s\n%s", table.String(), md.String())
	}
	b, _ := json.Marshal(wavedPlan(false))
	if strings.Contains(string(b), "waves") {
		t.Errorf("plan JSON without spec.rollout has waves: %s", b)
	}
}

func TestApplyTextWaves(t *testing.T) {
	r := &v1alpha1.ApplyReport{Paused: true, Contexts: []v1alpha1.ContextApply{{Name: "eu-0", Status: v1alpha1.ApplyApplied}, {Name: "us-0", Status: v1alpha1.ApplyPending}},
		Waves: []v1alpha1.WaveApply{{Name: "canary", Contexts: []string{"eu-0"}, Status: v1alpha1.WaveApplied}, {Name: "rest", Contexts: []string{"us-0"}, Status: v1alpha1.WavePending}}}
	var b bytes.Buffer
	if err := RenderApplyText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WAVE    STATUS   CONTEXTS", "canary  Applied  eu-0", "rest    Pending  us-0", "Paused (--until-wave)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("apply text lacks %q:\n%s", want, b.String())
		}
	}
	if r.Failed() {
		t.Error("a paused run with no failure counts as failed")
	}
	r.Waves[0].Status, r.Paused = v1alpha1.WaveHalted, false
	if !r.Failed() {
		t.Error("a halted rollout does not count as failed")
	}
	j, _ := json.Marshal(&v1alpha1.ApplyReport{})
	if strings.Contains(string(j), "waves") || strings.Contains(string(j), "paused") {
		t.Errorf("an ApplyReport without a rollout has waves or paused: %s", j)
	}
}
