package preflight

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A server-side apply's 409 as kube-apiserver sends it: one cause per
// field, naming its manager.
func TestConflictsOf(t *testing.T) {
	err := apierrors.NewApplyConflict([]metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other" using v1`, Field: ".data.color"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl" with subresource "status" using v1`, Field: ".data.size"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other" using v1`, Field: ".data.shape"},
	}, "Apply failed with 3 conflicts")
	got := conflictsOf(err)
	want := []conflict{{"other", ".data.color"}, {"kubectl", ".data.size"}, {"other", ".data.shape"}}
	if len(got) != len(want) {
		t.Fatalf("conflictsOf = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("conflict %d = %v, want %v", i, got[i], want[i])
		}
	}
	msg := describeConflicts("platform", got)
	for _, s := range []string{`field manager "platform"`, `manager "kubectl" owns .data.size`, `manager "other" owns .data.color, .data.shape`, "--force-conflicts"} {
		if !strings.Contains(msg, s) {
			t.Errorf("the refusal %q lacks %q", msg, s)
		}
	}
	if c := conflictsOf(apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", nil)); c != nil {
		t.Errorf("a resourceVersion conflict read as field conflicts: %v", c)
	}
}
