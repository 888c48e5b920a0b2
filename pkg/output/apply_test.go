package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func TestRenderApplyText(t *testing.T) {
	ref := v1alpha1.ObjectRef{Kind: "ConfigMap", Namespace: "team", Name: "settings"}
	r := &v1alpha1.ApplyReport{
		Contexts: []v1alpha1.ContextApply{
			{Name: "A", Status: v1alpha1.ApplySkipped, Objects: 3, Applied: 4, Reconciled: 4,
				Error: "kept the 1 object(s) it hands off, since B did not take them (failed)"},
			{Name: "B", Status: v1alpha1.ApplyFailed, Objects: 2, Failed: 1, Failures: []string{"Deployment team/web: not Current"}},
		},
		Handoffs:   []v1alpha1.Handoff{{Ref: ref, From: "A", To: []string{"B"}}},
		HeldInBoth: []v1alpha1.Handoff{{Ref: ref, From: "A", To: []string{"B"}}},
		Warnings:   []string{"context \"A\": OUT_DIR is behind the cluster"},
	}
	var b bytes.Buffer
	if err := RenderApplyText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CONTEXT  STATUS   OBJECTS",
		"A        Skipped  3",
		"B        Failed   2",
		"B: Deployment team/web: not Current",
		"Handoffs (1)",
		"Held in both (1)",
		"  ConfigMap team/settings: A and B",
		"warning: context \"A\": OUT_DIR is behind the cluster",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "Dry run") {
		t.Error("a real run is called a dry run")
	}
}
