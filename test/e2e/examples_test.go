//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/golden"
)

// EnvUpdateExpected, set to 1 or true, makes TestExamples rewrite each
// example's .expected/diff.patch and .expected/results.yaml from what kpt
// fn eval did, instead of comparing. config.yaml is never rewritten.
const EnvUpdateExpected = "UPDATE_EXPECTED"

// The kpt functions catalog's e2e layout (kpt's pkg/test/runner).
const (
	expectedDir     = ".expected"
	expectedConfig  = "config.yaml"
	expectedDiff    = "diff.patch"
	expectedResults = "results.yaml"
)

// exampleConfig is .expected/config.yaml: the subset of the catalog's
// fields that the examples use. Unknown fields are an error, so a typo
// cannot silently drop a check.
type exampleConfig struct {
	// TestType is the catalog runner's mode (eval or render); this harness
	// runs every example both ways.
	TestType string `yaml:"testType"`
	// ExitCode is kpt's expected exit code, for eval and render alike.
	ExitCode int `yaml:"exitCode"`
	// FnConfig is the function config file in the package: --fn-config for
	// eval, the mutator's configPath for render.
	FnConfig string `yaml:"fnConfig"`
	// Args are `-- key=value` arguments for eval: kpt turns them into a
	// ConfigMap, in this order.
	Args yaml.Node `yaml:"args"`
	// ConfigPath is the mutator's configPath for render when it is not
	// FnConfig (with Args: a file holding the same ConfigMap). Not the
	// Kptfile's configMap, which kpt fills from a Go map in random order.
	ConfigPath string `yaml:"configPath"`
	// AllowExec passes --allow-exec to kpt fn render.
	AllowExec bool `yaml:"allowExec"`
	// StdErr must be a substring of kpt's stderr.
	StdErr string `yaml:"stdErr"`
}

// args returns Args as key=value strings, in file order.
func (c *exampleConfig) args() ([][2]string, error) {
	if c.Args.Kind == 0 {
		return nil, nil
	}
	if c.Args.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("args: must be a mapping of key to value")
	}
	var out [][2]string
	for i := 0; i+1 < len(c.Args.Content); i += 2 {
		out = append(out, [2]string{c.Args.Content[i].Value, c.Args.Content[i+1].Value})
	}
	return out, nil
}

func readExampleConfig(t testing.TB, dir string) *exampleConfig {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, expectedDir, expectedConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &exampleConfig{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		t.Fatalf("%s: %v", filepath.Join(dir, expectedDir, expectedConfig), err)
	}
	if cfg.TestType != "eval" && cfg.TestType != "render" {
		t.Fatalf("%s: testType must be eval or render, not %q", dir, cfg.TestType)
	}
	if args, err := cfg.args(); err != nil {
		t.Fatalf("%s: %v", dir, err)
	} else if (cfg.FnConfig == "") == (len(args) == 0) {
		t.Fatalf("%s: set exactly one of fnConfig and args", dir)
	}
	if cfg.ConfigPath == "" {
		cfg.ConfigPath = cfg.FnConfig
	}
	if cfg.ConfigPath == "" {
		t.Fatalf("%s: with args, set configPath for render", dir)
	}
	return cfg
}

// examples lists the example packages: the directories of examples/ that
// have an .expected/config.yaml.
func examples(t testing.TB) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(repoRoot(t), "examples", "*", expectedDir, expectedConfig))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range matches {
		dirs = append(dirs, filepath.Dir(filepath.Dir(m)))
	}
	if len(dirs) == 0 {
		t.Fatal("no example has an .expected/config.yaml")
	}
	return dirs
}

// TestExamples runs the real kpt over every example package, as the kpt
// functions catalog does: kpt fn eval --exec and kpt fn render --allow-exec
// (with shard-router as the Kptfile's mutator) on a fresh copy, each twice.
// The first run must exit with the expected code, change the package as
// .expected/diff.patch says and report .expected/results.yaml; the second
// must change nothing.
func TestExamples(t *testing.T) {
	kpt := toolPath(t, "kpt")
	bin := shardRouter(t)
	update := os.Getenv(EnvUpdateExpected) == "1" || os.Getenv(EnvUpdateExpected) == "true"
	for _, dir := range examples(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			cfg := readExampleConfig(t, dir)
			// Sequential: render compares with what eval may have rewritten.
			t.Run("eval", func(t *testing.T) {
				runExample(t, kpt, bin, dir, cfg, "eval", update)
			})
			t.Run("render", func(t *testing.T) {
				runExample(t, kpt, bin, dir, cfg, "render", false)
			})
		})
	}
}

// runExample runs one example in one mode (eval or render) on a copy in a
// git repository, so that the change is a git diff as in the catalog.
func runExample(t *testing.T, kpt, bin, src string, cfg *exampleConfig, mode string, update bool) {
	tmp := t.TempDir()
	pkg := filepath.Join(tmp, filepath.Base(src))
	copyTree(t, src, pkg)
	args, err := cfg.args()
	if err != nil {
		t.Fatal(err)
	}
	if mode == "render" {
		setPipeline(t, pkg, bin, cfg.ConfigPath)
	}
	git(t, pkg, "init", "-q")
	git(t, pkg, "add", "-A")
	git(t, pkg, "commit", "-q", "-m", "example")

	kptRun := func(n int) (result, string) {
		resultsDir := filepath.Join(tmp, fmt.Sprintf("results-%d", n))
		var argv []string
		if mode == "eval" {
			argv = []string{"fn", "eval", pkg, "--exec", bin, "--results-dir", resultsDir}
			if cfg.FnConfig != "" {
				argv = append(argv, "--fn-config", filepath.Join(pkg, cfg.FnConfig))
			}
			if len(args) > 0 {
				argv = append(argv, "--")
				for _, kv := range args {
					argv = append(argv, kv[0]+"="+kv[1])
				}
			}
		} else {
			argv = []string{"fn", "render", pkg, "--results-dir", resultsDir}
			if cfg.AllowExec {
				argv = append(argv, "--allow-exec")
			}
		}
		res := runCmd(t, cmdSpec{Dir: tmp}, kpt, argv...)
		t.Logf("run %d: %s", n, res)
		return res, resultsDir
	}

	// First run: exit code, diff and results as expected.
	res, resultsDir := kptRun(1)
	if res.ExitCode != cfg.ExitCode {
		t.Fatalf("kpt exited %d, want %d\n%s", res.ExitCode, cfg.ExitCode, res)
	}
	if !strings.Contains(res.Stderr, cfg.StdErr) {
		t.Errorf("kpt's stderr does not contain %q:\n%s", cfg.StdErr, res.Stderr)
	}
	git(t, pkg, "add", "-A")
	diff := git(t, pkg, "diff", "--cached", "--no-color", "--no-ext-diff")
	results := normalizeResults(t, filepath.Join(resultsDir, "results.yaml"), bin)
	expected := filepath.Join(src, expectedDir)
	if update {
		writeFile(t, filepath.Join(expected, expectedDiff), diff)
		writeFile(t, filepath.Join(expected, expectedResults), results)
		t.Logf("rewrote %s and %s", expectedDiff, expectedResults)
	} else {
		compareText(t, "diff", filepath.Join(expected, expectedDiff), diff)
		compareText(t, "results", filepath.Join(expected, expectedResults), results)
	}

	// Second run: the same exit code, and nothing changes (idempotency).
	res, _ = kptRun(2)
	if res.ExitCode != cfg.ExitCode {
		t.Fatalf("second run: kpt exited %d, want %d\n%s", res.ExitCode, cfg.ExitCode, res)
	}
	if d := git(t, pkg, "diff", "--no-color", "--no-ext-diff"); d != "" {
		t.Errorf("second run changed the package (not idempotent):\n%s", d)
	}
	// Staged entries are the first run's; a work-tree column ("?" for a new
	// file, "M", "D") is the second run's.
	for _, l := range strings.Split(git(t, pkg, "status", "--porcelain", "--untracked-files=all"), "\n") {
		if len(l) > 1 && l[1] != ' ' {
			t.Errorf("second run added, removed or changed %q", l)
		}
	}
}

// setPipeline makes shard-router the only mutator of the package's Kptfile,
// with its function config at configPath. exec is the absolute path of the
// binary under test: kpt runs a relative exec path from its own working
// directory, not from the package.
func setPipeline(t testing.TB, pkg, bin, configPath string) {
	t.Helper()
	path := filepath.Join(pkg, "Kptfile")
	kf, err := yaml.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pipeline, err := yaml.Parse("mutators:\n- exec: \"\"\n")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := pipeline.Pipe(yaml.Lookup("mutators", "0"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []yaml.Filter{
		yaml.SetField("exec", yaml.NewStringRNode(bin)),
		yaml.SetField("configPath", yaml.NewStringRNode(configPath)),
	} {
		if err := fn.PipeE(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := kf.PipeE(yaml.SetField("pipeline", pipeline)); err != nil {
		t.Fatal(err)
	}
	if err := yaml.WriteFile(kf, path); err != nil {
		t.Fatal(err)
	}
}

// normalizeResults reads kpt's FunctionResultList and replaces what changes
// from run to run (the path of the binary) with "shard-router", and the
// capacity byte counts with golden.Mask (they have tests of their own).
func normalizeResults(t testing.TB, path, bin string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("kpt wrote no results: %v", err)
	}
	rl, err := yaml.Parse(string(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	items, err := rl.Pipe(yaml.Lookup("items"))
	if err != nil {
		t.Fatal(err)
	}
	if items != nil {
		err = items.VisitElements(func(item *yaml.RNode) error {
			if f := item.Field("exec"); f != nil && f.Value.YNode().Value == bin {
				f.Value.YNode().Value = "shard-router"
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := rl.String()
	if err != nil {
		t.Fatal(err)
	}
	return golden.MaskBytes(s)
}

// compareText compares got with the content of the expectation file want,
// and shows the difference as a diff.
func compareText(t testing.TB, what, want, got string) {
	t.Helper()
	data, err := os.ReadFile(want)
	if err != nil {
		t.Errorf("%s: %v (run with %s=1 to write it)", what, err, EnvUpdateExpected)
		return
	}
	if string(data) == got {
		return
	}
	gotFile := filepath.Join(t.TempDir(), "got")
	writeFile(t, gotFile, got)
	// git diff --no-index exits 1 when the files differ.
	diff := runCmd(t, cmdSpec{Env: []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}},
		"git", "diff", "--no-index", "--no-color", want, gotFile)
	t.Errorf("%s differs from %s (run with %s=1 to rewrite it, then review the change):\n%s",
		what, want, EnvUpdateExpected, diff.Stdout)
}
