package datastore

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
