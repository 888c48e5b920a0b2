package output

import (
	"bytes"
	"io"
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

// gateStatus is a fleet whose rollout finished after its canary's gates
// failed once (halted, rolled back) and then passed: status shows what the
// last apply that baked each wave measured.
func gateStatus() *v1alpha1.FleetStatus {
	s := htmlStatus2()
	report := htmlApplyGates()
	canary := report.Waves[0]
	s.Gates = []v1alpha1.WaveGates{{Wave: canary.Name, Status: canary.Status, Gates: canary.Gates,
		MeasuredAt: canary.Gates[0].Measurements[len(canary.Gates[0].Measurements)-1].At}}
	return s
}

// status shows the gates OUT_DIR recorded, in every format: each gate in
// each context with its wave, when it was measured, its verdict, counts and
// last measurement; a failed gate stands out.
func TestStatusGates(t *testing.T) {
	s := gateStatus()
	var table, md, page bytes.Buffer
	for _, r := range []struct {
		b      *bytes.Buffer
		render func(io.Writer, *v1alpha1.FleetStatus) error
	}{{&table, RenderStatusTable}, {&md, RenderStatusMarkdown}, {&page, RenderStatusHTML}} {
		if err := r.render(r.b, s); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "status-gates.table", table.Bytes())
	golden(t, "status-gates.md", md.Bytes())
	for name, want := range map[string][]string{
		"table":    {"Gates, as the last apply that baked each wave measured them:", "canary (Halted)  2026-12-02T20:00:06Z  R1", "error-rate  Failed      2/1/0/1  0.25 Failed", "smoke       Successful  1/0/0/0  200 Successful"},
		"markdown": {"**Gates**, as the last apply that baked each wave measured them:", "| `canary` (Halted) | 2026-12-02T20:00:06Z | `R1` | `error-rate` | **Failed** | 2/1/0/1 | 0.25 Failed |"},
		"page":     {`<tr data-gate="canary/R1/error-rate">`, `<span class="badge bad">✕ Failed</span>`, "20:00:02 <span class=\"badge bad\">✕ Error</span>", "in the last apply that baked the wave"},
	} {
		out := map[string]string{"table": table.String(), "markdown": md.String(), "page": page.String()}[name]
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("the %s lacks %q:\n%s", name, w, out)
			}
		}
	}
	// Without a record, nothing about gates.
	s.Gates = nil
	table.Reset()
	if err := RenderStatusTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "Gates") {
		t.Errorf("a status without gates mentions them:\n%s", table.String())
	}
}
