package mcptool

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
)

// A hired tool answers resolve with its text, the route's parameters as
// its arguments; a tool error fails the attempt with the server's words
// (permanent, at its cost); a server that cannot be reached is retryable
// and costs nothing; another operation is not the tool's; an image is a
// line naming it.
func TestAHiredMCPToolResolves(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	object := map[string]any{"type": "object", "properties": map[string]any{"board": map[string]any{"type": "string"}}}
	srv.AddTool(&mcp.Tool{Name: "read", Description: "Read.", InputSchema: object}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "71C " + string(req.Params.Arguments)}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "broken", Description: "Fail.", InputSchema: object}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "camera offline"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "photo", Description: "Photograph.", InputSchema: object}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the board:"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	entry := record.Resolver{ID: "human-x-1", CostPerInvocation: 0.5}
	call := &loop.Call{Op: loop.OpResolve, Params: map[string]any{"board": "A"}}
	out, err := New(entry, loop.MCPTool{URL: hs.URL, Tool: "read", Offered: "hired__read"}).Resolve(context.Background(), call)
	if err != nil || !strings.Contains(string(out.Answer), `71C {\"board\":\"A\"}`) || out.Cost != 0.5 {
		t.Fatalf("resolve: %v %+v", err, out)
	}
	// solve reads answers as text: an image is named in a line.
	out, err = New(entry, loop.MCPTool{URL: hs.URL, Tool: "photo", Offered: "hired__photo"}).Resolve(context.Background(), call)
	if err != nil || !strings.Contains(string(out.Answer), `the board:\n[image of type image/png left out: this kernel reads tool results as text]`) {
		t.Errorf("an image: %v %s", err, out.Answer)
	}
	var re *loop.ResolverError
	_, err = New(entry, loop.MCPTool{URL: hs.URL, Tool: "broken", Offered: "hired__broken"}).Resolve(context.Background(), call)
	if !errors.As(err, &re) || !re.Permanent || re.Mode != "mcp_error" || re.Cost != 0.5 || !strings.Contains(err.Error(), "camera offline") {
		t.Errorf("a tool error: %v", err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, err = New(entry, loop.MCPTool{URL: down.URL, Tool: "read", Offered: "hired__read"}).Resolve(context.Background(), call)
	if !errors.As(err, &re) || re.Permanent || re.Mode != "mcp_unavailable" || re.Cost != 0 {
		t.Errorf("a server down: %v", err)
	}
	if _, err := New(entry, loop.MCPTool{URL: hs.URL, Tool: "read", Offered: "hired__read"}).Resolve(context.Background(), &loop.Call{Op: loop.OpVerify}); !errors.As(err, &re) || re.Mode != "capability_mismatch" {
		t.Errorf("verify asked of the tool: %v", err)
	}
}
