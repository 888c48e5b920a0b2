package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/pkg/cli"
)

// TestReferenceSwitch: SHARD_ROUTER_REFERENCE sends function mode and
// split to kyaml's readers and writers, which give the same bytes.
func TestReferenceSwitch(t *testing.T) {
	input := gen.Bytes(gen.Options{Items: 200, Contexts: 4, Seed: 3})
	stdin := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(stdin, input, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		f, err := os.Open(stdin) // a file: function mode maps it
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		code, stdout, stderr := runMain(t, f, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	first := t.TempDir() // an empty previous split: a first apply
	fast, fastSplit := run(), run("split", "-", "--context", "shard-0001", "--name", "p", "--previous", first)
	t.Setenv(cli.ReferenceEnv, "1")
	ref, refSplit := run(), run("split", "-", "--context", "shard-0001", "--name", "p", "--previous", first)
	if fast != ref {
		t.Errorf("function mode: the reference path differs:\n%.2000s\n---\n%.2000s", fast, ref)
	}
	if fastSplit != refSplit || fastSplit == "" {
		t.Errorf("split: the reference path differs:\n%.2000s\n---\n%.2000s", fastSplit, refSplit)
	}
}
