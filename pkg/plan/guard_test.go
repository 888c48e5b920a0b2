package plan

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
)

func TestMassPruneThresholds(t *testing.T) {
	cases := []struct {
		previous, pruned, maxPercent, minObjects int
		want                                     bool
	}{
		{previous: 10, pruned: 5, maxPercent: 50, minObjects: 10, want: false}, // exactly half is allowed
		{previous: 10, pruned: 6, maxPercent: 50, minObjects: 10, want: true},
		{previous: 9, pruned: 8, maxPercent: 50, minObjects: 10, want: false},   // below minObjects
		{previous: 9, pruned: 9, maxPercent: 50, minObjects: 10, want: true},    // all of them, however few
		{previous: 1, pruned: 1, maxPercent: 100, minObjects: 10, want: true},   // all of them, however few
		{previous: 10, pruned: 10, maxPercent: 100, minObjects: 10, want: true}, // all of them
		{previous: 10, pruned: 9, maxPercent: 100, minObjects: 10, want: false},
		{previous: 10, pruned: 1, maxPercent: 0, minObjects: 10, want: true}, // any prune
		{previous: 10, pruned: 0, maxPercent: 0, minObjects: 10, want: false},
		{previous: 1, pruned: 1, maxPercent: 50, minObjects: 0, want: true},
	}
	for _, tc := range cases {
		if got := massPrune(pruneCount{"c", tc.previous, tc.pruned}, tc.maxPercent, tc.minObjects); got != tc.want {
			t.Errorf("%+v: got %v", tc, got)
		}
	}
}

// guardPackage is the base package with n more ConfigMaps in Namespace a.
func guardPackage(n int) map[string]string {
	files := basePackage()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\n  namespace: a\ndata:\n  k: v\n", i)
	}
	files["apps/configmaps.yaml"] = b.String()
	return files
}

func TestMassPruneGuard(t *testing.T) {
	// ctx-a holds 4 + 12 = 16 objects; removing k ConfigMaps prunes k.
	cases := []struct {
		name   string
		remove int
		spec   string // added under spec:
		opts   Options
		// want: "" (no guard), "error" or "warning"
		want string
	}{
		{name: "half is allowed", remove: 8, want: ""},
		{name: "more than half is refused", remove: 9, want: "error"},
		{name: "spec.allowMassPrune", remove: 9, spec: "  allowMassPrune: true\n", want: "warning"},
		{name: "--allow-mass-prune", remove: 9, opts: Options{AllowMassPrune: true}, want: "warning"},
		{name: "maxPercent 60", remove: 9, spec: "  pruneGuard: {maxPercent: 60}\n", want: ""},
		{name: "minObjects above the context", remove: 12, spec: "  pruneGuard: {minObjects: 17}\n", want: ""},
		{name: "maxPercent 0 refuses any prune", remove: 1, spec: "  pruneGuard: {maxPercent: 0}\n", want: "error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
			writeTree(t, pkg, guardPackage(12))
			mustSplit(t, pkg, out)
			before := readTree(t, out)
			files := guardPackage(12 - tc.remove)
			files["shards.yaml"] = strings.Replace(shardConfig, "spec:\n", "spec:\n"+tc.spec, 1)
			writeTree(t, pkg, map[string]string{"apps/configmaps.yaml": files["apps/configmaps.yaml"], "shards.yaml": files["shards.yaml"]})

			// plan and split agree.
			doc, presults := previewDir(t, pkg, out, tc.opts)
			if len(doc.Contexts[0].Prune) != tc.remove || doc.Contexts[0].MassPrune != (tc.want != "") {
				t.Errorf("plan: %d prunes, massPrune %v", len(doc.Contexts[0].Prune), doc.Contexts[0].MassPrune)
			}
			od, err := outdir.OpenOutDir(out)
			if err != nil {
				t.Fatal(err)
			}
			in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
			if err != nil {
				t.Fatal(err)
			}
			o := tc.opts
			plan, err := runRoute(t, in, od, &o)
			for _, results := range []framework.Results{presults, plan.Results} {
				errs, warns := hasResult(results, framework.Error, "mass-deletion guard"), hasResult(results, framework.Warning, "mass-deletion guard")
				if got := map[[2]bool]string{{false, false}: "", {true, false}: "error", {false, true}: "warning"}[[2]bool{errs, warns}]; got != tc.want {
					t.Errorf("guard: %q, want %q", got, tc.want)
				}
			}
			if tc.want == "error" {
				wantError(t, err, `context "ctx-a": this split would prune`, "--allow-mass-prune")
				if after := readTree(t, out); !reflect.DeepEqual(before, after) {
					t.Error("a refused split changed the output")
				}
			} else if err != nil {
				t.Errorf("split: %v", err)
			}
		})
	}
}

func TestMassPruneAllOfAContext(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, guardPackage(12))
	mustSplit(t, pkg, out)
	// Namespace a and everything in it are gone: all 16 of ctx-a's objects
	// but the broadcast ClusterRole... which stays; so remove it too.
	files := basePackage()
	writeTree(t, pkg, map[string]string{
		"apps/configmaps.yaml": "",
		"apps/web.yaml":        files["apps/web.yaml"][strings.Index(files["apps/web.yaml"], "---"):],
		"apps/lease.yaml":      "",
		"rbac/reader.yaml":     "",
		"namespaces.yaml":      files["namespaces.yaml"][strings.Index(files["namespaces.yaml"], "---"):],
		"shards.yaml":          strings.Replace(shardConfig, "spec:\n", "spec:\n  pruneGuard: {maxPercent: 100}\n", 1),
	})
	_, err := splitDir(t, pkg, out)
	wantError(t, err, `context "ctx-a": this split would prune all 16 of its objects`)
}
