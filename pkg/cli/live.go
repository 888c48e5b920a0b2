//go:build !nolive

package cli

import (
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// liveCommands are the commands that talk to clusters. They link a
// Kubernetes client, kpt's live library and cli-utils; a binary built with
// -tags nolive (the function's image) leaves them out.
func liveCommands(s Streams) []*cobra.Command {
	cmds := []*cobra.Command{newApplyCommand(s), newStatusCommand(s)}
	for _, c := range cmds {
		quietKlog(c)
	}
	return cmds
}

// quietKlog runs the command with klog, the log of client-go and kpt,
// discarded: an unreachable cluster made client-go print a warning and an
// "Unhandled Error" per context to stderr, before shard-router's own line
// for that context saying the same. What fails a context reaches the
// command as an error, which it reports with the context's name.
func quietKlog(cmd *cobra.Command) {
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		klog.SetLogger(logr.Discard())
		defer klog.ClearLogger()
		return run(c, args)
	}
}
