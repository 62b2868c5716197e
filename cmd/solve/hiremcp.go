package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/llm/mcp"
	"github.com/llmkernels/kernels/solve"
)

// hireMCPFlags are solve hire's answer with a tool of an MCP server.
type hireMCPFlags struct {
	url, command, tool string
	cost               float64
	latency            time.Duration
}

func (h *hireMCPFlags) add(f *pflag.FlagSet) {
	f.StringVar(&h.url, "mcp", "", "answer with a tool of the MCP server at this http(s) URL (streamable HTTP), registered as a resolver for the capability")
	f.StringVar(&h.command, "mcp-command", "", `answer with a tool of the MCP server this command starts (stdio, e.g. "npx -y @acme/mcp"); runs need --unconfined to use it`)
	f.StringVar(&h.tool, "tool", "", "the MCP server's tool to hire, as the answer lists them (default: its only tool)")
	f.Float64Var(&h.cost, "cost-per-call", 0, "what one call of the MCP tool costs, in USD (reserved from the node's budget)")
	f.DurationVar(&h.latency, "latency", 0, "how long one call of the MCP tool takes (default 10s)")
}

// mcpAnswer connects to the MCP server the flags name, lists its tools and
// returns the one to hire; nil when no --mcp flag was given. A malformed
// value is a usage error (exit 2); a server that does not answer, or
// lacks the tool, exit 1.
func mcpAnswer(cmd *cobra.Command, h *hireMCPFlags) (*solve.MCPTool, error) {
	if h.url == "" && h.command == "" {
		for _, name := range []string{"tool", "cost-per-call", "latency"} {
			if cmd.Flags().Changed(name) {
				return nil, cli.Usagef("--%s goes with --mcp URL or --mcp-command CMD", name)
			}
		}
		return nil, nil
	}
	if h.url != "" && h.command != "" {
		return nil, cli.Usagef("give the MCP server by --mcp URL or by --mcp-command CMD, not both")
	}
	if h.cost < 0 || h.cost != h.cost || h.cost > 1e9 {
		return nil, cli.Usagef("--cost-per-call %v: give a finite amount in USD, 0 or more", h.cost)
	}
	if h.latency < 0 {
		return nil, cli.Usagef("--latency %s: give a positive duration", h.latency)
	}
	t := &solve.MCPTool{URL: h.url, CostUSD: h.cost, Seconds: h.latency.Seconds()}
	if h.command != "" {
		var err error
		if t.Command, t.Args, err = mcp.ParseCommand(h.command); err != nil {
			return nil, cli.Usagef("--mcp-command: %v", err)
		}
	}
	offer, err := mcp.Probe(cmd.Context(), solve.MCPServer(*t), mcp.Options{})
	var invalid *mcp.InvalidError
	if errors.As(err, &invalid) {
		return nil, cli.Usagef("--mcp: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("the MCP server did not answer; nothing was hired: %w", err)
	}
	var names []string
	for _, hd := range offer.Handlers {
		name := strings.TrimPrefix(hd.Tool.Name, solve.MCPServerName+"__")
		names = append(names, name)
		if name == h.tool || (h.tool == "" && len(offer.Handlers) == 1) {
			t.Tool, t.Offered, t.InputSchema = name, hd.Tool.Name, hd.Tool.InputSchema
			t.Description = fmt.Sprintf("MCP tool %s: %s Its arguments are the route's params, as this JSON Schema says: %s", name, hd.Tool.Description, hd.Tool.InputSchema)
		}
	}
	if t.Offered == "" {
		notes := ""
		if len(offer.Notes) > 0 {
			notes = " (" + strings.Join(offer.Notes, "; ") + ")"
		}
		if h.tool == "" {
			return nil, fmt.Errorf("the MCP server offers %d tools: %s; say which with --tool NAME%s; nothing was hired", len(names), strings.Join(names, ", "), notes)
		}
		return nil, fmt.Errorf("the MCP server offers no tool %q; it offers: %s%s; nothing was hired", h.tool, strings.Join(names, ", "), notes)
	}
	return t, nil
}
