package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// platformConfig is a config a platform owns: it routes the package's two
// Namespaces to contexts the package's own ShardConfig does not know.
const platformConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: platform
spec:
  contexts:
  - name: platform-a
    namespaceSelector: {matchLabels: {shard: "00"}}
  - name: platform-b
    namespaceSelector: {matchLabels: {shard: "01"}}
`

// With --config, the package's own ShardConfig is never used (the
// platform's config routes), and a warning names it: on split's and
// plan's stderr, in plan's document. Given with --config, the package's
// own file is the config: no warning.
func TestConfigFlagIgnoresThePackagesConfig(t *testing.T) {
	pkg := copySplitPackage(t)
	cfg := filepath.Join(t.TempDir(), "platform.yaml")
	if err := os.WriteFile(cfg, []byte(platformConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	const warning = "ShardConfig shards in shards.yaml[0] is not used: --config "

	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := execCLI(t, "", "split", pkg, "-o", out, "--config", cfg)
	if code != 0 || !strings.Contains(stderr, "shard-router: warning: "+warning+cfg+" is the config") {
		t.Fatalf("split --config: exit %d, stderr %q; want a warning naming the package's ShardConfig", code, stderr)
	}
	for _, dir := range []string{"platform-a", "platform-b"} {
		if _, err := os.Stat(filepath.Join(out, dir)); err != nil {
			t.Errorf("split --config: no %s: %v", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "ctx-00")); err == nil {
		t.Error("split --config wrote ctx-00, a context of the package's own ShardConfig")
	}

	code, stdout, stderr := execCLI(t, "", "plan", pkg, "--previous", t.TempDir(), "--config", cfg, "-o", "json")
	var doc v1alpha1.SplitPlan
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != 0 {
		t.Fatalf("plan --config: exit %d, %v\n%s", code, err, stderr)
	}
	if len(doc.Warnings) != 1 || !strings.HasPrefix(doc.Warnings[0], warning) {
		t.Errorf("plan's warnings %q, want one naming the package's ShardConfig", doc.Warnings)
	}
	for _, c := range doc.Contexts {
		if !strings.HasPrefix(c.Name, "platform-") {
			t.Errorf("plan --config: context %s, not one of the platform's", c.Name)
		}
	}

	own := filepath.Join(pkg, "shards.yaml")
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", filepath.Join(t.TempDir(), "out"), "--config", own); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("split --config <the package's own config>: exit %d, stderr %q; want no warning", code, stderr)
	}
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", filepath.Join(t.TempDir(), "out")); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("split without --config: exit %d, stderr %q; want no warning", code, stderr)
	}
}
