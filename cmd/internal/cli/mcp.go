package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm/mcp"
)

// mcpAddFlags are the flags of a kernel's `mcp add NAME [URL]`.
type mcpAddFlags struct {
	command    string
	headers    []string
	env        []string
	tokenStdin bool
}

// MCPAddCommand is a kernel's `mcp add NAME [URL]`: every kernel reads a
// server the same way; add stores it (checked, connected to and listed)
// and how says where its tools go. A malformed server exits 2, one that
// does not answer 1.
func MCPAddCommand(how string, add func(*cobra.Command, mcp.Server) (mcp.Offer, error)) *cobra.Command {
	var f *mcpAddFlags
	cmd := &cobra.Command{
		Use:   "add NAME [URL]",
		Short: "Add an MCP server: at a URL (streamable HTTP), or a command run over stdio",
		Long:  mcpAddHelp,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			srv, err := f.server(cmd, args)
			if err != nil {
				return err
			}
			if i := slices.IndexFunc(srv.Args, looksSecret); i >= 0 {
				// The argument itself is not repeated: it may be the secret.
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: argument %d of --command looks like a secret, and 'mcp list' shows arguments: give secrets with --env KEY=VALUE (its values are never shown)\n", i+1)
			}
			offer, err := add(cmd, srv)
			var invalid *mcp.InvalidError
			if errors.As(err, &invalid) {
				return Exit(ExitUsage, err)
			}
			if err != nil {
				return err
			}
			printMCPAdded(cmd.OutOrStdout(), srv, offer, how)
			return nil
		},
	}
	f = addMCPFlags(cmd)
	return cmd
}

// MCPListCommand is a kernel's `mcp list [--json]`; hint says how to add
// a server when there are none.
func MCPListCommand(hint string, list func(*cobra.Command) ([]mcp.Listing, error)) *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use: "list", Short: "List the MCP servers added, without their secrets", Args: cobra.NoArgs,
		Long: mcpListHelp,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := list(cmd)
			if err != nil {
				return err
			}
			return printMCPList(cmd.OutOrStdout(), l, *asJSON, hint)
		},
	}
	asJSON = JSONFlag(cmd)
	return cmd
}

// mcpAddHelp is `mcp add`'s help.
const mcpAddHelp = `Add an MCP server, check that it answers and list its tools. Give the URL of its
streamable-HTTP endpoint (http:// or https://), or --command with the program and its
arguments as a shell would split them (no variables, globs or pipes). NAME (letters,
digits, - and _, at most 32) prefixes its tools: NAME__tool.

A server at a URL takes --header "Name: value" (repeatable), or --token-stdin to
read a bearer token from standard input (so it shows in no process listing). A
command takes --env KEY=VALUE (repeatable); it gets PATH, HOME, the locale and
these, and no API key of yours. 'mcp list' shows a command's arguments: give secrets
with --env, whose values are never shown (add warns about an argument that looks like
one). A malformed value exits 2; a server that does not
answer exits 1 and is not added.`

// addMCPFlags declares mcp add's flags on cmd.
func addMCPFlags(cmd *cobra.Command) *mcpAddFlags {
	f := &mcpAddFlags{}
	cmd.Flags().StringVar(&f.command, "command", "", "run the server over stdio: the program and its arguments, e.g. \"npx -y @modelcontextprotocol/server-everything\"")
	cmd.Flags().StringArrayVar(&f.headers, "header", nil, "an HTTP header sent to a server at a URL, \"Name: value\" (repeatable)")
	cmd.Flags().StringArrayVar(&f.env, "env", nil, "an environment variable for a --command server, KEY=VALUE (repeatable)")
	cmd.Flags().BoolVar(&f.tokenStdin, "token-stdin", false, "read a bearer token for a server at a URL from standard input (sent as Authorization: Bearer …)")
	return f
}

// server is the server args (NAME [URL]) and the flags describe, checked:
// a malformed value is a usage error (exit 2).
func (f *mcpAddFlags) server(cmd *cobra.Command, args []string) (mcp.Server, error) {
	srv := mcp.Server{Name: args[0]}
	switch {
	case len(args) == 2 && f.command != "":
		return srv, Usagef("give a URL or --command, not both")
	case len(args) == 2:
		srv.URL = args[1]
	case f.command != "":
		var err error
		if srv.Command, srv.Args, err = mcp.ParseCommand(f.command); err != nil {
			return srv, Usagef("--command: %v", err)
		}
	default:
		return srv, Usagef("give the server's URL after its name, or --command \"program args\" for one run over stdio")
	}
	var err error
	if srv.Headers, err = keyValues(f.headers, ":", "--header", `"Name: value"`); err != nil {
		return srv, err
	}
	if srv.Env, err = keyValues(f.env, "=", "--env", "KEY=VALUE"); err != nil {
		return srv, err
	}
	if f.tokenStdin {
		line, _, err := ReadSecretLine(cmd.Context(), cmd.InOrStdin(), cmd.ErrOrStderr(), "bearer token (one line)")
		if errors.Is(err, io.EOF) || err == nil && strings.TrimSpace(line) == "" {
			// "Authorization: Bearer " with nothing after it is no token.
			return srv, Usagef("--token-stdin: standard input held no token; give it on one line, e.g. printenv DOCS_TOKEN | … --token-stdin")
		}
		if err != nil {
			return srv, fmt.Errorf("reading the token from standard input: %w", err)
		}
		if srv.Headers == nil {
			srv.Headers = map[string]string{}
		}
		srv.Headers["Authorization"] = "Bearer " + strings.TrimSpace(line)
	}
	if err := srv.Check(); err != nil {
		return srv, Exit(ExitUsage, err)
	}
	return srv, nil
}

// secretWords are what an argument that holds a secret often says.
var secretWords = []string{"token=", "key=", "secret", "password", "passwd"}

// looksSecret reports whether a --command argument looks like a secret:
// it names one (token=, key=, secret, password), or it holds a long run of
// letters and digits as random as a generated token. A guess, for a
// warning only: a false one costs a line on stderr.
func looksSecret(arg string) bool {
	lower := strings.ToLower(arg)
	if slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(lower, w) }) {
		return true
	}
	for _, word := range strings.FieldsFunc(arg, func(r rune) bool { return !isAlnum(r) }) {
		digits := 0
		for _, r := range word {
			if r >= '0' && r <= '9' {
				digits++
			}
		}
		if len(word) >= 20 && digits >= 3 && randomBits(word) >= 3.5 {
			return true
		}
	}
	return false
}

func isAlnum(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// randomBits is the Shannon entropy of s's bytes, in bits a byte: about
// 4 to 6 for a generated token, under 3.5 for most words and names.
func randomBits(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	bits := 0.0
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(s))
			bits -= p * math.Log2(p)
		}
	}
	return bits
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
		switch {
		case !ok:
			// The value may be a secret: only its key is shown.
			return nil, Usagef("%s %s: no %q in it; write %s", flag, termtext.Line(k), sep, form)
		case k == "":
			return nil, Usagef("%s: the name before %q is empty; write %s", flag, sep, form)
		}
		m[k] = strings.TrimSpace(val)
	}
	return m, nil
}

// printMCPAdded says what a server added offers: "added mcp server NAME
// (transport): N tools offered to the LLM, HOW: names", then its notes.
func printMCPAdded(w io.Writer, srv mcp.Server, offer mcp.Offer, how string) {
	names := make([]string, len(offer.Handlers))
	for i, h := range offer.Handlers {
		names[i] = h.Tool.Name
	}
	fmt.Fprintf(w, "added mcp server %s (%s): %d tools offered to the LLM, %s", srv.Name, srv.Transport(), len(names), how)
	if len(names) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(names, ", "))
	}
	fmt.Fprintln(w)
	for _, n := range offer.Notes {
		fmt.Fprintln(w, "note:", termtext.Line(n))
	}
}

// mcpListHelp is `mcp list`'s help.
const mcpListHelp = `List the MCP servers added: name, transport, URL or command. Header and environment
values are secrets: only their names are shown, and a URL's password and query values
are shown as xxxxx. A command's arguments are shown as given. It connects to none of them. With --json: {"servers": [{"name",
"transport", "url", "command", "args", "headers", "env"}]}.`

// printMCPList prints the servers of a registry, as text or with asJSON
// as {"servers": […]}.
func printMCPList(w io.Writer, list []mcp.Listing, asJSON bool, hint string) error {
	if asJSON {
		if list == nil {
			list = []mcp.Listing{}
		}
		return PrintJSON(w, map[string]any{"servers": list})
	}
	if len(list) == 0 {
		fmt.Fprintf(w, "no mcp servers added (%s)\n", hint)
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
}
