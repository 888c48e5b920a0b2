package cluster

import "k8s.io/client-go/metadata"

// UseMetadata has k's contexts list metadata with newMetadata.
func (k *Kubeconfig) UseMetadata(newMetadata func(context string) (metadata.Interface, error)) {
	k.newMetadata = newMetadata
}
