package main

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/provider"
)

// demoScript holds the model's answers for serve --demo (format:
// docs/scripts.md): the boot reads a block and builds a chat face, then a
// few canned chat answers, one of which writes to the stash block. The
// kernel, the store, the compiler and the page do the rest for real.
//
//go:embed demo/serve.json
var demoScript []byte

// demoExcludes are the flags serve --demo sets itself.
var demoExcludes = []string{"provider", "script", "model", "fallback", "base-url", "shell"}

// demoSetup makes serve a demo: the instance lives in --data when given,
// else in a new temporary directory; the scripted provider plays the
// embedded script, written into that directory; the triggers do not run
// (a wake would use the script's answers), and the directory's MCP servers
// are left out (the demo makes no network call). It says on out what the demo is.
// It returns the temporary directory it made ("" with --data): the caller
// removes it when serve fails before it serves, so that no failed demo
// leaves one behind.
func (f *flags) demoSetup(cmd *cobra.Command, out io.Writer) (temp string, err error) {
	for _, name := range demoExcludes {
		if flag := cmd.Flags().Lookup(name); flag != nil && flag.Changed {
			return "", cli.Usagef("--demo serves a scripted instance of its own: drop --%s", name)
		}
	}
	if f.data == "" {
		dir, err := os.MkdirTemp("", "hermitcrab-demo-")
		if err != nil {
			return "", fmt.Errorf("making the demo's data directory: %w", err)
		}
		f.data, temp = dir, dir
	} else if err := os.MkdirAll(f.data, 0o700); err != nil {
		return "", fmt.Errorf("making the demo's data directory: %w", err)
	}
	file := filepath.Join(f.data, "demo-script.json")
	if err := os.WriteFile(file, demoScript, 0o644); err != nil {
		return temp, fmt.Errorf("writing the demo's script: %w", err)
	}
	f.demo = true // no MCP server is contacted: the demo makes no network call
	p := &f.app.Provider
	p.Provider, p.Script, p.Model, p.Fallback, p.BaseURL, p.From = provider.Script, file, "", nil, "", nil
	fmt.Fprintf(out, `hermitcrab demo: this is a demo. A scripted model plays the LLM (its answers are
in %s): no API key, no network, nothing is charged; the costs shown are
what these calls would cost on the models its wake block names for each tier.
The kernel, its blocks, the compiler and the page are real: the instance
boots, builds its face and answers a few messages; the page says it is a demo.
`, file)
	return temp, nil
}
