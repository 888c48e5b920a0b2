// Package cli is shard-router's command line: function mode on the root
// command, and one file per subcommand. Each command turns flags into a call
// to an engine package and decides where output goes; nothing else.
package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
)

// Version is set at build time with -ldflags "-X .../pkg/cli.Version=...".
var Version = "dev"

// Streams are the process's standard streams, passed down, never global.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// StandardStreams returns os.Stdin, os.Stdout and os.Stderr.
func StandardStreams() Streams { return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// Main runs the command line and returns the process exit code.
func Main(s Streams, args []string) int {
	root := NewRootCommand(s)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		var reported errAlreadyReported
		if !errors.As(err, &reported) {
			fmt.Fprintf(s.Err, "shard-router: error: %v\n", err)
		}
		return 1
	}
	return 0
}

// errAlreadyReported marks an error whose details were already written to
// stderr, so Main only sets the exit code.
type errAlreadyReported struct{ error }

// exitCode is a successful run that exits with this status, such as plan's
// 2 for "changes" under --detailed-exitcode.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// NewRootCommand builds the root command: with no arguments it is the KRM
// function, reading a ResourceList on stdin and writing one on stdout.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "shard-router",
		Short: "Route the resources of a kpt package to kube contexts and etcd datastores",
		Long: `shard-router is a KRM function. With no arguments it reads a ResourceList on
stdin, routes every resource by the ShardConfig (or ConfigMap) function config,
annotates it with shardrouter.dev/context and shardrouter.dev/datastore, and
writes the ResourceList on stdout. Errors go to the results and to stderr, and
make it exit non-zero with the items unchanged.`,
		Example: `  kpt fn eval PKG --exec shard-router --fn-config shards.yaml
  kpt fn eval PKG --exec shard-router -- ctx-00='shard=00' ctx-01='shard=01'`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       Version,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFunction(s)
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newVersionCommand(s))
	root.AddCommand(newSplitCommand(s), newOverridesCommand(s))
	root.AddCommand(newReportCommand(s), newPlanCommand(s))
	root.AddCommand(liveCommands(s)...)
	return root
}

// runFunction is function mode. function.Run (the streaming path, or the
// kyaml framework path it falls back to) writes the ResourceList (items
// unchanged on error) before returning the processor's error; a
// ResourceList that cannot be read writes nothing.
func runFunction(s Streams) error {
	sn := &sniffer{r: s.In}
	in := io.Reader(sn)
	if f, ok := s.In.(*os.File); ok {
		// function.Run reads a regular file in one go, sized by Stat.
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			in, sn.content = f, true
		}
	}
	opts := ioOptions()
	opts.Streaming = limitMemory
	err := function.Run(in, s.Out, opts)
	if err == nil {
		return nil
	}
	var results framework.Results
	if errors.As(err, &results) && !sn.content {
		// Otherwise the error would be about a missing function config.
		return errors.New("the input is empty: expected a ResourceList (config.kubernetes.io/v1) on stdin, as kpt sends it")
	}
	if errors.As(err, &results) {
		printResults(s.Err, results)
		return errAlreadyReported{err}
	}
	return err
}

// sniffer notes whether the input holds anything but whitespace and
// document separators.
type sniffer struct {
	r       io.Reader
	content bool
}

func (s *sniffer) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if !s.content && len(bytes.TrimSpace(bytes.ReplaceAll(p[:n], []byte("---"), nil))) > 0 {
		s.content = true
	}
	return n, err
}

// printResults writes error and warning results to stderr, one a line,
// naming the file, the resource and the field.
func printResults(w io.Writer, results framework.Results) {
	for _, r := range results {
		if r.Severity != framework.Error && r.Severity != framework.Warning {
			continue
		}
		fmt.Fprintf(w, "shard-router: %s: %s\n", r.Severity, FormatResult(r))
	}
}

// FormatResult renders a result as "file[index]: field: message", or
// "dir: field: message" for a result about a directory (a context of
// OUT_DIR), which has no resource index.
func FormatResult(r *framework.Result) string {
	var b strings.Builder
	switch {
	case r.File == nil || r.File.Path == "":
	case yamlio.MatchesKRM(r.File.Path):
		fmt.Fprintf(&b, "%s[%d]: ", r.File.Path, r.File.Index)
	default:
		fmt.Fprintf(&b, "%s: ", r.File.Path)
	}
	if r.Field != nil && r.Field.Path != "" && !strings.Contains(r.Message, r.Field.Path) {
		fmt.Fprintf(&b, "%s: ", r.Field.Path)
	}
	b.WriteString(r.Message)
	return b.String()
}

func newVersionCommand(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(s.Out, Version)
		},
	}
}
