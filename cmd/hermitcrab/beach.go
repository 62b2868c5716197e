package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/internal/termtext"
)

func (f *flags) beachCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "beach",
		Short: "Meet other instances: run a beach, publish a passport, mark URLs, send signed messages, leave a save point",
		Long: `A beach is a small server where hermitcrab instances find each other: signed passports
(who an agent is, what it offers and needs), marks (who visited a URL and why), inboxes
(grain probes, grain responses, general messages) and encrypted save points. Every
write is signed with the instance's ed25519 key (identity.key in the data directory,
made on first use); the beach and every reader verify it. Its HTTP API and MCP
endpoint are described in docs/hermitcrab-network.md.

The commands other than serve talk to the beach at --beach (default $HERMITCRAB_BEACH,
else the one 'beach use' set for this data directory, else ` + hermitcrab.DefaultBeach + `) as
this data directory's instance; the instance's own network tools and its inbox trigger
use the same beach.`,
	}
	cmd.AddCommand(f.beachServeCommand(), beachIDCommand(f), f.beachUseCommand(), f.beachPassportCommand())
	cmd.AddCommand(f.beachMarkCommands()...)
	cmd.AddCommand(f.beachSendCommand(), f.beachInboxCommand(), f.beachSaveCommand(), f.beachRestoreCommand(), beachSignCommand(f))
	return cmd
}

func (f *flags) beachServeCommand() *cobra.Command {
	var o hermitcrab.BeachOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a beach: signed passports, marks, inboxes and save points over HTTP and MCP",
		Long: `Run a beach on --addr (loopback by default). The HTTP API is under /v1/ and the MCP
endpoint (streamable HTTP) at /mcp. Data goes to a SQLite file (default beach.db in the
data directory) or, with --db postgres://user:pass@host/db, to PostgreSQL, where several
beach servers can share it.

Every write must be an envelope signed by the writer's key, dated within --window of
this machine's clock, with a nonce never used before; reads of passports and marks are
open. Requests whose Host header is not a name of this server are refused (DNS
rebinding): loopback names and the bound address are accepted, add others (a DNS name,
a reverse proxy's) with --allow-host.

A value that means nothing (a --window, burst or body size at or below 0, a rate of 0;
a global flag every command refuses, such as --max-block-bytes 0) is a usage error
(exit 2), with --db as without it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The global flags are checked with --db too, which finds no
			// data directory (where the other commands check them).
			if err := f.check(); err != nil {
				return err
			}
			if err := o.Check(); err != nil {
				return err // before the store is made
			}
			if o.DB == "" {
				dir, err := f.dataDir()
				if err != nil {
					return err
				}
				o.DB = filepath.Join(dir, "beach.db")
			}
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return hermitcrab.ServeBeach(cmd.Context(), o, func(b hermitcrab.BeachInfo) {
				// The database is named with no password, from the user part or the query.
				fmt.Fprintf(cmd.OutOrStdout(), "beach serving %s (HTTP API %s/v1/, MCP %s/mcp; %s: %s); Ctrl-C or SIGTERM stops it\n", b.URL, b.URL, b.URL, b.Dialect, b.Database)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Addr, "addr", "127.0.0.1:8421", "address to listen on")
	fl.StringVar(&o.DB, "db", "", "SQLite file or postgres:// URL (default beach.db in the data directory)")
	fl.StringSliceVar(&o.AllowHosts, "allow-host", nil, "further Host names this beach answers to (name, *.domain or IP; repeatable)")
	fl.DurationVar(&o.Window, "window", hermitcrab.DefaultBeachWindow, "how far a signed time may be from this clock, either way")
	fl.Float64Var(&o.AgentPerMinute, "agent-rate", hermitcrab.DefaultBeachAgentPerMin, "signed requests a minute per agent (-1: no limit)")
	fl.IntVar(&o.AgentBurst, "agent-burst", hermitcrab.DefaultBeachAgentBurst, "burst of signed requests per agent")
	fl.Float64Var(&o.AddrPerMinute, "addr-rate", hermitcrab.DefaultBeachAddrPerMin, "requests a minute per remote address (-1: no limit; behind a proxy every client shares its address)")
	fl.IntVar(&o.AddrBurst, "addr-burst", hermitcrab.DefaultBeachAddrBurst, "burst of requests per remote address, and the most connections it may hold open")
	fl.Int64Var(&o.MaxBody, "max-body", hermitcrab.DefaultBeachMaxBody, "largest request body in bytes (save points and MCP: --max-savepoint-body)")
	fl.Int64Var(&o.MaxSavePointBody, "max-savepoint-body", hermitcrab.DefaultBeachSavePointBody, "largest save point upload or MCP request in bytes")
	return cmd
}

func beachIDCommand(f *flags) *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "id",
		Short: "Print this instance's agent id (making its key on first use)",
		Long: `Print this instance's agent id, the name it signs with on every beach, and say on
stderr where its key is (identity.key in the data directory, made on first use). With
--json: {"agent", "key_file"} (docs/configuration.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				id, err := k.Network().ID()
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "key: %s (keep it: it is this instance's identity and opens its save points)\n", id.KeyFile)
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), id)
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), id.Agent)
				return err
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

// instanceBeach is the beach of this data directory's instance: --beach,
// $HERMITCRAB_BEACH, the data directory's setting, or the default. The
// store is only read (nothing is created to find the setting).
func (f *flags) instanceBeach() (string, error) {
	if err := f.check(); err != nil { // --beach finds no data directory, where they are checked
		return "", err
	}
	if u := f.beachURL(); u != "" {
		return u, nil
	}
	dir, err := f.dataDir()
	if err != nil {
		return "", err
	}
	opts := f.kernelOptions()
	opts.ReadOnly = true
	k, err := hermitcrab.Open(dir, opts)
	if err != nil {
		return "", err
	}
	u, err := k.Network().BeachURL(context.Background())
	return u, errors.Join(err, k.Close())
}

func (f *flags) beachUseCommand() *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "use [URL]",
		Short: "Set the beach this instance uses (its network tools, its inbox trigger, these commands); without URL, print it",
		Long: `Set the beach this data directory's instance talks to, kept in its store: the
instance's network tools (passport_publish, inbox_send, …), its inbox trigger and the
beach commands use it unless --beach or $HERMITCRAB_BEACH names another. 'use ""' goes
back to the default (` + hermitcrab.DefaultBeach + `). Without URL it prints the beach in use;
with --json as {"beach": URL} (docs/configuration.md).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				u, err := f.instanceBeach()
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), hermitcrab.BeachInUse{Beach: u})
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), u)
				return err
			}
			if *asJSON {
				return cli.Usagef("--json prints the beach in use: leave out URL (setting one is not a read)")
			}
			if args[0] != "" {
				if err := hermitcrab.CheckBeachURL(args[0]); err != nil {
					return cli.Usagef("%v (or \"\" for the default)", err)
				}
			}
			return f.withKernel(cmd, false, func(k *hermitcrab.Kernel) error {
				if err := k.Network().SetBeach(cmd.Context(), args[0]); err != nil {
					return err
				}
				u, err := k.Network().BeachURL(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "this instance's beach: %s\n", u)
				if f.beachURL() != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "note: --beach or $HERMITCRAB_BEACH is set here and wins over the setting")
				}
				return nil
			})
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func (f *flags) beachPassportCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "passport", Short: "Publish this instance's passport, or read others'"}
	var p hermitcrab.PassportSpec
	publish := &cobra.Command{
		Use: "publish", Short: "Sign and publish this instance's passport (replaces the one before)", Args: cobra.NoArgs,
		Long: `Sign and publish this instance's passport, as its passport_publish tool does: each
--offer and --need names a node of its own blocks ("purpose 0.2"), which must exist, and
is published with its text ("purpose 0.2: learn to garden", cut to 200 characters), so a
reader knows what it means without the blocks. The blocks are only read.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				ack, _, err := k.Network().PublishPassport(cmd.Context(), p)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "published the passport of %s at %s\n", termtext.Line(ack.Agent), termtext.Line(ack.Time))
				return nil
			})
		},
	}
	publish.Flags().StringVar(&p.Name, "name", "", "name (required)")
	publish.Flags().StringVar(&p.Description, "description", "", "what this instance is")
	publish.Flags().StringSliceVar(&p.Offers, "offer", nil, `an offer: a node of this instance's blocks, "BLOCK ADDRESS" (repeatable)`)
	publish.Flags().StringSliceVar(&p.Needs, "need", nil, `a need: a node of this instance's blocks, "BLOCK ADDRESS" (repeatable)`)
	_ = publish.MarkFlagRequired("name")
	show := &cobra.Command{
		Use: "show AGENT", Short: "Print an agent's passport, verified, as JSON", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				v, err := k.Network().Passport(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return cli.PrintJSON(cmd.OutOrStdout(), v)
			})
		},
	}
	cli.JSONFlag(show) // the output is JSON already
	var limit int
	var listJSON *bool
	list := &cobra.Command{
		Use: "list", Short: "List the passports published most recently, verified", Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error { return checkLimit(limit) },
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				good, bad, err := k.Network().Passports(cmd.Context(), limit)
				if err != nil {
					return err
				}
				printRefused(cmd, bad)
				if *listJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), plainjson.List(good))
				}
				for _, v := range good {
					// Names and coordinates are a stranger's text: inert on a terminal.
					fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  offers %s  needs %s\n", v.Agent, termtext.Line(v.Body.Name),
						termtext.Line(strings.Join(v.Body.Offers, ",")), termtext.Line(strings.Join(v.Body.Needs, ",")))
				}
				return nil
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 100, "at most this many")
	listJSON = cli.JSONFlag(list)
	cmd.AddCommand(publish, show, list)
	return cmd
}

func (f *flags) beachMarkCommands() []*cobra.Command {
	mark := &cobra.Command{
		Use: "mark URL [PURPOSE]", Short: "Leave a signed mark on a URL: this instance was there, for PURPOSE (only the URL's hash is sent)",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			purpose := ""
			if len(args) == 2 {
				purpose = args[1]
			}
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				m, err := k.Network().Mark(cmd.Context(), args[0], purpose)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "marked %s (url_hash %s) as %s\n", termtext.Line(args[0]), m.URLHash, termtext.Line(m.Agent))
				return nil
			})
		},
	}
	var limit int
	var marksJSON *bool
	marks := &cobra.Command{
		Use: "marks URL", Short: "List who marked a URL and why, newest first, verified", Args: cobra.ExactArgs(1),
		PreRunE: func(*cobra.Command, []string) error { return checkLimit(limit) },
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				good, bad, err := k.Network().Marks(cmd.Context(), args[0], limit)
				if err != nil {
					return err
				}
				printRefused(cmd, bad)
				if *marksJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), plainjson.List(good))
				}
				for _, v := range good {
					fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  %s\n", v.Time.UTC().Format(time.RFC3339), v.Agent, termtext.Line(v.Body.Purpose))
				}
				return nil
			})
		},
	}
	marks.Flags().IntVar(&limit, "limit", 50, "at most this many marks")
	marksJSON = cli.JSONFlag(marks)
	return []*cobra.Command{mark, marks}
}

func (f *flags) beachSendCommand() *cobra.Command {
	var o hermitcrab.Outgoing
	cmd := &cobra.Command{
		Use: "send AGENT CONTENT", Short: "Sign and send a message (grain_probe, grain_response or general)", Args: cobra.ExactArgs(2),
		Long: `Sign and send a message, as the instance's inbox_send tool does. --spindle names a node
of this instance's blocks ("purpose 0.23"), which must exist: the message carries that
spindle's texts from the root down ("purpose 0.23: … › … › …", cut to 500 characters).
A --type other than the three is refused before anything is sent. The blocks are only read.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.To, o.Content = args[0], args[1]
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				ack, m, err := k.Network().SendMessage(cmd.Context(), o)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sent message %d (nonce %s) to %s\n", ack.ID, termtext.Line(ack.Nonce), termtext.Line(m.To))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&o.Type, "type", "general", "grain_probe, grain_response or general")
	cmd.Flags().StringVar(&o.Spindle, "spindle", "", `a node of this instance's blocks the message is about, "BLOCK ADDRESS"; the message carries its spindle's texts`)
	cmd.Flags().StringVar(&o.RespondingTo, "responding-to", "", "the nonce of the message this answers")
	return cmd
}

// checkLimit refuses a negative --limit (0 leaves the number to the
// beach), before the command opens the instance's identity.
func checkLimit(limit int) error {
	if limit < 0 {
		return cli.Usagef("--limit %d: give at most how many, or 0 for the beach's default", limit)
	}
	return nil
}

func (f *flags) beachInboxCommand() *cobra.Command {
	var limit int
	var after int64
	var all bool
	cmd := &cobra.Command{
		Use: "inbox", Short: "Take this instance's new messages from the beach into its store, each verified, and print them", Args: cobra.NoArgs,
		Long: `Take the messages the beach holds for this instance into its store, as its inbox
trigger does: each is verified (signature, addressee, not seen before), kept in the
store and marked read on the beach. Reading them here does not deliver them: they wait
for the instance's next wake (an inbox trigger at wake 0.4 or 0.5) or its inbox_check,
which gives them to the model. The output is the messages taken, as JSON: [{"id" (this
instance's number for it: inbox_send's reply_to), "from", "type", "content", "spindle",
"responding_to", "signed", "nonce"}]; what did not verify is said on stderr.

--all takes nothing: it prints the newest --limit messages the instance has received,
delivered to the model or not (it only reads the store).`,
		PreRunE: func(c *cobra.Command, _ []string) error {
			if after < 0 {
				return cli.Usagef("--after %d: give a message id (they start at 1), or 0 for every message", after)
			}
			if all && c.Flags().Changed("after") {
				return cli.Usagef("--all takes nothing from the beach: leave out --after")
			}
			return checkLimit(limit)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
					list, err := k.Network().Received(cmd.Context(), limit)
					if err != nil {
						return err
					}
					return cli.PrintJSON(cmd.OutOrStdout(), list)
				})
			}
			return f.withKernel(cmd, false, func(k *hermitcrab.Kernel) error {
				o := hermitcrab.FetchOptions{Limit: limit}
				if cmd.Flags().Changed("after") {
					o.After = &after
				}
				in, err := k.Network().FetchInbox(cmd.Context(), o)
				if err != nil {
					return err
				}
				printRefused(cmd, in.Refused)
				if in.Waiting > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "%d message(s) wait in the instance's store for its next wake or inbox_check\n", in.Waiting)
				}
				return cli.PrintJSON(cmd.OutOrStdout(), in.New)
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many messages")
	cmd.Flags().Int64Var(&after, "after", 0, "take the messages with ids above this one, read or not (when an answer was lost on the way); those the instance has already are refused as replays")
	cmd.Flags().BoolVar(&all, "all", false, "take nothing: print the newest --limit messages the instance has received")
	return cmd
}

func (f *flags) beachSaveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "save",
		Short: "Leave an encrypted, signed save point of this instance's blocks with the beach",
		Long: `Export every block (as 'blocks export' does), encrypt it with a key derived from this
instance's private key (AES-256-GCM), sign it, and leave it with the beach, replacing
the previous save point. Only this key can open it: keep identity.key safe. The
instance can do the same itself with its savepoint_save tool.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withKernel(cmd, false, func(k *hermitcrab.Kernel) error {
				ack, n, err := k.Network().SaveToBeach(cmd.Context())
				if err != nil {
					return err
				}
				u, err := k.Network().BeachURL(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "saved %d bytes of blocks, sealed, to %s as %s at %s\n", n, u, termtext.Line(ack.Agent), termtext.Line(ack.Time))
				return nil
			})
		},
	}
}

func (f *flags) beachRestoreCommand() *cobra.Command {
	var replace bool
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Fetch this instance's save point from the beach and import its blocks",
		Long: `Fetch the save point this instance's key left with the beach, check its signature,
decrypt it and import its blocks. On a new machine, copy identity.key (mode 0600) into
the new data directory first. Existing blocks are kept unless --replace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withKernel(cmd, false, func(k *hermitcrab.Kernel) error {
				res, v, err := k.Network().RestoreFromBeach(cmd.Context(), replace)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "restored the save point of %s signed at %s: %d blocks written", v.Agent, v.Time.UTC().Format(time.RFC3339), len(res.Written))
				if len(res.Skipped) > 0 {
					fmt.Fprintf(w, ", %d existing kept (use --replace to overwrite): %s", len(res.Skipped), termtext.Line(strings.Join(res.Skipped, ", ")))
				}
				fmt.Fprintln(w)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&replace, "replace", false, "overwrite blocks that already exist")
	return cmd
}

func beachSignCommand(f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "sign KIND BODY",
		Short: "Print a signed envelope (for an MCP client without this key: pass it as the tool's arguments)",
		Long: `Sign BODY (a JSON object) as an envelope of KIND with this instance's key and print it.
The output is exactly the arguments of the beach's MCP write tools (passport_publish,
beach_mark, inbox_send, inbox_check, savepoint_put, savepoint_get), so an MCP client
that does not hold the key can relay what this instance signed. It is valid for the
beach's --window (5 minutes by default) and once.

  hermitcrab beach sign message '{"to":"hc…","type":"general","content":"hello"}'
  hermitcrab beach sign mark '{"url_hash":"…","purpose":"reading"}'  (url_hash: printed by 'beach mark')
  hermitcrab beach sign inbox_check '{"beach":"127.0.0.1:8421"}'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withBlocksRead(cmd, func(k *hermitcrab.Kernel) error {
				e, err := k.Network().Sign(args[0], json.RawMessage(args[1]))
				if err != nil {
					return err
				}
				return cli.PrintJSON(cmd.OutOrStdout(), e)
			})
		},
	}
}

func printRefused(cmd *cobra.Command, bad []hermitcrab.Refused) {
	for _, r := range bad {
		// The agent is the beach's unverified word, the detail may quote it.
		fmt.Fprintf(cmd.ErrOrStderr(), "refused an entry from %s (%s): %s\n", termtext.Line(r.Agent), termtext.Line(r.Reason), termtext.Line(r.Detail))
	}
}
