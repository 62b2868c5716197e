// Package mcptool runs a hired MCP tool (solve hire --mcp): one tool of a
// person's MCP server, registered as a resolver of a capability. A call
// connects to the server through llm/mcp (which keeps its rules: inert
// text, the server's secrets never shown, a scrubbed environment for a
// command, every failure an error result), sends the route's parameters
// as the tool's arguments, and answers the tool's text as the resolve
// output.
package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/mcp"
	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
)

// ServerName is the name a hired tool's server is given: its tools are
// offered as ServerName__tool.
const ServerName = "hired"

// maxOutput is the most of a tool's text kept as the output, the cap of
// every tool result the llm tool loop keeps.
const maxOutput = 100_000

// Resolver is one hired MCP tool.
type Resolver struct {
	entry record.Resolver
	tool  loop.MCPTool
}

// New is the resolver of a registry entry made by solve hire --mcp
// (loop.HiredMCP is not nil for it).
func New(entry record.Resolver, tool loop.MCPTool) *Resolver {
	return &Resolver{entry: entry, tool: tool}
}

// Server is the MCP server of a hired tool.
func Server(t loop.MCPTool) mcp.Server {
	return mcp.Server{Name: ServerName, URL: t.URL, Command: t.Command, Args: t.Args}
}

// Estimate is the registry's price and latency (at least a second).
func (r *Resolver) Estimate(ctx context.Context, t *loop.Call) (float64, float64) {
	return r.entry.CostPerInvocation, max(r.entry.LatencyEstimate, 1)
}

// Resolve calls the tool with the call's parameters as its arguments.
func (r *Resolver) Resolve(ctx context.Context, t *loop.Call) (*loop.Output, error) {
	if t.Op != loop.OpResolve {
		return nil, loop.Permanent("capability_mismatch", fmt.Errorf("%s is an MCP tool: it resolves, it does not %s", r.entry.ID, t.Op))
	}
	fail := func(mode string, err error) error {
		return &loop.ResolverError{Permanent: true, Mode: mode, Err: err, Cost: r.entry.CostPerInvocation}
	}
	set, err := mcp.NewSet([]mcp.Server{Server(r.tool)}, mcp.Options{})
	if err != nil {
		return nil, loop.Permanent("invalid_format", fmt.Errorf("%s: %w", r.entry.ID, err))
	}
	defer func() { _ = set.Close() }() // best effort: the answer is had; closing ends the command's whole group
	offer := set.Offer(ctx)
	var h *llm.ToolHandler
	for i := range offer.Handlers {
		if offer.Handlers[i].Tool.Name == r.tool.Offered {
			h = &offer.Handlers[i]
		}
	}
	if h == nil {
		why := strings.Join(offer.Notes, "; ")
		if why == "" {
			why = "the server no longer offers it"
		}
		// Not paid: no call was made. Retryable: a server down now may
		// answer at the next attempt.
		return nil, &loop.ResolverError{Mode: "mcp_unavailable", Err: fmt.Errorf("%s: tool %s: %s", r.entry.ID, r.tool.Tool, why)}
	}
	args := t.Params
	if args == nil {
		args = map[string]any{}
	}
	input, err := json.Marshal(args)
	if err != nil {
		return nil, loop.Permanent("invalid_format", err)
	}
	out, err := h.Run(ctx, input)
	if err == nil && out.IsError {
		err = errors.New(clip.Text(text(out), 2000))
	}
	if err != nil {
		return nil, fail("mcp_error", fmt.Errorf("%s: tool %s answered an error: %w", r.entry.ID, r.tool.Tool, err))
	}
	ans := loop.ResolveAnswer{Summary: fmt.Sprintf("%s called %s", r.entry.ID, r.tool.Tool), Text: clip.Text(text(out), maxOutput)}
	data, err := json.Marshal(ans)
	if err != nil {
		return nil, loop.Permanent("invalid_format", err)
	}
	return &loop.Output{Answer: data, Cost: r.entry.CostPerInvocation}, nil
}

// text is a tool result's text blocks, one after another (images and the
// like are named in a text line by llm/mcp).
func text(o llm.ToolOutput) string {
	var parts []string
	for _, b := range o.Content.Blocks {
		if b.Type == llm.BlockText {
			parts = append(parts, b.Text)
		}
	}
	if len(parts) == 0 {
		return o.Content.Text
	}
	return strings.Join(parts, "\n")
}
