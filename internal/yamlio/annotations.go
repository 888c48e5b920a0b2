package yamlio

import (
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
)

// internalPrefix marks the annotations kpt and kyaml use between
// functions (path, index, id, seqindent, ...).
const internalPrefix = "internal.config.kubernetes.io/"

// legacyBookkeeping are kyaml's legacy reader annotations, which every
// kio writer clears.
var legacyBookkeeping = []string{kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.LegacyIdAnnotation}

// Bookkeeping reports kpt's and kyaml's bookkeeping annotations:
// internal.config.kubernetes.io/* and the legacy config.kubernetes.io/path,
// config.kubernetes.io/index and config.k8s.io/id. A written package file
// never carries them (kio.ByteWriter clears them; see ClearedAnnotations),
// and they are the only annotations plan's object digest and an object's
// size leave out: kpt live apply's reader clears only the index ones and
// sends every other annotation to the cluster, config.kubernetes.io/*
// included (origin, depends-on, apply-time-mutation, ...), so a change of
// one is a change kpt applies.
func Bookkeeping(key string) bool {
	return strings.HasPrefix(key, internalPrefix) || slices.Contains(legacyBookkeeping, key)
}
