package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/cli"
	"github.com/llmkernels/kernels/internal/provider"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/lumen"
)

// The model's answers for run --demo (format: docs/scripts.md), those of
// the docs' walk-through: demoChatScript for two chat turns (the second
// makes the agent reflect and choose its first values and goals), then
// demoRunScript for two cycles of its own loop. The kernel does everything
// else for real.
var (
	//go:embed demo/demo-chat.json
	demoChatScript []byte
	//go:embed demo/demo-run.json
	demoRunScript []byte
)

// demoChat is what the person says in the demo, before the run.
var demoChat = []string{"Hello! Who are you?", "Please take a moment to reflect on who you want to be."}

// demoCycles is how many cycles the demo's run makes.
const demoCycles = 2

// demoFlags is lumen run's --demo.
type demoFlags struct{ on bool }

func (d *demoFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&d.on, "demo", false, fmt.Sprintf("try it without a key: make a new instance (in --dir if given, else a new temporary directory), talk with it for two turns and run %d cycles, on a scripted model, offline and free", demoCycles))
}

// demoExcludes are the flags run --demo sets itself.
var demoExcludes = []string{"provider", "script", "model", "fallback", "base-url", "cycles", "interval", "for", "embedding-url"}

// prepare makes the demo's instance and plays its chat turns, then leaves
// ro set for the short run that follows. It says what the demo is on out,
// the turns' decisions on errw.
func (d *demoFlags) prepare(cmd *cobra.Command, app *cli.App, o *options, ro *lumen.RunOptions) (err error) {
	for _, name := range demoExcludes {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return cli.Usagef("--demo runs a scripted instance of its own: drop --%s", name)
		}
	}
	if !cmd.Flags().Changed("dir") {
		if o.dir, err = os.MkdirTemp("", "lumen-demo-"); err != nil {
			return fmt.Errorf("making the demo's directory: %w", err)
		}
	}
	ctx, out, errw := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if _, err := lumen.Init(ctx, o.dir); err != nil {
		return err
	}
	chatFile, runFile := filepath.Join(o.dir, ".lumen-demo-chat.json"), filepath.Join(o.dir, ".lumen-demo-run.json")
	for file, data := range map[string][]byte{chatFile: demoChatScript, runFile: demoRunScript} {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return fmt.Errorf("writing the demo's script: %w", err)
		}
	}
	p := &app.Provider
	p.Provider, p.Script, p.Model, p.Fallback, p.BaseURL, p.From = provider.Script, chatFile, "", nil, "", nil
	fmt.Fprintf(out, `lumen demo: this is a demo. A scripted model plays the LLM (its answers are in
%s): no API key, no network, nothing is charged. The kernel is
real: it scores every choice, runs the chat skill, enforces who may write
what and records every step as a memory.
demo instance: %s
First, two chat turns, as 'lumen chat' would have them; then %d cycles of its own loop.
`, filepath.Join(o.dir, ".lumen-demo-*.json"), o.dir, demoCycles)
	in, err := o.open(app, errw, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, in.Close()) }()
	for _, line := range demoChat {
		fmt.Fprintf(out, "you> %s\n", line)
		rep, err := in.Chat(ctx, line)
		if err != nil {
			return fmt.Errorf("the demo's chat turn %q: %w", line, err)
		}
		fmt.Fprintln(errw, termtext.Block(rep.Text()))
		fmt.Fprintf(out, "lumen> %s\n", termtext.Block(rep.Reply()))
	}
	ro.Cycles, ro.Interval = demoCycles, 0
	p.Script = runFile
	return nil
}

// done says where to look once the demo has run.
func (d *demoFlags) done(w io.Writer, dir string) {
	fmt.Fprintf(w, `demo finished. Look at what it did:
  lumen status --dir %[1]s     its values, goals and recent memories
  lumen audit --dir %[1]s      every step checked against the record
  lumen chat --dir %[1]s       talk on (with a key: set ANTHROPIC_API_KEY, or see --provider)
`, dir)
}
