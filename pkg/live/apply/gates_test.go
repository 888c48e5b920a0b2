package apply

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/gate"
)

// gateWave is a wave of two contexts with one http gate each, whose
// measurements the test records by hand.
func gateWave(t *testing.T, phases map[string][]v1alpha1.GatePhase) (*run, *wave) {
	t.Helper()
	three := int32(3)
	spec := v1alpha1.Gate{Name: "smoke", HTTP: &v1alpha1.HTTPGate{URL: "http://127.0.0.1:1/"},
		Interval: &metav1.Duration{Duration: 10 * time.Second}, Count: &three}
	g, err := gate.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{log: &progress{}}
	w := &wave{plan: v1alpha1.WavePlan{Name: "canary", BakeTime: 5 * time.Second, Gates: []v1alpha1.Gate{spec}},
		gates: map[*target][]*gate.Run{}}
	for _, name := range []string{"eu-0", "eu-1"} {
		tg := &target{name: name}
		w.targets = append(w.targets, tg)
		gr := gate.NewRun(g, gate.Target{Context: name}, time.Now())
		for _, p := range phases[name] {
			gr.Record(v1alpha1.GateMeasurement{Phase: p, Value: "x"})
		}
		w.gates[tg] = []*gate.Run{gr}
	}
	return r, w
}

func TestGateSpan(t *testing.T) {
	_, w := gateWave(t, nil)
	if got := gateSpan(w); got != 20*time.Second {
		t.Errorf("gateSpan = %s, want 20s (count 3 x interval 10s outlasts bakeTime 5s)", got)
	}
}

func TestFailedGateFailsItsContext(t *testing.T) {
	r, w := gateWave(t, map[string][]v1alpha1.GatePhase{"eu-0": {v1alpha1.GateSuccessful, v1alpha1.GateFailed}, "eu-1": {v1alpha1.GateSuccessful}})
	for _, tg := range w.targets {
		r.judgeGates(w, tg)
	}
	if !w.targets[0].failed || w.targets[1].failed {
		t.Fatalf("failed: eu-0 %v, eu-1 %v; want only eu-0", w.targets[0].failed, w.targets[1].failed)
	}
	if e := w.targets[0].report.Error; !strings.Contains(e, "gate smoke failed during wave canary's bake") {
		t.Errorf("error = %q", e)
	}
	if r.pauseOnGates(w) {
		t.Error("a failed gate does not pause")
	}
}

func TestInconclusiveGatePauses(t *testing.T) {
	r, w := gateWave(t, map[string][]v1alpha1.GatePhase{"eu-1": {v1alpha1.GateInconclusive}})
	for _, tg := range w.targets {
		r.judgeGates(w, tg)
	}
	if !r.pauseOnGates(w) || !r.paused || w.report.Status != v1alpha1.WavePaused {
		t.Fatalf("paused %v, wave %s; want a paused rollout", r.paused, w.report.Status)
	}
	if !strings.Contains(w.report.Error, "gate smoke in eu-1: 1 inconclusive measurement(s)") {
		t.Errorf("error = %q", w.report.Error)
	}
	w.reportGates()
	if len(w.report.Gates) != 2 || w.report.Gates[1].Phase != v1alpha1.GateInconclusive || len(w.report.Gates[1].Measurements) != 1 {
		t.Errorf("report gates = %+v", w.report.Gates)
	}
}
