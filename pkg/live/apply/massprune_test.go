package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/inventory"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/internal/testfixture/pkgload"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/split"
)

// TestMassDeletionWarnedOnce: a package that drops every object of
// context A, with --allow-mass-prune, trips the guard on OUT_DIR (the
// plan's) and on A's live inventory (apply's): the run warns once, about
// what kpt really prunes, the live inventory.
func TestMassDeletionWarnedOnce(t *testing.T) {
	pkg, out := setup(t)
	cfg := strings.Replace(pkgFiles["shards.yaml"], "spec:\n", "spec:\n  pruneGuard: {maxPercent: 50, minObjects: 1}\n", 1)
	files := map[string]string{"shards.yaml": cfg, "ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n  labels:\n    shard: b\n"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(pkg, "cm.yaml")); err != nil {
		t.Fatal(err)
	}
	od, err := outdir.OpenPrevious(out)
	if err != nil {
		t.Fatal(err)
	}
	in, engine := pkgload.Load(t, pkg, od)
	r := &run{opts: Options{Plan: plan.Options{Split: split.Options{Out: od}, AllowMassPrune: true}}, cfg: engine,
		log: &progress{}, report: newReport(false)}
	if err := r.plan(in); err != nil {
		t.Fatalf("plan: %v (%q)", err, r.report.Errors)
	}
	inv := inventory.WrapInventoryInfoObj(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "inv-a", "namespace": "default"}}})
	r.targets = []*target{{name: "A", pkg: &cluster.Package{Context: "A", Inventory: inv},
		live: cluster.LiveInventory{Found: true, Objects: object.ObjMetadataSet{objID("Namespace", "", "team"), objID("ConfigMap", "team", "settings")}}}}
	r.guardLive()
	var mass []string
	for _, w := range r.report.Warnings {
		if strings.Contains(w, "mass-deletion guard") {
			mass = append(mass, w)
		}
	}
	if len(mass) != 1 || !strings.Contains(mass[0], "ResourceGroup default/inv-a holds in the cluster") {
		t.Errorf("mass-deletion warnings:\n%s\nwant one, about A's live inventory", strings.Join(mass, "\n"))
	}
}
