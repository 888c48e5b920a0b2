package apply

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/apply/event"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func objID(kind, ns, name string) object.ObjMetadata {
	return object.ObjMetadata{GroupKind: schema.GroupKind{Kind: kind}, Namespace: ns, Name: name}
}

// phaseEvents are the events kpt's applier sends for one phase that
// applies apply in two groups (a Namespace first), waits for them, then
// prunes prune in two groups (the Namespace last) and waits for them to
// be gone.
func phaseEvents(apply, prune object.ObjMetadataSet) []event.Event {
	var groups event.ActionGroupList
	var evs []event.Event
	group := func(action event.ResourceAction, name string, status event.ActionGroupEventStatus) {
		evs = append(evs, event.Event{Type: event.ActionGroupType, ActionGroupEvent: event.ActionGroupEvent{GroupName: name, Action: action, Status: status}})
	}
	split := func(ids object.ObjMetadataSet) []object.ObjMetadataSet {
		var ns, rest object.ObjMetadataSet
		for _, id := range ids {
			if id.GroupKind.Kind == "Namespace" {
				ns = append(ns, id)
			} else {
				rest = append(rest, id)
			}
		}
		return []object.ObjMetadataSet{ns, rest}
	}
	applyGroups, pruneGroups := split(apply), split(prune)
	pruneGroups[0], pruneGroups[1] = pruneGroups[1], pruneGroups[0]
	for _, ids := range applyGroups {
		if len(ids) == 0 {
			continue
		}
		groups = append(groups, event.ActionGroup{Name: "apply", Action: event.ApplyAction, Identifiers: ids},
			event.ActionGroup{Name: "wait", Action: event.WaitAction, Identifiers: ids})
		group(event.ApplyAction, "apply", event.Started)
		for _, id := range ids {
			evs = append(evs, event.Event{Type: event.ApplyType, ApplyEvent: event.ApplyEvent{Identifier: id, Status: event.ApplySuccessful}})
		}
		group(event.ApplyAction, "apply", event.Finished)
		group(event.WaitAction, "wait", event.Started)
		for _, id := range ids {
			evs = append(evs, event.Event{Type: event.WaitType, WaitEvent: event.WaitEvent{Identifier: id, Status: event.ReconcileSuccessful}})
		}
		group(event.WaitAction, "wait", event.Finished)
	}
	for _, ids := range pruneGroups {
		if len(ids) == 0 {
			continue
		}
		groups = append(groups, event.ActionGroup{Name: "prune", Action: event.PruneAction, Identifiers: ids},
			event.ActionGroup{Name: "wait", Action: event.WaitAction, Identifiers: ids})
		group(event.PruneAction, "prune", event.Started)
		for _, id := range ids {
			evs = append(evs, event.Event{Type: event.PruneType, PruneEvent: event.PruneEvent{Identifier: id, Status: event.PruneSuccessful}})
		}
		group(event.PruneAction, "prune", event.Finished)
		group(event.WaitAction, "wait", event.Started)
		for _, id := range ids {
			evs = append(evs, event.Event{Type: event.WaitType, WaitEvent: event.WaitEvent{Identifier: id, Status: event.ReconcileSuccessful}})
		}
		group(event.WaitAction, "wait", event.Finished)
	}
	return append([]event.Event{{Type: event.InitType, InitEvent: event.InitEvent{ActionGroups: groups}}}, evs...)
}

// TestCountsMeanOneThing: a context that hands its whole package off
// applies its kept copies (first phase), then its empty package, which
// prunes them (second phase). Its report counts what its package got:
// nothing applied or reconciled, 4 pruned; each object once, though kpt
// reports a pruned object's disappearance as reconciled, and applies in
// groups. Its progress says each step of a phase once.
func TestCountsMeanOneThing(t *testing.T) {
	kept := object.ObjMetadataSet{objID("Namespace", "", "search"), objID("ConfigMap", "search", "a"),
		objID("ConfigMap", "search", "b"), objID("ConfigMap", "search", "c")}
	stays := object.ObjMetadataSet{objID("Namespace", "", "team"), objID("ConfigMap", "team", "x")}
	tests := []struct {
		name    string
		objects object.ObjMetadataSet
		phases  [][2]object.ObjMetadataSet // apply, prune
		want    v1alpha1.ContextApply
		lines   []string
	}{{
		name:    "hands everything off",
		objects: nil,
		phases:  [][2]object.ObjMetadataSet{{kept, nil}, {nil, kept}},
		want:    v1alpha1.ContextApply{Objects: 0, Applied: 0, Reconciled: 0, Pruned: 4},
		lines: []string{
			"C: waiting for the objects to be Current (at most 1m0s): 4 of 4 object(s) applied",
			"C: pruning 4 object(s)",
		},
	}, {
		name:    "keeps two, hands four off",
		objects: stays,
		phases:  [][2]object.ObjMetadataSet{{append(stays.Union(nil), kept...), nil}, {stays, kept}},
		want:    v1alpha1.ContextApply{Objects: 2, Applied: 2, Reconciled: 2, Pruned: 4},
		lines: []string{
			"C: waiting for the objects to be Current (at most 1m0s): 6 of 6 object(s) applied",
			"C: waiting for the objects to be Current (at most 1m0s): 2 of 2 object(s) applied",
			"C: pruning 4 object(s)",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			r := &run{opts: Options{ReconcileTimeout: time.Minute}, log: &progress{w: &out}}
			tg := &target{name: "C", objects: tc.objects, report: v1alpha1.ContextApply{Name: "C", Objects: len(tc.objects)}}
			for _, ph := range tc.phases {
				c := &collector{r: r, t: tg, status: map[object.ObjMetadata]string{}, pending: map[object.ObjMetadata]bool{}}
				for _, e := range phaseEvents(ph[0], ph[1]) {
					c.event(e)
				}
				if len(c.errs) > 0 {
					t.Fatal(c.errs)
				}
			}
			got := tg.report
			if got.Objects != tc.want.Objects || got.Applied != tc.want.Applied || got.Reconciled != tc.want.Reconciled || got.Pruned != tc.want.Pruned || got.Failed != 0 {
				t.Errorf("OBJECTS %d APPLIED %d RECONCILED %d PRUNED %d FAILED %d, want OBJECTS %d APPLIED %d RECONCILED %d PRUNED %d FAILED 0",
					got.Objects, got.Applied, got.Reconciled, got.Pruned, got.Failed, tc.want.Objects, tc.want.Applied, tc.want.Reconciled, tc.want.Pruned)
			}
			if len(got.PrunedObjects) != tc.want.Pruned {
				t.Errorf("pruned objects %v, want %d", got.PrunedObjects, tc.want.Pruned)
			}
			if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(lines, "\n") != strings.Join(tc.lines, "\n") {
				t.Errorf("progress:\n%s\nwant:\n%s", out.String(), strings.Join(tc.lines, "\n"))
			}
		})
	}
}

// TestUnchangedSaysSoOnce: a context that needs no write says so in one
// line, its outcome.
func TestUnchangedSaysSoOnce(t *testing.T) {
	var out strings.Builder
	r := &run{opts: Options{DryRun: true}, log: &progress{w: &out}}
	tg := &target{name: "C", report: v1alpha1.ContextApply{Name: "C", Objects: 3}}
	r.skipInSync(tg)
	if want := "C: unchanged: every object matches the package and is Current: nothing to apply\n"; out.String() != want || tg.report.Status != v1alpha1.ApplyUnchanged {
		t.Errorf("%s progress:\n%swant:\n%s", tg.report.Status, out.String(), want)
	}
}
