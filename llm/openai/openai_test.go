package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/openai"
)

// fakeServer is a Chat Completions endpoint: it records each request's
// decoded body and headers and answers with reply.
type fakeServer struct {
	*httptest.Server
	t     *testing.T
	reply func(w http.ResponseWriter, req chatRequest)

	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	Header http.Header
	Body   chatRequest
	Raw    map[string]json.RawMessage
}

// chatRequest mirrors the Chat Completions request body.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	Stop                []string        `json:"stop"`
	User                string          `json:"user"`
	Stream              bool            `json:"stream"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// contentString is the message content when it was sent as a string.
func (m chatMessage) contentString(t *testing.T) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(m.Content, &s); err != nil {
		t.Fatalf("%s message content is not a string: %s", m.Role, m.Content)
	}
	return s
}

func newFake(t *testing.T, reply func(w http.ResponseWriter, req chatRequest)) *fakeServer {
	f := &fakeServer{t: t, reply: reply}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			t.Errorf("request %s %s, want POST …/chat/completions", r.Method, r.URL.Path)
		}
		data, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading request body: %v", err)
		}
		var rec recorded
		rec.Header = r.Header.Clone()
		if err := json.Unmarshal(data, &rec.Body); err != nil {
			t.Errorf("request body is not a chat completion request: %v\n%s", err, data)
		}
		if err := json.Unmarshal(data, &rec.Raw); err != nil {
			t.Errorf("request body is not a JSON object: %v", err)
		}
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		f.mu.Unlock()
		f.reply(w, rec.Body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeServer) last() recorded {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		f.t.Fatal("the server received no request")
	}
	return f.requests[len(f.requests)-1]
}

// provider returns a Provider pointed at the fake server.
func (f *fakeServer) provider(t *testing.T) *openai.Provider {
	t.Helper()
	p, err := openai.New(openai.Config{APIKey: "test-key", BaseURL: f.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// answer replies with a canned JSON body.
func answer(status int, body string, headers ...string) func(http.ResponseWriter, chatRequest) {
	return func(w http.ResponseWriter, _ chatRequest) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// completion is a chat completion body with one choice.
func completion(finish, content string, toolCalls ...string) string {
	msg := map[string]any{"role": "assistant", "content": content}
	if content == "" {
		msg["content"] = nil
	}
	if len(toolCalls) > 0 {
		var calls []json.RawMessage
		for _, c := range toolCalls {
			calls = append(calls, json.RawMessage(c))
		}
		msg["tool_calls"] = calls
	}
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return string(body)
}

func call(id, name, args string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

func simpleRequest() *llm.Request {
	return &llm.Request{Model: "gpt-test", MaxTokens: 100, Messages: []llm.Message{llm.UserText("hi")}}
}

var readFileTool = llm.Tool{
	Name:        "read_file",
	Description: "Read a file.",
	// "path" before "encoding": the order the model should write them in.
	InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"encoding":{"type":"string"}},"required":["path"]}`),
}

func TestToolRoundTripMapsToolUseToToolCallsAndToolResultsToToolMessages(t *testing.T) {
	f := newFake(t, answer(200, completion("tool_calls", "Reading both.",
		call("call_a", "read_file", `{"path":"a.txt"}`),
		call("call_b", "read_file", `{"path":"b.txt","encoding":"utf-8"}`))))
	p := f.provider(t)
	temp := 0.3
	req := &llm.Request{
		Model:     "gpt-test",
		MaxTokens: 500,
		System: []llm.SystemBlock{
			{Type: "text", Text: "You are careful."},
			{Type: "text", Text: "Use tools.", CacheControl: llm.Ephemeral()},
		},
		Messages: []llm.Message{
			llm.UserText("read x.txt"),
			{Role: llm.RoleAssistant, Content: []llm.ContentBlock{
				llm.TextBlock("Let me look."),
				{Type: llm.BlockToolUse, ID: "toolu_1", Name: "read_file", Input: json.RawMessage(`{"path":"x.txt"}`)},
				{Type: llm.BlockToolUse, ID: "toolu_2", Name: "read_file", Input: json.RawMessage(`{"path":"y.txt"}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.ContentBlock{
				llm.ToolResultBlock("toolu_1", llm.ToolResultContent{Text: "contents of x"}, false),
				llm.ToolResultBlock("toolu_2", llm.ToolResultContent{Blocks: []llm.ContentBlock{
					llm.TextBlock("no such file"), llm.TextBlock("y.txt"),
				}}, true),
				llm.TextBlock("now read a and b"),
			}},
		},
		Tools:         []llm.Tool{readFileTool},
		ToolChoice:    &llm.ToolChoice{Type: "tool", Name: "read_file", DisableParallelToolUse: true},
		Temperature:   &temp,
		StopSequences: []string{"END"},
		Metadata:      &llm.Metadata{UserID: "user-7"},
	}

	resp, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}

	sent := f.last().Body
	if len(sent.Messages) != 6 {
		t.Fatalf("sent %d messages, want system, user, assistant, tool, tool, user: %+v", len(sent.Messages), sent.Messages)
	}
	if m := sent.Messages[0]; m.Role != "system" || m.contentString(t) != "You are careful.\n\nUse tools." {
		t.Errorf("messages[0] = %s %s, want one system message with the blocks joined by a blank line", m.Role, m.Content)
	}
	if m := sent.Messages[1]; m.Role != "user" || m.contentString(t) != "read x.txt" {
		t.Errorf("messages[1] = %s %s", m.Role, m.Content)
	}
	a := sent.Messages[2]
	if a.Role != "assistant" || a.contentString(t) != "Let me look." || len(a.ToolCalls) != 2 {
		t.Fatalf("messages[2] = %+v, want the assistant text and two tool_calls", a)
	}
	for i, want := range []struct{ id, args string }{{"toolu_1", `{"path":"x.txt"}`}, {"toolu_2", `{"path":"y.txt"}`}} {
		c := a.ToolCalls[i]
		if c.ID != want.id || c.Type != "function" || c.Function.Name != "read_file" || c.Function.Arguments != want.args {
			t.Errorf("tool_calls[%d] = %+v, want id %s, function read_file, arguments %s", i, c, want.id, want.args)
		}
	}
	if m := sent.Messages[3]; m.Role != "tool" || m.ToolCallID != "toolu_1" || m.contentString(t) != "contents of x" {
		t.Errorf("messages[3] = %+v, want the tool message answering toolu_1", m)
	}
	if m := sent.Messages[4]; m.Role != "tool" || m.ToolCallID != "toolu_2" || m.contentString(t) != "Error: no such file\n\ny.txt" {
		t.Errorf("messages[4] = %s %s %s, want the error result's text blocks prefixed with Error:", m.Role, m.ToolCallID, m.Content)
	}
	if m := sent.Messages[5]; m.Role != "user" || m.contentString(t) != "now read a and b" {
		t.Errorf("messages[5] = %s %s, want the turn's text after its tool messages", m.Role, m.Content)
	}
	if len(sent.Tools) != 1 || sent.Tools[0].Type != "function" || sent.Tools[0].Function.Name != "read_file" ||
		sent.Tools[0].Function.Description != "Read a file." {
		t.Fatalf("tools = %+v", sent.Tools)
	}
	if params := string(sent.Tools[0].Function.Parameters); strings.Index(params, `"path"`) > strings.Index(params, `"encoding"`) || !strings.Contains(params, `"required":["path"]`) {
		t.Errorf("parameters = %s, want the input_schema with its property order kept", params)
	}
	if got := string(sent.ToolChoice); got != `{"function":{"name":"read_file"},"type":"function"}` && got != `{"type":"function","function":{"name":"read_file"}}` {
		t.Errorf("tool_choice = %s, want the named function", got)
	}
	if sent.ParallelToolCalls == nil || *sent.ParallelToolCalls {
		t.Errorf("parallel_tool_calls = %v, want false from disable_parallel_tool_use", sent.ParallelToolCalls)
	}
	if sent.Temperature == nil || *sent.Temperature != 0.3 {
		t.Errorf("temperature = %v, want 0.3", sent.Temperature)
	}
	if len(sent.Stop) != 1 || sent.Stop[0] != "END" {
		t.Errorf("stop = %v, want [END]", sent.Stop)
	}
	if sent.User != "user-7" {
		t.Errorf("user = %q, want metadata.user_id", sent.User)
	}

	// The response's tool_calls come back as tool_use blocks after the text.
	if resp.StopReason != llm.StopToolUse || resp.ID != "chatcmpl-1" || resp.Model != "gpt-test" || resp.Role != llm.RoleAssistant {
		t.Errorf("response = %+v", resp)
	}
	if len(resp.Content) != 3 || resp.Content[0].Type != llm.BlockText || resp.Content[0].Text != "Reading both." {
		t.Fatalf("content = %+v, want the text then two tool_use blocks", resp.Content)
	}
	uses := resp.ToolUses()
	if len(uses) != 2 || uses[0].ID != "call_a" || uses[0].Name != "read_file" || string(uses[0].Input) != `{"path":"a.txt"}` ||
		uses[1].ID != "call_b" || string(uses[1].Input) != `{"path":"b.txt","encoding":"utf-8"}` {
		t.Fatalf("tool uses = %+v", uses)
	}

	// Continuing the conversation sends those calls back unchanged and
	// answers them with tool messages carrying their ids.
	next := req.Clone()
	next.Messages = append(next.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: resp.Content},
		llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{
			llm.ToolResultBlock("call_a", llm.ToolResultContent{Text: "A"}, false),
			llm.ToolResultBlock("call_b", llm.ToolResultContent{Text: "B"}, false),
		}})
	if _, err := p.Messages(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	sent = f.last().Body
	n := len(sent.Messages)
	back := sent.Messages[n-3]
	if back.Role != "assistant" || len(back.ToolCalls) != 2 || back.ToolCalls[0].ID != "call_a" ||
		back.ToolCalls[0].Function.Arguments != `{"path":"a.txt"}` || back.ToolCalls[1].Function.Arguments != `{"path":"b.txt","encoding":"utf-8"}` {
		t.Errorf("assistant turn sent back = %+v", back)
	}
	if m := sent.Messages[n-2]; m.Role != "tool" || m.ToolCallID != "call_a" || m.contentString(t) != "A" {
		t.Errorf("messages[-2] = %+v", m)
	}
	if m := sent.Messages[n-1]; m.Role != "tool" || m.ToolCallID != "call_b" || m.contentString(t) != "B" {
		t.Errorf("messages[-1] = %+v, want no user message after tool results alone", m)
	}
}

func TestAssistantTurnWithOnlyToolUseSendsNoContent(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "ok")))
	req := simpleRequest()
	req.Tools = []llm.Tool{readFileTool}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{{Type: llm.BlockToolUse, ID: "c1", Name: "read_file"}}},
		llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock("c1", llm.ToolResultContent{}, false)}})
	if _, err := f.provider(t).Messages(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	a := f.last().Body.Messages[1]
	if len(a.Content) != 0 && string(a.Content) != "null" {
		t.Errorf("assistant content = %s, want none beside tool_calls", a.Content)
	}
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].Function.Arguments != "{}" {
		t.Errorf("tool_calls = %+v, want arguments {} for a tool_use without input", a.ToolCalls)
	}
	if tm := f.last().Body.Messages[2]; tm.Role != "tool" || tm.contentString(t) != "" {
		t.Errorf("tool message = %+v, want empty content", tm)
	}
}

func TestToolChoiceMapsAutoAnyToolNone(t *testing.T) {
	cases := []struct {
		choice llm.ToolChoice
		want   string
	}{
		{llm.ToolChoice{Type: "auto"}, `"auto"`},
		{llm.ToolChoice{Type: "any"}, `"required"`},
		{llm.ToolChoice{Type: "none"}, `"none"`},
		{llm.ToolChoice{Type: "tool", Name: "read_file"}, `read_file`},
	}
	for _, c := range cases {
		t.Run(c.choice.Type, func(t *testing.T) {
			f := newFake(t, answer(200, completion("stop", "ok")))
			req := simpleRequest()
			req.Tools = []llm.Tool{readFileTool}
			req.ToolChoice = &c.choice
			if _, err := f.provider(t).Messages(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			sent := f.last()
			if got := string(sent.Body.ToolChoice); !strings.Contains(got, c.want) {
				t.Errorf("tool_choice = %s, want %s", got, c.want)
			}
			if _, ok := sent.Raw["parallel_tool_calls"]; ok {
				t.Errorf("parallel_tool_calls sent without disable_parallel_tool_use")
			}
		})
	}
	t.Run("no tools sends no tool_choice", func(t *testing.T) {
		f := newFake(t, answer(200, completion("stop", "ok")))
		req := simpleRequest()
		req.ToolChoice = &llm.ToolChoice{Type: "auto", DisableParallelToolUse: true}
		if _, err := f.provider(t).Messages(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"tool_choice", "parallel_tool_calls", "tools"} {
			if _, ok := f.last().Raw[key]; ok {
				t.Errorf("%s sent without tools (OpenAI rejects it)", key)
			}
		}
	})
}

func TestImagesBecomeImageURLPartsAndToolImagesFollowInAUserMessage(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "ok")))
	req := simpleRequest()
	req.Tools = []llm.Tool{readFileTool}
	req.Messages = []llm.Message{
		{Role: llm.RoleUser, Content: []llm.ContentBlock{
			llm.TextBlock("what is this?"),
			{Type: llm.BlockImage, Source: &llm.ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0K"}},
			{Type: llm.BlockImage, Source: &llm.ImageSource{Type: "url", URL: "https://example.com/cat.jpg"}},
		}},
		{Role: llm.RoleAssistant, Content: []llm.ContentBlock{{Type: llm.BlockToolUse, ID: "c1", Name: "read_file", Input: json.RawMessage(`{"path":"p.png"}`)}}},
		{Role: llm.RoleUser, Content: []llm.ContentBlock{
			llm.ToolResultBlock("c1", llm.ToolResultContent{Blocks: []llm.ContentBlock{
				llm.TextBlock("p.png"),
				{Type: llm.BlockImage, Source: &llm.ImageSource{Type: "base64", MediaType: "image/jpeg", Data: "/9j/"}},
			}}, false),
		}},
	}
	if _, err := f.provider(t).Messages(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	msgs := f.last().Body.Messages
	if len(msgs) != 4 {
		t.Fatalf("sent %d messages, want user, assistant, tool, user: %+v", len(msgs), msgs)
	}
	var parts []map[string]any
	if err := json.Unmarshal(msgs[0].Content, &parts); err != nil {
		t.Fatalf("user content with images is not a list of parts: %s", msgs[0].Content)
	}
	if len(parts) != 3 || parts[0]["text"] != "what is this?" ||
		parts[1]["image_url"].(map[string]any)["url"] != "data:image/png;base64,iVBORw0K" ||
		parts[2]["image_url"].(map[string]any)["url"] != "https://example.com/cat.jpg" {
		t.Errorf("user parts = %v, want text, a data URL and the URL", parts)
	}
	if tm := msgs[2]; tm.Role != "tool" || tm.contentString(t) != "p.png\n\n[1 image(s) attached to the next user message]" {
		t.Errorf("tool message = %s, want its text and a note about the image", tm.Content)
	}
	var after []map[string]any
	if err := json.Unmarshal(msgs[3].Content, &after); err != nil || msgs[3].Role != "user" || len(after) != 2 ||
		!strings.Contains(after[0]["text"].(string), "c1") ||
		after[1]["image_url"].(map[string]any)["url"] != "data:image/jpeg;base64,/9j/" {
		t.Errorf("message after the tool message = %s %s, want a user message with the tool's image", msgs[3].Role, msgs[3].Content)
	}
}

func TestFinishReasonMapsToStopReason(t *testing.T) {
	cases := []struct {
		name string
		body string
		want string
	}{
		{"stop", completion("stop", "done"), llm.StopEndTurn},
		{"tool_calls", completion("tool_calls", "", call("c", "read_file", `{}`)), llm.StopToolUse},
		{"length", completion("length", "cut o"), llm.StopMaxTokens},
		{"content_filter", completion("content_filter", ""), llm.StopRefusal},
		{"stop with tool calls (local servers)", completion("stop", "", call("c", "read_file", `{}`)), llm.StopToolUse},
		{"refusal field", `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`, llm.StopRefusal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, answer(200, c.body))
			resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != c.want {
				t.Errorf("stop_reason = %q, want %q", resp.StopReason, c.want)
			}
		})
	}
	t.Run("refusal text becomes the text block", func(t *testing.T) {
		f := newFake(t, answer(200, cases[len(cases)-1].body))
		resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text() != "I can't help with that." {
			t.Errorf("text = %q", resp.Text())
		}
	})
	t.Run("empty content gives no text block", func(t *testing.T) {
		f := newFake(t, answer(200, completion("tool_calls", "", call("c", "read_file", `{}`))))
		resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Content) != 1 || resp.Content[0].Type != llm.BlockToolUse {
			t.Errorf("content = %+v, want only the tool_use", resp.Content)
		}
	})
}

func TestUsageCountsCachedPromptTokensAsCacheReads(t *testing.T) {
	body := `{"id":"x","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}],
		"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1024}}}`
	f := newFake(t, answer(200, body))
	resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{InputTokens: 176, OutputTokens: 40, CacheReadInputTokens: 1024}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestUnsupportedRequestsAreRefusedBeforeSending(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(*llm.Request)
		naming []string
	}{
		{"server tools", func(r *llm.Request) {
			r.Tools = []llm.Tool{readFileTool, {Type: "web_search_20260209", Name: "web_search"}, {Type: "code_execution_20250825", Name: "code_execution"}}
		}, []string{"web_search (web_search_20260209)", "code_execution (code_execution_20250825)", "the anthropic provider"}},
		{"thinking enabled", func(r *llm.Request) { r.Thinking = &llm.Thinking{Type: "enabled", BudgetTokens: 2000} }, []string{"thinking", "enabled"}},
		{"thinking adaptive", func(r *llm.Request) { r.Thinking = &llm.Thinking{Type: "adaptive"} }, []string{"thinking", "adaptive"}},
		{"thinking block in history", func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{
				{Type: llm.BlockThinking, Thinking: "hmm", Signature: "sig"}, llm.TextBlock("hello")}})
		}, []string{"messages.1.content.0", "thinking block"}},
		{"redacted thinking block in history", func(r *llm.Request) {
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{
				{Type: llm.BlockRedactedThinking, Data: "xx"}, llm.TextBlock("hello")}})
		}, []string{"messages.1.content.0", "redacted_thinking"}},
		{"server_tool_use block in history", func(r *llm.Request) {
			var b llm.ContentBlock
			if err := json.Unmarshal([]byte(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}`), &b); err != nil {
				t.Fatal(err)
			}
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{b}})
		}, []string{"messages.1.content.0", `"server_tool_use"`}},
		{"document block in a user message", func(r *llm.Request) {
			var b llm.ContentBlock
			if err := json.Unmarshal([]byte(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}`), &b); err != nil {
				t.Fatal(err)
			}
			r.Messages[0].Content = append(r.Messages[0].Content, b)
		}, []string{"messages.0.content.1", `"document"`}},
		{"container", func(r *llm.Request) { r.Container = "cntr_1" }, []string{"container", "cntr_1"}},
		{"mcp_servers", func(r *llm.Request) {
			r.MCPServers = []llm.MCPServer{{Type: "url", URL: "https://example.com/mcp", Name: "docs"}}
			r.Tools = []llm.Tool{llm.MCPToolset("docs")}
		}, []string{"mcp_servers docs", "anthropic provider"}},
		{"tool_use made by code execution", func(r *llm.Request) {
			r.Tools = []llm.Tool{readFileTool}
			r.Messages = append(r.Messages,
				llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{{Type: llm.BlockToolUse, ID: "toolu_9", Name: "read_file",
					Input: json.RawMessage(`{}`), Caller: json.RawMessage(`{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}`)}}},
				llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock("toolu_9", llm.ToolResultContent{Text: "x"}, false)}})
		}, []string{"messages.1.content.0", "toolu_9", "code execution"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, answer(200, completion("stop", "ok")))
			req := simpleRequest()
			c.edit(req)
			_, err := f.provider(t).Messages(context.Background(), req)
			if err == nil {
				t.Fatal("the request was accepted")
			}
			if !errors.Is(err, openai.ErrUnsupported) {
				t.Errorf("error %v does not wrap ErrUnsupported", err)
			}
			var apiErr *llm.APIError
			if errors.As(err, &apiErr) {
				t.Errorf("refusal is an APIError (would be retried): %v", err)
			}
			for _, s := range c.naming {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if n := f.count(); n != 0 {
				t.Errorf("%d request(s) reached the server", n)
			}
		})
	}
}

func TestThinkingDisabledAndCacheControlAreAccepted(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "ok")))
	req := simpleRequest()
	req.Thinking = &llm.Thinking{Type: "disabled"}
	req.System = []llm.SystemBlock{{Type: "text", Text: "sys", CacheControl: llm.Ephemeral()}}
	req.Messages[0].Content[0].CacheControl = llm.Ephemeral()
	tool := readFileTool
	tool.CacheControl = llm.Ephemeral()
	req.Tools = []llm.Tool{tool}
	req.CacheControl = llm.Ephemeral()
	if _, err := f.provider(t).Messages(context.Background(), req); err != nil {
		t.Fatalf("thinking disabled and cache_control refused: %v", err)
	}
	if f.count() != 1 {
		t.Errorf("requests = %d, want 1", f.count())
	}
	for k, v := range f.last().Raw {
		if strings.Contains(k+string(v), "cache_control") {
			t.Errorf("a breakpoint was sent in %s: %s", k, v)
		}
	}
}

func TestInvalidToolArgumentsBecomeAStringInputThatRoundTrips(t *testing.T) {
	const bad = `{"path": "a.t`
	f := newFake(t, answer(200, completion("tool_calls", "",
		call("c_bad", "read_file", bad),
		call("c_empty", "read_file", ""),
		call("c_array", "read_file", `["a.txt"]`))))
	p := f.provider(t)
	req := simpleRequest()
	req.Tools = []llm.Tool{readFileTool}
	resp, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	uses := resp.ToolUses()
	if len(uses) != 3 {
		t.Fatalf("tool uses = %+v", uses)
	}
	var raw string
	if err := json.Unmarshal(uses[0].Input, &raw); err != nil || raw != bad {
		t.Errorf("input for invalid arguments = %s, want the JSON string %q", uses[0].Input, bad)
	}
	var obj map[string]any
	if err := json.Unmarshal(uses[0].Input, &obj); err == nil {
		t.Errorf("invalid arguments decode into an object; a handler would run with %v", obj)
	}
	if string(uses[1].Input) != "{}" {
		t.Errorf("input for empty arguments = %s, want {}", uses[1].Input)
	}
	if err := json.Unmarshal(uses[2].Input, &raw); err != nil || raw != `["a.txt"]` {
		t.Errorf("input for non-object arguments = %s, want a JSON string", uses[2].Input)
	}

	next := req.Clone()
	next.Messages = append(next.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content},
		llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{
			llm.ToolResultBlock("c_bad", llm.ToolResultContent{Text: "input is not an object"}, true),
			llm.ToolResultBlock("c_empty", llm.ToolResultContent{Text: "path required"}, true),
			llm.ToolResultBlock("c_array", llm.ToolResultContent{Text: "input is not an object"}, true),
		}})
	if _, err := p.Messages(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	calls := f.last().Body.Messages[1].ToolCalls
	if len(calls) != 3 || calls[0].Function.Arguments != bad || calls[1].Function.Arguments != "{}" || calls[2].Function.Arguments != `["a.txt"]` {
		t.Errorf("arguments sent back = %+v, want them as the model wrote them", calls)
	}
}

func TestMissingToolCallIDIsReplacedByAFreshID(t *testing.T) {
	f := newFake(t, answer(200, completion("tool_calls", "", call("", "read_file", `{}`), call("", "read_file", `{}`))))
	resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	uses := resp.ToolUses()
	if len(uses) != 2 || !strings.HasPrefix(uses[0].ID, "call_") || uses[0].ID == uses[1].ID {
		t.Errorf("ids = %q, %q, want two distinct call_ ids", uses[0].ID, uses[1].ID)
	}
}

func TestRateLimitWithRetryAfterIsARetryableAPIError(t *testing.T) {
	f := newFake(t, answer(429,
		`{"error":{"message":"Rate limit reached for gpt-test","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		"Retry-After", "7", "X-Request-Id", "req_123"))
	_, err := f.provider(t).Messages(context.Background(), simpleRequest())
	apiErr, ok := err.(*llm.APIError)
	if !ok {
		t.Fatalf("error %T %v, want *llm.APIError", err, err)
	}
	want := llm.APIError{Status: 429, Type: "requests/rate_limit_exceeded", Message: "Rate limit reached for gpt-test", RetryAfter: 7 * time.Second, RequestID: "req_123"}
	if *apiErr != want {
		t.Errorf("error = %+v, want %+v", *apiErr, want)
	}
	if !apiErr.Retryable() {
		t.Error("429 is not retryable")
	}
	if n := f.count(); n != 1 {
		t.Errorf("requests = %d, want 1 (the SDK must not retry)", n)
	}
}

func TestRetryAfterMillisecondsHeaderWins(t *testing.T) {
	f := newFake(t, answer(429, `{"error":{"message":"slow down","type":"requests"}}`, "Retry-After", "1", "Retry-After-Ms", "250"))
	_, err := f.provider(t).Messages(context.Background(), simpleRequest())
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != 250*time.Millisecond {
		t.Errorf("error = %v, want retry-after 250ms", err)
	}
}

func TestBadRequestIsANonRetryableAPIError(t *testing.T) {
	f := newFake(t, answer(400,
		`{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error","param":"messages[1].content","code":null}}`))
	_, err := f.provider(t).Messages(context.Background(), simpleRequest())
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v, want *llm.APIError", err)
	}
	if apiErr.Status != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, "string too long") {
		t.Errorf("error = %+v", apiErr)
	}
	if apiErr.Retryable() {
		t.Error("400 is retryable")
	}
	if n := f.count(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestErrorBodiesOfCompatibleServersGiveTheirMessage(t *testing.T) {
	cases := []struct {
		name, body, wantType, wantMsg string
	}{
		{"flat vLLM error", `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}`, "BadRequestError/400", "max_tokens is too large"},
		{"string error", `{"error":"model \"llama9\" not found, try pulling it first"}`, "api_error", `model "llama9" not found, try pulling it first`},
		{"plain text", `upstream connect error`, "api_error", "upstream connect error"},
		{"nested error with a numeric code (llama.cpp)", `{"error":{"code":404,"message":"model not loaded","type":"not_found_error"}}`, "not_found_error/404", "model not loaded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, answer(404, c.body))
			_, err := f.provider(t).Messages(context.Background(), simpleRequest())
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %T %v, want *llm.APIError", err, err)
			}
			if apiErr.Status != 404 || apiErr.Type != c.wantType || apiErr.Message != c.wantMsg {
				t.Errorf("error = %+v, want type %q message %q", apiErr, c.wantType, c.wantMsg)
			}
		})
	}
}

func TestServerErrorMakesExactlyOneRequest(t *testing.T) {
	f := newFake(t, answer(500, `{"error":{"message":"The server had an error","type":"server_error"}}`))
	_, err := f.provider(t).Messages(context.Background(), simpleRequest())
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 500 || !apiErr.Retryable() {
		t.Fatalf("error = %v, want a retryable 500 APIError", err)
	}
	if n := f.count(); n != 1 {
		t.Errorf("requests = %d, want 1: the SDK retried, but llm.Client owns retries", n)
	}
}

func TestUnreachableServerIsAConnectionError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close()
	p, err := openai.New(openai.Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Messages(context.Background(), simpleRequest())
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 0 || apiErr.Type != "connection_error" || !apiErr.Retryable() {
		t.Fatalf("error = %v, want a retryable connection error", err)
	}
	if !strings.Contains(apiErr.Message, base) {
		t.Errorf("message %q does not name the server", apiErr.Message)
	}
}

func TestTimeoutIsAConnectionErrorAfterOneRequest(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, _ chatRequest) { <-release })
	defer close(release)
	p, err := openai.New(openai.Config{BaseURL: f.URL, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Messages(context.Background(), simpleRequest())
	apiErr, ok := err.(*llm.APIError)
	if !ok || apiErr.Type != "connection_error" || !strings.Contains(apiErr.Message, "50ms") {
		t.Fatalf("error = %v, want a connection error naming the timeout", err)
	}
	if n := f.count(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestDefaultTimeoutIsTenMinutes(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "ok")))
	p := f.provider(t)
	// The first request streams (no whole-request timeout); its whole
	// answer makes the next one plain, which carries the timeout.
	for range 2 {
		if _, err := p.Messages(context.Background(), simpleRequest()); err != nil {
			t.Fatal(err)
		}
	}
	// The SDK announces the per-request timeout it applies.
	if got := f.last().Header.Get("X-Stainless-Timeout"); got != "600" {
		t.Errorf("X-Stainless-Timeout = %q, want 600 (seconds)", got)
	}
}

func TestCanceledContextIsNotAnAPIError(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "ok")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.provider(t).Messages(ctx, simpleRequest())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if _, ok := llm.AsAPIError(err); ok {
		t.Errorf("a canceled call is an APIError, so it could be retried: %v", err)
	}
}

func TestBaseURLFromEnvWithoutKeySendsAPlaceholderKey(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "hello from llama")))
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", f.URL+"/v1")
	p, err := openai.New(openai.Config{})
	if err != nil {
		t.Fatalf("New with only OPENAI_BASE_URL: %v", err)
	}
	resp, err := p.Messages(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "hello from llama" {
		t.Errorf("text = %q", resp.Text())
	}
	if auth := f.last().Header.Get("Authorization"); auth == "" || auth == "Bearer " {
		t.Errorf("Authorization = %q, want a placeholder bearer key", auth)
	}
}

func TestConfigKeyAndBaseURLWinOverEnv(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "ok")))
	t.Setenv("OPENAI_API_KEY", "env-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	p, err := openai.New(openai.Config{APIKey: "cfg-key", BaseURL: f.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Messages(context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if auth := f.last().Header.Get("Authorization"); auth != "Bearer cfg-key" {
		t.Errorf("Authorization = %q, want the configured key", auth)
	}
}

// The package doc promises that the SDK's own variables still apply: the
// provider builds the Chat Completions service alone, so they must reach it.
func TestSDKEnvironmentVariablesReachTheRequest(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "ok")))
	t.Setenv("OPENAI_ORG_ID", "org-test")
	t.Setenv("OPENAI_PROJECT_ID", "proj-test")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Gateway: team-a")
	if _, err := f.provider(t).Messages(context.Background(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	h := f.last().Header
	for name, want := range map[string]string{"OpenAI-Organization": "org-test", "OpenAI-Project": "proj-test", "X-Gateway": "team-a"} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestNewWithoutKeyOrBaseURLTellsWhatToSet(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	_, err := openai.New(openai.Config{})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Fatalf("error = %v, want one naming OPENAI_API_KEY and OPENAI_BASE_URL", err)
	}
}

func TestNewRejectsABaseURLThatIsNotHTTP(t *testing.T) {
	_, err := openai.New(openai.Config{BaseURL: "localhost:11434/v1"})
	if err == nil || !strings.Contains(err.Error(), "localhost:11434/v1") {
		t.Fatalf("error = %v, want one quoting the bad base URL", err)
	}
}

// rewriteTransport sends every request to target, whatever its host, so a
// Provider configured for api.openai.com can be tested offline.
type rewriteTransport struct{ target *url.URL }

func (rt rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rt.target.Scheme, rt.target.Host, ""
	return http.DefaultTransport.RoundTrip(r)
}

func TestMaxTokensFieldDependsOnTheServer(t *testing.T) {
	cases := []struct {
		base, wantField, otherField string
	}{
		{"https://api.openai.com/v1", "max_completion_tokens", "max_tokens"},
		{"https://myres.openai.azure.com/openai/v1", "max_completion_tokens", "max_tokens"},
		{"http://localhost:11434/v1", "max_tokens", "max_completion_tokens"},
	}
	for _, c := range cases {
		t.Run(c.base, func(t *testing.T) {
			f := newFake(t, answer(200, completion("stop", "ok")))
			target, _ := url.Parse(f.URL)
			p, err := openai.New(openai.Config{APIKey: "k", BaseURL: c.base, HTTPClient: &http.Client{Transport: rewriteTransport{target}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Messages(context.Background(), simpleRequest()); err != nil {
				t.Fatal(err)
			}
			raw := f.last().Raw
			if string(raw[c.wantField]) != "100" {
				t.Errorf("%s = %s, want 100", c.wantField, raw[c.wantField])
			}
			if v, ok := raw[c.otherField]; ok {
				t.Errorf("%s also sent (%s)", c.otherField, v)
			}
		})
	}
	t.Run("default base URL is OpenAI", func(t *testing.T) {
		t.Setenv("OPENAI_BASE_URL", "")
		f := newFake(t, answer(200, completion("stop", "ok")))
		target, _ := url.Parse(f.URL)
		p, err := openai.New(openai.Config{APIKey: "k", HTTPClient: &http.Client{Transport: rewriteTransport{target}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Messages(context.Background(), simpleRequest()); err != nil {
			t.Fatal(err)
		}
		if got := string(f.last().Raw["max_completion_tokens"]); got != "100" {
			t.Errorf("max_completion_tokens = %s, want 100", got)
		}
	})
}

func TestSuccessBodyThatIsNotACompletionIsANonRetryableAPIError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ chatRequest) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Request-Id", "req_html")
		_, _ = io.WriteString(w, "<html>login required</html>")
	})
	_, err := f.provider(t).Messages(context.Background(), simpleRequest())
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 200 || apiErr.Type != "invalid_response" || apiErr.RequestID != "req_html" {
		t.Fatalf("error = %v, want an invalid_response APIError with the request id", err)
	}
	if apiErr.Retryable() {
		t.Error("an unusable 200 answer is retryable")
	}
}

func TestBodyCutOffIsAConnectionError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ chatRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		_, _ = io.WriteString(w, `{"id":"x","choices":[`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-body
	})
	_, err := f.provider(t).Messages(context.Background(), simpleRequest())
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Type != "connection_error" || !apiErr.Retryable() {
		t.Fatalf("error = %v, want a retryable connection error", err)
	}
}

func TestResponseWithoutModelKeepsTheRequestedModel(t *testing.T) {
	f := newFake(t, answer(200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`))
	resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "gpt-test" {
		t.Errorf("model = %q, want the request's model", resp.Model)
	}
}

func TestCompletionWithoutChoicesIsAnError(t *testing.T) {
	f := newFake(t, answer(200, `{"id":"x","object":"chat.completion","model":"m","choices":[]}`))
	_, err := f.provider(t).Messages(context.Background(), simpleRequest())
	if err == nil || !strings.Contains(err.Error(), "no choices") {
		t.Fatalf("error = %v, want one saying the completion has no choices", err)
	}
}

func ExampleNew() {
	// Ollama, vLLM and llama.cpp need only a base URL.
	p, err := openai.New(openai.Config{BaseURL: "http://localhost:11434/v1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &llm.Client{Provider: p}
	_ = client
	// Output:
}
