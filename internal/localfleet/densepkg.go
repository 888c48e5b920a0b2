package localfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DenseContextLabel is the Namespace label each context of a dense
// package selects: its value is the context's name.
const DenseContextLabel = "fleet.shardrouter.dev/context"

// DensePackage is a kpt package for a dense fleet: Namespaces Namespaces,
// namespace j in context j % Contexts (its label DenseContextLabel names
// the context, and the context's namespaceSelector picks exactly its
// own), each holding ConfigMaps ConfigMaps. Each context gets its own
// inventory from split (named "<Name>-<context>"), so contexts that share a
// cluster never prune each other's objects.
type DensePackage struct {
	// Name is the package's name (its Kptfile's), which names the
	// inventories.
	Name string
	// Prefix starts every Namespace's name, so that several packages can
	// share the clusters of one fleet.
	Prefix string
	Dense
	// Namespaces is the number of Namespaces of the whole package (at
	// least Contexts, so that every context has one).
	Namespaces int
	// ConfigMaps is the number of ConfigMaps in each Namespace.
	ConfigMaps int
	// Value is every ConfigMap's data.value.
	Value string
	// FirstValue, when set, is instead the value of ConfigMap settings-0
	// in each context's first Namespace (j < Contexts): changing it
	// changes one object in every context.
	FirstValue string
	// Rollout, when set, is the ShardConfig's spec.rollout, indented as
	// under spec (each line starting with two spaces). Contexts
	// 0..Clusters-1 (one on each cluster) carry the label stage: canary,
	// for a wave to select.
	Rollout string
}

// NamespaceName is the name of Namespace j.
func (p DensePackage) NamespaceName(j int) string { return fmt.Sprintf("%s-ns-%04d", p.Prefix, j) }

// ContextOf is the index of the context Namespace j belongs to.
func (p DensePackage) ContextOf(j int) int { return j % p.Contexts }

// Objects is the number of objects the package holds (Namespaces and
// ConfigMaps; its Kptfile and ShardConfig are local config).
func (p DensePackage) Objects() int { return p.Namespaces * (1 + p.ConfigMaps) }

// Write writes the package into dir (created): a Kptfile, shards.yaml
// and one file per Namespace with its ConfigMaps. A file of a Namespace
// the package no longer holds is not removed: write into a fresh or the
// same-shaped directory.
func (p DensePackage) Write(dir string) error {
	if err := p.Dense.Validate(); err != nil {
		return err
	}
	if p.Namespaces < p.Contexts {
		return fmt.Errorf("%d Namespaces for %d contexts: every context needs one of its own", p.Namespaces, p.Contexts)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + p.Name +
		"\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	if err := os.WriteFile(filepath.Join(dir, "Kptfile"), []byte(kptfile), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "shards.yaml"), []byte(p.shardConfig()), 0o644); err != nil {
		return err
	}
	for j := range p.Namespaces {
		if err := os.WriteFile(filepath.Join(dir, p.NamespaceName(j)+".yaml"), []byte(p.namespaceFile(j)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (p DensePackage) shardConfig() string {
	var b strings.Builder
	b.WriteString("apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata:\n  name: shards\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  contexts:\n")
	for i := range p.Contexts {
		fmt.Fprintf(&b, "  - name: %s\n", p.ContextName(i))
		if p.Rollout != "" && i < p.Clusters {
			b.WriteString("    labels: {stage: canary}\n")
		}
		fmt.Fprintf(&b, "    namespaceSelector: {matchLabels: {%s: %s}}\n", DenseContextLabel, p.ContextName(i))
	}
	if p.Rollout != "" {
		b.WriteString(strings.TrimRight(p.Rollout, "\n") + "\n")
	}
	return b.String()
}

// namespaceFile is Namespace j and its ConfigMaps.
func (p DensePackage) namespaceFile(j int) string {
	ns := p.NamespaceName(j)
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    %s: %s\n", ns, DenseContextLabel, p.ContextName(p.ContextOf(j)))
	for c := range p.ConfigMaps {
		value := p.Value
		if c == 0 && j < p.Contexts && p.FirstValue != "" {
			value = p.FirstValue
		}
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-%d\n  namespace: %s\ndata:\n  value: %q\n", c, ns, value)
	}
	return b.String()
}
