package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/lumen"
)

// The model's answers for the demos (format: docs/scripts.md). run --demo
// plays the docs' walk-through: demoChatScript for two chat turns (the
// second makes the agent reflect and choose its first values and goals),
// then demoRunScript for two cycles of its own loop. chat --demo plays
// demoTalkScript: four turns of canned answers, whatever is typed. The
// kernel does everything else for real.
var (
	//go:embed demo/demo-chat.json
	demoChatScript []byte
	//go:embed demo/demo-run.json
	demoRunScript []byte
	//go:embed demo/chat.json
	demoTalkScript []byte
)

// demoChat is what the person says in run --demo, before the run.
var demoChat = []string{"Hello! Who are you?", "Please take a moment to reflect on who you want to be."}

// demoCycles is how many cycles run --demo makes.
const demoCycles = 2

// demoFlags is the --demo of lumen run and lumen chat.
type demoFlags struct{ on bool }

// demoExcludes are the flags --demo sets itself, and those its script
// cannot follow: a reflection every cycle asks what the script does not
// answer, and its model has no price for a cap or a prices file to count
// (nothing is charged). Each is refused before the instance is made, so a
// refused demo leaves nothing in --dir.
var demoExcludes = []string{"provider", "script", "model", "fallback", "base-url", "cycles", "interval", "for", "embedding-url",
	"reflect-every", "max-cost", "max-cost-day", "prices"}

// instance makes the demo's instance (in --dir when given, else a new
// temporary directory), writes the scripts into it and points the provider
// at the first. It returns the scripts' files, in order.
func (d *demoFlags) instance(cmd *cobra.Command, app *cli.App, o *options, scripts ...[]byte) (files []string, err error) {
	for _, name := range demoExcludes {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return nil, cli.Usagef("--demo runs a scripted instance of its own: drop --%s", name)
		}
	}
	if !cmd.Flags().Changed("dir") {
		if o.dir, err = os.MkdirTemp("", "lumen-demo-"); err != nil {
			return nil, fmt.Errorf("making the demo's directory: %w", err)
		}
	}
	if _, err := lumen.Init(cmd.Context(), o.dir); err != nil {
		return nil, err
	}
	for i, data := range scripts {
		file := filepath.Join(o.dir, fmt.Sprintf(".lumen-demo-%d.json", i+1))
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return nil, fmt.Errorf("writing the demo's script: %w", err)
		}
		files = append(files, file)
	}
	p := &app.Provider
	p.Provider, p.Script, p.Model, p.Fallback, p.BaseURL, p.From = provider.Script, files[0], "", nil, "", nil
	fmt.Fprintf(cmd.OutOrStdout(), `lumen demo: this is a demo. A scripted model plays the LLM (its answers are in
%s): no API key, no network, nothing is charged; the costs shown are
what these calls would cost on %s. The kernel is real: it scores every
choice, runs the chat skill, enforces who may write what and records every
step as a memory.
demo instance: %s
`, filepath.Join(o.dir, ".lumen-demo-*.json"), defaultModels[provider.Script], o.dir)
	return files, nil
}

// prepareRun makes run --demo's instance and plays its chat turns, then
// leaves ro set for the short run that follows. The turns' decisions go to
// errw, as in lumen chat.
func (d *demoFlags) prepareRun(cmd *cobra.Command, app *cli.App, o *options, ro *lumen.RunOptions) (err error) {
	files, err := d.instance(cmd, app, o, demoChatScript, demoRunScript)
	if err != nil {
		return err
	}
	ctx, out, errw := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	fmt.Fprintf(out, "First, two chat turns, as 'lumen chat' would have them; then %d cycles of its own loop.\n", demoCycles)
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
	app.Provider.Script = files[1]
	return nil
}

// prepareChat makes chat --demo's instance.
func (d *demoFlags) prepareChat(cmd *cobra.Command, app *cli.App, o *options) error {
	if _, err := d.instance(cmd, app, o, demoTalkScript); err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), "It has four answers, written in advance, whatever you type; Ctrl-C or end of input leaves.")
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
