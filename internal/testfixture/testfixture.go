// Package testfixture holds the fixtures and helpers that the tests of
// several packages share (split, plan, apply): one package that was never
// annotated, its ShardConfig, and the helpers that write and read trees.
// Only tests import it.
package testfixture

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
)

const ShardConfig = `apiVersion: shardrouter.dev/v1alpha1
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

// BasePackage is a package that was never annotated: its files by slash
// path, for WriteTree.
func BasePackage() map[string]string {
	return map[string]string{
		"Kptfile":     Kptfile("my-pkg"),
		"shards.yaml": ShardConfig,
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

// WriteTree writes the files (by slash path) under dir.
func WriteTree(t testing.TB, dir string, files map[string]string) {
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

// ReadTree returns every file under dir (slash paths) and its content.
func ReadTree(t testing.TB, dir string) map[string]string {
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

// Kptfile is a package's Kptfile, local config as kpt writes it.
func Kptfile(name string) string {
	return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name +
		"\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
}

// Keys returns the map's keys, sorted.
func Keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ErrorResults joins the messages of the error results, each after its
// file when it names one.
func ErrorResults(rs framework.Results) error {
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

// WantError fails unless err mentions every part.
func WantError(t testing.TB, err error, parts ...string) {
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

// MustParse parses one YAML document.
func MustParse(t testing.TB, s string) *yaml.RNode {
	t.Helper()
	n, err := yaml.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// HasResult reports whether a result of that severity mentions part.
func HasResult(rs framework.Results, sev framework.Severity, part string) bool {
	for _, r := range rs {
		if r.Severity == sev && strings.Contains(r.Message, part) {
			return true
		}
	}
	return false
}
