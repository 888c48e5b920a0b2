package cli

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/shard-router/shard-router/internal/testenv"
)

// execCLI runs the command line and returns its exit code, stdout and stderr.
func execCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}, args)
	return code, out.String(), errOut.String()
}

// copySplitPackage copies testdata/split-pkg to a temp dir, so that tests may
// write inside it.
func copySplitPackage(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "split-pkg")
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestSplitCommand(t *testing.T) {
	pkg := copySplitPackage(t)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := execCLI(t, "", "split", pkg, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("split wrote to stdout: %q", stdout)
	}
	for _, want := range []string{"wrote " + filepath.Join(out, "ctx-00") + ": 2 resources", "inventory default/shop-ctx-00"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, f := range []string{"ctx-00/apps/web.yaml", "ctx-00/namespaces.yaml", "ctx-00/Kptfile", "ctx-00/resourcegroup.yaml", "ctx-01/apps/web.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestSplitContextStream(t *testing.T) {
	pkg := copySplitPackage(t)
	first := t.TempDir() // a first apply: an empty previous split
	code, stdout, stderr := execCLI(t, "", "split", pkg, "--context", "ctx-01", "--previous", first)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	nodes, err := (&kio.ByteReader{Reader: strings.NewReader(stdout), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("stdout is not a YAML stream: %v\n%s", err, stdout)
	}
	var got []string
	for _, n := range nodes {
		got = append(got, n.GetKind()+"/"+n.GetName())
	}
	if want := "ResourceGroup/shop-ctx-01 ConfigMap/web Namespace/team-b"; strings.Join(got, " ") != want {
		t.Errorf("stream holds %v, want %s", got, want)
	}

	// The pipe form reads a ResourceList on stdin.
	var rl bytes.Buffer
	in, err := os.ReadFile(filepath.Join(pkg, "namespaces.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(pkg, "shards.yaml"))
	rl.WriteString(string(in) + "---\n" + string(cfg))
	code, stdout2, stderr := execCLI(t, rl.String(), "split", "-", "--context", "ctx-00", "--name", "shop", "--previous", first)
	if code != 0 {
		t.Fatalf("stdin: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout2, "name: shop-ctx-00") || !strings.Contains(stdout2, "name: team-a") || strings.Contains(stdout2, "team-b") {
		t.Errorf("stdin stream:\n%s", stdout2)
	}

	code, stdout, stderr = execCLI(t, "", "split", pkg, "--context", "ctx-99", "--previous", first)
	if code == 0 || stdout != "" {
		t.Errorf("unknown context: exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, `unknown context "ctx-99": the config declares "ctx-00", "ctx-01"`) {
		t.Errorf("stderr: %s", stderr)
	}
}

// The pipe form checks moves and the mass-deletion guard against the
// previous split, as the directory form does, and refuses without it:
// kpt live apply prunes by the stream.
func TestSplitContextStreamNeedsPrevious(t *testing.T) {
	pkg := copySplitPackage(t)
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"--context", "ctx-00"},
		{"--context", "ctx-00", "--previous", out},            // does not exist (yet)
		{"--context", "ctx-00", "-o", out},                    // the same, as -o
		{"--context", "ctx-00", "-o", out, "--previous", pkg}, // two different previous splits
		{"--previous", out, "-o", out},                        // --previous belongs to the pipe form
	} {
		code, stdout, stderr := execCLI(t, "", append([]string{"split", pkg}, args...)...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "previous") {
			t.Errorf("%v: exit %d, stdout %q, stderr %s", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := execCLI(t, "", "split", pkg, "--context", "ctx-00"); !strings.Contains(stderr, "--previous OUT_DIR") {
		t.Errorf("no previous: exit %d: %s", code, stderr)
	}
	if code, _, stderr := execCLI(t, "", "split", pkg, "--context", "ctx-00", "--previous", out); !strings.Contains(stderr, "the previous split "+out+" does not exist") {
		t.Errorf("missing previous: exit %d: %s", code, stderr)
	}
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}

	// A move: refused, nothing on stdout, with --previous or -o.
	ns := filepath.Join(pkg, "namespaces.yaml")
	orig := readTestFile(t, ns)
	writeTestFile(t, ns, strings.Replace(orig, `shard: "00"`, `shard: "01"`, 1))
	for _, flag := range []string{"--previous", "-o"} {
		code, stdout, stderr := execCLI(t, "", "split", pkg, "--context", "ctx-01", flag, out)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "Namespace team-a would move from") {
			t.Errorf("move with %s: exit %d, stdout %q:\n%s", flag, code, stdout, stderr)
		}
	}

	// The mass-deletion guard: ctx-00 would lose all of its objects.
	writeTestFile(t, ns, strings.Replace(orig, "name: team-a", "name: team-c", 1))
	writeTestFile(t, filepath.Join(pkg, "apps", "web.yaml"), "")
	code, stdout, stderr := execCLI(t, "", "split", pkg, "--context", "ctx-00", "--previous", out)
	if code != 1 || stdout != "" || !strings.Contains(stderr, `context "ctx-00": this split would prune all`) {
		t.Errorf("mass deletion: exit %d, stdout %q:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = execCLI(t, "", "split", pkg, "--context", "ctx-00", "--previous", out, "--allow-mass-prune")
	if code != 0 || !strings.Contains(stdout, "name: team-c") || strings.Contains(stdout, "name: team-a") {
		t.Errorf("allowed mass deletion: exit %d:\n%s%s", code, stdout, stderr)
	}
	if after := readTestFile(t, filepath.Join(out, "ctx-00", "namespaces.yaml")); !strings.Contains(after, "team-a") {
		t.Errorf("the pipe form wrote into the previous split:\n%s", after)
	}
}

func TestSplitErrors(t *testing.T) {
	pkg := copySplitPackage(t)
	if code, _, stderr := execCLI(t, "", "split", pkg); code == 0 || !strings.Contains(stderr, "-o OUT_DIR") {
		t.Errorf("no -o: exit %d: %s", code, stderr)
	}
	// A routing error: exit 1, the error names file and resource, nothing written.
	if err := os.WriteFile(filepath.Join(pkg, "orphan.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := execCLI(t, "", "split", pkg, "-o", out)
	if code != 1 || stdout != "" {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "orphan.yaml[0]: ") || !strings.Contains(stderr, "Secret nowhere/s has no context") || !strings.Contains(stderr, "nothing written") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the output directory was created")
	}
	// A bad --config names its file and field.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata:\n  name: x\nspec:\n  contexts:\n  - name: a\n    nope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = execCLI(t, "", "split", pkg, "-o", out, "--config", bad)
	if code != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "spec.contexts[0].nope") {
		t.Errorf("bad config: exit %d:\n%s", code, stderr)
	}
}

// kptBinary finds the kpt built by `make -C tools kpt`, or $KPT.
func kptBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KPT"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, ".tools", "bin", "kpt")
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, p, "run `make tools-kpt`, or set KPT")
	}
	return p
}

// TestSplitWithKpt checks with the real kpt that each context directory is
// a package kpt reads and whose inventory kpt live accepts.
func TestSplitWithKpt(t *testing.T) {
	testenv.Slow(t, "runs the real kpt")
	kpt := kptBinary(t)
	pkg := copySplitPackage(t)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	// No cluster: kpt live init must not need one, and must not read ours.
	env := append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"), "HOME="+t.TempDir())

	// The pipe form, kpt fn source PKG | shard-router split -, writes the same files.
	cmd := exec.Command(kpt, "fn", "source", pkg)
	cmd.Env = env
	rl, err := cmd.Output()
	if err != nil {
		t.Fatalf("kpt fn source %s: %v\n%s", pkg, err, stderrOf(err))
	}
	piped := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, string(rl), "split", "-", "-o", piped); code != 0 {
		t.Fatalf("split -: %s", stderr)
	}
	for _, f := range []string{"ctx-00/apps/web.yaml", "ctx-00/Kptfile", "ctx-01/resourcegroup.yaml", "ctx-01/namespaces.yaml", ".shard-router-split"} {
		if a, b := readTestFile(t, filepath.Join(out, f)), readTestFile(t, filepath.Join(piped, f)); a != b {
			t.Errorf("%s differs between the directory and the pipe form:\n%s\n---\n%s", f, a, b)
		}
	}
	for _, ctx := range []string{"ctx-00", "ctx-01"} {
		dir := filepath.Join(out, ctx)
		cmd := exec.Command(kpt, "fn", "source", dir)
		cmd.Env = env
		src, err := cmd.Output()
		if err != nil {
			t.Fatalf("kpt fn source %s: %v\n%s", dir, err, stderrOf(err))
		}
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(src)}).Read()
		if err != nil {
			t.Fatalf("kpt fn source %s: %v", dir, err)
		}
		// The Kptfile, the ResourceGroup, the etcd overrides record (local
		// config) and the two resources.
		if len(nodes) != 5 {
			t.Errorf("kpt fn source %s read %d resources, want 5:\n%s", dir, len(nodes), src)
		}
		cmd = exec.Command(kpt, "live", "init", dir)
		cmd.Env = env
		outBytes, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("kpt live init %s succeeded; it should find the inventory already there:\n%s", dir, outBytes)
		} else if !strings.Contains(string(outBytes), "Inventory information has already been added to the package ResourceGroup object") {
			t.Errorf("kpt live init %s: %v\n%s", dir, err, outBytes)
		}
		rg, err := os.ReadFile(filepath.Join(dir, "resourcegroup.yaml"))
		if err != nil || !strings.Contains(string(rg), "shop-"+ctx) {
			t.Errorf("kpt live init changed %s/resourcegroup.yaml: %v\n%s", dir, err, rg)
		}
	}
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestSplitOutputFormatHint: split -o takes a directory; a format name
// there (as plan -o takes) is refused with a hint, and writing nothing.
// ./json is the way to ask for a directory of that name.
func TestSplitOutputFormatHint(t *testing.T) {
	pkg := copySplitPackage(t)
	t.Chdir(t.TempDir())
	for _, format := range []string{"json", "yaml", "markdown", "table"} {
		code, stdout, stderr := execCLI(t, "", "split", pkg, "-o", format)
		if code != 1 || stdout != "" || !strings.Contains(stderr, `split -o takes an output directory, and "`+format+`" is an output format`) ||
			!strings.Contains(stderr, "-o ./"+format) {
			t.Errorf("-o %s: exit %d, stdout %q, stderr:\n%s", format, code, stdout, stderr)
		}
		if _, err := os.Stat(format); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("-o %s: a directory was written", format)
		}
	}
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", "./json"); code != 0 {
		t.Errorf("-o ./json: exit %d:\n%s", code, stderr)
	}
	if st, err := os.Stat("json"); err != nil || !st.IsDir() {
		t.Errorf("-o ./json wrote no directory: %v", err)
	}
}
