package split

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/input"
)

// checkTemplates requires every context's copy of every shared file to be
// the bytes that encoding it for that context gives, and returns how many
// copies came from a template.
func checkTemplates(t *testing.T, plan *Layout) int {
	t.Helper()
	templated := 0
	for _, pkg := range plan.Packages {
		for k := range pkg.files {
			f := &pkg.files[k]
			if f.shared == nil {
				continue
			}
			got, err := pkg.render(k)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pkg.encodeFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("context %s: %s from the template differs from its own encoding:\n%s---\n%s", pkg.Context, f.path, got, want)
			}
			if f.shared.ok {
				templated++
			}
		}
	}
	return templated
}

// TestSharedFilesEncodeAlike: a file that several contexts hold is encoded
// once, with tokens for the values of its route annotations; each
// context's copy must be what encoding it for that context gives.
func TestSharedFilesEncodeAlike(t *testing.T) {
	for _, reference := range []bool{false, true} {
		in, err := input.ReadStream(bytes.NewReader(gen.Bytes(gen.Options{Items: 400, Contexts: 8, Seed: 11})), yamlio.Options{Reference: reference})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := runRoute(t, in, nil, &Options{PackageName: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if n := checkTemplates(t, plan); n < 2*len(plan.Packages) {
			t.Errorf("only %d copies from templates in %d contexts: broadcast resources were not shared", n, len(plan.Packages))
		}
	}
}

// TestSharedFilesEdgeCases: annotations that already hold a context's
// value in another style, or with a comment, are left as they are by
// Apply, so those files are encoded per context; a name that single quotes
// would escape too.
func TestSharedFilesEdgeCases(t *testing.T) {
	role := func(annos string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n" + annos + "rules: []\n"
	}
	for _, tc := range []struct {
		name, file, config string
		templated          bool
	}{
		{"no annotations", role(""), shardConfig, true},
		{"the function's annotations", role("  annotations:\n    shardrouter.dev/context: 'ctx-a,ctx-b'\n    shardrouter.dev/datastore: 'default'\n"), shardConfig, true},
		{"a plain datastore value", role("  annotations:\n    shardrouter.dev/context: 'ctx-a,ctx-b'\n    shardrouter.dev/datastore: default\n"), shardConfig, false},
		{"a commented datastore value", role("  annotations:\n    shardrouter.dev/context: 'ctx-a,ctx-b'\n    shardrouter.dev/datastore: 'default' # x\n"), shardConfig, false},
		{"a double-quoted context", role("  annotations:\n    shardrouter.dev/context: \"ctx-a\"\n"), shardConfig, false},
		{"an anchor", role("  annotations: &a {x: y}\n  labels: *a\n"), shardConfig, false},
		{"a name single quotes escape", role(""), strings.ReplaceAll(shardConfig, "ctx-b", "ctx-b's"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := basePackage()
			files["shards.yaml"] = tc.config
			files["rbac/reader.yaml"] = tc.file
			pkg, out := t.TempDir(), t.TempDir()
			writeTree(t, pkg, files)
			plan := mustSplit(t, pkg, out+"/out")
			if n := checkTemplates(t, plan); (n > 0) != tc.templated {
				t.Errorf("%d copies from the template, want templated %v", n, tc.templated)
			}
		})
	}
}
