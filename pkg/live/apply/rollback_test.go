package apply

import (
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// TestRollbackAfterHaltReportsRolledBack: a wave onFailure Rollback took
// back reports RolledBack, as apply --rollback does, its error naming the
// wave that halted and why; a halted wave whose rollback failed stays
// Halted and says why; a wave the rollback did not touch keeps its status.
func TestRollbackAfterHaltReportsRolledBack(t *testing.T) {
	const why = "1 of 1 context(s) failed (maxFailures 0): R1: gate error-rate failed"
	mk := func(name string, s v1alpha1.WaveStatus, err string) *wave {
		return &wave{plan: v1alpha1.WavePlan{Name: name}, report: v1alpha1.WaveApply{Name: name, Status: s, Error: err}}
	}
	tests := []struct {
		name       string
		run        []*wave
		halted     int
		rolledBack []*wave
		want       []v1alpha1.WaveApply
	}{{
		name:       "the canary halts and is rolled back",
		run:        []*wave{mk("canary", v1alpha1.WaveHalted, why), mk("rest", v1alpha1.WaveSkipped, "wave canary halted the rollout")},
		rolledBack: []*wave{mk("canary", v1alpha1.WaveRolledBack, "")},
		want: []v1alpha1.WaveApply{
			{Name: "canary", Status: v1alpha1.WaveRolledBack, Error: "rolled back: wave canary halted the rollout: " + why},
			{Name: "rest", Status: v1alpha1.WaveSkipped, Error: "wave canary halted the rollout"},
		},
	}, {
		name:       "the second wave halts, both are rolled back",
		run:        []*wave{mk("canary", v1alpha1.WaveApplied, ""), mk("rest", v1alpha1.WaveHalted, why)},
		halted:     1,
		rolledBack: []*wave{mk("rest", v1alpha1.WaveRolledBack, ""), mk("canary", v1alpha1.WaveRolledBack, "")},
		want: []v1alpha1.WaveApply{
			{Name: "canary", Status: v1alpha1.WaveRolledBack, Error: "rolled back: wave rest halted the rollout: " + why},
			{Name: "rest", Status: v1alpha1.WaveRolledBack, Error: "rolled back: wave rest halted the rollout: " + why},
		},
	}, {
		name:       "the rollback of the halted wave fails",
		run:        []*wave{mk("canary", v1alpha1.WaveApplied, ""), mk("rest", v1alpha1.WaveHalted, why)},
		halted:     1,
		rolledBack: []*wave{mk("rest", v1alpha1.WaveHalted, "rollback failed: R2: unreachable"), mk("canary", v1alpha1.WaveRolledBack, "")},
		want: []v1alpha1.WaveApply{
			{Name: "canary", Status: v1alpha1.WaveRolledBack, Error: "rolled back: wave rest halted the rollout: " + why},
			{Name: "rest", Status: v1alpha1.WaveHalted, Error: why + "; then rollback failed: R2: unreachable"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{waves: tc.run, halted: tc.run[tc.halted]}
			r.foldWaves(&run{waves: tc.rolledBack})
			for i, w := range r.waves {
				if got := w.report; got.Status != tc.want[i].Status || got.Error != tc.want[i].Error {
					t.Errorf("wave %s: %s %q, want %s %q", w.plan.Name, got.Status, got.Error, tc.want[i].Status, tc.want[i].Error)
				}
			}
		})
	}
}
