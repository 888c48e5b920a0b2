package plan

// The fixtures and helpers of package split's tests that the plan's tests
// share, splitting through Build as `shard-router split` does.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/split"
)

const shardConfig = `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  contexts:
  - name: ctx-a
    namespaceSelector: {matchLabels: {shard: a}}
    dataStores:
    - name: leases
      endpoints: ["https://etcd-leases:2379"]
  - name: ctx-b
    namespaceSelector: {matchLabels: {shard: b}}
  dataStoreOverrides:
  - resource: coordination.k8s.io/leases
    dataStore: leases
`

// basePackage is a package that was never annotated.
func basePackage() map[string]string {
	return map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: my-pkg
  annotations:
    config.kubernetes.io/local-config: "true"
`,
		"shards.yaml": shardConfig,
		"resourcegroup.yaml": `apiVersion: kpt.dev/v1alpha1
kind: ResourceGroup
metadata:
  name: inventory-source
  namespace: default
  labels:
    cli-utils.sigs.k8s.io/inventory-id: source-id
`,
		"namespaces.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: a
  labels:
    shard: a
---
apiVersion: v1
kind: Namespace
metadata:
  name: b
  labels:
    shard: b
`,
		"apps/web.yaml": `# The web app.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: a
spec:
  template:
    spec:
      containers:
        - name: web # wide sequence style, kept
          image: nginx
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: b
data:
  key: value
`,
		"apps/lease.yaml": `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
  namespace: a
`,
		"rbac/reader.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get"]
`,
		"local.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: local
  namespace: a
  annotations:
    config.kubernetes.io/local-config: "true"
`,
		"README.md": "not a resource\n",
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns every file under dir (slash paths) and its content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// splitDir runs what `shard-router split PKG -o OUT` runs. It returns the
// plan, or the error that stopped it; plan errors make it return an error
// naming them, and nothing is written then.
func splitDir(t *testing.T, pkg, out string) (*split.Layout, error) {
	t.Helper()
	od, err := input.OpenOutDir(out)
	if err != nil {
		return nil, err
	}
	in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
	if err != nil {
		return nil, err
	}
	return runRoute(t, in, od, nil)
}

// runRoute routes the input with its own config, then writes the plan to
// od when it is not nil, as `shard-router split` does.
func runRoute(t testing.TB, in *input.Input, od *input.OutDir, opts *Options) (*split.Layout, error) {
	t.Helper()
	node, err := in.Config()
	if err != nil {
		return nil, err
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		return nil, results
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Split.Out = od
	plan, err := Build(in, cfg, o)
	if err != nil {
		return nil, err
	}
	if plan.Results.ExitCode() != 0 {
		if len(plan.Packages) != 0 {
			t.Errorf("a plan with errors has %d packages", len(plan.Packages))
		}
		return plan, errorResults(plan.Results)
	}
	if od != nil {
		return plan, split.Write(od, plan)
	}
	return plan, nil
}

func errorResults(rs framework.Results) error {
	var msgs []string
	for _, r := range rs {
		if r.Severity == framework.Error {
			s := r.Message
			if r.File != nil && r.File.Path != "" {
				s = r.File.Path + ": " + s
			}
			msgs = append(msgs, s)
		}
	}
	return errors.New(strings.Join(msgs, "\n"))
}

func mustSplit(t *testing.T, pkg, out string) *split.Layout {
	t.Helper()
	plan, err := splitDir(t, pkg, out)
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	return plan
}

func wantError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

// relabel moves Namespace a (and so everything in it) to ctx-b.
func relabel(t *testing.T, pkg string) {
	t.Helper()
	ns := strings.Replace(basePackage()["namespaces.yaml"], "shard: a", "shard: b", 1)
	writeTree(t, pkg, map[string]string{"namespaces.yaml": ns})
}

func mustParse(t *testing.T, s string) *yaml.RNode {
	t.Helper()
	n, err := yaml.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func hasResult(rs framework.Results, sev framework.Severity, part string) bool {
	for _, r := range rs {
		if r.Severity == sev && strings.Contains(r.Message, part) {
			return true
		}
	}
	return false
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
