package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
)

func validHeaders() map[string]string {
	return map[string]string{"x-api-key": "test-key", "anthropic-version": "2023-06-01", "content-type": "application/json"}
}

type httpResult struct {
	status int
	header http.Header
	body   []byte
}

func post(t *testing.T, srv *Server, headers map[string]string, body string) httpResult {
	t.Helper()
	return do(t, http.MethodPost, srv.URL+"/v1/messages", headers, body)
}

func do(t *testing.T, method, url string, headers map[string]string, body string) httpResult {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return httpResult{res.StatusCode, res.Header, data}
}

// wantError checks the API's error shape, status, type and message text.
func (r httpResult) wantError(t *testing.T, status int, typ, text string) {
	t.Helper()
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("error body %s is not JSON: %v", r.body, err)
	}
	if r.status != status || body.Type != "error" || body.Error.Type != typ || !strings.Contains(body.Error.Message, text) {
		t.Errorf("got %d %s, want %d with {type: error, error: {type: %s, message containing %q}}", r.status, r.body, status, typ, text)
	}
	if id := r.header.Get("request-id"); !strings.HasPrefix(id, "req_") || body.RequestID != id {
		t.Errorf("request-id header %q and body request_id %q must agree and start with req_", id, body.RequestID)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
}

const oneAnswer = `{"responses":[{"content":[{"type":"text","text":"hello over HTTP"}]}]}`

func TestServerAnswersInWireFormatAndRecords(t *testing.T) {
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	body := `{"model":"` + testModel + `","max_tokens":64,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`
	res := post(t, srv, validHeaders(), body)
	if res.status != 200 || res.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(res.header.Get("request-id"), "req_") {
		t.Fatalf("got %d, Content-Type %q, request-id %q: %s", res.status, res.header.Get("Content-Type"), res.header.Get("request-id"), res.body)
	}
	var resp llm.Response
	if err := json.Unmarshal(res.body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "hello over HTTP" || resp.Type != "message" || resp.Model != testModel || resp.StopReason != "end_turn" || resp.Usage.InputTokens == 0 {
		t.Errorf("response = %s", res.body)
	}
	got := srv.Received()
	if len(got) != 1 || got[0].Header.Get("x-api-key") != "test-key" || string(got[0].Body) != body ||
		got[0].Request == nil || got[0].Request.System[0].Text != "be brief" {
		t.Errorf("Received = %+v, want the one request with its header, body and decoded request", got)
	}
	if srv.Remaining() != 0 {
		t.Errorf("Remaining = %d, want 0", srv.Remaining())
	}
}

func TestServerRejectsMissingAPIKeyWith401(t *testing.T) {
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	h := validHeaders()
	delete(h, "x-api-key")
	body, _ := json.Marshal(userRequest("hi"))
	post(t, srv, h, string(body)).wantError(t, 401, "authentication_error", "x-api-key")
	if srv.Remaining() != 1 || len(srv.Received()) != 1 {
		t.Errorf("Remaining = %d, Received %d; want the entry unused and the request recorded", srv.Remaining(), len(srv.Received()))
	}
}

// A body over 32 MB is refused as the API refuses it, using no entry.
func TestServerRejectsABodyOver32MB(t *testing.T) {
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	body, _ := json.Marshal(userRequest("hi"))
	pad := func(n int) string {
		return string(body[:len(body)-1]) + `,"metadata":{"user_id":"` + strings.Repeat("a", n) + `"}}`
	}
	over := pad(MaxRequestBytes - len(pad(0)) + 1)
	post(t, srv, validHeaders(), over).wantError(t, 413, "request_too_large", "maximum allowed number of bytes")
	if srv.Remaining() != 1 {
		t.Errorf("the entry was used by a refused request")
	}
}

func TestServerRejectsMissingVersionHeaderWith400(t *testing.T) {
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	h := validHeaders()
	delete(h, "anthropic-version")
	body, _ := json.Marshal(userRequest("hi"))
	post(t, srv, h, string(body)).wantError(t, 400, "invalid_request_error", "anthropic-version")
}

func TestServerRejectsBodiesTheAPIRejects(t *testing.T) {
	cases := []struct {
		name, body, text string
	}{
		{"not JSON", `{"model":`, "not a JSON object"},
		{"unknown top-level field", `{"model":"m","max_tokens":5,"temprature":0.5,"messages":[{"role":"user","content":"hi"}]}`, "temprature: Extra inputs are not permitted"},
		{"stream", `{"model":"m","max_tokens":5,"stream":"yes","messages":[{"role":"user","content":"hi"}]}`, "stream: Input should be a valid boolean"},
		{"rule violation", `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"hi"}]}`, "the first message must use the user role"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := NewServer(mustParse(t, oneAnswer))
			defer srv.Close()
			post(t, srv, validHeaders(), c.body).wantError(t, 400, "invalid_request_error", c.text)
			if srv.Remaining() != 1 {
				t.Errorf("Remaining = %d, want the entry unused", srv.Remaining())
			}
		})
	}
}

func TestServerAcceptsEveryFieldOfLLMRequest(t *testing.T) {
	temp := 1.0
	req := &llm.Request{
		Model: testModel, MaxTokens: 4096,
		System:        []llm.SystemBlock{{Type: llm.BlockText, Text: "sys", CacheControl: llm.Ephemeral()}},
		Messages:      []llm.Message{llm.UserText("hi")},
		Tools:         []llm.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, llm.MCPToolset("docs")},
		MCPServers:    []llm.MCPServer{{Type: "url", URL: "https://docs.example/mcp", Name: "docs"}},
		ToolChoice:    &llm.ToolChoice{Type: "auto"},
		Thinking:      &llm.Thinking{Type: "enabled", BudgetTokens: 2048},
		Temperature:   &temp,
		StopSequences: []string{"STOP"},
		Metadata:      &llm.Metadata{UserID: "u1"},
		Container:     "container_1",
		CacheControl:  llm.Ephemeral(),
	}
	body, _ := json.Marshal(req)
	var fields map[string]json.RawMessage
	json.Unmarshal(body, &fields)
	if len(fields) != len(requestFields) {
		t.Fatalf("test request sets %d fields but llm.Request has %d; set them all", len(fields), len(requestFields))
	}
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	h := validHeaders()
	h["anthropic-beta"] = "mcp-client-2025-11-20" // the MCP connector's
	if res := post(t, srv, h, string(body)); res.status != 200 {
		t.Errorf("a request using every llm.Request field got %d: %s", res.status, res.body)
	}
}

func TestServerOtherPathsAndMethodsAre404(t *testing.T) {
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	body, _ := json.Marshal(userRequest("hi"))
	do(t, http.MethodPost, srv.URL+"/v1/complete", validHeaders(), string(body)).wantError(t, 404, "not_found_error", "/v1/complete")
	do(t, http.MethodGet, srv.URL+"/v1/messages", validHeaders(), "").wantError(t, 404, "not_found_error", "GET /v1/messages")
	got := srv.Received()
	if len(got) != 2 || got[0].Path != "/v1/complete" || got[1].Method != http.MethodGet || got[1].Request != nil {
		t.Errorf("Received = %+v, want both requests recorded in order", got)
	}
	if srv.Remaining() != 1 {
		t.Errorf("Remaining = %d, want the entry unused", srv.Remaining())
	}
}

func TestServerErrorEntryHasStatusBodyAndRetryAfter(t *testing.T) {
	srv := NewServer(mustParse(t, `{"responses":[
		{"error":{"status":529,"type":"overloaded_error","message":"Overloaded","retry_after":2}},
		{"error":{"status":500,"type":"api_error"}},
		{"content":[{"type":"text","text":"ok"}]}]}`))
	defer srv.Close()
	body, _ := json.Marshal(userRequest("hi"))
	res := post(t, srv, validHeaders(), string(body))
	res.wantError(t, 529, "overloaded_error", "Overloaded")
	if got := res.header.Get("retry-after"); got != "2" {
		t.Errorf("retry-after = %q, want 2", got)
	}
	res = post(t, srv, validHeaders(), string(body))
	res.wantError(t, 500, "api_error", "api_error")
	if got := res.header.Get("retry-after"); got != "" {
		t.Errorf("retry-after = %q on an entry without retry_after, want none", got)
	}
	if res := post(t, srv, validHeaders(), string(body)); res.status != 200 {
		t.Errorf("third request got %d, want the response entry", res.status)
	}
}

func TestServerExhaustionIsNonRetryable400NamingTheRequest(t *testing.T) {
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	body, _ := json.Marshal(userRequest("first"))
	post(t, srv, validHeaders(), string(body))
	body, _ = json.Marshal(userRequest("the second question"))
	res := post(t, srv, validHeaders(), string(body))
	res.wantError(t, 400, "invalid_request_error", `request 2 (model "`+testModel+`", last user message "the second question")`)
	if !strings.Contains(string(res.body), "1 entries, 1 used") {
		t.Errorf("exhaustion body %s does not say how much of the script was used", res.body)
	}
}

func TestServerRejectsUnansweredToolUseWithAPIMessage(t *testing.T) {
	const apiText = "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"
	script := mustParse(t, `{"responses":[{"content":[{"type":"text","text":"should not be used"}]}]}`)
	srv := NewServer(script)
	defer srv.Close()
	body, _ := json.Marshal(&llm.Request{Model: testModel, MaxTokens: 256, Messages: []llm.Message{
		llm.UserText("weather?"),
		{Role: llm.RoleAssistant, Content: []llm.ContentBlock{{Type: llm.BlockToolUse, ID: "toolu_1", Name: "get_weather", Input: json.RawMessage(`{}`)}}},
		llm.UserText("and?"),
	}})
	res := post(t, srv, validHeaders(), string(body))
	res.wantError(t, 400, "invalid_request_error", apiText)
	if srv.Remaining() != 1 {
		t.Errorf("Remaining = %d, want the entry unused", srv.Remaining())
	}
}

func mustParse(t *testing.T, s string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(s))
	if err != nil {
		t.Fatalf("script.Parse: %v", err)
	}
	return sc
}

const testModel = "claude-sonnet-4-5"

// userRequest is a valid one-turn request.
func userRequest(text string) *llm.Request {
	return &llm.Request{Model: testModel, MaxTokens: 256, Messages: []llm.Message{llm.UserText(text)}}
}

// With "stream": true the answer comes as the API's server-sent events,
// and the server records both the events and the message they assemble
// into.
func TestServerStreamsTheAPIsEventSequence(t *testing.T) {
	srv := NewServer(mustParse(t, `{"responses":[{"content":[
		{"type":"thinking","thinking":"a thought long enough for two pieces","signature":"sig"},
		{"type":"text","text":"hello over a stream"}],"usage":{"input_tokens":7,"output_tokens":3}}]}`))
	defer srv.Close()
	body := `{"model":"` + testModel + `","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	res := post(t, srv, validHeaders(), body)
	if res.status != 200 || res.header.Get("Content-Type") != "text/event-stream; charset=utf-8" || !strings.HasPrefix(res.header.Get("request-id"), "req_") {
		t.Fatalf("%d %v", res.status, res.header)
	}
	var names []string
	for _, frame := range strings.Split(strings.TrimSpace(string(res.body)), "\n\n") {
		name, data, ok := strings.Cut(frame, "\ndata: ")
		if !ok || !strings.HasPrefix(name, "event: ") || !json.Valid([]byte(data)) {
			t.Fatalf("not an SSE frame: %q", frame)
		}
		var typed struct {
			Type string `json:"type"`
		}
		json.Unmarshal([]byte(data), &typed)
		if name = strings.TrimPrefix(name, "event: "); typed.Type != name {
			t.Errorf("event %s carries type %s", name, typed.Type)
		}
		names = append(names, name)
	}
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("events\n%v\nwant\n%v", names, want)
	}
	got := srv.Received()[0]
	wantAnswer := `{"id":"msg_script_0","type":"message","role":"assistant","model":"` + testModel + `","content":[{"type":"thinking","thinking":"a thought long enough for two pieces","signature":"sig"},{"type":"text","text":"hello over a stream"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`
	if string(got.Response) != wantAnswer || string(got.Stream) != string(res.body) {
		t.Errorf("recorded answer\n%s\nwant\n%s\n(stream recorded as written: %v)", got.Response, wantAnswer, string(got.Stream) == string(res.body))
	}
}

// A stream broken by an error event ends with the API's error event; the
// server records no answer for it and gives its entry back.
func TestServerBreaksAStreamWithAnErrorEvent(t *testing.T) {
	srv := NewServer(mustParse(t, oneAnswer))
	defer srv.Close()
	srv.BreakStream(StreamFault{After: 3, Error: "overloaded_error"})
	body := `{"model":"` + testModel + `","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	res := post(t, srv, validHeaders(), body)
	frames := strings.Split(strings.TrimSpace(string(res.body)), "\n\n")
	if len(frames) != 4 || !strings.HasPrefix(frames[3], "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"") {
		t.Fatalf("frames %q", frames)
	}
	if got := srv.Received()[0]; got.Response != nil || srv.Remaining() != 1 {
		t.Errorf("a broken stream recorded answer %s, %d entries left", got.Response, srv.Remaining())
	}
	if res := post(t, srv, validHeaders(), body); !strings.Contains(string(res.body), "event: message_stop") || srv.Remaining() != 0 {
		t.Errorf("the request sent again did not get the entry whole: %s", res.body)
	}
}

// The server reports what its simulated prompt cache read and wrote, and
// its clock can be moved.
func TestServerSimulatesThePromptCache(t *testing.T) {
	srv := NewServer(mustParse(t, `{"responses":[{"content":[{"type":"text","text":"a"}]},{"content":[{"type":"text","text":"b"}]},{"content":[{"type":"text","text":"c"}]}]}`))
	defer srv.Close()
	now := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	srv.SetClock(func() time.Time { return now })
	system := strings.Repeat("Stable instructions. ", 300)
	body := `{"model":"` + testModel + `","max_tokens":64,"stream":true,"system":[{"type":"text","text":"` + system + `","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`
	usage := func() llm.Usage {
		post(t, srv, validHeaders(), body)
		got := srv.Received()
		var resp llm.Response
		if err := json.Unmarshal(got[len(got)-1].Response, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.Usage
	}
	first, second := usage(), usage()
	if first.CacheCreationInputTokens == 0 || second.CacheReadInputTokens != first.CacheCreationInputTokens {
		t.Fatalf("first %+v, second %+v", first, second)
	}
	now = now.Add(6 * time.Minute)
	if third := usage(); third.CacheReadInputTokens != 0 || third.CacheCreationInputTokens == 0 {
		t.Fatalf("after 6 minutes: %+v", third)
	}
}
