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
// never carries them (kio.ByteWriter clears them; see ClearedAnnotations).
func Bookkeeping(key string) bool {
	return strings.HasPrefix(key, internalPrefix) || slices.Contains(legacyBookkeeping, key)
}

// NotApplied reports an annotation whose change plan does not count as a
// change of the object (the object digest leaves it out): the bookkeeping
// annotations alone. kpt live apply's reader clears only the index ones
// and sends every other annotation to the cluster, config.kubernetes.io/*
// included (origin, depends-on, apply-time-mutation, ...): a change of one
// is a change kpt applies, so plan shows it. An object's size
// (function.SerializedSize) leaves out the same ones.
func NotApplied(key string) bool { return Bookkeeping(key) }
