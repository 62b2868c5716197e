package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/mcp"
)

// The page's own tool loop (props.callWithToolLoop, POST /api/toolloop)
// runs the MCP tools chosen with set_tools as a kernel call does: on the
// server, their answers inert, a hung call cancelled at
// --mcp-call-timeout into an error result; a tool of the server that was
// not chosen is declared as the page gave it and never reaches the server;
// a server gone is named to the LLM in a note.
func TestThePagesToolLoopRunsTheChosenMCPTools(t *testing.T) {
	var secret atomic.Int32
	dir := t.TempDir()
	k, err := kernel.Open(dir, kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url, stop := kerneltest.ServeMCP(t, kerneltest.MCPServer(&secret))
	if _, err := k.AddMCPServer(context.Background(), mcp.Server{Name: "web", URL: url}); err != nil {
		t.Fatal(err)
	}
	k.Close()
	use := func(id, name string, input any) string {
		data, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
		return string(data)
	}
	responses := `{"responses":[
		{"stop_reason":"tool_use","content":[` + use("t1", "web__echo", map[string]string{"text": "hi\x1b[2J"}) + `,` + use("t2", "web__secret", map[string]any{}) + `,` + use("t3", "web__hang", map[string]any{}) + `,` + use("t5", "web__chart", map[string]any{}) + `]},
		{"content":[{"type":"text","text":"done"}]},
		{"stop_reason":"tool_use","content":[` + use("t4", "web__echo", map[string]string{"text": "anyone?"}) + `]},
		{"content":[{"type":"text","text":"after the outage"}]},
		{"content":[{"type":"text","text":"alone"}]}]}`
	srv, ts, fake := anthropicServerIn(t, dir, responses, kernel.Options{ServerTools: true, MCPCallTimeout: 300 * time.Millisecond})
	if code := post(t, ts, srv, "/api/key", map[string]string{"key": testKey}, nil); code != http.StatusOK {
		t.Fatalf("key: HTTP %d", code)
	}
	if code := post(t, ts, srv, "/api/tools", map[string]any{"tools": []string{"block_read", "web__echo", "web__hang", "web__chart"}}, nil); code != http.StatusOK {
		t.Fatalf("set_tools: HTTP %d", code)
	}
	var out struct {
		Text     string        `json:"text"`
		Messages []llm.Message `json:"messages"`
	}
	// The page names the tools; the kernel gives the chosen ones their
	// servers' definitions.
	request := map[string]any{
		"model": "claude-sonnet-4-6", "max_tokens": 200,
		"messages": []any{map[string]any{"role": "user", "content": "use the tools"}},
		"tools":    []any{map[string]any{"name": "web__echo"}, map[string]any{"name": "web__secret"}, map[string]any{"name": "web__hang"}, map[string]any{"name": "web__chart"}},
	}
	code := post(t, ts, srv, "/api/toolloop", request, &out)
	if code != http.StatusOK || out.Text != "done" {
		t.Fatalf("toolloop: HTTP %d, %q", code, out.Text)
	}
	got := fake.Received()
	if len(got) != 2 {
		t.Fatalf("%d requests reached the API, want 2", len(got))
	}
	if tools := string(got[0].Body); !strings.Contains(tools, `"description":"Echo the text back."`) {
		t.Errorf("the chosen tool went without its server's definition: %s", tools)
	}
	results := map[string]llm.ContentBlock{}
	for _, b := range got[1].Request.Messages[len(got[1].Request.Messages)-1].Content {
		results[b.ToolUseID] = b
	}
	if r := results["t1"]; r.IsError || r.Content.String() != `echo: hi\x1b[2J` {
		t.Errorf("the chosen tool's result: %q (is_error %v)", r.Content.String(), r.IsError)
	}
	if r := results["t2"]; !r.IsError || !strings.Contains(r.Content.String(), "not chosen with set_tools") {
		t.Errorf("the tool not chosen: %q (is_error %v)", r.Content.String(), r.IsError)
	}
	if r := results["t3"]; !r.IsError || !strings.Contains(r.Content.String(), "did not answer within 300ms") {
		t.Errorf("the hung tool: %q (is_error %v)", r.Content.String(), r.IsError)
	}
	// The chart reaches the model as an image in its tool result, which
	// the strict fake took; the TIFF the API does not take is named.
	if b := results["t5"].Content.Blocks; len(b) != 3 || b[0].Text != "the chart:" || b[1].Type != llm.BlockImage || b[1].Source.MediaType != "image/png" ||
		!strings.HasPrefix(b[2].Text, "[image of type image/tiff left out:") {
		t.Errorf("the chart's result: %+v", b)
	}
	if n := secret.Load(); n != 0 {
		t.Errorf("a tool not chosen ran %d times", n)
	}

	// The server goes away: the call of its tool finds out, and the next
	// request is told in a note, and goes on.
	stop()
	for _, want := range []string{"after the outage", "alone"} {
		if code := post(t, ts, srv, "/api/toolloop", request, &out); code != http.StatusOK || out.Text != want {
			t.Fatalf("toolloop with the server gone: HTTP %d, %q, want %q", code, out.Text, want)
		}
	}
	got = fake.Received()
	if r := got[3].Request.Messages[len(got[3].Request.Messages)-1].Content[0]; !r.IsError {
		t.Errorf("a call of a gone server's tool: %q", r.Content.String())
	}
	last := got[4].Request
	msg := last.Messages[len(last.Messages)-1]
	if note := msg.Content[len(msg.Content)-1].Text; !strings.Contains(note, "[mcp] Not offered this turn: web__echo, web__hang, web__chart") || !strings.Contains(note, `mcp server "web" cannot be reached`) {
		t.Errorf("the LLM was not told the server is gone: %q", note)
	}
}
