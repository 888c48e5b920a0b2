// Package output is shard-router's one printer layer: every command that
// prints a document (report, overrides --previous, plan) checks its -o
// value here and prints the document's versioned Go type (package v1alpha1)
// as JSON or YAML, or renders it for people with the command's own
// renderers (table, markdown, flag, ...).
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
)

// Structured formats every document can be printed in.
const (
	JSON = "json"
	YAML = "yaml"
)

// Renderer renders a document for people.
type Renderer func(w io.Writer) error

// Printer prints one document in the formats a command offers.
type Printer struct {
	// Formats are the -o values in the order help lists them; the first
	// is the default.
	Formats []string
	// Text renders the formats that are not JSON or YAML.
	Text map[string]Renderer
}

// Check returns an error naming the accepted formats when format is not
// one of them.
func Check(format string, formats ...string) error {
	if slices.Contains(formats, format) {
		return nil
	}
	return fmt.Errorf("unknown output format %q: use %s", format, List(formats))
}

// List joins formats as "a, b or c".
func List(formats []string) string {
	if len(formats) < 2 {
		return strings.Join(formats, "")
	}
	return strings.Join(formats[:len(formats)-1], ", ") + " or " + formats[len(formats)-1]
}

// Print writes doc in format.
func (p Printer) Print(w io.Writer, format string, doc any) error {
	if err := Check(format, p.Formats...); err != nil {
		return err
	}
	switch format {
	case JSON:
		return WriteJSON(w, doc)
	case YAML:
		return WriteYAML(w, doc)
	}
	return p.Text[format](w)
}

// WriteJSON writes v as indented JSON and a newline, the form every JSON
// output of shard-router has.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteYAML writes v as YAML with the field names of its JSON form.
func WriteYAML(w io.Writer, v any) error {
	data, err := sigsyaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}
