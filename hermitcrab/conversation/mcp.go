package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/llm"
)

// The person's MCP servers (Options.MCP) reach the LLM as tools named
// NAME__tool, like the kernel's own tools one set_tools away: nothing of
// theirs is sent, and no server is woken, until the LLM chooses one. Only
// a tool of the active set (the LLM's choice, from the servers the person
// added) is offered; a name that is not a tool a server offers now is
// never run. What a server answers is made inert by llm/mcp, and every
// failure of a server (down, slow, answering garbage) is an error result,
// never a failed call.

// servesMCP reports whether name is an MCP server's tool (NAME__tool of a
// server the person added), run by the kernel or the API.
func (c *Caller) servesMCP(name string) bool {
	_, api := c.viaConnector(name)
	return api || (c.opts.MCP != nil && c.opts.MCP.Serves(name))
}

// viaConnector is the server of an MCP tool the API calls itself
// (Options.MCPConnector), and whether there is one.
func (c *Caller) viaConnector(name string) (llm.MCPServer, bool) {
	server, _, _ := strings.Cut(name, "__")
	srv, ok := c.opts.MCPConnector[server]
	return srv, ok
}

// connectorTools are the request's mcp_servers and their toolsets for the
// MCP tools named, each server's toolset enabling only the tools chosen
// (default_config off): the allowlist holds on Anthropic's side too. The
// tool's name there is the server's own, the part after "__".
func (c *Caller) connectorTools(names []string) ([]llm.MCPServer, []llm.Tool) {
	var servers []llm.MCPServer
	var toolsets []llm.Tool
	enabled := map[string]map[string]any{}
	for _, name := range names {
		srv, _ := c.viaConnector(name)
		_, tool, _ := strings.Cut(name, "__")
		if enabled[srv.Name] == nil {
			enabled[srv.Name] = map[string]any{}
			servers = append(servers, srv)
		}
		enabled[srv.Name][tool] = map[string]bool{"enabled": true}
	}
	for _, srv := range servers {
		ts := llm.MCPToolset(srv.Name)
		ts.Options["default_config"] = json.RawMessage(`{"enabled":false}`)
		ts.Options["configs"], _ = json.Marshal(enabled[srv.Name]) // maps of strings and bools always encode
		toolsets = append(toolsets, ts)
	}
	return servers, toolsets
}

// mcpHandlers returns the handlers of the MCP tools named, as their
// servers offer them now, and a note for the LLM naming those not offered
// this turn and why ("" when all are). Every note of the offer goes to the
// log.
func (c *Caller) mcpHandlers(ctx context.Context, names []string) ([]llm.ToolHandler, string) {
	handlers, _, note := c.mcpOffer(ctx, names)
	return handlers, note
}

// mcpOffer is mcpHandlers, with the names of every MCP tool offered now.
func (c *Caller) mcpOffer(ctx context.Context, names []string) (handlers []llm.ToolHandler, offered []string, note string) {
	offer := c.opts.MCP.Offer(ctx)
	for _, n := range offer.Notes {
		c.log.Info("mcp: " + n) // inert already
	}
	var missing []string
	for _, h := range offer.Handlers {
		offered = append(offered, h.Tool.Name)
	}
	for _, name := range names {
		i := slices.Index(offered, name)
		if i < 0 {
			missing = append(missing, name)
			continue
		}
		handlers = append(handlers, offer.Handlers[i])
	}
	if len(missing) > 0 {
		note = fmt.Sprintf("[mcp] Not offered this turn: %s. %s", strings.Join(missing, ", "), mcpWhy(missing, offer.Notes))
	}
	return handlers, offered, note
}

// mcpWhy is the notes of an offer about the servers of the tools named, or
// a sentence saying the servers do not offer them.
func mcpWhy(tools, notes []string) string {
	var why []string
	for _, n := range notes {
		for _, t := range tools {
			server, _, _ := strings.Cut(t, "__")
			if strings.Contains(n, fmt.Sprintf("%q", server)) && !slices.Contains(why, n) {
				why = append(why, n)
			}
		}
	}
	if len(why) == 0 {
		return "Their servers answer but do not offer them (their tool lists changed); set_tools drops them."
	}
	return strings.Join(why, ". ") + "."
}

// checkMCPTools refuses, for set_tools, MCP tools their servers do not
// offer now: a server that is down, or a name it does not have.
func (c *Caller) checkMCPTools(ctx context.Context, names []string) error {
	_, offered, note := c.mcpOffer(ctx, names)
	switch {
	case note == "":
		return nil
	case len(offered) == 0:
		return fmt.Errorf("%s Nothing was changed; no MCP tool is offered now", strings.TrimPrefix(note, "[mcp] "))
	}
	return fmt.Errorf("%s Nothing was changed; the MCP tools offered now: %s", strings.TrimPrefix(note, "[mcp] "), strings.Join(offered, ", "))
}

// checkMCPEntry refuses a definition of an MCP tool: its server defines it.
func checkMCPEntry(t llm.Tool) error {
	if toolEntry(t) != t.Name {
		return fmt.Errorf("tool %q is an MCP server's: give its name only; its server defines it", t.Name)
	}
	return nil
}

// pageMCP returns the handlers of the MCP tools a page's own request
// declares (ToolLoop), and a note for the LLM as a kernel call gives it
// (mcpHandlers). The tools chosen with set_tools that the kernel runs are
// offered as their servers offer them now, whatever definition the page
// gave; every other MCP tool is declared as the page gave it and answered
// with an error result saying why it did not run, so the page's request
// never reaches a tool the LLM did not choose.
func (c *Caller) pageMCP(ctx context.Context, tools []llm.Tool) ([]llm.ToolHandler, string, error) {
	active, err := c.ActiveTools(ctx)
	if err != nil {
		return nil, "", err
	}
	var run []string
	var refused []llm.ToolHandler
	for _, t := range tools {
		chosen := slices.ContainsFunc(active, func(a llm.Tool) bool { return a.Name == t.Name })
		_, api := c.viaConnector(t.Name)
		var why string
		switch {
		case api:
			why = fmt.Sprintf("%s is a tool of an MCP server that Anthropic's API calls itself (the MCP connector), in the kernel's own calls only; it did not run", t.Name)
		case !chosen:
			why = fmt.Sprintf("%s is a tool of an MCP server that was not chosen with set_tools; the kernel runs only the MCP tools chosen", t.Name)
		default:
			run = append(run, t.Name)
			continue
		}
		refused = append(refused, llm.ToolHandler{Tool: t, Run: func(context.Context, json.RawMessage) (llm.ToolOutput, error) {
			return llm.ErrorOutput(why), nil
		}})
	}
	if len(run) == 0 {
		return refused, "", nil
	}
	handlers, note := c.mcpHandlers(ctx, run)
	return append(handlers, refused...), note, nil
}
