// Command hermitcrab runs the Hermitcrab kernel: an LLM that wakes into
// pscale blocks and builds its own interface (docs/hermitcrab.md).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
)

type flags struct {
	app           *cli.App
	data          string
	shell         string
	noPTC         bool
	maxBlockBytes int
	webAllow      []string
	webDeny       []string
	beach         string
	caps          hermitcrab.Caps
	mcpTimeout    time.Duration
	mcpConnector  bool
	// live shows the answers as they stream and the progress lines
	// between them, as --quiet and --verbose say; open makes it.
	live *cli.Live
	// headless: a command no person watches (wake --daemon) logs one
	// line per call instead of showing progress.
	headless bool
	// demo: serve --demo, whose kernel contacts no MCP server.
	demo bool
}

// logger is the log of a server or daemon, as --quiet and --verbose say:
// warnings only, or also one line per LLM call and wake, or debug too.
func (f *flags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	switch f.app.Output() {
	case cli.Quiet:
		level = slog.LevelWarn
	case cli.Verbose:
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func main() {
	f := &flags{app: cli.New("hermitcrab", "An LLM that wakes into pscale blocks and builds its own React interface",
		`Hermitcrab keeps an LLM instance in pscale JSON blocks (constitution, touchstone,
capabilities, cook, wake, purpose, relationships, history, stash). Each call compiles
the system prompt from the blocks as the wake block's recipe says, with the model the
wake block names; the LLM reads and rewrites its blocks through tools, and builds its
own React interface with recompile.

'hermitcrab serve' runs it as a local web server: open the URL it prints, give your
API key once, and the instance boots and builds its interface in the page. The same
kernel works from the terminal: blocks, bsp, prompt, boot and chat. See
docs/hermitcrab.md. Try it without a key: 'hermitcrab serve --demo' (a scripted
instance, offline and free).

'hermitcrab beach' runs a beach where instances meet (signed passports, marks and
messages over HTTP and MCP) and talks to one as this instance: its key, passport,
marks, inbox and encrypted save points. See docs/hermitcrab-network.md.`)}
	f.app.Provider.KeyHint = "store one with 'hermitcrab key set'"
	f.app.Provider.Demo = "hermitcrab serve --demo"
	pf := f.app.Root.PersistentFlags()
	pf.StringVar(&f.data, "data", "", "data directory (default $HERMITCRAB_DATA, else $XDG_DATA_HOME/hermitcrab or ~/.local/share/hermitcrab)")
	pf.StringVar(&f.shell, "shell", "", "seed an empty store from this shell file ({\"blocks\": {...}} or a map of blocks) instead of the default shell")
	pf.BoolVar(&f.noPTC, "no-ptc", false, "stop code execution from calling the read-only tools (programmatic tool calling is on by default)")
	pf.Bool("ptc", true, "programmatic tool calling (now on by default; --no-ptc turns it off)")
	if err := pf.MarkDeprecated("ptc", "programmatic tool calling is on by default; use --no-ptc to turn it off"); err != nil {
		panic(err) // the flag is declared just above: a build defect
	}
	pf.IntVar(&f.maxBlockBytes, "max-block-bytes", 64<<10, "largest block a write may leave, in bytes")
	pf.StringSliceVar(&f.webAllow, "web-allow", nil, "hosts web_request may reach (comma-separated names, *.example.com, IPs or CIDR networks); allowing a host by name also allows its private address")
	pf.StringSliceVar(&f.webDeny, "web-deny", nil, "hosts web_request may never reach (names, *.example.com, IPs or CIDR networks such as 10.0.0.0/8)")
	pf.StringVar(&f.beach, "beach", "", "beach URL this instance talks to (default $HERMITCRAB_BEACH, else the one set with 'beach use', else "+hermitcrab.DefaultBeach+")")
	pf.IntVar(&f.caps.Wakes, "max-wakes", hermitcrab.DefaultWakeCaps().Wakes, "most wakes a day the triggers may make (the wake block may set fewer)")
	pf.Float64Var(&f.caps.CostUSD, "max-wake-cost", hermitcrab.DefaultWakeCaps().CostUSD, "most dollars a day the triggers' wakes may spend (the wake block may set less)")
	pf.DurationVar(&f.mcpTimeout, "mcp-call-timeout", 2*time.Minute, "longest an MCP server's tool call may take before it is cancelled and the LLM told so")
	pf.BoolVar(&f.mcpConnector, "mcp-connector", false, "have Anthropic's API call the tools of MCP servers at https URLs itself (the MCP connector, beta); needs --provider anthropic")
	f.app.Root.AddCommand(f.blocksCommand(), f.bspCommand(), f.promptCommand(), f.bootCommand(), f.chatCommand(), f.serveCommand(), f.beachCommand(), f.wakeCommand(), f.keyCommand(), f.toolsCommand(), f.mcpCommand(), f.skillsCommand())
	cli.OptionFlags(f.app.Root, optionFlags)
	f.app.Run()
}

// open opens the kernel; withLLM also builds the LLM client from the
// provider flags.
func (f *flags) open(cmd *cobra.Command, withLLM bool) (*hermitcrab.Kernel, error) {
	dir, err := f.dataDir()
	if err != nil {
		return nil, err
	}
	opts := f.kernelOptions()
	if f.live == nil {
		f.live = cli.NewLive(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.app.Output())
	}
	progress := progressPrinter(f.live, f.app.Output())
	switch {
	case f.headless:
		// A daemon logs one line per call (with its tier) instead.
		opts.Log, progress = f.logger(cmd.ErrOrStderr()), nil
	case withLLM:
		opts.Observe = progress
	}
	k, err := hermitcrab.Open(dir, opts)
	if err != nil {
		return nil, readOnlyData(dir, cmd, err)
	}
	if !withLLM {
		return k, nil
	}
	if err := f.useClient(cmd, k); err != nil {
		return nil, errors.Join(err, k.Close())
	}
	return k, nil
}

// useClient gives k the LLM client the provider flags describe. The
// Anthropic provider takes the key the kernel decides on: the
// environment's, else the one stored with `key set` or the web page.
func (f *flags) useClient(cmd *cobra.Command, k *hermitcrab.Kernel) error {
	key := ""
	if f.app.Provider.Provider == provider.Anthropic {
		var err error
		if key, _, err = k.Secrets().APIKey(); err != nil {
			return err
		}
	}
	client, err := f.app.Provider.ClientWithKey(key, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if !f.headless { // a daemon logs a line per call instead (opts.Log)
		client.Observe = progressPrinter(f.live, f.app.Output())
	}
	k.Conversation().SetClient(client)
	return nil
}

// dataDir is --data, else the default data directory. Every command
// finds its data directory here, so the global flags are checked here
// first.
func (f *flags) dataDir() (string, error) {
	if err := f.check(); err != nil {
		return "", err
	}
	if f.data != "" {
		return f.data, nil
	}
	return hermitcrab.DataDir()
}

// check refuses global flag values that mean nothing: an empty --data
// (a variable that was not set) would open the default data directory,
// and a zero or negative size or cap would be taken for the default.
func (f *flags) check() error {
	pf := f.app.Root.PersistentFlags()
	switch {
	case pf.Lookup("data").Changed && f.data == "":
		return cli.Usagef("--data is empty: give the data directory, or leave the flag out for the default ($HERMITCRAB_DATA, else ~/.local/share/hermitcrab)")
	case f.maxBlockBytes <= 0:
		return cli.Usagef("--max-block-bytes %d: give the largest block in bytes, e.g. 65536", f.maxBlockBytes)
	case f.mcpConnector && f.app.Provider.Provider != provider.Anthropic:
		return cli.Usagef("--mcp-connector works only with --provider anthropic: Anthropic's API is what calls the servers")
	case f.mcpTimeout <= 0:
		return cli.Usagef("--mcp-call-timeout %v: give a duration above 0, e.g. 30s", f.mcpTimeout)
	case f.caps.Wakes <= 0:
		return cli.Usagef("--max-wakes %d: give at least 1 wake a day (serve --no-wake runs no triggers)", f.caps.Wakes)
	case !(f.caps.CostUSD > 0 && f.caps.CostUSD <= option.MaxUSD): // NaN and Inf too
		return cli.Usagef("--max-wake-cost %v: give a daily cap in US dollars above 0 and at most 1000000, e.g. 1 (serve --no-wake runs no triggers)", f.caps.CostUSD)
	}
	if u := f.beachURL(); u != "" {
		if err := hermitcrab.CheckBeachURL(u); err != nil {
			from := "--beach"
			if f.beach == "" {
				from = "$HERMITCRAB_BEACH"
			}
			return cli.Usagef("%s: %v", from, err)
		}
	}
	return nil
}

// readOnlyData says plainly, in place of err (SQLite's "attempt to write a
// readonly database"), that a command which writes was given a data
// directory or store this process cannot write, and which commands work
// there. It returns err as it is when both can be written.
func readOnlyData(dir string, cmd *cobra.Command, err error) error {
	reason := unwritable(dir)
	if reason == nil {
		return err
	}
	return fmt.Errorf("%s is read-only (%v), and '%s' writes there; the commands that only read work on it "+
		"(blocks list, blocks show, blocks export, bsp, prompt, tools list, wake status, wake hooks once its secret exists), "+
		"or give --data a directory you can write", dir, reason, cmd.CommandPath())
}

// unwritable is why this process cannot write in dir or to its store
// (permission denied, a read-only file system), or nil. It is asked only
// once opening for writing failed, so the probe file it makes and removes
// at once costs nothing in the ordinary case.
func unwritable(dir string) error {
	denied := func(err error) error {
		if pe, ok := errors.AsType[*fs.PathError](err); ok && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
			return pe.Err
		}
		return nil
	}
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return denied(err)
	}
	_ = probe.Close()           // empty, and removed at once: nothing to lose
	_ = os.Remove(probe.Name()) // a leftover probe is harmless; the open error is what counts
	store, err := os.OpenFile(filepath.Join(dir, hermitcrab.StoreFile), os.O_WRONLY, 0)
	if err != nil {
		return denied(err)
	}
	_ = store.Close() // opened to learn if it may be written: nothing written
	return nil
}

// checkTier refuses a tier the prompt has no instructions for.
func checkTier(tier int) error {
	if tier < hermitcrab.Light || tier > hermitcrab.Deep {
		return cli.Usagef("--tier %d: give 1 (light), 2 (present) or 3 (deep)", tier)
	}
	return nil
}

func (f *flags) kernelOptions() hermitcrab.Options {
	return hermitcrab.Options{ShellFile: f.shell, MaxBlockBytes: f.maxBlockBytes, NoPTC: f.noPTC, Model: f.app.Provider.Model,
		ServerTools: f.app.Provider.Provider != provider.OpenAI,
		WebRequest:  hermitcrab.WebPolicy{Allow: f.webAllow, Deny: f.webDeny},
		Beach:       f.beachURL(), WakeCaps: f.caps, MCPCallTimeout: f.mcpTimeout, MCPConnector: f.mcpConnector, NoMCP: f.demo,
		TierModels: map[int]string{hermitcrab.Light: f.app.Setting("hermitcrab.models.light"), hermitcrab.Present: f.app.Setting("hermitcrab.models.present"), hermitcrab.Deep: f.app.Setting("hermitcrab.models.deep")}}
}

// beachURL is --beach, else $HERMITCRAB_BEACH; "" leaves the choice to the
// data directory's setting (beach use) and then the default.
func (f *flags) beachURL() string {
	if f.beach != "" {
		return f.beach
	}
	return os.Getenv("HERMITCRAB_BEACH")
}

func (f *flags) serveCommand() *cobra.Command {
	var addr, token string
	var allowHosts []string
	var withMCP, noWake, demo bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the web shell: the instance boots and builds its React interface in your browser",
		Long: `Run the local web server and print the URL to open. Without an API key (ANTHROPIC_API_KEY,
or a key given earlier) the page asks for one; it is kept in the data directory, readable
by you only, and never sent back to a browser. The page then boots the instance, which
builds its interface; reloading restores the last good interface without an API call,
and ?boot=1 (or the rebuild control) boots again; the reset tools control puts the boot
tools back (as 'hermitcrab tools reset').

Only requests whose Host header names this server are served (against DNS
rebinding): localhost, loopback addresses and the address it listens on; give
any other name it is reached by (a DNS name, a reverse proxy's) with
--allow-host. Binding to anything but loopback requires --token (one is
generated and printed when you give none), and every request must carry it.
Ctrl-C or SIGTERM shuts the server down gracefully (requests in flight
get 5 s to finish; one still running then is cancelled) and exits 0.

It also runs the wake triggers the instance wrote at wake 0.4 and 0.5 (see
'hermitcrab wake'), unless --no-wake, and takes webhook posts at
/hooks/NAME (authenticated with the secret 'hermitcrab wake hooks' prints).
With --mcp, /mcp is an MCP endpoint over the instance's blocks for MCP
clients holding its token (mcp_token in the data directory).

It logs one line per LLM call (tier, model, tokens, cost and the share of input
read from the prompt cache, seconds) and one per wake; with --quiet, warnings only.
On the page, the strip shows what a call under way is doing (thinking, the tool it
runs, the answer arriving).

Try it without a key: --demo serves a scripted instance (in a new temporary
data directory unless --data is given) that boots, builds its face and
answers a few messages, offline and free; the page says it is a demo.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			// A demo that fails before it serves removes the temporary
			// directory it made, on every early error.
			var temp string
			served := false
			defer func() {
				if temp != "" && !served {
					err = errors.Join(err, os.RemoveAll(temp))
				}
			}()
			if demo {
				if temp, err = f.demoSetup(cmd, cmd.OutOrStdout()); err != nil {
					return err
				}
				noWake = true
			}
			dir, err := f.dataDir()
			if err != nil {
				return err
			}
			p := f.app.Provider
			if err := p.Check(); err != nil {
				return err // before the server starts: every call would fail
			}
			base := p.BaseURL
			if base == "" {
				base = os.Getenv("ANTHROPIC_BASE_URL")
			}
			errOut := cmd.ErrOrStderr()
			// Ctrl-C and SIGTERM cancel the context: the server finishes the
			// requests in flight, closes the event streams and the store.
			err = hermitcrab.Serve(cmd.Context(), hermitcrab.ServeOptions{
				Addr: addr, Token: token, AllowHosts: allowHosts, DataDir: dir, Kernel: f.kernelOptions(), MCP: withMCP, NoWake: noWake, Demo: demo,
				KeyNeeded: p.Provider == provider.Anthropic, Provider: p.Provider, BaseURL: base, Betas: p.Betas,
				NewClient: func(key string) (*llm.Client, error) { return p.ClientWithKey(key, errOut) },
				Log:       f.logger(errOut),
			}, func(url string, k *hermitcrab.Kernel) {
				served = true
				fmt.Fprintf(cmd.OutOrStdout(), "hermitcrab is serving %s (data: %s); Ctrl-C or SIGTERM stops it\n", url, dir)
				if withMCP {
					printMCP(cmd.OutOrStdout(), url, k)
				}
			})
			if err != nil {
				return readOnlyData(dir, cmd, err) // a data directory the server cannot write, said plainly
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8420", "address to listen on")
	cmd.Flags().StringVar(&token, "token", "", "access token every request must carry (required off loopback; generated when empty; only A-Z a-z 0-9 -._~, and at least 16 of them off loopback)")
	cmd.Flags().StringSliceVar(&allowHosts, "allow-host", nil, "further Host names the server answers to (name, *.domain or IP; repeatable); loopback names and the bound address always work")
	cmd.Flags().BoolVar(&withMCP, "mcp", false, "serve an MCP endpoint over the instance's blocks at /mcp (token: mcp_token in the data directory)")
	cmd.Flags().BoolVar(&demo, "demo", false, "try it without a key: serve a scripted instance (offline, free) that boots, builds its face and answers a few messages, in a new temporary data directory unless --data is given")
	cmd.Flags().BoolVar(&noWake, "no-wake", false, "do not run the wake triggers in this process (another runs them, e.g. hermitcrab wake --daemon)")
	return cmd
}

func (f *flags) blocksCommand() *cobra.Command {
	blocks := &cobra.Command{Use: "blocks", Short: "List, show, export and import blocks",
		Long: `List, show, export and import blocks. list and show (and bsp) only read: they open
the store read-only, never create or change anything in the data directory, and work
where it cannot be written. Before any block was stored they show the shell a new
instance starts with.`}
	blocks.AddCommand(f.blocksListCommand(), f.blocksShowCommand(), f.blocksExportCommand(), f.blocksImportCommand())
	return blocks
}

func (f *flags) blocksListCommand() *cobra.Command {
	var listJSON *bool
	list := &cobra.Command{
		Use: "list", Short: "List every block with its pscale-0 text", Args: cobra.NoArgs,
		Long: `List every block with its pscale-0 text, one a line, by name. With --json: an
array of {"name", "pscale0"} objects (docs/configuration.md).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				list, err := k.Blocks().List(cmd.Context())
				if err != nil {
					return err
				}
				if *listJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), list)
				}
				for _, b := range list {
					fmt.Fprintf(cmd.OutOrStdout(), "%-16s %s\n", termtext.Line(b.Name), termtext.Line(b.Pscale0))
				}
				return nil
			})
		},
	}
	listJSON = cli.JSONFlag(list)
	return list
}

func (f *flags) blocksShowCommand() *cobra.Command {
	show := &cobra.Command{
		Use: "show NAME [ADDRESS]", Short: "Print a block as JSON, or the node at ADDRESS with its children", Args: cobra.RangeArgs(1, 2),
		Long: `Print a block as JSON ({"place", "tree"}, as stored), or with ADDRESS the node
there as {"path", "content", "children"}. The output is JSON either way; --json is
accepted so that every read command takes it (docs/configuration.md).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				if len(args) == 1 {
					b, err := k.Blocks().Block(cmd.Context(), args[0])
					if err != nil {
						return err
					}
					return cli.PrintJSON(cmd.OutOrStdout(), b)
				}
				addr, err := hermitcrab.ParseAddress(args[1])
				if err != nil {
					return err
				}
				view, err := k.Blocks().ReadNode(cmd.Context(), args[0], addr)
				if err != nil {
					return err
				}
				return cli.PrintJSON(cmd.OutOrStdout(), view)
			})
		},
	}
	cli.JSONFlag(show) // the output is JSON already
	return show
}

func (f *flags) blocksExportCommand() *cobra.Command {
	var out string
	export := &cobra.Command{
		Use: "export", Short: "Write every block as a shell file ({\"blocks\": {...}}) that import and --shell read", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				data, err := k.Blocks().Export(cmd.Context())
				if err != nil {
					return err
				}
				if out == "" {
					_, err = fmt.Fprintln(cmd.OutOrStdout(), string(data))
					return err
				}
				return atomicfile.Write(out, append(data, '\n'), 0o644)
			})
		},
	}
	export.Flags().StringVar(&out, "out", "", "write to this file instead of standard output")
	cli.JSONFlag(export) // the output is JSON already
	return export
}

func (f *flags) blocksImportCommand() *cobra.Command {
	var replace bool
	imp := &cobra.Command{
		Use:   "import FILE...",
		Short: "Import shell files, block files or a browser localStorage dump (hc:* blocks; G0 memory is migrated)",
		Long: `Import blocks from files:
  - shell files: {"blocks": {NAME: BLOCK, ...}} or a flat map of blocks;
  - single block files: the block is named after the file (purpose.json -> purpose);
  - a browser localStorage dump (the object JSON.stringify(localStorage) gives):
    hc:* keys become blocks; G0 memory files (hcmem:*) are migrated into history,
    stash and constitution as the clean-build spec says. API keys are never imported.
Existing blocks are kept unless --replace. The files are only read.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withKernel(cmd, false, func(k *hermitcrab.Kernel) error {
				sources, err := hermitcrab.ReadImportFiles(args)
				if err != nil {
					return err
				}
				res, err := k.Blocks().Import(cmd.Context(), sources, replace)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				for _, n := range res.Notes {
					fmt.Fprintln(w, "note:", termtext.Line(n))
				}
				fmt.Fprintf(w, "imported %d blocks: %s\n", len(res.Written), termtext.Line(strings.Join(res.Written, ", ")))
				if len(res.Skipped) > 0 {
					fmt.Fprintf(w, "kept %d existing blocks (use --replace to overwrite): %s\n", len(res.Skipped), termtext.Line(strings.Join(res.Skipped, ", ")))
				}
				if len(res.Unreadable) > 0 {
					fmt.Fprintf(w, "skipped %d unreadable keys (the notes say why): %s\n", len(res.Unreadable), termtext.Line(strings.Join(res.Unreadable, ", ")))
				}
				return nil
			})
		},
	}
	imp.Flags().BoolVar(&replace, "replace", false, "overwrite blocks that already exist")
	return imp
}

// withKernel opens the kernel (withLLM: with the LLM client the provider
// flags describe), runs fn and closes the kernel, reporting a failed close
// too.
func (f *flags) withKernel(cmd *cobra.Command, withLLM bool, fn func(*hermitcrab.Kernel) error) (err error) {
	k, err := f.open(cmd, withLLM)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	return fn(k)
}

// withReady opens the kernel without an LLM, seeds an empty store, runs
// fn and closes the kernel. readOnly opens it read-only: nothing in the
// data directory is created or written, and without a store yet (or with
// one no command has put blocks in) fn sees the shell a new instance
// starts with, held in memory.
func (f *flags) withReady(cmd *cobra.Command, readOnly bool, fn func(*hermitcrab.Kernel) error) error {
	return f.openReady(cmd, readOnly, true, fn)
}

// withBlocksRead is withReady read-only for a command that reads the
// blocks on its way to something else (the beach commands that publish
// nodes of them): it says nothing of a shell held in memory.
func (f *flags) withBlocksRead(cmd *cobra.Command, fn func(*hermitcrab.Kernel) error) error {
	return f.openReady(cmd, true, false, fn)
}

func (f *flags) openReady(cmd *cobra.Command, readOnly, note bool, fn func(*hermitcrab.Kernel) error) (err error) {
	dir, err := f.dataDir()
	if err != nil {
		return err
	}
	opts := f.kernelOptions()
	opts.ReadOnly = readOnly
	k, err := hermitcrab.Open(dir, opts)
	if err != nil {
		if !readOnly {
			err = readOnlyData(dir, cmd, err)
		}
		return err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	if note && k.Blocks().InMemory() {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: no blocks in %s yet: showing the shell a new instance starts with (nothing was written)\n", dir)
	}
	if err := k.Ready(cmd.Context()); err != nil {
		return err
	}
	return fn(k)
}

func (f *flags) bspCommand() *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:   "bsp [flags] NAME [SPINDLE [POINT]]",
		Short: "Read a block by BSP mode (block, spindle, point, ring, dir, disc, star) and print it as JSON",
		Long: `Read a block by BSP mode and print the answer as JSON. SPINDLE is an address such as
0.12; POINT is a pscale such as -1. Without --mode, what is given decides:

  NAME                  block: the whole block
  NAME SPINDLE          spindle: the chain of texts from the root to that node, with pscales
  NAME SPINDLE POINT    point: the one node of that chain at pscale POINT
  NAME "" POINT         disc: every node of the block at pscale POINT

--mode names the others (and may name these):

  --mode ring NAME SPINDLE         the node's siblings
  --mode dir NAME SPINDLE [POINT]  the node and every node below it (down to POINT)
  --mode disc NAME POINT           every node at pscale POINT
  --mode star NAME SPINDLE         the references under the node's digit 0 ("block:address"
                                   or an address), each with the text it names; SPINDLE*
                                   asks for star without --mode

Flags may come anywhere; a negative POINT is read as a number, not a flag:
hermitcrab bsp wake 0.9.6 -2. It only reads: the store is opened read-only.

The output is JSON: {"mode", "address", "pscale", "tree" | "nodes" | "point" | "entries",
"note"}; a spindle node is {"pscale", "digit", "text"}, an entry {"address", "pscale", "text",
"branch", "ref"}. A malformed SPINDLE, POINT or --mode, or one the mode does not read, exits 2.
--json is accepted as on every read command.`,
		Args: cobra.RangeArgs(1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			var spindle, point string
			switch {
			case len(args) == 2 && strings.EqualFold(strings.TrimSpace(mode), "disc"):
				point = args[1] // disc reads no spindle: NAME POINT
			case len(args) > 1:
				spindle = args[1]
			}
			if len(args) > 2 {
				point = args[2]
			}
			q, err := hermitcrab.ParseQuery(mode, spindle, point)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				r, err := k.Blocks().BSP(cmd.Context(), args[0], q)
				if err != nil {
					return err
				}
				return cli.PrintJSON(cmd.OutOrStdout(), r)
			})
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "", "block, spindle, point, ring, dir, disc or star (default: what is given decides)")
	cli.JSONFlag(cmd) // the output is JSON already
	cli.NegativeArgs(cmd)
	return cmd
}

func (f *flags) promptCommand() *cobra.Command {
	var tier int
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "prompt",
		Short: "Print the system prompt a tier compiles from the blocks, then its size",
		Long: `Print the system prompt a tier compiles from the blocks, any problems met, then
its size. With --json: {"tier", "text", "sections": [{"instruction", "text", "error"}],
"aperture", "problems", "characters", "tokens"} (docs/configuration.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkTier(tier); err != nil {
				return err
			}
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				c, err := k.Conversation().Prompt(cmd.Context(), tier)
				if err != nil {
					return err
				}
				if *asJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), c)
				}
				w := cmd.OutOrStdout()
				fmt.Fprintln(w, termtext.Block(c.Text))
				fmt.Fprintln(w)
				for _, p := range c.Problems {
					fmt.Fprintln(w, "problem:", termtext.Line(p))
				}
				how := "from the wake block's instructions"
				if c.Aperture {
					how = "the aperture: no instructions for this tier"
				}
				fmt.Fprintf(w, "tier %d: %d characters, about %d tokens (%s)\n", tier, c.Characters, c.Tokens, how)
				return nil
			})
		},
	}
	cmd.Flags().IntVarP(&tier, "tier", "t", hermitcrab.Present, "tier: 1 light, 2 present, 3 deep (boot)")
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func (f *flags) bootCommand() *cobra.Command {
	var print bool
	cmd := &cobra.Command{
		Use:   "boot",
		Short: "Wake the instance headless: a deep-tier call with BOOT that ends when the LLM builds its shell",
		Long: `Wake the instance as the page would: a deep-tier call (wake 0.9.3 and 0.9.6) with the
single message BOOT, with its tools, until the LLM calls recompile. The shell's JSX is
stored (get_source reads it back); --print writes it to standard output. Ending
without recompile is an error: no shell was built.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withKernel(cmd, true, func(k *hermitcrab.Kernel) error {
				res, err := k.Conversation().Boot(cmd.Context())
				printNotes(cmd.ErrOrStderr(), res)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "shell %d built (%d characters of JSX); %s\n", res.Shell.ID, len(res.Shell.Source), res.CostLine())
				if print {
					fmt.Fprintln(cmd.OutOrStdout(), termtext.Block(res.Shell.Source))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&print, "print", false, "print the JSX the LLM produced")
	return cmd
}

func (f *flags) chatCommand() *cobra.Command {
	var tier int
	var fresh bool
	var id string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with the instance in the terminal (same callLLM path as the web shell); Ctrl-D ends",
		Long: `Talk with the instance: each line you type is a user message sent through callLLM at the
chosen tier, with the blocks compiled into the system prompt and the active tools.
The answer is printed as it arrives; the model's thinking shows on standard error as
one dim line that updates in place (a plain "thinking…" line when standard error is
not a terminal or NO_COLOR is set; nothing with --quiet), and each tool call as one
line, then each API call's tokens and "cost $0.0123, 84% of input from cache". The
conversation is saved (under --conversation) and continues next time unless --new.
Ctrl-D ends. Ctrl-C during an answer stops it at once, saves nothing of that
exchange (say it again next time) and exits 5.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkTier(tier); err != nil {
				return err
			}
			return f.withKernel(cmd, true, func(k *hermitcrab.Kernel) error {
				ctx := cmd.Context()
				if fresh {
					if err := k.Conversation().SaveConversation(ctx, id, nil); err != nil {
						return err
					}
				}
				return chat(ctx, k, id, tier, f.live, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	cmd.Flags().IntVarP(&tier, "tier", "t", hermitcrab.Present, "tier: 1 light, 2 present, 3 deep")
	cmd.Flags().BoolVar(&fresh, "new", false, "start a new conversation instead of continuing the saved one")
	cmd.Flags().StringVar(&id, "conversation", "terminal", "name of the saved conversation")
	return cmd
}

// maxChatLine bounds one line typed (or piped) into chat.
const maxChatLine = 1 << 20

func chat(ctx context.Context, k *hermitcrab.Kernel, id string, tier int, live *cli.Live, in io.Reader, out, errOut io.Writer) error {
	// Lines are read in their own goroutine so that Ctrl-C or SIGTERM ends
	// a chat waiting for input at once: a read from a terminal cannot be
	// cancelled.
	type input struct {
		text string
		err  error
		eof  bool
	}
	lines := make(chan input)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), maxChatLine)
		for sc.Scan() {
			lines <- input{text: sc.Text()}
		}
		lines <- input{err: sc.Err(), eof: true}
	}()
	for {
		fmt.Fprint(errOut, "you> ")
		var line input
		select {
		case <-ctx.Done():
			fmt.Fprintln(errOut)
			return nil // the conversation so far is saved: a signal is a normal end
		case line = <-lines:
		}
		if line.eof {
			fmt.Fprintln(errOut)
			if errors.Is(line.err, bufio.ErrTooLong) {
				return fmt.Errorf("a line over %d MiB: chat takes one message a line, of at most %d MiB (nothing of it was sent)", maxChatLine>>20, maxChatLine>>20)
			}
			return line.err
		}
		text := strings.TrimSpace(line.text)
		if text == "" {
			continue
		}
		// The answer is shown as it streams; a failed or stopped call
		// saves nothing (Say), so what was shown of it is only shown.
		res, err := k.Conversation().Say(ctx, id, text, hermitcrab.CallOptions{Tier: tier, OnDelta: live.Delta})
		shown := live.End()
		printNotes(errOut, res)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("the answer was stopped; nothing of this exchange was saved: %w", err)
			}
			if apiErr, ok := llm.AsAPIError(err); ok && apiErr.Status == http.StatusUnauthorized {
				// Every later line would fail the same way: end, and the
				// error names the key's fix.
				return fmt.Errorf("nothing of this exchange was saved: %w", err)
			}
			fmt.Fprintln(errOut, "error:", termtext.Line(err.Error()), "(nothing was saved; say it again)") // may quote the API or the model
			continue
		}
		switch {
		case res.Text != "" && !shown:
			fmt.Fprintln(out, termtext.Block(res.Text))
		case res.Text == "" && res.Limit != "":
			fmt.Fprintln(out, "(no reply yet: "+res.Limit+")")
		case res.Text == "" && !shown:
			fmt.Fprintln(out, "(no reply: the LLM answered without text)")
		}
	}
}

func printNotes(w io.Writer, res *hermitcrab.CallResult) {
	if res == nil {
		return
	}
	for _, n := range res.Notes {
		fmt.Fprintln(w, "note:", termtext.Line(n))
	}
}

// progressPrinter shows LLM calls and tool calls as they happen, one line
// each: a tool's answer only when it is an error, or with --verbose.
func progressPrinter(live *cli.Live, level cli.Output) func(llm.Event) {
	return func(e llm.Event) {
		if e.Kind == llm.EventResponse {
			live.Answered()
		}
		if e.Kind == llm.EventToolResult && !e.IsError && level < cli.Verbose {
			return
		}
		if line, _, ok := hermitcrab.Describe(e); ok {
			live.Line(line)
		}
	}
}

func (f *flags) keyCommand() *cobra.Command {
	key := &cobra.Command{Use: "key", Short: "Store or remove the API key that serve, boot and chat use",
		Long: `The API key is kept in the data directory as api_key, readable by you only; the web
page's key form writes the same file. ANTHROPIC_API_KEY, when set, wins over it.
A running 'hermitcrab serve' picks up a key stored or removed here on its next
request (unless it runs on ANTHROPIC_API_KEY).`}
	key.AddCommand(&cobra.Command{
		Use: "set", Short: "Store the key read from standard input (one line), replacing any stored key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withKernel(cmd, false, func(k *hermitcrab.Kernel) error {
				line, _, err := cli.ReadSecretLine(cmd.Context(), cmd.InOrStdin(), cmd.ErrOrStderr(), "API key (one line)")
				if err != nil {
					return fmt.Errorf("reading the key from standard input: %w", err)
				}
				if err := k.Secrets().SetKey(line); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "key stored in %s\n", filepath.Join(k.Dir(), "api_key"))
				return nil
			})
		},
	})
	key.AddCommand(&cobra.Command{
		Use: "clear", Short: "Remove the stored key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withKernel(cmd, false, func(k *hermitcrab.Kernel) error {
				had, err := k.Secrets().ClearKey()
				if err != nil {
					return err
				}
				if had {
					fmt.Fprintln(cmd.OutOrStdout(), "stored key removed")
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "no key was stored")
				}
				if _, from, err := k.Secrets().APIKey(); err == nil && from == hermitcrab.KeyFromEnvironment {
					fmt.Fprintln(cmd.OutOrStdout(), "note: ANTHROPIC_API_KEY is set in this environment and is used where it is set")
				}
				return nil
			})
		},
	})
	return key
}

func (f *flags) toolsCommand() *cobra.Command {
	tools := &cobra.Command{Use: "tools", Short: "List the tools the LLM has active, or put the boot tools back",
		Long: `The LLM chooses its tools with set_tools (names, or definitions that replace a tool's
description and schema); the choice is kept in the data directory and every call sends it.
'tools list' prints the active tools and the size of the definitions sent with every call.
'tools reset' puts the boot tools back: the way out when the chosen set makes every call
fail (definitions so large no request fits), since the LLM cannot call set_tools then.
The web page's 'reset tools' control (hermitcrab serve) does the same.`}
	var listJSON *bool
	list := &cobra.Command{
		Use: "list", Short: "Print the active tools, each with the size of its definition when it has one", Args: cobra.NoArgs,
		Long: `Print the active tools, one a line, each with the size of its definition when
set_tools gave one, then the total, and what the LLM calls of the last 7 days cost, with
the share of their input read from the prompt cache (the tools are its first part).
With --json: {"tools": [{"name", "characters", "definition"}], "definition_characters",
"usage_7_days": {"calls", "tokens", "cost_usd", "scripted_usd"}}, scripted_usd the part
metered on a scripted provider, which nothing charged (docs/configuration.md).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withReady(cmd, true, func(k *hermitcrab.Kernel) error {
				doc, err := k.Conversation().ToolList(cmd.Context())
				if err != nil {
					return err
				}
				// What the calls of the last week cost and read from the
				// prompt cache, of which the tools are the first part.
				week, err := k.Conversation().Usage(cmd.Context(), "", 7)
				if err != nil {
					return err
				}
				if *listJSON {
					return cli.PrintJSON(cmd.OutOrStdout(), struct {
						*hermitcrab.ToolList
						Usage hermitcrab.Usage `json:"usage_7_days"`
					}{doc, week})
				}
				w := cmd.OutOrStdout()
				for _, t := range doc.Tools {
					if t.Definition == nil {
						fmt.Fprintln(w, termtext.Line(t.Name))
						continue
					}
					fmt.Fprintf(w, "%s (a definition of %d characters)\n", termtext.Line(t.Name), t.Characters)
				}
				fmt.Fprintf(w, "%d tools; definitions given with set_tools: %d characters\n", len(doc.Tools), doc.DefinitionCharacters)
				fmt.Fprintf(w, "calls in the last 7 days: %d, %s%s\n", week.Calls, llm.CostLine(week.CostUSD, week.Tokens), week.ScriptedPart())
				return nil
			})
		},
	}
	listJSON = cli.JSONFlag(list)
	tools.AddCommand(list)
	tools.AddCommand(&cobra.Command{
		Use: "reset", Short: "Put the boot tools back in place of the set the LLM chose with set_tools", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.withReady(cmd, false, func(k *hermitcrab.Kernel) error {
				had, err := k.Conversation().ResetTools(cmd.Context())
				if err != nil {
					return err
				}
				if had {
					fmt.Fprintf(cmd.OutOrStdout(), "the boot tools are back: %s\n", strings.Join(hermitcrab.BootTools(), ", "))
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "the boot tools were already active")
				}
				return nil
			})
		},
	})
	return tools
}
