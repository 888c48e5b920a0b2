package gen

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func read(t *testing.T, o Options) ([]*yaml.RNode, *yaml.RNode) {
	t.Helper()
	r := &kio.ByteReader{Reader: bytes.NewReader(Bytes(o))}
	items, err := r.Read()
	if err != nil {
		t.Fatalf("%+v: not a readable ResourceList: %v", o, err)
	}
	return items, r.FunctionConfig
}

func TestSeeded(t *testing.T) {
	a := Bytes(Options{Items: 200, Contexts: 5, Seed: 1})
	if !bytes.Equal(a, Bytes(Options{Items: 200, Contexts: 5, Seed: 1})) {
		t.Error("the same options gave different bytes")
	}
	if bytes.Equal(a, Bytes(Options{Items: 200, Contexts: 5, Seed: 2})) {
		t.Error("different seeds gave the same bytes")
	}
}

func TestShape(t *testing.T) {
	n, k := 2000, 16
	if testing.Short() {
		n = 400 // the same checks on fewer items; 2000 in test-slow
	}
	items, fc := read(t, Options{Items: n, Contexts: k, Seed: 3})
	if len(items) != n {
		t.Fatalf("%d items, want %d", len(items), n)
	}
	kinds := map[string]int{}
	namespaces := map[string]bool{}
	for i, it := range items {
		kinds[it.GetKind()]++
		if it.GetKind() == "Namespace" {
			namespaces[it.GetName()] = true
		} else if ns := it.GetNamespace(); ns != "" && !namespaces[ns] {
			t.Errorf("item %d is in namespace %q, not declared before it", i, ns)
		}
		labels := it.GetLabels()
		if len(labels) < 5 || len(labels) > 7 {
			t.Errorf("item %d has %d labels", i, len(labels))
		}
		annos := it.GetAnnotations()
		for _, a := range []string{"config.kubernetes.io/path", "internal.config.kubernetes.io/path", "internal.config.kubernetes.io/index"} {
			if annos[a] == "" {
				t.Errorf("item %d lacks %s", i, a)
			}
		}
	}
	for _, kind := range []string{"Namespace", "Deployment", "Service", "ConfigMap", "Event", "Lease", "ClusterRole", "CustomResourceDefinition"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s among %d items: %v", kind, n, kinds)
		}
	}
	if got := len(namespaces); got != n/50 {
		t.Errorf("%d namespaces, want %d", got, n/50)
	}
	if fc.GetKind() != "ShardConfig" {
		t.Fatalf("functionConfig kind %q", fc.GetKind())
	}
	contexts, err := fc.Pipe(yaml.Lookup("spec", "contexts"))
	if err != nil || len(contexts.Content()) != k {
		t.Fatalf("functionConfig has %v contexts (%v), want %d", contexts, err, k)
	}
}

// TestConfigAfterItems: kpt writes functionConfig after the items, which is
// the layout the streaming path must buffer for.
func TestConfigAfterItems(t *testing.T) {
	s := string(Bytes(Options{Items: 3, Contexts: 2, Seed: 1}))
	if i, j := strings.Index(s, "\nitems:\n"), strings.Index(s, "\nfunctionConfig:\n"); i < 0 || j < i {
		t.Errorf("functionConfig not after items:\n%s", s)
	}
}
