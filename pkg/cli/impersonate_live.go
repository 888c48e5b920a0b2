//go:build !nolive

package cli

import "github.com/shard-router/shard-router/pkg/live/cluster"

// impersonation is the flags' identity, zero when none was given.
func (f *impersonateFlags) impersonation() cluster.Impersonation {
	return cluster.Impersonation{User: f.user, UID: f.uid, Groups: f.groups}
}
