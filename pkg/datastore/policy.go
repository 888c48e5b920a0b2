package datastore

import "github.com/shard-router/shard-router/pkg/config"

// Verdict is the policy's answer to a datastore change: kube-apiserver never
// migrates data when --etcd-servers-overrides changes, so the objects
// already stored would vanish from the API.
type Verdict int

const (
	// Refused: the change is an error.
	Refused Verdict = iota
	// AllowedEphemeral: a warning; the override is ephemeral, so losing
	// its objects is accepted.
	AllowedEphemeral
	// AllowedByConfig: a warning; spec.allowDataStoreChanges says the data
	// was copied.
	AllowedByConfig
)

// Judge is the one datastore-change policy that function mode, split,
// plan and `overrides --previous` apply: an ephemeral override allows the
// change, else spec.allowDataStoreChanges does, else it is refused.
func Judge(ephemeral, allowDataStoreChanges bool) Verdict {
	switch {
	case ephemeral:
		return AllowedEphemeral
	case allowDataStoreChanges:
		return AllowedByConfig
	}
	return Refused
}

// StoreChange is a change of an object's datastore in one context, and the
// policy's verdict on it.
type StoreChange struct {
	Context, From, To string
	Verdict           Verdict
}

// Changes is the one detection of datastore changes that function mode and
// plan share: for an object of apiVersion/kind routed to contexts (indexes
// into c.Names) where Assign gave it the datastores now (one per context),
// each context where its datastore annotation (annotation, read against the
// previous contexts, see ParseAnnotation) names another datastore, judged
// by Judge with c's policy. An annotation that does not parse is the error.
func Changes(c *config.Config, apiVersion, kind, annotation string, previous []string, contexts []int, now []string) ([]StoreChange, error) {
	old, err := ParseAnnotation(annotation, previous)
	if err != nil {
		return nil, err
	}
	var out []StoreChange
	for k, ctx := range contexts {
		name := c.Names[ctx]
		was, ok := old[name]
		if !ok || was == now[k] {
			continue
		}
		out = append(out, StoreChange{Context: name, From: was, To: now[k],
			Verdict: Judge(Ephemeral(c, apiVersion, kind), c.Policy.AllowDataStoreChanges)})
	}
	return out, nil
}
