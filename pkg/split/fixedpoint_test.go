package split

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/shard-router/shard-router/internal/yamlio/yamliotest"
)

// rewrite reads a file or stream as kpt reads a package file (and `kpt live
// apply -` its stdin) and writes it again as kpt writes it.
func rewrite(t *testing.T, data []byte) []byte {
	t.Helper()
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true}).Read()
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	var b bytes.Buffer
	if err := (kio.ByteWriter{Writer: &b}).Write(nodes); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCommentShapesSplitIsAFixedPoint: split of a package holding each
// comment shape, read from the directory, a ResourceList and a plain
// stream, writes files and a stream form that kpt reads and writes back
// byte for byte.
func TestCommentShapesSplitIsAFixedPoint(t *testing.T) {
	for _, sh := range yamliotest.CommentShapes {
		pkg := t.TempDir()
		writeTree(t, pkg, map[string]string{"Kptfile": manifestKptfile, "shards.yaml": manifestShardConfig,
			"namespaces.yaml": manifestNamespaces, "shape.yaml": sh.File})
		for name, read := range inputForms(t, pkg, false) {
			in, err := read()
			if err != nil {
				t.Fatalf("%s, %s: %v", sh.Name, name, err)
			}
			plan, err := runRoute(t, in, nil, nil)
			if err != nil {
				t.Fatalf("%s, %s: %v", sh.Name, name, err)
			}
			for _, p := range plan.Packages {
				outputs := map[string][]byte{}
				for _, f := range mustFiles(t, p) {
					outputs[f.Path] = f.Data
				}
				var stream bytes.Buffer
				if err := p.WriteStream(&stream); err != nil {
					t.Fatal(err)
				}
				outputs["stream"] = stream.Bytes()
				for what, data := range outputs {
					if !strings.HasSuffix(what, ".yaml") && what != "stream" {
						continue
					}
					// A file kpt writes back unchanged stays so on every later pass.
					if again := rewrite(t, data); !bytes.Equal(again, data) {
						t.Errorf("%s, %s, %s %s: kpt's next pass changes the bytes:\n--- split wrote\n%s--- then\n%s", sh.Name, name, p.Context, what, data, again)
					}
				}
			}
		}
	}
}
