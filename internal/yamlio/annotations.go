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

// kptPrefix is kpt's own annotation prefix: kpt treats every annotation
// under it as its own (kpt's pkg.ClearInternalAnnotations clears them
// with internal.config.kubernetes.io/*).
const kptPrefix = "config.kubernetes.io/"

// kptBehaviour are the annotations under kptPrefix that change what kpt
// live apply does (cli-utils' dependson.Annotation and
// mutation.Annotation): a change of one is a change of the object.
var kptBehaviour = []string{"config.kubernetes.io/depends-on", "config.kubernetes.io/apply-time-mutation"}

// NotApplied reports an annotation whose change plan does not count as a
// change of the object (the object digest leaves it out): the bookkeeping
// annotations and kpt's config.kubernetes.io/*, but for depends-on and
// apply-time-mutation, which change what kpt live apply does. An object's
// size (function.SerializedSize) leaves out only the bookkeeping ones:
// kpt live apply sends the others to the cluster.
func NotApplied(key string) bool {
	if Bookkeeping(key) {
		return true
	}
	return strings.HasPrefix(key, kptPrefix) && !slices.Contains(kptBehaviour, key)
}
