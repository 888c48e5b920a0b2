// Command kpt is kpt's pkg, fn and live commands, built from
// github.com/kptdev/kpt at the version pinned in this module's go.mod.
//
// It exists because kpt's own main cannot be built with go install: through
// `kpt alpha` it imports the github.com/kptdev/kpt/rollouts module, which is
// not published. This main wires the same commands as kpt's run.GetMain and
// handles errors as kpt's main.go does, minus `alpha`, the help pager and the
// check that git is on the PATH.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/kptdev/kpt/commands/fn"
	"github.com/kptdev/kpt/commands/live"
	"github.com/kptdev/kpt/commands/pkg"
	"github.com/kptdev/kpt/pkg/lib/errors"
	"github.com/kptdev/kpt/pkg/lib/errors/resolver"
	"github.com/kptdev/kpt/pkg/lib/util/cmdutil"
	"github.com/kptdev/kpt/pkg/printer"
	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/klog/v2"
	k8scmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/kustomize/kyaml/commandutil"
)

// version is set by the Makefile to the kpt module version.
var version = "unknown"

func main() {
	os.Exit(runMain())
}

func runMain() int {
	klog.InitFlags(nil)
	cmd := newRootCommand(context.Background())
	if err := cli.RunNoErrOutput(cmd); err != nil {
		return handleErr(cmd, err)
	}
	return 0
}

// newRootCommand mirrors kpt's run.GetMain.
func newRootCommand(ctx context.Context) *cobra.Command {
	os.Setenv(commandutil.EnableAlphaCommmandsEnvName, "true")
	cmd := &cobra.Command{
		Use:           "kpt",
		Short:         "kpt manages Kubernetes configuration as data (pkg, fn and live only)",
		SilenceUsage:  true,
		SilenceErrors: true, // handleErr prints them
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Usage()
		},
	}
	cmd.PersistentFlags().AddGoFlagSet(flag.CommandLine)
	cmd.PersistentFlags().BoolVar(&printer.TruncateOutput, "truncate-output", true,
		"Enable the truncation for output")
	cmd.PersistentFlags().BoolVar(&cmdutil.StackOnError, "stack-trace", false,
		"Print a stack-trace on failure")

	// The kpt commands find their printer in the context.
	ctx = printer.WithContext(ctx, printer.New(cmd.OutOrStdout(), cmd.ErrOrStderr()))

	subcommands := []*cobra.Command{
		pkg.GetCommand(ctx, "kpt"),
		fn.GetCommand(ctx, "kpt"),
		live.GetCommand(ctx, "kpt", version),
	}
	normalizeCommands(subcommands...)
	cmd.AddCommand(subcommands...)
	cmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version number of kpt",
		Run: func(_ *cobra.Command, _ []string) {
			fmt.Println(version)
		},
	})
	return cmd
}

// normalizeCommands mirrors kpt's commands.NormalizeCommand, which cannot be
// imported without `alpha`.
func normalizeCommands(cmds ...*cobra.Command) {
	for _, cmd := range cmds {
		cmd.Short = strings.TrimPrefix(cmd.Short, "[Alpha] ")
		normalizeCommands(cmd.Commands()...)
	}
}

// handleErr mirrors kpt's main.go.
func handleErr(cmd *cobra.Command, err error) int {
	if re, resolved := resolver.ResolveError(err); resolved {
		if re.Message != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s \n", re.Message)
		}
		return re.ExitCode
	}
	var kptErr *errors.Error
	if errors.As(err, &kptErr) {
		unwrapped, ok := errors.UnwrapErrors(kptErr)
		if ok && !cmdutil.PrintErrorStacktrace() {
			fmt.Fprintf(cmd.ErrOrStderr(), "Error: %s \n", unwrapped.Error())
			return 1
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s \n", kptErr.Error())
		return 1
	}
	k8scmdutil.CheckErr(err)
	return 1
}
