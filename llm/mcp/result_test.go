package mcp

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/llm"
)

func TestResultsBecomeWhatTheModelCanRead(t *testing.T) {
	red := newRedactor(Server{Name: "web", URL: "https://a/mcp", Headers: map[string]string{"Authorization": "Bearer t0ken-t0ken"}})
	for _, c := range []struct {
		name string
		res  *mcp.CallToolResult
		want string // the text the model reads
		size int
	}{
		{"empty", &mcp.CallToolResult{}, noContent, 0},
		{"error", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}}}, "no such file", 12},
		{"texts", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one"}, &mcp.TextContent{}, &mcp.TextContent{Text: "two"}}}, "one\ntwo", 6},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, `{"n":1}`, 7},
		{"structured beside text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}, StructuredContent: map[string]any{"n": 1}}, `{"n":1}`, 7},
		{"resource link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt", Description: "the file"}}}, "resource link: file:///a.txt (a.txt): the file", 26},
		{"embedded text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", Text: "hello\x1b[2J"}}}}, "resource file:///a.txt:\nhello\\x1b[2J", 9},
		{"embedded blob", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}}}}, "[resource file:///a.bin (application/octet-stream, 3 bytes of binary data) was left out: the model reads text and images only]", 3},
		{"an echoed secret", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "token t0ken-t0ken"}}}, "token [redacted]", 17},
		{"a huge image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 4<<20)}}}, "[an image of 5592408 bytes was left out: the model takes images of at most 5242880 bytes in base64]", 4 << 20},
	} {
		out, size := output(c.res, red)
		if out.Content.Blocks != nil || out.Content.Text != c.want || size != c.size || out.IsError != c.res.IsError {
			t.Errorf("%s: got %q (%d bytes, is_error %v), want %q (%d bytes)", c.name, out.Content.String(), size, out.IsError, c.want, c.size)
		}
	}
	// An image the API takes, just under its limit, is passed on as one.
	out, _ := output(&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/webp", Data: make([]byte, 3<<20)}}}, red)
	if b := out.Content.Blocks; len(b) != 1 || b[0].Type != llm.BlockImage || b[0].Source.MediaType != "image/webp" || len(b[0].Source.Data) != 4<<20 || strings.Trim(b[0].Source.Data, "A") != "" {
		t.Errorf("image: %d blocks", len(b))
	}
}
