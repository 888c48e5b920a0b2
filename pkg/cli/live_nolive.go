//go:build nolive

package cli

import "github.com/spf13/cobra"

// liveCommands: none in a binary built with -tags nolive.
func liveCommands(Streams) []*cobra.Command { return nil }
