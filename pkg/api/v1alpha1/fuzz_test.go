package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FuzzLoad parses arbitrary bytes as YAML and loads them as the function
// config: Load must never panic, and what it accepts must be a config that
// validates, with at least one context and selectors that compile.
func FuzzLoad(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"null",
		"- a\n- b\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: 'b=c', d: 'e in (f,g)', h: '!i', j: 'k!=l'}\n",
		"apiVersion: v1\nkind: ConfigMap\ndata: &d {a: x}\nmetadata: {name: *d}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: [a]\ndata: {a: x}\n",
		"apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nspec: {contexts: [{name: a, resourceSelector: {}}]}\n",
		"apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nspec: {contexts: [{name: a, dataStores: [{name: e, endpoints: ['https://e:1']}]}], dataStoreOverrides: [{resource: /events, dataStore: e}]}\n",
		"apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nspec: {contexts: [{name: a, namespaceSelector: {matchExpressions: [{key: k, operator: In, values: [v]}]}}]}\n",
		"apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nspec: {contexts: [{name: a}], contexts: [{name: b}]}\n",
		"apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nspec: !!binary aGVsbG8=\n",
		"apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nspec: {contexts: [{name: 1e400}]}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		node, err := yaml.Parse(string(data))
		if err != nil {
			return
		}
		cfg, errs := Load(node)
		if len(errs) > 0 {
			if cfg != nil {
				t.Errorf("Load returned a config along with errors: %v", errs)
			}
			for _, e := range errs {
				if e.Error() == "" {
					t.Errorf("an error without a message")
				}
			}
			return
		}
		if cfg == nil {
			t.Fatal("Load returned neither a config nor errors")
		}
		if len(cfg.Spec.Contexts) == 0 {
			t.Errorf("Load accepted a config without contexts")
		}
		if errs := cfg.Validate(); len(errs) > 0 {
			t.Errorf("Load accepted a config that does not validate: %v", errs)
		}
		for _, c := range cfg.Spec.Contexts {
			for _, sel := range []*metav1.LabelSelector{c.NamespaceSelector, c.ResourceSelector} {
				if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
					t.Errorf("context %q: accepted selector does not compile: %v", c.Name, err)
				}
			}
		}
	})
}
