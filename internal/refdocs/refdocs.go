// Package refdocs writes the command reference (docs/reference) from the
// commands' help text: `make docs` runs it (hack/docs), and a test of
// pkg/cli fails when the reference is stale. It is not in pkg/cli, so that
// cobra's doc package is never linked into the product.
package refdocs

import (
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/shard-router/shard-router/pkg/cli"
)

// Dir is where the command reference lives, relative to the repository
// root. The commands' help text is its only source.
const Dir = "docs/reference"

// Write writes one markdown page per command into dir, from the same cobra
// commands that print --help.
func Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root := cli.NewRootCommand(cli.Streams{In: nil, Out: io.Discard, Err: io.Discard})
	root.DisableAutoGenTag = true
	// The version differs between builds; the reference must not.
	root.Version = ""
	var disable func(*cobra.Command)
	disable = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			disable(sub)
		}
	}
	disable(root)
	link := func(name string) string { return name }
	prepend := func(string) string { return "" }
	return doc.GenMarkdownTreeCustom(root, filepath.Clean(dir), prepend, link)
}
