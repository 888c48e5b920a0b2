package plan

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// ctxFiles is one context directory of a split: its files by path.
func ctxFiles(tree map[string]string, ctx string) map[string]string {
	out := map[string]string{}
	for p, data := range tree {
		if rest, ok := strings.CutPrefix(p, ctx+"/"); ok {
			out[rest] = data
		}
	}
	return out
}

// TestOtherContextsDoNotChangeAContext: what split writes for a cluster
// does not depend on which other clusters exist. Adding a context, then
// removing it again, leaves every file of the other contexts byte for
// byte as it was, the broadcast ClusterRole included; plan shows no
// change and no move there.
func TestOtherContextsDoNotChangeAContext(t *testing.T) {
	pkg, out := splitBase(t)
	before := readTree(t, out)
	withC := strings.Replace(shardConfig, "  dataStoreOverrides:", "  - name: ctx-c\n    namespaceSelector: {matchLabels: {shard: c}}\n  dataStoreOverrides:", 1)
	withC = strings.Replace(withC, "spec:\n", "spec:\n  allowMoves: true\n", 1) // removing it again drops its ClusterRole
	added := changeContexts(t, pkg, out, withC, "ctx-c added c=[ClusterRole.rbac.authorization.k8s.io reader] u=[] p=[] n=0")
	if c := ctxFiles(added, "ctx-c")["rbac/reader.yaml"]; !strings.Contains(c, v1alpha1.ContextAnnotation+": 'ctx-c'\n") {
		t.Errorf("ctx-c's ClusterRole:\n%s", c)
	}

	removed := changeContexts(t, pkg, out, strings.Replace(shardConfig, "spec:\n", "spec:\n  allowMoves: true\n", 1),
		"ctx-c dropped c=[] u=[] p=[ClusterRole.rbac.authorization.k8s.io reader] n=0")
	for _, ctx := range []string{"ctx-a", "ctx-b"} {
		for _, tree := range []map[string]string{added, removed} {
			if got, want := ctxFiles(tree, ctx), ctxFiles(before, ctx); !equalMaps(got, want) {
				t.Errorf("%s changed:\n%v\nwas:\n%v", ctx, got, want)
			}
		}
	}
}

// changeContexts plans and splits the package with another config: ctx-a
// and ctx-b must not change, nothing moves, ctx-c is as wanted. It returns
// the new output.
func changeContexts(t *testing.T, pkg, out, config, ctxC string) map[string]string {
	t.Helper()
	writeTree(t, pkg, map[string]string{"shards.yaml": config})
	doc, _ := previewDir(t, pkg, out, Options{})
	wantSummary(t, doc, "ctx-a kept c=[] u=[] p=[] n=4", "ctx-b kept c=[] u=[] p=[] n=3", ctxC)
	if len(doc.Moves) > 0 {
		t.Errorf("moves %+v", doc.Moves)
	}
	mustSplit(t, pkg, out)
	return readTree(t, out)
}

// TestOldSplitListingEveryContext: an output directory written before
// split named one context per copy holds broadcast objects whose context
// annotation lists every context. plan shows each such copy as an update
// (the annotation changes in the cluster, once), never as a move; after
// the next split there is no change.
func TestOldSplitListingEveryContext(t *testing.T) {
	pkg, out := splitBase(t)
	for _, ctx := range []string{"ctx-a", "ctx-b"} {
		p := filepath.Join(out, ctx, "rbac", "reader.yaml")
		old := readTree(t, filepath.Dir(p))["reader.yaml"]
		writeTree(t, filepath.Dir(p), map[string]string{"reader.yaml": strings.Replace(old, "context: '"+ctx+"'", "context: 'ctx-a,ctx-b'", 1)})
	}
	doc, _ := previewDir(t, pkg, out, Options{})
	wantSummary(t, doc, "ctx-a kept c=[] u=[ClusterRole.rbac.authorization.k8s.io reader] p=[] n=3",
		"ctx-b kept c=[] u=[ClusterRole.rbac.authorization.k8s.io reader] p=[] n=2")
	if len(doc.Moves)+len(doc.DataStoreChanges) > 0 {
		t.Errorf("moves %+v, datastore changes %+v", doc.Moves, doc.DataStoreChanges)
	}
	mustSplit(t, pkg, out)
	doc, _ = previewDir(t, pkg, out, Options{})
	if doc.HasChanges() {
		t.Errorf("changes after the split: %v", summary(doc))
	}
}
