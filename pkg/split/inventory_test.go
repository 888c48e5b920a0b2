package split

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

func TestDNSName(t *testing.T) {
	long := strings.Repeat("very-long-package-name-", 5) + "ctx"
	for in, want := range map[string]string{
		"my-pkg-ctx-a": "my-pkg-ctx-a",
		// Lossy: a hash of the original keeps "Ctx_A" and "ctx-a" apart
		// (`printf Ctx_A | sha1sum`).
		"Ctx_A":    "ctx-a-e707f881",
		"__":       "p-",
		long:       "",
		"a.b":      "",
		"-leading": "",
	} {
		got := DNSName(in)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("DNSName(%q) = %q, not a DNS-1123 label: %v", in, got, errs)
		}
		if want != "" && !strings.HasPrefix(got, want) {
			t.Errorf("DNSName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := DNSName(long); len(got) != maxNameLength {
		t.Errorf("long name: %q (%d chars), want truncated to %d", got, len(got), maxNameLength)
	}
	if DNSName("Ctx_A") == DNSName("ctx-a") || DNSName("a.b") == DNSName("a-b") {
		t.Error("distinct strings share a name")
	}
}

func TestInventoryFor(t *testing.T) {
	a := InventoryFor("my-pkg", v1alpha1.Context{Name: "ctx-a"})
	b := InventoryFor("my-pkg", v1alpha1.Context{Name: "ctx-b"})
	if a.Name != "my-pkg-ctx-a" || a.Namespace != "default" || a.ID != "067d37817131f1247dc7a15ae98e32d1be29ab21" {
		t.Errorf("ctx-a: %+v", a)
	}
	if a.ID == b.ID || a.Name == b.Name {
		t.Errorf("two contexts share an inventory: %+v %+v", a, b)
	}
	// Contexts whose names differ only in what DNS-1123 forbids.
	if x, y := InventoryFor("p", v1alpha1.Context{Name: "Ctx_A"}), InventoryFor("p", v1alpha1.Context{Name: "ctx-a"}); x.ID == y.ID {
		t.Errorf("Ctx_A and ctx-a share id %s", x.ID)
	}
	// Explicit fields win; the id follows the namespace and name.
	c := InventoryFor("my-pkg", v1alpha1.Context{Name: "ctx-a", Inventory: &v1alpha1.Inventory{Namespace: "kpt"}})
	if c.Name != "my-pkg-ctx-a" || c.Namespace != "kpt" || c.ID == a.ID {
		t.Errorf("namespace override: %+v", c)
	}
	d := InventoryFor("my-pkg", v1alpha1.Context{Name: "ctx-a", Inventory: &v1alpha1.Inventory{Name: "inv", Namespace: "ns", ID: "fixed"}})
	if d != (v1alpha1.Inventory{Name: "inv", Namespace: "ns", ID: "fixed"}) {
		t.Errorf("explicit inventory: %+v", d)
	}
}

func TestSharedInventoryIDIsRefused(t *testing.T) {
	cfg := strings.Replace(shardConfig, "  - name: ctx-b\n", "  - name: ctx-b\n    inventory: {id: same}\n", 1)
	cfg = strings.Replace(cfg, "  - name: ctx-a\n", "  - name: ctx-a\n    inventory: {id: same}\n", 1)
	pkg := t.TempDir()
	files := basePackage()
	files["shards.yaml"] = cfg
	writeTree(t, pkg, files)
	_, err := splitDir(t, pkg, t.TempDir()+"/out")
	wantError(t, err, `contexts "ctx-a" and "ctx-b" would share the inventory id "same"`)
}
