package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
)

var computer = llm.Tool{Type: "computer_20251124", Name: "computer",
	Options: map[string]json.RawMessage{"display_width_px": json.RawMessage("1024"), "display_height_px": json.RawMessage("768")}}

// betaHeaders sends one request per tool set through the real SDK and
// returns the anthropic-beta values the fake server received for each.
func betaHeaders(t *testing.T, cfg anthropic.Config, toolSets ...[]llm.Tool) [][]string {
	t.Helper()
	var responses []string
	for range toolSets {
		responses = append(responses, `{"content":[{"type":"text","text":"ok"}]}`)
	}
	srv, p := serve(t, `{"responses":[`+strings.Join(responses, ",")+`]}`, cfg)
	for _, tools := range toolSets {
		req := &llm.Request{Model: model, MaxTokens: 100, Tools: tools, Messages: []llm.Message{llm.UserText("Hi")}}
		if _, err := p.Messages(context.Background(), req); err != nil {
			t.Fatalf("tools %v: %v", tools, err)
		}
	}
	var out [][]string
	for _, r := range srv.Received() {
		out = append(out, r.Header.Values("anthropic-beta"))
	}
	return out
}

func TestGenerallyAvailableServerToolsAndProgrammaticCallsSendNoBeta(t *testing.T) {
	// The tools hermitcrab declares, and a client tool code execution may
	// call: this SDK has them all in its generally available Messages API.
	tools := []llm.Tool{
		{Type: "web_search_20260209", Name: "web_search", Options: map[string]json.RawMessage{"max_uses": json.RawMessage("5")}},
		{Type: "web_fetch_20260209", Name: "web_fetch"},
		{Type: "code_execution_20250825", Name: "code_execution"},
		{Name: "block_read", InputSchema: json.RawMessage(`{"type":"object"}`), AllowedCallers: []string{"code_execution_20250825"}},
	}
	newer := []llm.Tool{{Type: "code_execution_20260120", Name: "code_execution"}, {Type: "web_fetch_20260318", Name: "web_fetch"}}
	for i, got := range betaHeaders(t, anthropic.Config{}, tools, newer) {
		if got != nil {
			t.Errorf("request %d: anthropic-beta = %q, want no header", i+1, got)
		}
	}
}

func TestABetaOnlyToolSendsItsBetaForThatRequestOnly(t *testing.T) {
	advisor := llm.Tool{Type: "advisor_20260301", Name: "advisor", Options: map[string]json.RawMessage{"model": json.RawMessage(`"claude-opus-4-6"`)}}
	got := betaHeaders(t, anthropic.Config{Betas: []string{"files-api-2025-04-14", "computer-use-2025-11-24"}},
		[]llm.Tool{computer},
		[]llm.Tool{computer, advisor, {Type: "web_search_20260209", Name: "web_search"}},
		nil)
	want := [][]string{
		{"files-api-2025-04-14,computer-use-2025-11-24"}, // the configured value is not sent twice
		{"files-api-2025-04-14,computer-use-2025-11-24,advisor-tool-2026-03-01"},
		{"files-api-2025-04-14,computer-use-2025-11-24"}, // configured betas stay; tool betas do not
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("request %d: anthropic-beta = %q, want %q", i+1, got[i], want[i])
		}
	}
	got = betaHeaders(t, anthropic.Config{}, []llm.Tool{computer}, nil)
	if strings.Join(got[0], "|") != "computer-use-2025-11-24" || got[1] != nil {
		t.Errorf("without configured betas: %q, want [computer-use-2025-11-24] then no header", got)
	}
}

func TestBetasMergesConfiguredListsAndToolsOnce(t *testing.T) {
	got := anthropic.Betas([]string{" a, b ", "", "a", "computer-use-2025-01-24"},
		[]llm.Tool{{Type: "computer_20250124"}, {Type: "bash_20241022"}, {Type: "text_editor_20241022"}, {Name: "client"}})
	want := "a,b,computer-use-2025-01-24,computer-use-2024-10-22"
	if strings.Join(got, ",") != want {
		t.Errorf("Betas = %q, want %s", got, want)
	}
	if got := anthropic.Betas(nil, []llm.Tool{{Type: "web_search_20260209"}}); got != nil {
		t.Errorf("Betas for a generally available tool = %q, want nil", got)
	}
}

func TestFakeServerInsistsOnABetaOnlyWhereTheAPIDoes(t *testing.T) {
	srv, _ := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	body := `{"model":"` + model + `","max_tokens":100,"tools":[{"type":"computer_20251124","name":"computer","display_width_px":1024,"display_height_px":768}],"messages":[{"role":"user","content":"Hi"}]}`
	post := func(beta string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-api-key", "k")
		req.Header.Set("anthropic-version", "2023-06-01")
		if beta != "" {
			req.Header.Set("anthropic-beta", beta)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(""); got != 400 {
		t.Errorf("computer_20251124 without its beta: status %d, want 400", got)
	}
	if got := post("files-api-2025-04-14, computer-use-2025-11-24"); got != 200 {
		t.Errorf("computer_20251124 with its beta: status %d, want 200", got)
	}
	if msg := string(srv.Received()[0].Response); !strings.Contains(msg, `tools.0: tool type \"computer_20251124\" requires the anthropic-beta header \"computer-use-2025-11-24\"`) {
		t.Errorf("refusal = %s", msg)
	}
}

// TestMCPConnectorOnTheWire pins the MCP connector through the real SDK
// into the strict fake: mcp_servers as the API reads them, the toolset
// with its allowlist, the beta header it needs, and the mcp_tool_use and
// mcp_tool_result blocks of the answer sent back unchanged in the history.
func TestMCPConnectorOnTheWire(t *testing.T) {
	answer := `{"type":"mcp_tool_use","id":"mcptoolu_1","name":"search","server_name":"docs","input":{"q":"go"}},` +
		`{"type":"mcp_tool_result","tool_use_id":"mcptoolu_1","is_error":false,"content":[{"type":"text","text":"found"}]},{"type":"text","text":"done"}`
	srv, p := serve(t, `{"responses":[{"content":[`+answer+`]},{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	toolset := llm.MCPToolset("docs")
	toolset.Options["default_config"] = json.RawMessage(`{"enabled":false}`)
	toolset.Options["configs"] = json.RawMessage(`{"search":{"enabled":true}}`)
	req := &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Search the docs.")},
		MCPServers: []llm.MCPServer{{Type: "url", URL: "https://docs.example/mcp", Name: "docs", AuthorizationToken: "tok"}},
		Tools:      []llm.Tool{toolset}}
	resp, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content}, llm.UserText("Thanks."))
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("the history with the connector's blocks: %v", err)
	}
	got := srv.Received()
	for i, r := range got {
		if beta := strings.Join(r.Header.Values("anthropic-beta"), ","); beta != "mcp-client-2025-11-20" {
			t.Errorf("request %d: anthropic-beta = %q", i+1, beta)
		}
		sameJSON(t, "mcp_servers", bodyField(t, r.Body, "mcp_servers"), []byte(`[{"type":"url","url":"https://docs.example/mcp","name":"docs","authorization_token":"tok"}]`))
		sameJSON(t, "tools", bodyField(t, r.Body, "tools"), []byte(`[{"type":"mcp_toolset","mcp_server_name":"docs","default_config":{"enabled":false},"configs":{"search":{"enabled":true}}}]`))
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(bodyField(t, got[1].Body, "messages"), &msgs); err != nil || len(msgs) != 3 {
		t.Fatalf("messages: %v %d", err, len(msgs))
	}
	sameJSON(t, "the answer sent back", bodyField(t, msgs[1], "content"), []byte(`[`+answer+`]`))
}

// TestFakeServerInsistsOnTheMCPConnectorsBeta pins the fake's strictness:
// mcp_servers without the beta header is refused, as the API does.
func TestFakeServerInsistsOnTheMCPConnectorsBeta(t *testing.T) {
	srv, _ := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	body := `{"model":"` + model + `","max_tokens":100,"mcp_servers":[{"type":"url","url":"https://docs.example/mcp","name":"docs"}],"tools":[{"type":"mcp_toolset","mcp_server_name":"docs"}],"messages":[{"role":"user","content":"Hi"}]}`
	for beta, want := range map[string]int{"": 400, "mcp-client-2025-11-20": 200} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-api-key", "k")
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("content-type", "application/json")
		if beta != "" {
			req.Header.Set("anthropic-beta", beta)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("beta %q: status %d, want %d", beta, resp.StatusCode, want)
		}
	}
}
