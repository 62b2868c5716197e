package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
)

func (f *flags) wakeCommand() *cobra.Command {
	var daemon, withMCP bool
	var addr string
	var allowHosts []string
	var interval time.Duration
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "wake",
		Short: "Run the wake triggers the instance wrote (wake 0.4 and 0.5): once, or headless with --daemon",
		Long: `The instance programs its own attention at wake 0.4 (internal triggers) and 0.5
(external ones), one line per digit, in a form the kernel reads:

  every 6h tier 1: check stash            a rhythm, from when the line was written
  daily 09:00 tier 2: plan the day        a time of day (this machine's zone, or daily 09:00 Europe/Paris)
  stale stash after 3d tier 1: tidy it    a block unchanged for 3 days
  inbox tier 1                            a message on the beach (polled every minute; inbox every 5m tier 1)
  webhook deploy tier 1: check the build  an authenticated POST to /hooks/deploy
  watch https://example.org every 1h tier 1: what changed?   a page whose content changed
  cap 24 wakes a day / cap $0.50 a day    caps (only lower than --max-wakes, --max-wake-cost)

A due trigger wakes the instance at its tier with a message saying which trigger fired
and why; the wake is a call like any other, on the conversation "wake", auto-saved to
history. Next due times are stored in the data directory, so triggers survive restarts,
and a due time fires once even when several processes share the data directory. A wake
that would pass a daily cap is skipped and logged. The cost caps are bounds: every LLM
request a wake makes (its tools' too: call_llm, compress) is reserved before it is sent
at the most it can cost (its bytes as input tokens, all of max_tokens as output, at the
model's prices; a model missing from the price table at the table's highest prices) and
refused when that does not fit what the caps leave; a wake whose first request is refused
is recorded as skipped, saying why. An inbox trigger may spend half of each cap. A
message or webhook post counts as delivered only once the model answered a wake that
carried it: a wake that failed before gives it back to the next (its trigger waits a
minute, doubling up to an hour, while wakes fail). A wake still running after 30 minutes
is ended (failed; its turns are kept for the next wake). 'hermitcrab serve' runs the
triggers too while it runs.

Without --daemon: one pass, for cron or another scheduler; it prints what fired. With
--daemon: a pass every --interval until Ctrl-C or SIGTERM; with --addr it also takes
webhook posts (and, with --mcp, serves the MCP endpoint over the blocks) there. The
daemon logs one line per LLM call (tier, model, tokens, cost and the share of input
read from the prompt cache, seconds) and prints one per wake; --quiet leaves the
calls' lines out.
'hermitcrab wake status' shows the triggers, their next due times and today's wakes;
'hermitcrab wake hooks' the webhook URLs and secret.

With --json (one pass only): {"wakes": [...], "problems": [...], "errors": [...]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if *asJSON && daemon {
				return cli.Usagef("--json is for one pass: leave out --daemon")
			}
			if !daemon && (addr != "" || withMCP) {
				return cli.Usagef("--addr and --mcp serve while the daemon runs: add --daemon")
			}
			if interval <= 0 {
				return cli.Usagef("--interval %s: give how often the triggers are checked, e.g. 15s", interval)
			}
			if daemon {
				f.headless = true
				return f.withDaemonKernel(cmd, interval, func(k *hermitcrab.Kernel) error {
					return runDaemon(cmd, k, f.logger(cmd.ErrOrStderr()), addr, allowHosts, withMCP, interval)
				})
			}
			return f.withKernel(cmd, true, func(k *hermitcrab.Kernel) error {
				r, err := k.Wakes().RunTriggers(cmd.Context())
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), r)
				}
				printReport(cmd.OutOrStdout(), r)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&daemon, "daemon", false, "keep running: check the triggers every --interval until Ctrl-C or SIGTERM")
	cmd.Flags().DurationVar(&interval, "interval", 15*time.Second, "with --daemon: how often the triggers are checked")
	cmd.Flags().StringVar(&addr, "addr", "", "with --daemon: also listen here for webhook posts (/hooks/NAME) and, with --mcp, MCP clients")
	cmd.Flags().StringSliceVar(&allowHosts, "allow-host", nil, "with --addr: further Host names this listener answers to (name, *.domain or IP; repeatable)")
	cmd.Flags().BoolVar(&withMCP, "mcp", false, "with --addr: serve an MCP endpoint over the instance's blocks at /mcp (token: mcp_token in the data directory)")
	asJSON = cli.JSONFlag(cmd)
	cmd.AddCommand(f.wakeStatusCommand(), f.wakeHooksCommand())
	return cmd
}

func runDaemon(cmd *cobra.Command, k *hermitcrab.Kernel, log *slog.Logger, addr string, allowHosts []string, withMCP bool, interval time.Duration) error {
	ctx := cmd.Context()
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	served := make(chan error, 1)
	if addr != "" {
		ready := make(chan string, 1)
		go func() {
			served <- hermitcrab.ServeEndpoints(ctx, k, hermitcrab.EndpointOptions{Addr: addr, AllowHosts: allowHosts, MCP: withMCP, Log: log},
				func(u string) { ready <- u })
		}()
		select {
		case u := <-ready:
			fmt.Fprintf(out, "webhooks at %s/hooks/NAME (hermitcrab wake hooks prints the secret)\n", u)
			if withMCP {
				printMCP(out, u, k)
			}
		case err := <-served:
			return err
		}
	} else {
		served <- nil
	}
	fmt.Fprintf(out, "running the wake triggers of %s every %s; Ctrl-C or SIGTERM stops it\n", k.Dir(), interval)
	if err := sayNoTriggers(ctx, out, k); err != nil {
		return err
	}
	k.Wakes().Run(ctx, interval, func(r *hermitcrab.WakeReport, err error) {
		if err != nil {
			fmt.Fprintln(errOut, "error:", termtext.Line(err.Error())) // it may quote the API or the model
			return
		}
		printReport(out, r)
	})
	return <-served
}

// printReport says what a pass did, one line per wake.
func printReport(w io.Writer, r *hermitcrab.WakeReport) {
	for _, p := range r.Problems {
		fmt.Fprintln(w, "problem:", termtext.Line(p))
	}
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", termtext.Line(e))
	}
	scripted := false
	for _, wk := range r.Wakes {
		line := fmt.Sprintf("%s %s tier %d %s: %s", wk.At.Local().Format("2006-01-02 15:04:05"), wk.Where, wk.Tier, wk.Status, wk.Reason)
		switch {
		case wk.ScriptedUSD > 0: // starred, and the star explained once below
			line += fmt.Sprintf(" ($%.4f*)", wk.CostUSD)
			scripted = true
		case wk.CostUSD > 0:
			line += fmt.Sprintf(" ($%.4f)", wk.CostUSD)
		}
		if wk.Reply != "" {
			line += " — " + strings.Join(strings.Fields(wk.Reply), " ")
		}
		fmt.Fprintln(w, termtext.Line(line))
	}
	if len(r.Wakes) == 0 && len(r.Errors) == 0 {
		fmt.Fprintln(w, "no trigger was due")
	}
	if scripted {
		fmt.Fprintln(w, "* "+llm.ScriptedNote())
	}
}

func (f *flags) wakeStatusCommand() *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the triggers, their next due times, the caps in force and today's wakes",
		Long: `Show the triggers read from wake 0.4 and 0.5 with their next due times and last
errors, the lines the kernel cannot read, the daily caps in force, today's wakes and
cost (with the share of their input read from the prompt cache), and the recent
wakes. With --json: {"triggers", "problems", "caps", "today", "recent"}
(docs/configuration.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				s, err := k.Wakes().Status(cmd.Context())
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), s)
				}
				w := cmd.OutOrStdout()
				if len(s.Triggers) == 0 {
					fmt.Fprintln(w, "no triggers at wake 0.4 or 0.5")
				}
				for _, t := range s.Triggers {
					next := "when it happens"
					if !t.NextDue.IsZero() {
						next = t.NextDue.Local().Format("2006-01-02 15:04")
					}
					fmt.Fprintf(w, "%s  %s  (tier %d; next %s)\n", t.Where, termtext.Line(t.Line), t.Tier, next)
					if t.Error != "" {
						fmt.Fprintf(w, "    last error: %s\n", termtext.Line(t.Error))
					}
				}
				for _, p := range s.Problems {
					fmt.Fprintln(w, "problem:", termtext.Line(p))
				}
				fmt.Fprintf(w, "caps: %d wakes and $%.2f a day; today (%s): %d wakes, %s%s\n", s.Caps.Wakes, s.Caps.CostUSD, s.Today.Day, s.Today.Wakes,
					llm.CostLine(s.Today.CostUSD, s.Today.Usage.Tokens), s.Today.Usage.ScriptedPart())
				for _, wk := range s.Recent {
					line := termtext.Line(fmt.Sprintf("  #%d %s %s %s: %s", wk.ID, wk.At.Local().Format("2006-01-02 15:04"), wk.Where, wk.Status, wk.Reason))
					if wk.Reply != "" {
						line += " — " + cli.Line(wk.Reply, 300)
					}
					fmt.Fprintln(w, line)
				}
				return nil
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func (f *flags) wakeHooksCommand() *cobra.Command {
	var (
		asJSON *bool
		addr   string
	)
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Print the webhook URLs of the instance's webhook triggers and the secret a post must carry",
		Long: `Print, for each "webhook NAME" trigger at wake 0.5, the path a sender POSTs to, and
the instance's webhook secret (webhook_secret in the data directory, 0600, made on first
use). A post carries it as "Authorization: Bearer SECRET", or signs its body:
"X-Hub-Signature-256: sha256=HMAC-SHA256(SECRET, body)" (GitHub's form). Posts go to
'hermitcrab serve' (its address) or to 'hermitcrab wake --daemon --addr ADDR'; the
example curl line posts to --addr (serve's default; give the daemon's for a headless
instance).

With --json: {"hooks": [{"name", "path", "where", "line"}], "secret", "secret_file"}
(docs/configuration.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				doc, err := k.Wakes().Hooks(cmd.Context())
				if err != nil {
					return err
				}
				secret := doc.Secret
				w := cmd.OutOrStdout()
				if *asJSON {
					return cli.PrintJSON(w, doc)
				}
				for _, h := range doc.Hooks {
					fmt.Fprintf(w, "POST %s  (%s: %s)\n", termtext.Line(h.Path), h.Where, termtext.Line(h.Line))
				}
				if len(doc.Hooks) == 0 {
					fmt.Fprintln(w, `no webhook triggers yet: the instance writes "webhook NAME tier 1: ..." at wake 0.5`)
				}
				fmt.Fprintf(w, "secret: %s (%s)\n", secret, doc.SecretFile)
				path := "/hooks/NAME"
				if len(doc.Hooks) > 0 {
					path = doc.Hooks[0].Path
				}
				fmt.Fprintf(w, "example (to --addr %s): curl -X POST -H 'Authorization: Bearer %s' --data '{\"event\":\"deploy\"}' http://%s%s\n", addr, secret, addr, termtext.Line(path))
				return nil
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8420", "where the instance takes webhooks, for the example: hermitcrab serve's --addr, or wake --daemon's")
	return cmd
}

// printMCP says how an MCP client connects to the instance's blocks,
// without printing the token itself.
func printMCP(w io.Writer, base string, k *hermitcrab.Kernel) {
	root := strings.TrimSuffix(strings.SplitN(base, "?", 2)[0], "/") // no page token, no trailing slash
	fmt.Fprintf(w, "MCP endpoint over the blocks: %s/mcp (bearer token in %s)\n", root, k.Secrets().MCPTokenPath())
	fmt.Fprintf(w, "  claude mcp add --transport http hermitcrab %s/mcp --header \"Authorization: Bearer $(cat %s)\"\n", root, k.Secrets().MCPTokenPath())
}
