package split

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

const (
	// InventoryIDLabel is cli-utils' common.InventoryLabel, which kpt live
	// init sets on the ResourceGroup.
	InventoryIDLabel = "cli-utils.sigs.k8s.io/inventory-id"
	// DefaultInventoryNamespace is where the ResourceGroup lives unless a
	// context's inventory says otherwise.
	DefaultInventoryNamespace = "default"
	// maxNameLength keeps generated names valid DNS-1123 labels.
	maxNameLength = 63
	hashLength    = 8
)

// InventoryFor returns the inventory of one context's package: the
// context's inventory fields where set, else name "<package>-<context>"
// made a DNS-1123 label, namespace "default", and the id kpt live init
// derives from them (the SHA-1 of "namespace:name"), without the timestamp
// kpt appends, so that every split gives the same id.
func InventoryFor(pkgName string, ctx v1alpha1.Context) v1alpha1.Inventory {
	inv := v1alpha1.Inventory{}
	if ctx.Inventory != nil {
		inv = *ctx.Inventory
	}
	if inv.Name == "" {
		inv.Name = DNSName(pkgName + "-" + ctx.Name)
	}
	if inv.Namespace == "" {
		inv.Namespace = DefaultInventoryNamespace
	}
	if inv.ID == "" {
		sum := sha1.Sum([]byte(inv.Namespace + ":" + inv.Name))
		inv.ID = hex.EncodeToString(sum[:])
	}
	return inv
}

// DNSName turns s into a DNS-1123 label: lower case letters, digits and
// '-'. When that loses anything (case, other characters, length), a hash
// of s is appended, so that two different strings never give one name.
func DNSName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if name == s && len(name) <= maxNameLength {
		return name
	}
	sum := sha1.Sum([]byte(s))
	suffix := hex.EncodeToString(sum[:])[:hashLength]
	if len(name) > maxNameLength-hashLength-1 {
		name = strings.TrimRight(name[:maxNameLength-hashLength-1], "-")
	}
	if name == "" {
		return "p-" + suffix
	}
	return name + "-" + suffix
}

// resourceGroup renders the inventory exactly as kpt live init writes it
// (cmdliveinit.writeRGFile: a kyaml ResourceMeta marshalled with the wide
// sequence style).
func resourceGroup(inv v1alpha1.Inventory) ([]byte, error) {
	rg := yaml.ResourceMeta{
		TypeMeta: yaml.TypeMeta{APIVersion: "kpt.dev/v1alpha1", Kind: "ResourceGroup"},
		ObjectMeta: yaml.ObjectMeta{
			NameMeta: yaml.NameMeta{Name: inv.Name, Namespace: inv.Namespace},
			Labels:   map[string]string{InventoryIDLabel: inv.ID},
		},
	}
	return yaml.MarshalWithOptions(rg, &yaml.EncoderOptions{SeqIndent: yaml.WideSequenceStyle})
}

// kptfile renders a context package's Kptfile as kpt pkg init writes one:
// local-config, with a description, and no inventory (that is in the
// ResourceGroup).
func kptfile(name, pkgName, ctx string) ([]byte, error) {
	type info struct {
		Description string `yaml:"description,omitempty"`
	}
	type kf struct {
		yaml.ResourceMeta `yaml:",inline"`
		Info              info `yaml:"info"`
	}
	k := kf{
		ResourceMeta: yaml.ResourceMeta{
			TypeMeta: yaml.TypeMeta{APIVersion: "kpt.dev/v1", Kind: "Kptfile"},
			ObjectMeta: yaml.ObjectMeta{
				NameMeta:    yaml.NameMeta{Name: name},
				Annotations: map[string]string{filters.LocalConfigAnnotation: "true"},
			},
		},
		Info: info{Description: fmt.Sprintf("The resources of package %s for kube context %s, written by shard-router split. Do not edit: the next split regenerates this directory.", pkgName, ctx)},
	}
	return yaml.MarshalWithOptions(k, &yaml.EncoderOptions{SeqIndent: yaml.WideSequenceStyle})
}
