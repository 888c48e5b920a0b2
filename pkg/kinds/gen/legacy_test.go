package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateLegacy reads a k8s.io/api tree shaped like the module's:
// markers in the doc comment or in the block above it, cluster-scoped by
// +genclient:nonNamespaced, noVerbs types skipped, and kinds the current
// table serves left out.
func TestGenerateLegacy(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("resource/v1alpha2/register.go", "package v1alpha2\n\nconst GroupName = \"resource.k8s.io\"\n")
	write("resource/v1alpha2/types.go", `package v1alpha2

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ResourceClaimParameters is namespaced: markers in the block above.
type ResourceClaimParameters struct{}

// +genclient
// +genclient:nonNamespaced
// ResourceClass is cluster-scoped.
type ResourceClass struct{}

// ResourceClaim is served today.
// +genclient
type ResourceClaim struct{}

// +genclient:nonNamespaced
// +genclient:noVerbs
// +genclient
type Review struct{}

type ResourceClaimParametersList struct{}
`)
	served := []kind{{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"}}
	src, err := GenerateLegacy(served, []string{dir}, []string{"v0.30.0"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(src)
	for _, want := range []string{
		`{Group: "resource.k8s.io", Version: "v1alpha2", Kind: "ResourceClaimParameters", Namespaced: true, Legacy: true}, // to v0.30.0`,
		`{Group: "resource.k8s.io", Version: "v1alpha2", Kind: "ResourceClass", Namespaced: false, Legacy: true},`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in:\n%s", want, got)
		}
	}
	for _, not := range []string{`"ResourceClaim"`, `"Review"`, `"ResourceClaimParametersList"`} {
		if strings.Contains(got, not) {
			t.Errorf("%s must not be generated:\n%s", not, got)
		}
	}
	if _, err := GenerateLegacy(served, []string{t.TempDir()}, []string{"v0.1.0"}); err == nil {
		t.Error("a tree without API packages gives no error")
	}
}
