package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/internal/termtext"
)

// JSONFlag declares --json on a read command and returns where its value
// lands. The convention (docs/configuration.md): with --json the command
// writes exactly one JSON document to stdout, written by PrintJSON, and
// nothing else; notes and progress go to stderr as always; an error prints
// nothing on stdout and exits non-zero. Field names are snake_case JSON tags
// on plain types, never Go field names; they are part of the CLI's contract
// and documented with the command.
func JSONFlag(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("json", false, "print one JSON document on stdout instead of text (shapes: docs/configuration.md)")
}

// PrintJSON writes v to w as one JSON document: indented by two spaces,
// with <, > and & as they are (blocks and summaries hold JSX and prose),
// and a newline at the end. Nothing is written when v does not encode.
//
// The document goes to a terminal as often as to a program, and its strings
// hold text the user did not write (model answers, peers' messages).
// encoding/json escapes C0 controls but leaves DEL, C1 controls (U+009B is
// CSI on some terminals) and bidirectional overrides raw; they are written
// \uXXXX too. They can only be inside strings, so the JSON reads the same.
func PrintJSON(w io.Writer, v any) error {
	data, err := plainjson.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	escape := func(r rune) bool { return r != '\n' && termtext.Control(r) }
	if bytes.ContainsFunc(data, escape) {
		var e bytes.Buffer
		for _, r := range string(data) {
			if escape(r) {
				fmt.Fprintf(&e, "\\u%04x", r)
				continue
			}
			e.WriteRune(r)
		}
		data = e.Bytes()
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
