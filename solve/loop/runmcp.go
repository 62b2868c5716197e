package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/mcp"
)

// MCPServer is an MCP server whose tools a run offers claude-code-0
// (solve run --mcp NAME=URL, --mcp-command NAME=CMD). It is stored with
// the run, so a resume offers it again; it holds no secret (no header,
// no environment variable), so storing it shows none.
type MCPServer struct {
	Name    string   `json:"name"`
	URL     string   `json:"url,omitempty"`
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

func (s MCPServer) server() mcp.Server {
	return mcp.Server{Name: s.Name, URL: s.URL, Command: s.Command, Args: s.Args}
}

// Timeouts of a run's MCP servers: connecting (and listing the tools)
// and one tool call, each within the node's own deadline.
const (
	mcpConnectTimeout = 10 * time.Second
	mcpCallTimeout    = time.Minute
)

// toolOps are the operations claude-code-0 is offered the run's MCP tools
// in: producing a node's output, and judging one.
var toolOps = []string{OpResolve, OpVerify}

// ErrMCPCommandConfined refuses an MCP server started by a command when
// the person did not allow unconfined commands.
var ErrMCPCommandConfined = errors.New("solve cannot confine the process an MCP server's command starts: allow unconfined commands to run it, or give the server by its URL")

// CheckMCP refuses servers a run could not offer: a malformed one, two
// of one name, or one started by a command when the person did not allow
// unconfined commands.
func CheckMCP(servers []MCPServer, unconfined bool) error {
	list := make([]mcp.Server, len(servers))
	for i, s := range servers {
		list[i] = s.server()
		if s.Command != "" && !unconfined {
			return option.Errorf("mcp_command", "%s: %w", s.Name, ErrMCPCommandConfined)
		}
	}
	err := mcpCheck(list)
	var invalid *mcp.InvalidError
	if errors.As(err, &invalid) {
		return option.Errorf("mcp", "%v", err)
	}
	return err
}

// mcpCheck is mcp.NewSet's check of servers, with nothing connected.
func mcpCheck(list []mcp.Server) error {
	set, err := mcp.NewSet(list, mcp.Options{})
	if err != nil {
		return err
	}
	return set.Close()
}

// openMCP connects to the run's MCP servers and lists their tools. A
// server that does not answer is said on the live view and in the run's
// log, in one line, and the run goes on without it. The returned function
// closes the servers (ends their commands).
func (e *engine) openMCP(ctx context.Context) (func(), error) {
	if len(e.cfg.MCP) == 0 {
		return func() {}, nil
	}
	if err := CheckMCP(e.cfg.MCP, e.opts.MCPUnconfined); err != nil {
		return nil, fmt.Errorf("run %s: %w", e.root, err)
	}
	reached := make([]error, len(e.cfg.MCP))
	var wg sync.WaitGroup
	for i, s := range e.cfg.MCP {
		wg.Go(func() { _, reached[i] = mcp.Probe(ctx, s.server(), mcp.Options{ConnectTimeout: mcpConnectTimeout}) })
	}
	wg.Wait()
	var up []mcp.Server
	for i, s := range e.cfg.MCP {
		if reached[i] == nil {
			up = append(up, s.server())
			continue
		}
		why := reached[i].Error()
		var unreachable *mcp.UnreachableError
		if errors.As(reached[i], &unreachable) {
			why = unreachable.Detail
		}
		msg := fmt.Sprintf("mcp server %q cannot be reached (%s); the run goes on without its tools", s.Name, why)
		e.progress("%s", msg)
		if err := e.st.Log(ctx, 1, e.root, msg, nil); err != nil {
			return nil, err
		}
	}
	if len(up) == 0 {
		return func() {}, nil
	}
	set, err := mcp.NewSet(up, mcp.Options{ConnectTimeout: mcpConnectTimeout, CallTimeout: mcpCallTimeout})
	if err != nil {
		return nil, err
	}
	e.mcp = set
	return func() { _ = set.Close() }, nil // closing ends the servers' commands; nothing to report on the way out
}

// tools is what the run's MCP servers offer the node's call now, or nil
// when the call gets none. Each call of a tool is logged with the node.
func (s *stepCtx) tools(resolverID, op string) func(context.Context) []llm.ToolHandler {
	if s.e.mcp == nil || resolverID != ClaudeCodeID || !slices.Contains(toolOps, op) {
		return nil
	}
	return func(ctx context.Context) []llm.ToolHandler {
		offer := s.e.mcp.Offer(ctx)
		for _, note := range offer.Notes {
			s.e.noteMCP(ctx, s.n.ID, note)
		}
		hs := make([]llm.ToolHandler, len(offer.Handlers))
		for i, h := range offer.Handlers {
			hs[i] = llm.ToolHandler{Tool: h.Tool, Run: s.logged(h)}
		}
		return hs
	}
}

// logged runs h and logs the call in the run's log (tier 3, like every
// resolver call): the tool, its server, how long it took and whether it
// answered; never the arguments or a secret.
func (s *stepCtx) logged(h llm.ToolHandler) llm.ToolFunc {
	return func(ctx context.Context, input json.RawMessage) (llm.ToolOutput, error) {
		began := time.Now()
		out, err := h.Run(ctx, input)
		took := time.Since(began).Seconds()
		server, _, _ := strings.Cut(h.Tool.Name, "__")
		detail := map[string]any{"tool": h.Tool.Name, "server": server, "duration_seconds": took, "ok": err == nil && !out.IsError}
		outcome := "ok"
		switch {
		case err != nil:
			detail["error"], outcome = clip.Text(err.Error(), 500), "error"
		case out.IsError:
			detail["error"], outcome = clip.Text(out.Content.String(), 500), "error"
		}
		// A log row that cannot be written does not fail the call: the
		// model has its answer, and the call's cost is in the ledger.
		_ = s.st.Log(context.WithoutCancel(ctx), 3, s.n.ID, fmt.Sprintf("mcp %s %s %.1fs", h.Tool.Name, outcome, took), detail)
		return out, err
	}
}

// noteMCP logs a note of the run's MCP servers (a tool left out, a tool
// list changed) once per run and process.
func (e *engine) noteMCP(ctx context.Context, node, note string) {
	e.mcpMu.Lock()
	seen := e.mcpNoted[note]
	if e.mcpNoted == nil {
		e.mcpNoted = map[string]bool{}
	}
	e.mcpNoted[note] = true
	e.mcpMu.Unlock()
	if seen {
		return
	}
	e.progress("%s", note)
	_ = e.st.Log(context.WithoutCancel(ctx), 2, node, note, nil) // a note is for the person; losing one fails nothing
}
