// Package cli is what the three kernel commands share: a root command
// carrying the provider flags and --version, `ping`, which checks a provider
// set-up with one small request, and the conventions every command keeps:
//
//   - exit statuses (ExitOK … ExitStopped): 0 success, 1 failure, 2 usage
//     error, 3 infeasible, 4 waiting for a human, 5 stopped before the end.
//     Every error cobra finds in the command line exits 2 (StatusOf); a
//     command ends with another status by returning Exit(status, err).
//   - SIGINT (Ctrl-C) and SIGTERM both cancel the command's context; the
//     command stops cleanly. One that fails because of it exits 5; one whose
//     normal end is a signal (a server, a REPL) returns nil and exits 0. A
//     second signal ends the process at once.
//   - --json on read commands: one JSON document on stdout (JSONFlag,
//     PrintJSON).
//   - standard output is checked: a failed write (a full disk, a closed
//     pipe) makes a command that otherwise succeeded exit 1.
//   - a secret (an API key) is read from standard input, never an argument,
//     with the terminal's echo off while it is typed (ReadSecretLine).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/internal/config"
	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
)

// App is a kernel command line.
type App struct {
	Root     *cobra.Command
	Provider provider.Config
	// DefaultModels are the kernel's models by provider where none is
	// configured, which the config command shows; nil for a kernel that
	// chooses its own (hermitcrab's wake block), which then takes only its
	// own model key (hermitcrab.model), never the shared one.
	DefaultModels map[string]string

	configPath     string // --config
	quiet, verbose bool
	output         Output
	file           *config.File
	layers         config.Layers
	settings       []Setting // in force, with their sources, for config
	prepared       bool
}

// New makes the root command of a kernel CLI with the shared provider flags,
// --version and the ping command.
func New(name, short, long string) *App {
	a := &App{Root: &cobra.Command{
		Use:           name,
		Short:         short,
		Long:          long,
		SilenceUsage:  true,
		SilenceErrors: true,
	}}
	// --version is the root's own flag rather than cobra's, whose output
	// goes through text/template: a program that can run a template keeps
	// every exported method of every type it links (the linker cannot tell
	// which a template calls), which made each binary twice its size.
	version := a.Root.Flags().Bool("version", false, "print the version (release or VCS commit, Go version, platform) and exit")
	a.Root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *version {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", name, Version())
			return err
		}
		return cmd.Help()
	}
	a.Provider.AddFlags(a.Root.PersistentFlags())
	a.addSettingsFlags(a.Root.PersistentFlags())
	a.Root.AddCommand(a.pingCommand(), a.configCommand())
	return a
}

// Run executes the command line in os.Args with SIGINT and SIGTERM
// cancelling the context, and exits with the status StatusOf gives (5 when
// a signal stopped a command that then failed; 1 when standard output could
// not be written).
func (a *App) Run() {
	ctx, interrupt, stop := notifySignals(context.Background(), a.Root.Name(), os.Stderr)
	// A closed standard output (lumen run | head -1) stops the command as
	// Ctrl-C does: it has no one left to report to.
	stdout := &checkedWriter{w: os.Stdout, closed: func() { interrupt(outputClosed) }}
	a.Root.SetOut(stdout)
	a.Root.SetErr(os.Stderr)
	status := a.Execute(ctx, os.Args[1:])
	stop()
	if status == ExitOK && signalOf(ctx) == outputClosed {
		status = ExitStopped // said when it closed; the rest was not read
	} else if status == ExitOK && stdout.err != nil {
		fmt.Fprintf(os.Stderr, "%s: writing standard output: %v\n", a.Root.Name(), stdout.err)
		status = ExitFailure
	}
	os.Exit(status)
}

// Execute runs the command line args with ctx, prints any error on the
// root's error writer as "name: message" (with a pointer to --help for a
// usage error), and returns the exit status.
func (a *App) Execute(ctx context.Context, args []string) int {
	a.prepare()
	a.Root.SetArgs(args)
	cmd, err := a.Root.ExecuteContextC(ctx)
	status := StatusOf(err)
	sig := signalOf(ctx)
	if status == ExitFailure && sig != "" {
		status = ExitStopped
	}
	w, name := a.Root.ErrOrStderr(), a.Root.Name()
	exit, carries := errors.AsType[*ExitError](err)
	switch {
	case err == nil:
	case carries && exit.Err == nil:
		// the command has said what happened
	case status == ExitUsage && settingsError(err):
		fmt.Fprintf(w, "%s: %s\n", name, termtext.Block(err.Error())) // the config file or a variable, not the command line
	case status == ExitUsage:
		fmt.Fprintf(w, "%s: %s\nRun '%s --help' for usage.\n", name, termtext.Block(err.Error()), cmd.CommandPath())
	case status == ExitStopped && sig != "":
		fmt.Fprintf(w, "%s: stopped by %s: %s\n", name, sig, termtext.Block(err.Error()))
	default:
		fmt.Fprintf(w, "%s: %s%s\n", name, termtext.Block(err.Error()), flagHint(err)) // errors may quote the model
	}
	return status
}

// settingsError reports whether err is a mistake in the config file or an
// environment variable, which --help does not answer.
func settingsError(err error) bool {
	if fe, ok := errors.AsType[*provider.FlagError](err); ok {
		return fe.FromSettings()
	}
	return errors.As(err, new(*config.FileError)) || errors.As(err, new(*config.EnvError))
}

// flagHint names the flags that answer the runtime's typed errors: package
// llm and the basement speak in no flags, the commands do.
func flagHint(err error) string {
	apiErr, isAPI := llm.AsAPIError(err)
	switch {
	case errors.Is(err, llm.ErrNoModel):
		return " (choose one with --model)"
	case errors.As(err, new(*llm.UnavailableError)):
		return " (try later, or choose other models with --model and --fallback)"
	case errors.As(err, new(*proc.UnavailableError)):
		return " (--unconfined runs it unconfined, with your user's rights)"
	case isAPI && apiErr.Status == 401:
		return " (the provider refused the API key: check ANTHROPIC_API_KEY or OPENAI_API_KEY, or choose another provider with --provider)"
	}
	return ""
}

// prepare makes every error cobra finds in the command line a usage error:
// errors a command's RunE returns are marked as its own (exit 1 unless they
// carry a status), and everything else cobra returns is about the command
// line. A group such as "blocks" refuses an unknown subcommand (cobra would
// print its help and exit 0).
func (a *App) prepare() {
	if a.prepared {
		return
	}
	a.prepared = true
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasParent() && c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return Usagef("unknown command %q for %q", args[0], cmd.CommandPath())
				}
				return cmd.Help()
			}
		}
		if run := c.RunE; run != nil {
			root := c == a.Root // --version and help need no settings
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if !root {
					if err := a.resolve(cmd); err != nil {
						return err
					}
				}
				if err := run(cmd, args); err != nil {
					return &runError{err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.Root)
}

// outputClosed is what stops a command whose standard output's reader has
// gone.
const outputClosed = "standard output closed"

// stoppedBy is the cancellation cause notifySignals records.
type stoppedBy struct{ signal string }

func (s *stoppedBy) Error() string { return "stopped by " + s.signal }

// notifySignals returns a context cancelled by the first SIGINT or SIGTERM
// (on Windows: Ctrl-C, and closing the console window), or by interrupt,
// with a line on w saying so. Default handling is then restored, so a
// second signal ends the process at once, for a user whose command is slow
// to stop. SIGPIPE is caught until stop, so that a write to a closed
// standard output fails (checkedWriter calls interrupt) instead of killing
// the process before it records where it stopped.
func notifySignals(parent context.Context, name string, w io.Writer) (ctx context.Context, interrupt func(why string), stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs, pipe := make(chan os.Signal, 1), make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	signal.Notify(pipe, syscall.SIGPIPE) // never read: it is the write's error that counts
	var once sync.Once
	stopWith := func(why, then string) {
		once.Do(func() {
			fmt.Fprintf(w, "%s: %s: stopping cleanly%s\n", name, why, then)
			cancel(&stoppedBy{why})
		})
	}
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			stopWith(signalName(s), " (send it again to quit at once)")
		case <-done:
		}
	}()
	interrupt = func(why string) { stopWith(why, "") }
	return ctx, interrupt, func() {
		signal.Stop(sigs)
		signal.Stop(pipe)
		close(done)
		cancel(nil)
	}
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalOf names the signal that cancelled ctx, or "".
func signalOf(ctx context.Context) string {
	if s, ok := errors.AsType[*stoppedBy](context.Cause(ctx)); ok {
		return s.signal
	}
	return ""
}

// checkedWriter remembers the first write error, so that a command whose
// output was lost cannot exit 0. Later writes fail with the same error.
type checkedWriter struct {
	w      io.Writer
	err    error
	closed func() // called when the reader has gone (EPIPE)
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
		if errors.Is(err, syscall.EPIPE) && c.closed != nil {
			c.closed()
		}
	}
	return n, err
}

// defaultPingModels are cheap models for ping when --model is not given.
var defaultPingModels = map[string]string{
	provider.Anthropic: llm.DefaultFastModel,
	provider.OpenAI:    "gpt-4o-mini",
	provider.Script:    llm.DefaultFastModel,
}

func (a *App) pingCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ping [PROMPT]",
		Short: "Send one small request to check the provider set-up (key, base URL, model)",
		Long: `Send one small request through the configured provider and print the reply,
the model that answered, tokens, cost and latency. Retries and the --fallback
chain apply as in every kernel call.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt := "Reply with the single word: pong"
			if len(args) == 1 {
				prompt = args[0]
			}
			return a.ping(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), prompt)
		},
	}
}

func (a *App) ping(ctx context.Context, out, notice io.Writer, prompt string) error {
	p := a.Provider
	p.KeyHint = "" // ping takes the environment's key only
	client, err := p.Client(notice)
	if err != nil {
		return err
	}
	model := a.Provider.Model
	if model == "" {
		model = defaultPingModels[a.Provider.Provider]
	}
	client.Observe = CallObserver(notice, a.Output())
	req := &llm.Request{Model: model, MaxTokens: 64, Messages: []llm.Message{llm.UserText(prompt)}}
	if a.Output() >= Verbose {
		fmt.Fprintln(notice, SentLine(req))
	}
	call, err := client.Send(ctx, req)
	if err != nil {
		return err
	}
	u := call.Usage
	cost := fmt.Sprintf("$%.6f%s", call.CostUSD, client.CostNote(call.Model))
	if !call.Priced {
		cost = "unpriced (add the model to a --prices file)"
	}
	fmt.Fprintf(out, "%s answered in %s after %d attempt(s): %q\n", call.Model, Duration(call.Latency), call.Attempts, call.Response.Text())
	fmt.Fprintf(out, "tokens: %d in, %d out, %d cache written, %d cache read; cost %s; stop %s\n",
		u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, cost, call.Response.StopReason)
	return nil
}
