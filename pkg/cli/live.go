//go:build !nolive

package cli

import "github.com/spf13/cobra"

// liveCommands are the commands that talk to clusters. They link a
// Kubernetes client, kpt's live library and cli-utils; a binary built with
// -tags nolive (the function's image) leaves them out.
func liveCommands(s Streams) []*cobra.Command {
	return []*cobra.Command{newApplyCommand(s), newStatusCommand(s)}
}
