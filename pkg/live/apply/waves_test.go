package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/testfixture/pkgload"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/split"
)

const rolloutSpec = `  rollout:
    waves:
    - name: canary
      contexts: {matchLabels: {stage: canary}}
    - name: rest
      contexts: {}
`

// --until-wave and --on-failure that the config cannot honour are refused
// before the kubeconfig is read, and OUT_DIR is unchanged.
func TestRolloutOptionsRefused(t *testing.T) {
	pkg, out := setup(t)
	before := tree(t, out)
	shards := filepath.Join(pkg, "shards.yaml")
	plain := pkgFiles["shards.yaml"]
	waved := strings.Replace(plain, "  - name: A\n", "  - name: A\n    labels: {stage: canary}\n", 1) + rolloutSpec
	for _, tc := range []struct {
		name, config string
		opts         Options
		want         string
	}{
		{"unknown wave", waved, Options{UntilWave: "canry"}, "--until-wave canry: no such wave (the waves are canary, rest)"},
		{"until-wave without rollout", plain, Options{UntilWave: "canary"}, "--until-wave canary: the config has no spec.rollout"},
		{"on-failure without rollout", plain, Options{OnFailure: v1alpha1.OnFailureRollback}, "--on-failure Rollback: the config has no spec.rollout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(shards, []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			od, err := outdir.OpenPrevious(out)
			if err != nil {
				t.Fatal(err)
			}
			in, cfg := pkgload.Load(t, pkg, od)
			opts := tc.opts
			opts.Plan = plan.Options{Split: split.Options{Out: od}}
			opts.Kubeconfig = filepath.Join(t.TempDir(), "no-kubeconfig")
			_, err = Run(context.Background(), in, cfg, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if after := tree(t, out); len(after) != len(before) {
				t.Errorf("OUT_DIR changed: %d files, was %d", len(after), len(before))
			}
		})
	}
}

// apply --rollback with no unfinished rollout says so, before it reads a
// kubeconfig.
func TestRollbackWithoutRecord(t *testing.T) {
	_, out := setup(t)
	od, err := outdir.OpenExisting(out)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Rollback(context.Background(), od, Options{Kubeconfig: filepath.Join(t.TempDir(), "no-kubeconfig")})
	if !errors.Is(err, ErrNoRollout) {
		t.Fatalf("error %v, want ErrNoRollout", err)
	}
}
