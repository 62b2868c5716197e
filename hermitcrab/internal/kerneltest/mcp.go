package kerneltest

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hostile is what MCPServer's tool hostile answers: an OSC title, a
// screen clear, a bidi override.
const Hostile = "ok\x1b]0;pwned\x07\x1b[2J\u202eevil"

// MCPServer is an MCP server for tests, with the tools echo ("echo: " and
// its text), secret (counted in secret, never to be chosen), hostile
// (Hostile), chart (a line, a PNG of 4 by 3 pixels and a TIFF) and hang
// (never answers).
func MCPServer(secret *atomic.Int32) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "hermitcrab-mcp-test", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	object := map[string]any{"type": "object", "properties": map[string]any{}}
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return text("echo: " + in.Text), nil
		})
	srv.AddTool(&sdk.Tool{Name: "secret", Description: "Not chosen by the LLM.", InputSchema: object},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			secret.Add(1)
			return text("secret ran"), nil
		})
	srv.AddTool(&sdk.Tool{Name: "hostile", Description: "Answer control characters.", InputSchema: object},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text(Hostile), nil })
	srv.AddTool(&sdk.Tool{Name: "chart", Description: "Draw a chart.", InputSchema: object},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var pic bytes.Buffer
			if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the chart:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: pic.Bytes()},
				&sdk.ImageContent{MIMEType: "image/tiff", Data: []byte("II*\x00")}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "hang", Description: "Never answer.", InputSchema: object},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	return srv
}

// ServeMCP serves srv over streamable HTTP until the test ends or stop is
// called (the client's connections cut first: a session's open stream
// would keep Close waiting), and returns its URL.
func ServeMCP(t testing.TB, srv *sdk.Server) (url string, stop func()) {
	t.Helper()
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	stop = func() {
		hs.CloseClientConnections()
		hs.Close()
	}
	t.Cleanup(stop)
	return hs.URL, stop
}
