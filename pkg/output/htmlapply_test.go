package output

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// htmlPlanGates is htmlPlan2 with a rollout of two waves, the canary's
// with two gates.
func htmlPlanGates() *v1alpha1.SplitPlan {
	p := htmlPlan2()
	p.Waves = []v1alpha1.PlanWave{
		{Name: "canary", Contexts: []string{p.Contexts[0].Name}, Gates: []string{
			`error-rate: prometheus errors_ratio{cluster="{{.context}}"} every 2s; success: result < 0.01; failure: result >= 0.05`,
			"smoke: http https://{{.context}}.example.com/healthz, once at the end",
		}},
		{Name: "rest", Contexts: []string{p.Contexts[1].Name}},
	}
	return p
}

// htmlApplyGates is a rollout whose canary's error-rate gate failed: R1
// Failed, the rest Skipped; the smoke gate was Successful.
func htmlApplyGates() *v1alpha1.ApplyReport {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 2, 20, 0, s, 0, time.UTC)) }
	return &v1alpha1.ApplyReport{
		TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.ApplyReportKind),
		Contexts: []v1alpha1.ContextApply{
			{Name: "R1", Status: v1alpha1.ApplyFailed, Objects: 12, Applied: 3, Reconciled: 12,
				Error: `context "R1": gate error-rate failed during wave canary's bake: 1 failed measurement(s), failureLimit 0 (last: 0.25 Failed)`},
			{Name: "R2", Status: v1alpha1.ApplySkipped, Objects: 12, Error: "wave canary halted the rollout"},
			{Name: "R3", Status: v1alpha1.ApplySkipped, Objects: 12, Error: "wave canary halted the rollout"},
		},
		Handoffs: []v1alpha1.Handoff{}, HeldInBoth: []v1alpha1.Handoff{}, Errors: []string{}, Warnings: []string{},
		Waves: []v1alpha1.WaveApply{
			{Name: "canary", Contexts: []string{"R1"}, Status: v1alpha1.WaveHalted,
				Error: `context "R1": gate error-rate failed during wave canary's bake`,
				Gates: []v1alpha1.GateResult{
					{Gate: "error-rate", Context: "R1", Provider: "prometheus", Phase: v1alpha1.GateFailed,
						Message:    "1 failed measurement(s), failureLimit 0 (last: 0.25 Failed)",
						Successful: 2, Failed: 1, Errors: 1,
						Measurements: []v1alpha1.GateMeasurement{
							{At: at(0), Phase: v1alpha1.GateSuccessful, Value: "0.001"},
							{At: at(2), Phase: v1alpha1.GateError, Message: "Get \"http://127.0.0.1:9090/api/v1/query\": connection refused"},
							{At: at(4), Phase: v1alpha1.GateSuccessful, Value: "0.001"},
							{At: at(6), Phase: v1alpha1.GateFailed, Value: "0.25"},
						}},
					{Gate: "smoke", Context: "R1", Provider: "http", Phase: v1alpha1.GateSuccessful, Successful: 1,
						Measurements: []v1alpha1.GateMeasurement{{At: at(6), Phase: v1alpha1.GateSuccessful, Value: "200"}}},
				}},
			{Name: "rest", Contexts: []string{"R2", "R3"}, Status: v1alpha1.WaveSkipped, Error: "wave canary halted"},
		},
	}
}

// The apply page shows every gate of every wave with its counts and each
// of its last measurements; the plan page lists each wave's gates, and
// none without waves.
func TestHTMLGates(t *testing.T) {
	var b bytes.Buffer
	if err := RenderApplyHTML(&b, htmlApplyGates()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<tr data-wave="canary">`, `<span class="badge bad">✕ Halted</span>`,
		`<tr data-gate="canary/R1/error-rate">`, `<span class="badge bad">✕ Failed</span>`, "2/1/0/1",
		"20:00:06 <span class=\"badge bad\">✕ Failed</span> <code>0.25</code>",
		"connection refused", `<tr data-gate="canary/R1/smoke">`, "<code>200</code>",
		"3 context(s): 1 failed, 2 skipped; the apply failed.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the apply page lacks %q", want)
		}
	}
	if strings.Contains(page, "&#34;http://127.0.0.1:9090") == false {
		t.Error("a measurement's message is not escaped")
	}

	b.Reset()
	if err := RenderPlanHTML(&b, htmlPlanGates()); err != nil {
		t.Fatal(err)
	}
	page = b.String()
	for _, want := range []string{`<table class="stack" id="waves">`, `<tr data-wave="canary">`, "<li>smoke: http https://{{.context}}.example.com/healthz, once at the end</li>",
		"none: every object Current for the bake"} {
		if !strings.Contains(page, want) {
			t.Errorf("the plan page lacks %q", want)
		}
	}
	b.Reset()
	if err := RenderPlanHTML(&b, htmlPlan2()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="waves"`) {
		t.Error("a plan without a rollout shows waves")
	}
}
