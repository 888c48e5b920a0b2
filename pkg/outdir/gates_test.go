package outdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The gates' record keeps each wave's last measurements: a wave measured
// again replaces its entry, one not measured keeps it, one the config no
// longer has is dropped, in the rollout's wave order.
func TestRecordGates(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenOutDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := ReadGates(d); err != nil || w != nil {
		t.Fatalf("a new OUT_DIR's gates: %v, %v; want none", w, err)
	}
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 2, 20, 0, s, 0, time.UTC)) }
	wg := func(wave string, s int, phase v1alpha1.GatePhase) v1alpha1.WaveGates {
		return v1alpha1.WaveGates{Wave: wave, MeasuredAt: at(s), Status: v1alpha1.WaveApplied,
			Gates: []v1alpha1.GateResult{{Gate: "g", Context: wave + "-0", Phase: phase}}}
	}
	if err := RecordGates(d, []string{"canary", "rest"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, GatesFile)); !os.IsNotExist(err) {
		t.Fatalf("nothing measured wrote %s (%v)", GatesFile, err)
	}
	if err := RecordGates(d, []string{"canary", "rest"}, []v1alpha1.WaveGates{wg("rest", 2, v1alpha1.GateSuccessful), wg("canary", 1, v1alpha1.GateInconclusive)}); err != nil {
		t.Fatal(err)
	}
	// A rerun measures the canary again only.
	if err := RecordGates(d, []string{"canary", "rest"}, []v1alpha1.WaveGates{wg("canary", 9, v1alpha1.GateSuccessful)}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadGates(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Wave != "canary" || got[0].Gates[0].Phase != v1alpha1.GateSuccessful || !got[0].MeasuredAt.Equal(&metav1.Time{Time: at(9).Time}) ||
		got[1].Wave != "rest" || !got[1].MeasuredAt.Equal(&metav1.Time{Time: at(2).Time}) {
		t.Fatalf("after a rerun of the canary: %+v; want canary measured at :09 (Successful), rest kept from :02", got)
	}
	// The config dropped the canary wave.
	if err := RecordGates(d, []string{"rest"}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadGates(d); len(got) != 1 || got[0].Wave != "rest" {
		t.Fatalf("after the canary left the config: %+v; want rest only", got)
	}
	// No wave left: the file goes.
	if err := RecordGates(d, []string{"other"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, GatesFile)); !os.IsNotExist(err) {
		t.Fatalf("no wave left, %s is still there (%v)", GatesFile, err)
	}
	if err := os.WriteFile(filepath.Join(dir, GatesFile), []byte(`{"format":"shard-router-gates v9","waves":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadGates(d); err == nil {
		t.Fatal("a record of another format was read")
	}
}
