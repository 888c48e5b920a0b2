package cluster

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// memoMapper remembers the mappings its REST mapper found. kubectl's
// discovery mapper takes locks and walks every group on each call, and a
// package asks once per object (cli-utils' SetNamespaces, status' reads):
// about a tenth of status' CPU on 1,000 objects of two kinds. Errors are
// not remembered, so a kind not served yet is asked again (and the
// discovery mapper rediscovers), as before.
type memoMapper struct {
	meta.RESTMapper
	mu    sync.Mutex
	found map[string]*meta.RESTMapping
}

// MemoMapper returns m, remembering each mapping RESTMapping finds.
func MemoMapper(m meta.RESTMapper) meta.RESTMapper {
	return &memoMapper{RESTMapper: m, found: map[string]*meta.RESTMapping{}}
}

func (m *memoMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := gk.String() + "\x00" + strings.Join(versions, "\x00")
	m.mu.Lock()
	found := m.found[key]
	m.mu.Unlock()
	if found != nil {
		return found, nil
	}
	found, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.found[key] = found
	m.mu.Unlock()
	return found, nil
}
