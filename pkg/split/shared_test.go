package split

import (
	"bytes"
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/gen"
)

// TestSharedFilesEncodeAlike: a file that several contexts hold with the
// same resources is encoded once; each context's copy must be what
// encoding it for that context gives.
func TestSharedFilesEncodeAlike(t *testing.T) {
	in, err := ReadStream(bytes.NewReader(gen.Bytes(gen.Options{Items: 400, Contexts: 8, Seed: 11})), yamlio.Options{Reference: true})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := runRoute(t, in, nil, &Options{PackageName: "p"})
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, pkg := range plan.Packages {
		for k := range pkg.files {
			f := &pkg.files[k]
			if f.shared == nil {
				continue
			}
			shared++
			got, err := pkg.render(k)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pkg.encodeFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("context %s: shared %s differs from its own encoding:\n%s---\n%s", pkg.Context, f.path, got, want)
			}
		}
	}
	if shared < 2*len(plan.Packages) {
		t.Errorf("only %d shared files in %d contexts: broadcast resources were not shared", shared, len(plan.Packages))
	}
}
