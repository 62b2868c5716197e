package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

// keyedAPI is the fake Anthropic API behind a key check, as the real API
// does it: any key but good is answered 401 authentication_error.
func keyedAPI(t testing.TB, fake *llmtest.Server, good string) *httptest.Server {
	u, err := url.Parse(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") != good {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	return api
}

// anthropicServer is a web server on the Anthropic provider whose API is
// the strict fake behind a check for the key testKey.
func anthropicServer(t testing.TB, responses string, opts kernel.Options) (*Server, *httptest.Server, *llmtest.Server) {
	t.Helper()
	return anthropicServerIn(t, t.TempDir(), responses, opts)
}

// anthropicServerIn is anthropicServer on the data directory dir.
func anthropicServerIn(t testing.TB, dir, responses string, opts kernel.Options) (*Server, *httptest.Server, *llmtest.Server) {
	t.Helper()
	s, err := script.Parse([]byte(responses))
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewServer(s)
	t.Cleanup(fake.Close)
	api := keyedAPI(t, fake, testKey)
	t.Setenv("ANTHROPIC_API_KEY", "")
	srv, err := New(context.Background(), Config{
		DataDir: dir, Provider: "anthropic", KeyNeeded: true, BaseURL: api.URL, Kernel: opts,
		NewClient: func(key string) (*llm.Client, error) {
			p, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: api.URL})
			return &llm.Client{Provider: p}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return srv, ts, fake
}

func TestCallAPIWithoutAModelIsCleanedUpAndGetsTheBetasItsToolsNeed(t *testing.T) {
	srv, ts, fake := anthropicServer(t, `{"responses":[{"content":[{"type":"text","text":"hi from the raw API"}]}]}`, kernel.Options{})
	if code := post(t, ts, srv, "/api/key", map[string]string{"key": testKey}, nil); code != http.StatusOK {
		t.Fatalf("key: HTTP %d", code)
	}
	var resp llm.Response
	code := post(t, ts, srv, "/api/claude", map[string]any{
		"max_tokens": 2000, "system": nil, "temperature": 0.3, "thinking": map[string]any{"type": "adaptive"},
		"messages": []any{map[string]any{"role": "user", "content": "hello"}},
		"tools":    []any{map[string]any{"type": "computer_20250124", "name": "computer", "display_width_px": 800, "display_height_px": 600}},
	}, &resp)
	if code != http.StatusOK || resp.Text() != "hi from the raw API" {
		t.Fatalf("HTTP %d %+v", code, resp)
	}
	got := fake.Received()[0]
	var sent map[string]json.RawMessage
	json.Unmarshal(got.Body, &sent)
	if string(sent["model"]) != `"claude-opus-4-6"` || sent["temperature"] != nil || sent["system"] != nil || sent["thinking"] == nil {
		t.Fatalf("sent %s", got.Body)
	}
	if beta := got.Header.Get("anthropic-beta"); beta != "computer-use-2025-01-24" {
		t.Fatalf("anthropic-beta %q", beta)
	}
}

func TestCallAPIWithoutAModelThroughAnotherProvider(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[{"match":{"model":"claude-opus-4-6"},"response":{"content":[{"type":"text","text":"fallback model used"}]}}]}`)
	var resp llm.Response
	code := post(t, ts, srv, "/api/claude", map[string]any{"max_tokens": 100, "temperature": 1, "thinking": nil,
		"messages": []any{map[string]any{"role": "user", "content": "hello"}}}, &resp)
	if code != http.StatusOK || resp.Text() != "fallback model used" {
		t.Fatalf("HTTP %d %+v", code, resp)
	}
}

func TestAWrongKeyIsReportedAsAuthAndTheNextKeyIsUsed(t *testing.T) {
	srv, ts, _ := anthropicServer(t, `{"responses":[{"content":[{"type":"thinking","thinking":"hi","signature":"s"},{"type":"text","text":"now it works"}]}]}`, kernel.Options{})
	post(t, ts, srv, "/api/key", map[string]string{"key": "sk-ant-wrong"}, nil)
	var out map[string]any
	msgs := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if code := post(t, ts, srv, "/api/call", msgs, &out); code != http.StatusUnauthorized || out["auth"] != true {
		t.Fatalf("a refused key: HTTP %d %v", code, out)
	}
	post(t, ts, srv, "/api/key", map[string]string{"key": testKey}, nil)
	if code := post(t, ts, srv, "/api/call", msgs, &out); code != http.StatusOK || out["text"] != "now it works" {
		t.Fatalf("with the new key: HTTP %d %v", code, out)
	}
}

func TestTheKeyCanBeRemovedFromThePageOrReplacedFromTheCLI(t *testing.T) {
	srv, ts, _ := anthropicServer(t, `{"responses":[]}`, kernel.Options{})
	post(t, ts, srv, "/api/key", map[string]string{"key": testKey}, nil)
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/api/key", nil)
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("X-CSRF-Token", srv.csrf)
	resp, err := ts.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /api/key: %v %v", resp, err)
	}
	resp.Body.Close()
	var state map[string]any
	get(t, ts, "/api/state", &state)
	if state["has_key"] != false {
		t.Fatalf("after removing the key: %v", state)
	}
	// `hermitcrab key set` in another terminal writes the file; the
	// running server uses it on its next request.
	if err := srv.Kernel().Secrets().SetKey("sk-ant-from-the-cli"); err != nil {
		t.Fatal(err)
	}
	get(t, ts, "/api/state", &state)
	if state["has_key"] != true || state["key_from"] != "stored" || srv.passKey() != "sk-ant-from-the-cli" {
		t.Fatalf("after key set: %v", state)
	}
	if _, err := srv.Kernel().Secrets().ClearKey(); err != nil {
		t.Fatal(err)
	}
	if get(t, ts, "/api/state", &state); state["has_key"] != false {
		t.Fatalf("after key clear: %v", state)
	}
	if strings.Contains(srv.passKey(), "sk-ant") {
		t.Fatal("the removed key is still in use")
	}
}

func TestCallAPIWithABodyThatIsNotAnObjectSaysSo(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[]}`)
	for body, want := range map[string]string{"null": "the request is null", "[]": "not a JSON object", `{"a":1}{`: "not a JSON object"} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/claude", strings.NewReader(body))
		req.Header.Set("Origin", ts.URL)
		req.Header.Set("X-CSRF-Token", srv.csrf)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]string
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(out["error"], want) || strings.Contains(out["error"], "<nil>") {
			t.Errorf("%s: HTTP %d %q", body, resp.StatusCode, out["error"])
		}
	}
}

// sentTools is the tools array of a request body as JSON, each without
// cache_control (a kernel call puts its breakpoint on its last tool), and
// whether the body had a tools key.
func sentTools(t *testing.T, body []byte) (string, bool) {
	t.Helper()
	var req struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys["tools"]; !ok {
		return "", false
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, tool := range req.Tools {
		delete(tool, "cache_control")
	}
	out, _ := json.Marshal(req.Tools)
	return string(out), true
}

// toolNames lists the names in a sentTools array.
func toolNames(t *testing.T, tools string) []string {
	var list []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(tools), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list {
		names = append(names, tool.Name)
	}
	return names
}

// §7.1: a callAPI without tools gets the current tools, exactly as a
// kernel call sends them now (server tools with their type, client tools
// with input_schema, allowed_callers), and the anthropic-beta header they
// need; an explicit [] is kept; after set_tools the injected set follows.
func TestCallAPIWithoutToolsGetsTheCurrentTools(t *testing.T) {
	text := `{"content":[{"type":"text","text":"ok"}]}`
	srv, ts, fake := anthropicServer(t, `{"responses":[`+strings.Repeat(text+",", 5)+text+`]}`, kernel.Options{ServerTools: true})
	if code := post(t, ts, srv, "/api/key", map[string]string{"key": testKey}, nil); code != http.StatusOK {
		t.Fatalf("key: HTTP %d", code)
	}
	hello := []any{map[string]any{"role": "user", "content": "hello"}}
	callAPI := func(req map[string]any) llmtest.Received {
		t.Helper()
		req["max_tokens"], req["messages"] = 100, hello
		var resp llm.Response
		if code := post(t, ts, srv, "/api/claude", req, &resp); code != http.StatusOK || resp.Text() != "ok" {
			t.Fatalf("callAPI %v: HTTP %d %+v", req, code, resp)
		}
		got := fake.Received()
		return got[len(got)-1]
	}
	// What a kernel call sends now.
	if code := post(t, ts, srv, "/api/call", map[string]any{"messages": hello}, nil); code != http.StatusOK {
		t.Fatalf("call: HTTP %d", code)
	}
	kernelTools, _ := sentTools(t, fake.Received()[0].Body)

	got := callAPI(map[string]any{})
	tools, ok := sentTools(t, got.Body)
	if !ok || tools != kernelTools {
		t.Fatalf("callAPI without tools sent\n%s\nwant what a kernel call sends\n%s", tools, kernelTools)
	}
	if names := toolNames(t, tools); len(names) != len(conversation.BootTools()) || !strings.Contains(tools, `"type":"web_search_20260209"`) ||
		!strings.Contains(tools, `"input_schema"`) || !strings.Contains(tools, `"allowed_callers":["code_execution_20250825"]`) {
		t.Fatalf("injected tools %s", tools)
	}
	if want := strings.Join(anthropic.Betas(nil, got.Request.Tools), ","); got.Header.Get("anthropic-beta") != want {
		t.Fatalf("anthropic-beta %q, want %q for the injected tools", got.Header.Get("anthropic-beta"), want)
	}
	if got := callAPI(map[string]any{"tools": nil}); func() bool { s, _ := sentTools(t, got.Body); return s != kernelTools }() {
		t.Fatalf("tools: null was not given the current tools: %s", got.Body)
	}

	// [] is the caller's "no tools".
	if tools, ok := sentTools(t, callAPI(map[string]any{"tools": []any{}}).Body); !ok || tools != "[]" {
		t.Fatalf("tools: [] sent %q (present %v)", tools, ok)
	}

	// set_tools changes what is injected.
	if code := post(t, ts, srv, "/api/tools", map[string]any{"tools": []any{"bsp", "block_read"}}, nil); code != http.StatusOK {
		t.Fatalf("setTools: HTTP %d", code)
	}
	tools, _ = sentTools(t, callAPI(map[string]any{}).Body)
	if names := strings.Join(toolNames(t, tools), ","); names != "bsp,block_read,set_tools" || strings.Contains(tools, "allowed_callers") {
		t.Fatalf("after setTools the injected tools are %s: %s", names, tools)
	}
}

// The same through another provider's client (claudeViaClient).
func TestCallAPIWithoutToolsThroughAnotherProvider(t *testing.T) {
	srv, ts, p := scriptServer(t, `{"responses":[{"content":[{"type":"text","text":"a"}]},{"content":[{"type":"text","text":"b"}]},{"content":[{"type":"text","text":"c"}]}]}`)
	hello := []any{map[string]any{"role": "user", "content": "hello"}}
	names := func(req map[string]any) []string {
		t.Helper()
		req["max_tokens"], req["messages"] = 100, hello
		if code := post(t, ts, srv, "/api/claude", req, nil); code != http.StatusOK {
			t.Fatalf("callAPI %v: HTTP %d", req, code)
		}
		sent := p.Requests()
		var out []string
		for _, tool := range sent[len(sent)-1].Tools {
			if tool.IsServer() || len(tool.InputSchema) == 0 {
				t.Errorf("tool %s sent as %+v: this provider has no server tools, a client tool has its input_schema", tool.Name, tool)
			}
			out = append(out, tool.Name)
		}
		return out
	}
	// The script provider runs no server tools: the boot set's client tools.
	var client []string
	for _, name := range conversation.BootTools() {
		if !slices.Contains([]string{"web_search", "web_fetch", "code_execution"}, name) {
			client = append(client, name)
		}
	}
	if got := names(map[string]any{}); !slices.Equal(got, client) {
		t.Fatalf("injected %v", got)
	}
	if got := names(map[string]any{"tools": []any{}}); len(got) != 0 {
		t.Fatalf("tools: [] got %v", got)
	}
	post(t, ts, srv, "/api/tools", map[string]any{"tools": []any{"resolve"}}, nil)
	if got := names(map[string]any{}); strings.Join(got, ",") != "resolve,set_tools" {
		t.Fatalf("after setTools: %v", got)
	}
}

// DELETE /api/tools (the page's "reset tools" control) puts the boot tools
// back, only with the page's CSRF token and Origin.
func TestThePageCanResetTheToolsToTheBootSet(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[]}`)
	ctx := context.Background()
	if code := post(t, ts, srv, "/api/tools", map[string]any{"tools": []any{"bsp"}}, nil); code != http.StatusOK {
		t.Fatalf("setTools: HTTP %d", code)
	}
	reset := func(origin, token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/api/tools", nil)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.Header.Set("X-CSRF-Token", token)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	active := func() string {
		tools, err := srv.Kernel().Conversation().ActiveTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
		}
		return strings.Join(names, ",")
	}
	for _, c := range []struct{ origin, token string }{{ts.URL, ""}, {ts.URL, "guess"}, {"http://evil.example", srv.csrf}} {
		if code, _ := reset(c.origin, c.token); code != http.StatusForbidden || active() != "bsp,set_tools" {
			t.Fatalf("a reset from %q with token %q: HTTP %d, tools %s", c.origin, c.token, code, active())
		}
	}
	if code, out := reset(ts.URL, srv.csrf); code != http.StatusOK || out["reset"] != true || active() != strings.Join(conversation.BootTools(), ",") {
		t.Fatalf("reset: HTTP %d %v, tools %s", code, out, active())
	}
	if code, out := reset(ts.URL, srv.csrf); code != http.StatusOK || out["reset"] != false {
		t.Fatalf("a second reset: HTTP %d %v", code, out)
	}
}

// A callAPI request costs money like any other call: its answer is added
// to the day's usage (what tools list shows), through the Anthropic
// passthrough (an answer whole or streamed) and through another provider.
func TestCallAPIAnswersAreAddedToTheUsage(t *testing.T) {
	answer := `{"content":[{"type":"text","text":"raw"}],"usage":{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":3000}}`
	srv, ts, _ := anthropicServer(t, `{"responses":[`+answer+`,`+answer+`]}`, kernel.Options{})
	post(t, ts, srv, "/api/key", map[string]string{"key": testKey}, nil)
	msgs := []any{map[string]any{"role": "user", "content": "hello"}}
	for _, stream := range []bool{false, true} {
		body := map[string]any{"max_tokens": 200, "messages": msgs, "tools": []any{}}
		if stream {
			body["stream"] = true
		}
		if code := post(t, ts, srv, "/api/claude", body, nil); code != http.StatusOK {
			t.Fatalf("stream %v: HTTP %d", stream, code)
		}
	}
	u, err := srv.Kernel().Conversation().Usage(context.Background(), "", 1)
	if err != nil || u.Calls != 2 || u.Tokens.InputTokens != 2000 || u.Tokens.CacheReadInputTokens != 6000 || u.Tokens.OutputTokens != 200 || u.CostUSD <= 0 {
		t.Fatalf("the passthrough's usage: %+v %v", u, err)
	}

	other, ots := testServer(t, `{"responses":[`+answer+`]}`)
	if code := post(t, ots, other, "/api/claude", map[string]any{"max_tokens": 200, "messages": msgs}, nil); code != http.StatusOK {
		t.Fatalf("another provider: HTTP %d", code)
	}
	if u, err := other.Kernel().Conversation().Usage(context.Background(), "", 1); err != nil || u.Calls != 1 || u.Tokens.OutputTokens != 100 {
		t.Fatalf("another provider's usage: %+v %v", u, err)
	}
}
