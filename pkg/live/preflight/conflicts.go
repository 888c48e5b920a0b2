package preflight

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// conflict is one field another manager owns, from a server-side apply's
// 409.
type conflict struct {
	manager, field string
}

// conflictManager reads the manager of a FieldManagerConflict cause:
// `conflict with "other" using v1` (or `... with "other" with subresource ...`).
var conflictManager = regexp.MustCompile(`conflict with "([^"]*)"`)

// conflictsOf reads the conflicts of a server-side apply's 409.
func conflictsOf(err error) []conflict {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil {
		return nil
	}
	var out []conflict
	for _, c := range se.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		m := conflictManager.FindStringSubmatch(c.Message)
		if m == nil {
			return nil // a shape this code does not know: not a known manager
		}
		out = append(out, conflict{manager: m[1], field: c.Field})
	}
	return out
}

// describeConflicts names each other manager and its fields.
func describeConflicts(manager string, cs []conflict) string {
	byManager := map[string][]string{}
	for _, c := range cs {
		byManager[c.manager] = append(byManager[c.manager], c.field)
	}
	names := make([]string, 0, len(byManager))
	for m := range byManager {
		names = append(names, m)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, m := range names {
		fields := byManager[m]
		sort.Strings(fields)
		parts[i] = fmt.Sprintf("manager %q owns %s", m, strings.Join(fields, ", "))
	}
	return fmt.Sprintf("server-side apply as field manager %q conflicts: %s; the other value is kept. Pass --force-conflicts to take these fields, or drop them from the package",
		manager, strings.Join(parts, "; "))
}

// lastApplied is the field of client-side apply's record.
var lastApplied = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"))

// ownClientSideManagers are the managers of cur that the fleet's own
// client-side applies wrote under: Update managers of the last-applied
// annotation (as kubectl finds client-side apply's managers) named as the
// fleet's engine writes, kpt's default field manager or the run's own.
// Another tool's client-side apply (kubectl apply's
// kubectl-client-side-apply, say) is not the fleet's: its fields stay a
// conflict.
func (ck *checker) ownClientSideManagers(cur *unstructured.Unstructured) []string {
	if cur.GetAnnotations()["config.k8s.io/owning-inventory"] != ck.c.Inventory.ID() {
		return nil
	}
	var own []string
	for _, e := range csaupgrade.FindFieldsOwners(cur.GetManagedFields(), metav1.ManagedFieldsOperationUpdate, lastApplied) {
		if (e.Manager == v1alpha1.DefaultFieldManager || e.Manager == ck.s.FieldManager) && !slices.Contains(own, e.Manager) {
			own = append(own, e.Manager)
		}
	}
	return own
}

// UpgradePatch is the JSON patch that moves obj's fields from managers
// (client-side apply) to the field manager, nil when nothing moves.
func UpgradePatch(obj *unstructured.Unstructured, managers []string, fieldManager string) ([]byte, error) {
	return csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(managers...), fieldManager)
}
