package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func TestPlanGates(t *testing.T) {
	p := wavedPlan(true)
	p.Waves[0].Gates = []string{"error-rate: prometheus errors_ratio; every 30s and at the end of the bake; success: result < 0.01"}
	var table, md bytes.Buffer
	if err := RenderPlanTable(&table, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "Gates (1):\n  wave canary: error-rate: prometheus errors_ratio;") {
		t.Errorf("table lacks the gate:\n%s", table.String())
	}
	if err := RenderPlanMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**Gates**") || !strings.Contains(md.String(), "- `canary`: error-rate: prometheus errors_ratio;") {
		t.Errorf("markdown lacks the gate:\n%s", md.String())
	}
}

func TestApplyTextGates(t *testing.T) {
	r := &v1alpha1.ApplyReport{Paused: true, Contexts: []v1alpha1.ContextApply{{Name: "eu-0", Status: v1alpha1.ApplyApplied}, {Name: "us-0", Status: v1alpha1.ApplyPending}},
		Waves: []v1alpha1.WaveApply{{Name: "canary", Contexts: []string{"eu-0"}, Status: v1alpha1.WavePaused,
			Gates: []v1alpha1.GateResult{{Gate: "error-rate", Context: "eu-0", Provider: "prometheus", Phase: v1alpha1.GateInconclusive, Successful: 2, Inconclusive: 1,
				Measurements: []v1alpha1.GateMeasurement{{Phase: v1alpha1.GateInconclusive, Value: "0.02"}}}}},
			{Name: "rest", Contexts: []string{"us-0"}, Status: v1alpha1.WavePending}}}
	var b bytes.Buffer
	if err := RenderApplyText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"canary  Paused", "canary  eu-0     error-rate  Inconclusive  2/0/1/0  0.02 Inconclusive", "Paused (an inconclusive gate)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("apply text lacks %q:\n%s", want, b.String())
		}
	}
	if r.Failed() {
		t.Error("a paused run counts as failed")
	}
}
