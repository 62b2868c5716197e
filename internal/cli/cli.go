// Package cli is what the three kernel commands share: a root command
// carrying the provider flags, and `ping`, which checks a provider set-up
// with one small request.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/provider"
	"github.com/llmkernels/kernels/llm"
)

// App is a kernel command line.
type App struct {
	Root     *cobra.Command
	Provider provider.Config
}

// New makes the root command of a kernel CLI with the shared provider flags
// and the ping command.
func New(name, short, long string) *App {
	a := &App{Root: &cobra.Command{
		Use:           name,
		Short:         short,
		Long:          long,
		SilenceUsage:  true,
		SilenceErrors: true,
	}}
	a.Provider.AddFlags(a.Root.PersistentFlags())
	a.Root.AddCommand(a.pingCommand())
	return a
}

// Run executes the command line and exits: 0 on success, 1 on error (the
// error printed as "name: message"). Ctrl-C cancels the context.
func (a *App) Run() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := a.Root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", a.Root.Name(), err)
		os.Exit(1)
	}
}

// defaultPingModels are cheap models for ping when --model is not given.
var defaultPingModels = map[string]string{
	provider.Anthropic: "claude-haiku-4-5",
	provider.OpenAI:    "gpt-4o-mini",
	provider.Script:    "scripted",
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
	client, err := a.Provider.Client(notice)
	if err != nil {
		return err
	}
	model := a.Provider.Model
	if model == "" {
		model = defaultPingModels[a.Provider.Provider]
	}
	call, err := client.Send(ctx, &llm.Request{Model: model, MaxTokens: 64, Messages: []llm.Message{llm.UserText(prompt)}})
	if err != nil {
		return err
	}
	u := call.Usage
	cost := fmt.Sprintf("$%.6f", call.CostUSD)
	if !call.Priced {
		cost = "unpriced (add the model to a --prices file)"
	}
	fmt.Fprintf(out, "%s answered in %s after %d attempt(s): %q\n", call.Model, call.Latency.Round(1e6), call.Attempts, call.Response.Text())
	fmt.Fprintf(out, "tokens: %d in, %d out, %d cache written, %d cache read; cost %s; stop %s\n",
		u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, cost, call.Response.StopReason)
	return nil
}
