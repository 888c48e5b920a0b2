package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/kinds"
)

// TestCohabitationIsUpToDate regenerates the cohabitation lists from the
// kubernetes module and compares them byte for byte.
func TestCohabitationIsUpToDate(t *testing.T) {
	dir := filepath.Dir(filepath.Dir(discoveryDir(t))) // .../kubernetes@v/api/discovery
	got, err := GenerateCohabitations(kinds.KubernetesVersion, dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../zz_generated_cohabitation.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("zz_generated_cohabitation.go is stale: run go generate ./pkg/kinds")
	}
}

// writeTree writes files (slash paths) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestParseCohabitations(t *testing.T) {
	factory := `package kubeapiserver

import (
	"k8s.io/kubernetes/pkg/apis/apps"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/extensions"
)

func build(storageFactory *F) {
	storageFactory.AddCohabitatingResources(apps.Resource("deployments"), extensions.Resource("deployments"))
	storageFactory.AddCohabitatingResources(api.Resource("events"), extensions.Resource("events"), apps.Resource("events"))
}
`
	dir := writeTree(t, map[string]string{
		storageFactoryFile:                factory,
		"pkg/apis/apps/register.go":       "package apps\n\nconst GroupName = \"apps\"\n",
		"pkg/apis/core/register.go":       "package core\n\n// GroupName is the core group.\nconst GroupName = \"\"\n",
		"pkg/apis/extensions/register.go": "package extensions\n\nconst GroupName = \"extensions\"\n",
	})
	lists, err := parseCohabitations(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]groupResource{
		{{"apps", "deployments"}, {"extensions", "deployments"}},
		{{"", "events"}, {"extensions", "events"}, {"apps", "events"}},
	}
	if len(lists) != len(want) {
		t.Fatalf("got %v, want %v", lists, want)
	}
	for i := range want {
		if len(lists[i]) != len(want[i]) {
			t.Fatalf("list %d: got %v, want %v", i, lists[i], want[i])
		}
		for k := range want[i] {
			if lists[i][k] != want[i][k] {
				t.Errorf("list %d entry %d: got %v, want %v", i, k, lists[i][k], want[i][k])
			}
		}
	}
}

func TestParseCohabitationsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, factory, wantErr string
	}{
		{"no calls", "package x\n", "no AddCohabitatingResources call"},
		{"not a Resource call", "package x\nimport \"k8s.io/kubernetes/pkg/apis/apps\"\nfunc f(s S) { s.AddCohabitatingResources(apps.Kind(\"x\")) }\n", "expected pkg.Resource"},
		{"foreign package", "package x\nimport apps \"example.com/apps\"\nfunc f(s S) { s.AddCohabitatingResources(apps.Resource(\"x\")) }\n", "not a package of k8s.io/kubernetes"},
		{"no GroupName", "package x\nimport \"k8s.io/kubernetes/pkg/apis/apps\"\nfunc f(s S) { s.AddCohabitatingResources(apps.Resource(\"x\")) }\n", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{storageFactoryFile: tc.factory})
			if _, err := parseCohabitations(dir); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
