package cli

import (
	"errors"

	"github.com/spf13/pflag"
)

// impersonateFlags are kubectl's --as, --as-group and --as-uid: every
// request of the command acts as that identity, in every context (they
// take precedence over a kubeconfig user entry's as:).
type impersonateFlags struct {
	user, uid string
	groups    []string
}

// add defines the flags; with says when they apply ("" always, or
// "with --live: ").
func (f *impersonateFlags) add(fs *pflag.FlagSet, with string) {
	fs.StringVar(&f.user, "as", "", with+"act as this user in every cluster, as kubectl --as (takes precedence over the kubeconfig's as:); needs the right to impersonate it")
	fs.StringArrayVar(&f.groups, "as-group", nil, with+"with --as: a group to act as (repeatable), as kubectl --as-group")
	fs.StringVar(&f.uid, "as-uid", "", with+"with --as: the UID to act as, as kubectl --as-uid")
}

// set reports whether any of the flags was given.
func (f *impersonateFlags) set() bool { return f.user != "" || f.uid != "" || len(f.groups) > 0 }

// check refuses groups or a UID without a user, which the apiserver
// refuses too (a group or UID is impersonated along with a user).
func (f *impersonateFlags) check() error {
	if f.user == "" && (f.uid != "" || len(f.groups) > 0) {
		return errors.New("--as-group and --as-uid need --as: a group or UID is impersonated along with a user, as kubectl does")
	}
	return nil
}
