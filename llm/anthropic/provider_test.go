package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

const model = "claude-sonnet-4-5"

// serve starts the strict fake API playing script and returns it with a
// provider pointed at it.
func serve(t *testing.T, scriptJSON string, cfg anthropic.Config) (*llmtest.Server, *anthropic.Provider) {
	t.Helper()
	s, err := script.Parse([]byte(scriptJSON))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	srv := llmtest.NewServer(s)
	t.Cleanup(srv.Close)
	if cfg.APIKey == "" {
		cfg.APIKey = "test-key"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = srv.URL
	}
	p, err := anthropic.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return srv, p
}

func decodeRequest(t *testing.T, data string) *llm.Request {
	t.Helper()
	var req llm.Request
	if err := json.Unmarshal([]byte(data), &req); err != nil {
		t.Fatalf("request fixture: %v", err)
	}
	return &req
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got is not JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want is not JSON: %v: %s", what, err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %s\n want %s", what, got, want)
	}
}

// bodyField is one top-level field of the JSON body the server received.
func bodyField(t *testing.T, body []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body: %v", err)
	}
	return m[key]
}

func onlyRequest(t *testing.T, srv *llmtest.Server) llmtest.Received {
	t.Helper()
	got := srv.Received()
	if len(got) != 1 {
		t.Fatalf("server received %d requests, want 1", len(got))
	}
	return got[0]
}

func TestPlainTextCallSendsKeyVersionBetaAndExactBody(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"id":"msg_1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":3}}]}`,
		anthropic.Config{APIKey: "sk-test-123", Betas: []string{"files-api-2025-04-14", " code-execution-2025-08-25 ", ""}})

	resp, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}})
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if resp.Text() != "Hello." || resp.ID != "msg_1" || resp.StopReason != llm.StopEndTurn || resp.Usage.InputTokens != 9 || resp.Usage.OutputTokens != 3 {
		t.Errorf("response = %+v", resp)
	}

	r := onlyRequest(t, srv)
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request went to %s %s", r.Method, r.Path)
	}
	for header, want := range map[string]string{
		"x-api-key":         "sk-test-123",
		"anthropic-version": "2023-06-01",
		"anthropic-beta":    "files-api-2025-04-14,code-execution-2025-08-25",
		"content-type":      "application/json",
	} {
		if got := r.Header.Values(header); len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q, want [%q]", header, got, want)
		}
	}
	sameJSON(t, "body", r.Body, []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stream":true}`))
}

func TestNoBetaHeaderWithoutBetas(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	if _, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 10, Messages: []llm.Message{llm.UserText("Hi")}}); err != nil {
		t.Fatal(err)
	}
	if got := onlyRequest(t, srv).Header.Values("anthropic-beta"); got != nil {
		t.Errorf("anthropic-beta = %q, want no header", got)
	}
}

// Raw blocks of types llm does not interpret, written compact so that their
// bytes must survive unchanged.
const (
	rawContainerUpload = `{"type":"container_upload","file_id":"file_011CNha8iCJcU1wXNR6q4V8w"}`
	rawSearchUse       = `{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"go generics"}}`
	rawSearchResult    = `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result","title":"Go","url":"https://go.dev/doc","encrypted_content":"EqgfCioIARgB","page_age":null}]}`
	rawCodeUse         = `{"type":"server_tool_use","id":"srvtoolu_02","name":"code_execution","input":{"code":"print(1+1)"}}`
	rawCodeResult      = `{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_02","content":{"type":"code_execution_result","stdout":"2\n","stderr":"","return_code":0,"content":[]}}`
	citations          = `[{"type":"web_search_result_location","url":"https://go.dev/doc","title":"Go","encrypted_index":"Eo8BCioIAhgB","cited_text":"Go 1.18 adds generics"}]`
)

// fullRequest has every block type, server tools, allowed_callers,
// cache_control on each kind of thing that takes it (four breakpoints, the
// most the API takes), thinking, and every top-level field.
const fullRequest = `{
 "model":"claude-sonnet-4-5","max_tokens":4096,
 "system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Cite sources.","cache_control":{"type":"ephemeral","ttl":"1h"}}],
 "messages":[
  {"role":"user","content":[
   {"type":"text","text":"Look at these."},
   {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
   {"type":"image","source":{"type":"url","url":"https://example.com/cat.png"},"cache_control":{"type":"ephemeral","ttl":"5m"}},
   ` + rawContainerUpload + `]},
  {"role":"assistant","content":[
   {"type":"thinking","thinking":"Search first.","signature":"EqQBCkYIBxgCKkBsig=="},
   {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"},
   ` + rawSearchUse + `,
   ` + rawSearchResult + `,
   {"type":"text","text":"Go has generics.","citations":` + citations + `},
   ` + rawCodeUse + `,
   ` + rawCodeResult + `,
   {"type":"tool_use","id":"toolu_01","name":"lookup","input":{"key":"a"}},
   {"type":"tool_use","id":"toolu_02","name":"lookup","input":{"key":"b"},"cache_control":{"type":"ephemeral"}}]},
  {"role":"user","content":[
   {"type":"tool_result","tool_use_id":"toolu_01","content":"found a"},
   {"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"no b"}],"is_error":true},
   {"type":"text","text":"Go on."}]}],
 "tools":[
  {"name":"lookup","description":"Look a key up.","input_schema":{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]},"allowed_callers":["direct","code_execution_20250825"],"cache_control":{"type":"ephemeral"}},
  {"type":"web_search_20260209","name":"web_search","max_uses":3,"allowed_domains":["go.dev"],"user_location":{"type":"approximate","country":"GB"},"allowed_callers":["direct"]},
  {"type":"web_fetch_20260209","name":"web_fetch","max_uses":2,"citations":{"enabled":true}},
  {"type":"code_execution_20250825","name":"code_execution"},
  {"type":"web_search_20991231","name":"web_search_next","future_option":{"depth":2}}],
 "tool_choice":{"type":"auto","disable_parallel_tool_use":true},
 "thinking":{"type":"enabled","budget_tokens":2048},
 "temperature":1,
 "stop_sequences":["END","STOP"],
 "metadata":{"user_id":"user-42"},
 "container":"container_011CPR5CNjB747bTd36fQLFk"
}`

// fullResponse has every block type a response can carry.
const fullResponse = `{"id":"msg_full","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
 {"type":"thinking","thinking":"Let me run it.","signature":"EpYCCkYIBxgCKkDresp=="},
 {"type":"redacted_thinking","data":"EmwKAhgBEgyREDACTED"},
 ` + rawSearchUse + `,
 ` + rawSearchResult + `,
 {"type":"text","text":"Go has generics.","citations":` + citations + `},
 ` + rawCodeUse + `,
 ` + rawCodeResult + `,
 ` + rawContainerUpload + `,
 {"type":"tool_use","id":"toolu_03","name":"lookup","input":{"key":"c"}}],
 "stop_reason":"tool_use","stop_sequence":null,
 "usage":{"input_tokens":120,"output_tokens":80,"cache_creation_input_tokens":1500,"cache_read_input_tokens":3000},
 "container":{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2026-11-21T12:00:00Z"}}`

func TestEveryBlockTypeReachesTheWireAsLLMWouldWriteIt(t *testing.T) {
	srv, p := serve(t, `{"responses":[`+fullResponse+`]}`, anthropic.Config{})
	req := decodeRequest(t, fullRequest)
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	r := onlyRequest(t, srv)
	want, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// Every request streams: the body is the request's JSON with "stream".
	want = append(bytes.TrimSuffix(want, []byte("}")), `,"stream":true}`...)
	sameJSON(t, "body the server received vs json.Marshal(request) streaming", r.Body, want)
	if r.Request == nil {
		t.Fatal("the server could not decode the body as a request")
	}
	if !reflect.DeepEqual(r.Request, req) {
		gotJSON, _ := json.MarshalIndent(r.Request, "", " ")
		t.Errorf("decoded request differs from the one sent:\n%s", gotJSON)
	}
}

func TestRawBlocksAreByteIdenticalOnTheWire(t *testing.T) {
	srv, p := serve(t, `{"responses":[`+fullResponse+`]}`, anthropic.Config{})
	if _, err := p.Messages(context.Background(), decodeRequest(t, fullRequest)); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	var body struct {
		Messages []struct {
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(onlyRequest(t, srv).Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		msg, block int
		want       string
	}{
		{0, 3, rawContainerUpload},
		{1, 2, rawSearchUse},
		{1, 3, rawSearchResult},
		{1, 5, rawCodeUse},
		{1, 6, rawCodeResult},
	} {
		if got := body.Messages[c.msg].Content[c.block]; string(got) != c.want {
			t.Errorf("messages.%d.content.%d on the wire:\n got  %s\n want %s", c.msg, c.block, got, c.want)
		}
	}
	// Citations are kept as given, inside a text block sent as raw JSON.
	var text struct {
		Citations json.RawMessage `json:"citations"`
	}
	if err := json.Unmarshal(body.Messages[1].Content[4], &text); err != nil {
		t.Fatal(err)
	}
	if string(text.Citations) != citations {
		t.Errorf("citations on the wire:\n got  %s\n want %s", text.Citations, citations)
	}
}

func TestResponseKeepsEveryBlockAndRawBytes(t *testing.T) {
	_, p := serve(t, `{"responses":[`+fullResponse+`]}`, anthropic.Config{})
	resp, err := p.Messages(context.Background(), decodeRequest(t, fullRequest))
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	var types []string
	for _, b := range resp.Content {
		types = append(types, b.Type)
	}
	wantTypes := []string{"thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result", "text", "server_tool_use", "code_execution_tool_result", "container_upload", "tool_use"}
	if !reflect.DeepEqual(types, wantTypes) {
		t.Fatalf("block types = %q, want %q", types, wantTypes)
	}
	c := resp.Content
	if c[0].Thinking != "Let me run it." || c[0].Signature != "EpYCCkYIBxgCKkDresp==" {
		t.Errorf("thinking block = %+v", c[0])
	}
	if c[1].Data != "EmwKAhgBEgyREDACTED" {
		t.Errorf("redacted_thinking data = %q", c[1].Data)
	}
	for i, want := range map[int]string{2: rawSearchUse, 3: rawSearchResult, 5: rawCodeUse, 6: rawCodeResult, 7: rawContainerUpload} {
		if string(c[i].Raw) != want {
			t.Errorf("content.%d raw:\n got  %s\n want %s", i, c[i].Raw, want)
		}
	}
	if c[4].Text != "Go has generics." || string(c[4].Citations) != citations {
		t.Errorf("text block = %q citations %s", c[4].Text, c[4].Citations)
	}
	if c[8].ID != "toolu_03" || c[8].Name != "lookup" || string(c[8].Input) != `{"key":"c"}` {
		t.Errorf("tool_use block = %+v", c[8])
	}
	if resp.StopReason != llm.StopToolUse || resp.ID != "msg_full" || resp.Model != model || resp.Role != llm.RoleAssistant {
		t.Errorf("response head = %s %s %s %s", resp.ID, resp.Model, resp.Role, resp.StopReason)
	}
}

func TestServerToolsAndAllowedCallersOnTheWire(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 1000, Messages: []llm.Message{llm.UserText("Search.")}}
	req.Tools = decodeRequest(t, fullRequest).Tools
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	sameJSON(t, "tools", bodyField(t, onlyRequest(t, srv).Body, "tools"), []byte(`[
  {"name":"lookup","description":"Look a key up.","input_schema":{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]},"allowed_callers":["direct","code_execution_20250825"],"cache_control":{"type":"ephemeral"}},
  {"type":"web_search_20260209","name":"web_search","max_uses":3,"allowed_domains":["go.dev"],"user_location":{"type":"approximate","country":"GB"},"allowed_callers":["direct"]},
  {"type":"web_fetch_20260209","name":"web_fetch","max_uses":2,"citations":{"enabled":true}},
  {"type":"code_execution_20250825","name":"code_execution"},
  {"type":"web_search_20991231","name":"web_search_next","future_option":{"depth":2}}]`))
}

func TestClientToolWithoutSchemaGetsEmptyObjectSchema(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")},
		Tools: []llm.Tool{{Name: "now", InputSchema: json.RawMessage(`{"type":"object"}`), Options: map[string]json.RawMessage{"strict": json.RawMessage(`true`)}}}}
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	sameJSON(t, "tools", bodyField(t, onlyRequest(t, srv).Body, "tools"), []byte(`[{"name":"now","input_schema":{"type":"object"},"strict":true}]`))
}

func TestThinkingEnabledWithBudgetAndAdaptiveOnTheWire(t *testing.T) {
	for _, c := range []struct {
		name     string
		thinking *llm.Thinking
		want     string
	}{
		{"enabled", &llm.Thinking{Type: "enabled", BudgetTokens: 2048}, `{"type":"enabled","budget_tokens":2048}`},
		{"adaptive", &llm.Thinking{Type: "adaptive"}, `{"type":"adaptive"}`},
		{"disabled", &llm.Thinking{Type: "disabled"}, `{"type":"disabled"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, p := serve(t, `{"responses":[{"content":[{"type":"thinking","thinking":"Hm.","signature":"sig-`+c.name+`"},{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
			resp, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 4096, Thinking: c.thinking, Messages: []llm.Message{llm.UserText("Think.")}})
			if err != nil {
				t.Fatalf("Messages: %v", err)
			}
			sameJSON(t, "thinking", bodyField(t, onlyRequest(t, srv).Body, "thinking"), []byte(c.want))
			if b := resp.Content[0]; b.Type != llm.BlockThinking || b.Thinking != "Hm." || b.Signature != "sig-"+c.name {
				t.Errorf("thinking block in response = %+v", b)
			}
		})
	}
}

func TestThinkingSignaturesSentBackUnchanged(t *testing.T) {
	srv, p := serve(t, `{"responses":[`+fullResponse+`]}`, anthropic.Config{})
	if _, err := p.Messages(context.Background(), decodeRequest(t, fullRequest)); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	var body struct {
		Messages []struct {
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(onlyRequest(t, srv).Body, &body); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "thinking block", body.Messages[1].Content[0], []byte(`{"type":"thinking","thinking":"Search first.","signature":"EqQBCkYIBxgCKkBsig=="}`))
	sameJSON(t, "redacted_thinking block", body.Messages[1].Content[1], []byte(`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"}`))
}

func TestCacheControlOnSystemToolsAndMessages(t *testing.T) {
	srv, p := serve(t, `{"responses":[`+fullResponse+`]}`, anthropic.Config{})
	if _, err := p.Messages(context.Background(), decodeRequest(t, fullRequest)); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	var body struct {
		System []struct {
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"system"`
		Tools []struct {
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"tools"`
		Messages []struct {
			Content []struct {
				CacheControl json.RawMessage `json:"cache_control"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(onlyRequest(t, srv).Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		where     string
		got, want json.RawMessage
	}{
		{"system.0", body.System[0].CacheControl, nil},
		{"system.1", body.System[1].CacheControl, json.RawMessage(`{"type":"ephemeral","ttl":"1h"}`)},
		{"tools.0", body.Tools[0].CacheControl, json.RawMessage(`{"type":"ephemeral"}`)},
		{"tools.1", body.Tools[1].CacheControl, nil},
		{"messages.0.content.0 (text)", body.Messages[0].Content[0].CacheControl, nil},
		{"messages.0.content.1 (image)", body.Messages[0].Content[1].CacheControl, nil},
		{"messages.0.content.2 (image)", body.Messages[0].Content[2].CacheControl, json.RawMessage(`{"type":"ephemeral","ttl":"5m"}`)},
		{"messages.1.content.8 (tool_use)", body.Messages[1].Content[8].CacheControl, json.RawMessage(`{"type":"ephemeral"}`)},
	} {
		if c.want == nil {
			if c.got != nil {
				t.Errorf("%s cache_control = %s, want none", c.where, c.got)
			}
			continue
		}
		sameJSON(t, c.where+" cache_control", c.got, c.want)
	}
}

func TestUsageWithCacheTokensAndContainerRead(t *testing.T) {
	_, p := serve(t, `{"responses":[`+fullResponse+`]}`, anthropic.Config{})
	resp, err := p.Messages(context.Background(), decodeRequest(t, fullRequest))
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	want := llm.Usage{InputTokens: 120, OutputTokens: 80, CacheCreationInputTokens: 1500, CacheReadInputTokens: 3000}
	if resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Container == nil || resp.Container.ID != "container_011CPR5CNjB747bTd36fQLFk" || resp.Container.ExpiresAt != "2026-11-21T12:00:00Z" {
		t.Errorf("container = %+v", resp.Container)
	}
}

func TestContainerIDPassedBackOnTheNextRequest(t *testing.T) {
	srv, p := serve(t, `{"responses":[
	 {"content":[{"type":"text","text":"made a file"}],"container":{"id":"container_abc","expires_at":"2026-11-21T12:00:00Z"}},
	 {"content":[{"type":"text","text":"read the file"}]}]}`, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Make a file.")}}
	first, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatalf("first: %v", err)
	}
	if bodyField(t, srv.Received()[0].Body, "container") != nil {
		t.Errorf("first request sent a container without one being set")
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: first.Content}, llm.UserText("Read it."))
	req.Container = first.Container.ID
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("second: %v", err)
	}
	if got := string(bodyField(t, srv.Received()[1].Body, "container")); got != `"container_abc"` {
		t.Errorf("second request's container = %s, want \"container_abc\"", got)
	}
}

func TestOverloadedWithRetryAfterIsOneRequestAndAnAPIError(t *testing.T) {
	srv, p := serve(t, `{"responses":[
	 {"error":{"status":529,"type":"overloaded_error","message":"Overloaded","retry_after":2}},
	 {"content":[{"type":"text","text":"a retry would get this"}]}]}`, anthropic.Config{})
	_, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v (%T), want *llm.APIError", err, err)
	}
	want := llm.APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded", RetryAfter: 2 * time.Second, RequestID: "req_llmtest_1"}
	if *apiErr != want {
		t.Errorf("error = %+v, want %+v", *apiErr, want)
	}
	if !apiErr.Retryable() {
		t.Error("a 529 should be retryable by llm.Client")
	}
	if n := len(srv.Received()); n != 1 {
		t.Errorf("server received %d requests, want 1 (the SDK must not retry)", n)
	}
	if srv.Remaining() != 1 {
		t.Errorf("script entries left = %d, want 1", srv.Remaining())
	}
}

func TestInvalidRequestIsA400NotRetryable(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"unused"}]}]}`, anthropic.Config{})
	tool := llm.Tool{Name: "dup", InputSchema: json.RawMessage(`{"type":"object"}`)}
	_, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}, Tools: []llm.Tool{tool, tool}})
	apiErr, ok := llm.AsAPIError(err)
	if !ok {
		t.Fatalf("err = %v (%T), want *llm.APIError", err, err)
	}
	if apiErr.Status != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, `duplicate tool name "dup"`) || apiErr.RequestID == "" {
		t.Errorf("error = %+v", *apiErr)
	}
	if apiErr.Retryable() {
		t.Error("a 400 must not be retryable")
	}
	if n := len(srv.Received()); n != 1 {
		t.Errorf("server received %d requests, want 1", n)
	}
}

func TestBaseURLAndKeyFromEnvironment(t *testing.T) {
	s, err := script.Parse([]byte(`{"responses":[{"content":[{"type":"text","text":"via env"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(s)
	defer srv.Close()
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	p, err := anthropic.New(anthropic.Config{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	resp, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}})
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if resp.Text() != "via env" {
		t.Errorf("text = %q", resp.Text())
	}
	if got := onlyRequest(t, srv).Header.Get("x-api-key"); got != "env-key" {
		t.Errorf("x-api-key = %q, want env-key", got)
	}
}

// The key and base URL are the ones New resolved: a key in the environment
// loses to the configured one, and the SDK's own credential chain
// (ANTHROPIC_AUTH_TOKEN, profiles) is never consulted.
func TestConfigWinsOverEnvironment(t *testing.T) {
	for name, env := range map[string][2]string{
		"ANTHROPIC_API_KEY":    {"env-key", ""},
		"ANTHROPIC_AUTH_TOKEN": {"", "env-token"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
			t.Setenv("ANTHROPIC_API_KEY", env[0])
			t.Setenv("ANTHROPIC_AUTH_TOKEN", env[1])
			srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{APIKey: "cfg-key"})
			if _, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}}); err != nil {
				t.Fatalf("Messages: %v", err)
			}
			h := onlyRequest(t, srv).Header
			if got := h.Get("x-api-key"); got != "cfg-key" {
				t.Errorf("x-api-key = %q, want cfg-key", got)
			}
			if got := h.Get("Authorization"); got != "" {
				t.Errorf("Authorization = %q, want none", got)
			}
		})
	}
}

func TestMissingKeyErrorSaysHowToSetIt(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, err := anthropic.New(anthropic.Config{})
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") || strings.Contains(err.Error(), "Config") {
		t.Errorf("err = %v, want one naming ANTHROPIC_API_KEY and no Go identifier", err)
	}
}

func TestMalformedBaseURLIsRejectedByNew(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "localhost:8080")
	_, err := anthropic.New(anthropic.Config{APIKey: "k"})
	if err == nil || !strings.Contains(err.Error(), `"localhost:8080"`) || !strings.Contains(err.Error(), "ANTHROPIC_BASE_URL") {
		t.Errorf("err = %v, want one naming the value and ANTHROPIC_BASE_URL", err)
	}
}

func TestUnreachableServerIsAConnectionError(t *testing.T) {
	s, _ := script.Parse([]byte(`{"responses":[]}`))
	srv := llmtest.NewServer(s)
	url := srv.URL
	srv.Close()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 0 || apiErr.Type != "connection_error" || !apiErr.Retryable() {
		t.Errorf("err = %v (%T), want a retryable connection_error", err, err)
	}
}

func TestConfigTimeoutExpiryIsAConnectionError(t *testing.T) {
	_, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"unused"}]}]}`, anthropic.Config{Timeout: time.Nanosecond})
	_, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Type != "connection_error" || !apiErr.Retryable() {
		t.Errorf("err = %v (%T), want a retryable connection_error", err, err)
	}
}

func TestCancelledContextIsReturnedAsIs(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"unused"}]}]}`, anthropic.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Messages(ctx, &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if _, ok := llm.AsAPIError(err); ok {
		t.Errorf("err = %v is an APIError; a cancelled call must not be retried", err)
	}
	if n := len(srv.Received()); n != 0 {
		t.Errorf("server received %d requests", n)
	}
}

func TestLargeMaxTokensIsSentWithTheDefaultTimeout(t *testing.T) {
	// The SDK refuses a request it expects to take over ten minutes unless
	// it streams; every request streams.
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 64000, Messages: []llm.Message{llm.UserText("Write a book.")}}
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("max_tokens 64000: %v", err)
	}
	if n := len(srv.Received()); n != 1 {
		t.Errorf("server received %d requests, want 1", n)
	}
}

func TestInvalidRawBlockFailsBeforeSending(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"unused"}]}]}`, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.ContentBlock{
		llm.TextBlock("Hi"), {Type: "container_upload", Raw: json.RawMessage(`{"type":"container_upload",`)},
	}}}}
	_, err := p.Messages(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "messages.0.content.1") {
		t.Errorf("err = %v, want one naming messages.0.content.1", err)
	}
	if _, ok := llm.AsAPIError(err); ok {
		t.Error("a request that cannot be encoded must not be retryable")
	}
	if n := len(srv.Received()); n != 0 {
		t.Errorf("server received %d requests, want 0", n)
	}
}

type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestConfigHTTPClientCarriesTheRequests(t *testing.T) {
	tr := &countingTransport{}
	_, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{HTTPClient: &http.Client{Transport: tr}})
	if _, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{llm.UserText("Hi")}}); err != nil {
		t.Fatal(err)
	}
	if tr.n.Load() != 1 {
		t.Errorf("custom transport carried %d requests, want 1", tr.n.Load())
	}
}

// The SDK's encoder escapes <, > and & inside strings, as encoding/json
// does: a raw block holding them reaches the wire as the same JSON value,
// not the same bytes. This pins that documented limit.
func TestRawBlockWithHTMLCharactersIsSentAsTheSameJSON(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	raw := `{"type":"server_tool_use","id":"srvtoolu_9","name":"web_fetch","input":{"url":"https://x.test/?a=1&b=<2>"}}`
	req := &llm.Request{Model: model, MaxTokens: 100, Messages: []llm.Message{
		llm.UserText("Fetch."),
		{Role: llm.RoleAssistant, Content: []llm.ContentBlock{{Type: "server_tool_use", Raw: json.RawMessage(raw)}}},
		llm.UserText("Go on."),
	}}
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	body := onlyRequest(t, srv).Body
	if !bytes.Contains(body, []byte(`a=1\u0026b=\u003c2\u003e`)) {
		t.Errorf("body does not carry the escaped form: %s", body)
	}
	var m struct {
		Messages []struct {
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "raw block", m.Messages[1].Content[0], []byte(raw))
}

func TestRequestTheSDKCannotEncodeIsNotAConnectionError(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"unused"}]}]}`, anthropic.Config{})
	nan := math.NaN()
	_, err := p.Messages(context.Background(), &llm.Request{Model: model, MaxTokens: 100, Temperature: &nan, Messages: []llm.Message{llm.UserText("Hi")}})
	if err == nil {
		t.Fatal("a NaN temperature was sent")
	}
	if _, ok := llm.AsAPIError(err); ok {
		t.Errorf("err = %v is an APIError; an encoding failure must not be retried", err)
	}
	if n := len(srv.Received()); n != 0 {
		t.Errorf("server received %d requests, want 0", n)
	}
}

// The top-level cache_control (automatic caching) goes out as given.
func TestAutomaticCacheControlOnTheWire(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`, anthropic.Config{})
	req := hi()
	req.CacheControl = llm.EphemeralTTL("1h")
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "cache_control", bodyField(t, onlyRequest(t, srv).Body, "cache_control"), []byte(`{"type":"ephemeral","ttl":"1h"}`))
}
