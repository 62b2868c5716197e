package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/hermitcrab"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm/mcp"
)

func (f *flags) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "Add, list or remove the MCP servers whose tools the LLM may use",
		Long: `An MCP server you add here gives the instance its tools, named NAME__tool (NAME is
the name you give the server). They are not sent with every call: the capabilities block
names them at 0.9, and the LLM adds those it needs with set_tools, as it does its other
tools. What a server answers reaches the LLM as outside text (control characters shown
as escapes); a server that is down, slow or answers garbage gives the LLM an error
result, and the wake goes on. A call that does not answer within --mcp-call-timeout is
cancelled. With --mcp-connector (and --provider anthropic), Anthropic's API calls the
servers at https URLs itself (the MCP connector, beta): their answers then reach the model
without passing through the kernel.

The servers are kept in the data directory (mcp_servers.json, readable by you only: it
holds their headers and environment values, which are never printed). A running
'hermitcrab serve' sees a server added or removed here when it is started again.
See docs/hermitcrab.md, "MCP servers and skills".`}
	cmd.AddCommand(f.mcpAddCommand(), f.mcpListCommand(), f.mcpRemoveCommand())
	return cmd
}

func (f *flags) mcpAddCommand() *cobra.Command {
	var command string
	var headers, env []string
	var tokenStdin bool
	cmd := &cobra.Command{
		Use:   "add NAME [URL]",
		Short: "Add an MCP server: at a URL (streamable HTTP), or a command run over stdio",
		Long: `Add an MCP server, check that it answers and list its tools. Give the URL of its
streamable-HTTP endpoint (http:// or https://), or --command with the program and its
arguments as a shell would split them (no variables, globs or pipes). NAME (letters,
digits, - and _, at most 32) prefixes its tools: NAME__tool.

A server at a URL takes --header "Name: value" (repeatable), or --token-stdin to read a
bearer token from standard input (so it shows in no process listing). A command takes
--env KEY=VALUE (repeatable); it gets PATH, HOME, the locale and these, and no API key
of yours. A malformed value exits 2; a server that does not answer exits 1 and is not
added.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			srv := mcp.Server{Name: args[0]}
			switch {
			case len(args) == 2 && command != "":
				return cli.Usagef("give a URL or --command, not both")
			case len(args) == 2:
				srv.URL = args[1]
			case command != "":
				var err error
				if srv.Command, srv.Args, err = mcp.ParseCommand(command); err != nil {
					return cli.Usagef("--command: %v", err)
				}
			default:
				return cli.Usagef("give the server's URL after its name, or --command \"program args\" for one run over stdio")
			}
			var err error
			if srv.Headers, err = keyValues(headers, ":", "--header", `"Name: value"`); err != nil {
				return err
			}
			if srv.Env, err = keyValues(env, "=", "--env", "KEY=VALUE"); err != nil {
				return err
			}
			if tokenStdin {
				line, _, err := cli.ReadSecretLine(cmd.Context(), cmd.InOrStdin(), cmd.ErrOrStderr(), "bearer token (one line)")
				if err != nil {
					return fmt.Errorf("reading the token from standard input: %w", err)
				}
				if srv.Headers == nil {
					srv.Headers = map[string]string{}
				}
				srv.Headers["Authorization"] = "Bearer " + strings.TrimSpace(line)
			}
			if err := srv.Check(); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			return f.withReady(cmd, false, func(k *hermitcrab.Kernel) error {
				offer, err := k.AddMCPServer(cmd.Context(), srv)
				var invalid *mcp.InvalidError
				if errors.As(err, &invalid) {
					return cli.Exit(cli.ExitUsage, err)
				}
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				names := make([]string, len(offer.Handlers))
				for i, h := range offer.Handlers {
					names[i] = h.Tool.Name
				}
				fmt.Fprintf(w, "added mcp server %s (%s): %d tools offered to the LLM, which adds them with set_tools", srv.Name, srv.Transport(), len(names))
				if len(names) > 0 {
					fmt.Fprintf(w, ": %s", strings.Join(names, ", "))
				}
				fmt.Fprintln(w)
				for _, n := range offer.Notes {
					fmt.Fprintln(w, "note:", termtext.Line(n))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&command, "command", "", "run the server over stdio: the program and its arguments, e.g. \"npx -y @modelcontextprotocol/server-everything\"")
	cmd.Flags().StringArrayVar(&headers, "header", nil, "an HTTP header sent to a server at a URL, \"Name: value\" (repeatable)")
	cmd.Flags().StringArrayVar(&env, "env", nil, "an environment variable for a --command server, KEY=VALUE (repeatable)")
	cmd.Flags().BoolVar(&tokenStdin, "token-stdin", false, "read a bearer token for a server at a URL from standard input (sent as Authorization: Bearer …)")
	return cmd
}

// keyValues reads repeated flag values of the form KEY<sep>VALUE.
func keyValues(values []string, sep, flag, form string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(values))
	for _, v := range values {
		k, val, ok := strings.Cut(v, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The value may be a secret: only its key is shown.
			return nil, cli.Usagef("%s %s: write %s", flag, termtext.Line(k), form)
		}
		m[k] = strings.TrimSpace(val)
	}
	return m, nil
}

func (f *flags) mcpListCommand() *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use: "list", Short: "List the MCP servers added, without their secrets", Args: cobra.NoArgs,
		Long: `List the MCP servers added: name, transport, URL or command. Header and environment
values are secrets: only their names are shown, and a URL's password and query values
are shown as xxxxx. It connects to none of them. With --json: {"servers": [{"name",
"transport", "url", "command", "args", "headers", "env"}]}.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := f.dataDir()
			if err != nil {
				return err
			}
			list, err := mcp.Registry{Path: filepath.Join(dir, hermitcrab.MCPFile)}.List()
			if err != nil {
				return err
			}
			if *asJSON {
				return cli.PrintJSON(cmd.OutOrStdout(), map[string]any{"servers": nonNilList(list)})
			}
			w := cmd.OutOrStdout()
			if len(list) == 0 {
				fmt.Fprintln(w, "no mcp servers added (hermitcrab mcp add NAME URL, or --command)")
				return nil
			}
			for _, s := range list {
				where := s.URL
				if s.Transport == mcp.TransportStdio {
					where = strings.Join(append([]string{s.Command}, s.Args...), " ")
				}
				line := fmt.Sprintf("%s  %s  %s", s.Name, s.Transport, where)
				if len(s.Headers) > 0 {
					line += "  headers: " + strings.Join(s.Headers, ", ")
				}
				if len(s.Env) > 0 {
					line += "  env: " + strings.Join(s.Env, ", ")
				}
				fmt.Fprintln(w, termtext.Line(line))
			}
			return nil
		},
	}
	asJSON = cli.JSONFlag(cmd)
	return cmd
}

func nonNilList(l []mcp.Listing) []mcp.Listing {
	if l == nil {
		return []mcp.Listing{}
	}
	return l
}

func (f *flags) mcpRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use: "remove NAME", Short: "Remove an MCP server: the LLM can no longer use its tools", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withReady(cmd, false, func(k *hermitcrab.Kernel) error {
				note, err := k.RemoveMCPServer(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed mcp server %s\n", termtext.Line(args[0]))
				if note != "" {
					fmt.Fprintln(cmd.OutOrStdout(), "note:", termtext.Line(note))
				}
				return nil
			})
		},
	}
}
