package yamlio

import "sigs.k8s.io/kustomize/kyaml/yaml"

// SplitResourceList is the splitter: each item's byte range and the
// skeleton.
func SplitResourceList(data []byte) ([][2]int, []byte, error) {
	l, err := splitResourceList(data)
	if err != nil {
		return nil, nil, err
	}
	return l.items, l.skeleton, nil
}

// ReadItems is function mode's first pass, read called on every item.
func ReadItems(data []byte, read func(i int, rn *yaml.RNode)) error {
	l, err := ReadList(data)
	if err != nil {
		return err
	}
	return (&streamRun{List: l}).readItems(read)
}

// PlainAnnotations is the encoder's test for editing a node directly.
func PlainAnnotations(n *yaml.Node) bool {
	_, ok := plainAnnotations(n)
	return ok
}

// PackItem and UnpackItem are the codec, with no anchor check.
var PackItem, UnpackItem = packItem, unpackItem
