package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
)

// recorder keeps what an observer was told.
type recorder struct {
	mu      sync.Mutex
	events  []Event
	changed chan string // servers that said their tools changed
}

func newRecorder() *recorder { return &recorder{changed: make(chan string, 16)} }

func (r *recorder) observe(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if e.Kind == EventToolsChanged {
		r.changed <- e.Server
	}
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) calls(tool string) []Event {
	var out []Event
	for _, e := range r.all() {
		if e.Kind == EventCall && e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}

// transports are the two ways to reach the test server.
var transports = []struct {
	name   string
	server func(t *testing.T, name string) Server
}{
	{"http", func(t *testing.T, name string) Server { return Server{Name: name, URL: httpServer(t, "").URL} }},
	{"stdio", stdioServer},
}

func newSet(t *testing.T, opts Options, servers ...Server) *Set {
	t.Helper()
	set, err := NewSet(servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return set
}

func handler(t *testing.T, o Offer, name string) llm.ToolHandler {
	t.Helper()
	for _, h := range o.Handlers {
		if h.Tool.Name == name {
			return h
		}
	}
	t.Fatalf("no tool %s offered; offered: %v; notes: %q", name, names(o), o.Notes)
	return llm.ToolHandler{}
}

func names(o Offer) []string {
	var n []string
	for _, h := range o.Handlers {
		n = append(n, h.Tool.Name)
	}
	return n
}

func call(t *testing.T, ctx context.Context, h llm.ToolHandler, input string) llm.ToolOutput {
	t.Helper()
	out, err := h.Run(ctx, json.RawMessage(input))
	if err != nil {
		t.Fatalf("%s: the handler returned an error instead of an error result: %v", h.Tool.Name, err)
	}
	return out
}

func wantError(t *testing.T, out llm.ToolOutput, contains string) {
	t.Helper()
	if !out.IsError || !strings.Contains(out.Content.String(), contains) {
		t.Fatalf("want an error result containing %q, got is_error=%v %q", contains, out.IsError, out.Content.String())
	}
}

func wantText(t *testing.T, out llm.ToolOutput, want string) {
	t.Helper()
	if out.IsError || out.Content.String() != want {
		t.Fatalf("want %q, got is_error=%v %q", want, out.IsError, out.Content.String())
	}
}

func TestToolsAreOfferedUnderTheServersNameOverBothTransports(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			rec := newRecorder()
			set := newSet(t, Options{Observe: rec.observe}, tr.server(t, "web"))
			o := set.Offer(t.Context())
			ctx := t.Context()

			wantText(t, call(t, ctx, handler(t, o, "web__echo"), `{"text":"hi"}`), "echo: hi")
			// A character the API refuses in a name is offered as "_", and
			// the call goes to the server's own name.
			wantText(t, call(t, ctx, handler(t, o, "web__files_read"), `{}`), "read")
			// An empty input is the empty object.
			wantText(t, call(t, ctx, handler(t, o, "web__echo"), ``), "echo: ")
			wantError(t, call(t, ctx, handler(t, o, "web__echo"), `["not","an","object"]`), "must be a JSON object")

			h := handler(t, o, "web__echo")
			if h.Tool.Description != "Echo the text back." || llm.CheckInputSchema(h.Tool.InputSchema) != nil {
				t.Errorf("echo offered as %+v", h.Tool)
			}
			req := &llm.Request{Model: "m", MaxTokens: 10, Messages: []llm.Message{llm.UserText("hi")}}
			for _, h := range o.Handlers {
				req.Tools = append(req.Tools, h.Tool)
			}
			if err := llm.CheckRequest(req); err != nil {
				t.Errorf("the offered tools break the API's rules: %v", err)
			}

			events := rec.calls("web__echo")
			if len(events) != 3 || events[0].Server != "web" || events[0].Duration <= 0 || events[0].Bytes != len("echo: hi") || events[0].IsError || events[0].Err != "" {
				t.Errorf("call events: %+v", events)
			}
			if bad := events[2]; !bad.IsError || !strings.Contains(bad.Err, "JSON object") {
				t.Errorf("a refused call's event: %+v", bad)
			}
		})
	}
}

func TestSchemasTheAPIWouldRefuseAreLeftOutWithANote(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			set := newSet(t, Options{}, tr.server(t, "web"))
			o := set.Offer(t.Context())
			for _, n := range names(o) {
				if n == "web__bad_schema" || n == "web__oneof" {
					t.Errorf("%s was offered", n)
				}
			}
			wantNote(t, o.Notes, `tool "bad_schema" left out: the API would refuse its schema: input_schema.type: Input should be 'object', got "string"`)
			wantNote(t, o.Notes, `tool "oneof" left out: the API would refuse its schema: input_schema does not support oneOf, allOf, or anyOf at the top level`)
		})
	}
}

func wantNote(t *testing.T, notes []string, contains string) {
	t.Helper()
	for _, n := range notes {
		if strings.Contains(n, contains) {
			return
		}
	}
	t.Errorf("no note contains %q; notes: %q", contains, notes)
}

// A 10 MB answer reaches the loop whole, and the loop cuts it with its
// note, as it cuts every tool result.
func TestATenMegabyteResultIsCutWithANote(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			rec := newRecorder()
			set := newSet(t, Options{Observe: rec.observe}, tr.server(t, "web"))
			o := set.Offer(t.Context())
			sc, err := script.Parse([]byte(`{"responses": [
				{"content": [{"type": "tool_use", "name": "web__big", "input": {}}]},
				{"match": {"tool_result_for": "web__big"}, "response": {"content": [{"type": "text", "text": "done"}]}}
			]}`))
			if err != nil {
				t.Fatal(err)
			}
			loop := &llm.Loop{Client: &llm.Client{Provider: script.New(sc)}, Handlers: o.Handlers}
			res, err := loop.Run(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: []llm.Message{llm.UserText("go")}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != "done" {
				t.Fatalf("the loop ended with %q", res.Text())
			}
			result := res.Messages[2].Content[0]
			want := strings.Repeat("x", 100_000) + fmt.Sprintf("\n[output cut: %d of %d characters omitted]", bigResult-100_000, bigResult)
			if result.Type != llm.BlockToolResult || result.IsError || result.Content.String() != want {
				t.Fatalf("tool result: is_error=%v, %d characters: %.80q…", result.IsError, len(result.Content.String()), result.Content.String())
			}
			if ev := rec.calls("web__big"); len(ev) != 1 || ev[0].Bytes != bigResult {
				t.Errorf("events: %+v", ev)
			}
		})
	}
}

func TestAToolThatNeverAnswersGivesAnErrorResult(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			set := newSet(t, Options{CallTimeout: 300 * time.Millisecond}, tr.server(t, "web"))
			o := set.Offer(t.Context())
			wantError(t, call(t, t.Context(), handler(t, o, "web__hang"), `{}`), `mcp server "web" did not answer within 300ms; the call was cancelled`)

			// The caller's own deadline, sooner than the call's limit.
			slow := newSet(t, Options{CallTimeout: time.Hour}, tr.server(t, "slow"))
			so := slow.Offer(t.Context())
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			wantError(t, call(t, ctx, handler(t, so, "slow__hang"), `{}`), `the call to mcp server "slow" was stopped: the caller's deadline passed`)

			// The server lives on.
			wantText(t, call(t, t.Context(), handler(t, o, "web__echo"), `{"text":"still"}`), "echo: still")
		})
	}
}

func TestAServerThatDiesMidCallGivesAnErrorResult(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		rec := newRecorder()
		set := newSet(t, Options{Observe: rec.observe}, stdioServer(t, "proc"))
		o := set.Offer(t.Context())
		out := call(t, t.Context(), handler(t, o, "proc__die"), `{}`)
		wantError(t, out, `mcp server "proc" failed during the call`)
		wantError(t, out, "panic: the server crashed") // its stderr says why
		// The next call starts the command again; the same tools are no news.
		wantText(t, call(t, t.Context(), handler(t, o, "proc__echo"), `{"text":"again"}`), "echo: again")
		if next := set.Offer(t.Context()); slices.ContainsFunc(next.Notes, func(n string) bool { return strings.Contains(n, "changed its tools") }) {
			t.Errorf("a new connection was reported as a change: %q", next.Notes)
		}
		connects := 0
		for _, e := range rec.all() {
			if e.Kind == EventConnect && e.Err == "" {
				connects++
			}
		}
		if connects != 2 {
			t.Errorf("%d connections, want 2: %+v", connects, rec.all())
		}
		var closed []Event
		for _, e := range rec.all() {
			if e.Kind == EventClosed {
				closed = append(closed, e)
			}
		}
		if len(closed) != 1 || closed[0].Server != "proc" || !strings.Contains(closed[0].Err, "panic: the server crashed") {
			t.Errorf("closed events: %+v", closed)
		}
		// What the dead command wrote is not blamed on the new one.
		if out := call(t, t.Context(), handler(t, o, "proc__garbage"), `{}`); strings.Contains(out.Content.String(), "crashed") {
			t.Errorf("an earlier run's stderr: %q", out.Content.String())
		}
	})
	t.Run("http", func(t *testing.T) {
		set := newSet(t, Options{}, Server{Name: "web", URL: httpServer(t, "").URL})
		o := set.Offer(t.Context())
		wantError(t, call(t, t.Context(), handler(t, o, "web__die"), `{}`), `mcp server "web"`)
		// It stays dead: the next call cannot reach it, and says so.
		wantError(t, call(t, t.Context(), handler(t, o, "web__echo"), `{"text":"again"}`), `mcp server "web" cannot be reached`)
		// The next offer leaves it out with a note.
		next := set.Offer(t.Context())
		if len(next.Handlers) != 0 {
			t.Errorf("a dead server's tools were offered: %v", names(next))
		}
		wantNote(t, next.Notes, `mcp server "web" cannot be reached`)
	})
}

func TestGarbageFromAServerGivesAnErrorResult(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			set := newSet(t, Options{}, tr.server(t, "web"))
			o := set.Offer(t.Context())
			wantError(t, call(t, t.Context(), handler(t, o, "web__garbage"), `{}`), `mcp server "web" failed during the call`)
			// A new connection is made, and works.
			wantText(t, call(t, t.Context(), handler(t, o, "web__echo"), `{"text":"ok"}`), "echo: ok")
		})
	}
}

func TestAToolListChangedMidRunIsListedAgain(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			rec := newRecorder()
			set := newSet(t, Options{Observe: rec.observe}, tr.server(t, "web"))
			o := set.Offer(t.Context())
			gone := handler(t, o, "web__gone")
			if slices.Contains(names(o), "web__late") {
				t.Fatal("late offered before it exists")
			}
			wantText(t, call(t, t.Context(), handler(t, o, "web__grow"), `{}`), "grown")
			select {
			case s := <-rec.changed:
				if s != "web" {
					t.Fatalf("tools_changed from %q", s)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the server's list_changed never arrived")
			}
			// This turn's tools still hold the vanished one: calling it is an
			// error result, not a call.
			wantError(t, call(t, t.Context(), gone, `{}`), `mcp server "web" no longer offers the tool "gone"`)

			next := set.Offer(t.Context())
			if slices.Contains(names(next), "web__gone") {
				t.Error("gone is still offered")
			}
			wantText(t, call(t, t.Context(), handler(t, next, "web__late"), `{}`), "late")
			wantNote(t, next.Notes, `mcp server "web" changed its tools; new: late; gone: gone`)
			// Reported once.
			if again := set.Offer(t.Context()); slices.ContainsFunc(again.Notes, func(n string) bool { return strings.Contains(n, "changed its tools") }) {
				t.Errorf("the change was reported twice: %q", again.Notes)
			}
		})
	}
}

func TestResultsReachTheModelInert(t *testing.T) {
	set := newSet(t, Options{}, stdioServer(t, "web"))
	o := set.Offer(t.Context())
	h := handler(t, o, "web__hostile")
	if h.Tool.Description != `Answer control characters.\x1b[2J` {
		t.Errorf("description %q", h.Tool.Description)
	}
	got := call(t, t.Context(), h, `{}`).Content.String()
	want := `a\x1b]0;pwned\a\x1b[2Jb\u009b31mc\u202ed` + "\uFFFD" + "e\nnext\tline"
	if got != want {
		t.Errorf("result %q\nwant   %q", got, want)
	}
}

// TestImagesPassAndWhatTheModelCannotTakeIsNamed pins images through a
// real server: with Options.Images the API's types pass as image blocks,
// and without it (lumen, solve) every image is a line; either way what
// the model cannot take is named.
func TestImagesPassAndWhatTheModelCannotTakeIsNamed(t *testing.T) {
	url := httpServer(t, "").URL
	set := newSet(t, Options{Images: true}, Server{Name: "web", URL: url})
	out := call(t, t.Context(), handler(t, set.Offer(t.Context()), "web__image"), `{}`)
	b := out.Content.Blocks
	if out.IsError || len(b) != 4 {
		t.Fatalf("%+v", out)
	}
	if b[0].Text != "a pixel:" || b[1].Type != llm.BlockImage || b[1].Source.MediaType != "image/png" || b[1].Source.Data != base64.StdEncoding.EncodeToString(pngImage(1, 1)) {
		t.Errorf("text and image: %+v %+v", b[0], b[1])
	}
	if !strings.Contains(b[2].Text, "[image of type image/tiff left out: its data is not an image") || !strings.Contains(b[3].Text, "audio of type audio/wav, 4 bytes, was left out") {
		t.Errorf("notes: %q %q", b[2].Text, b[3].Text)
	}
	text := newSet(t, Options{}, Server{Name: "web", URL: url})
	out = call(t, t.Context(), handler(t, text.Offer(t.Context()), "web__image"), `{}`)
	if out.Content.Blocks != nil || !strings.Contains(out.Content.Text, "a pixel:\n[image of type image/png left out: this kernel reads tool results as text]") {
		t.Errorf("without images: %q", out.Content.String())
	}
}

func TestAToolsErrorIsAnErrorResult(t *testing.T) {
	rec := newRecorder()
	set := newSet(t, Options{Observe: rec.observe}, stdioServer(t, "web"))
	o := set.Offer(t.Context())
	wantError(t, call(t, t.Context(), handler(t, o, "web__fails"), `{}`), "disk full")
	if ev := rec.calls("web__fails"); len(ev) != 1 || !ev[0].IsError || ev[0].Err != "the tool answered with an error: disk full" {
		t.Errorf("events: %+v", ev)
	}
	// A tool the server does not know (it went without a word): the
	// server's refusal is the result.
	c := set.conns[0]
	c.mu.Lock()
	c.tools = append(c.tools, &mcp.Tool{Name: "nosuch"})
	c.mu.Unlock()
	wantError(t, c.call(t.Context(), "web__nosuch", "nosuch", nil), `mcp server "web" refused the call: unknown tool`)
}

const secret = "Bearer s3cret-t0ken-4242"

func TestAHeaderSecretIsNeverInAnErrorALogOrAListing(t *testing.T) {
	ts := httpServer(t, "s3cret-t0ken-4242")
	leaks := func(what, s string) {
		t.Helper()
		if strings.Contains(s, "s3cret") || strings.Contains(s, "wr0ng") {
			t.Errorf("%s holds the secret: %s", what, s)
		}
	}

	// The wrong token: the server's 401 quotes it back.
	rec := newRecorder()
	wrong := Server{Name: "web", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer wr0ng-t0ken-4242"}}
	_, err := Probe(t.Context(), wrong, Options{Observe: rec.observe})
	var uerr *UnreachableError
	if !errors.As(err, &uerr) || !strings.Contains(err.Error(), "bad credentials: [redacted]") {
		t.Fatalf("want an unreachable error quoting the refusal, got %v", err)
	}
	leaks("the error", err.Error())
	reg := Registry{Path: t.TempDir() + "/mcp.json"}
	if _, err := reg.Add(t.Context(), wrong, Options{}); !errors.As(err, &uerr) {
		t.Fatalf("add with a wrong token: %v", err)
	} else {
		leaks("add's error", err.Error())
	}

	// The right token: calls work, and an echo of it is redacted.
	good := Server{Name: "web", URL: ts.URL, Headers: map[string]string{"Authorization": secret}}
	offer, err := reg.Add(t.Context(), good, Options{Observe: rec.observe})
	if err != nil {
		t.Fatal(err)
	}
	set := newSet(t, Options{Observe: rec.observe}, good)
	o := set.Offer(t.Context())
	wantText(t, call(t, t.Context(), handler(t, o, "web__whoami"), `{}`), "you sent: [redacted]")
	for _, e := range rec.all() {
		leaks("an event", fmt.Sprintf("%+v", e))
	}
	for _, n := range append(offer.Notes, o.Notes...) {
		leaks("a note", n)
	}
	list, err := reg.List()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(list)
	leaks("the listing", string(data))
	if len(list) != 1 || !slices.Equal(list[0].Headers, []string{"Authorization"}) {
		t.Errorf("listing: %s", data)
	}
}

// A redirect to another origin does not take the server's headers along.
func TestHeadersGoToTheServersOriginOnly(t *testing.T) {
	other := httpServer(t, "")
	var (
		mu   sync.Mutex
		seen []string
		hits int
	)
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		seen = append(seen, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		mu.Unlock()
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(spy.Close)
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The origin the person named redirects to another.
		http.Redirect(w, r, spy.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(relay.Close)
	srv := Server{Name: "web", URL: relay.URL, Headers: map[string]string{"Authorization": secret, "X-Api-Key": "k3y-k3y-k3y"}}
	if _, err := Probe(t.Context(), srv, Options{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits == 0 {
		t.Fatal("the redirect was not followed: the test shows nothing")
	}
	for _, v := range seen {
		if v != "" {
			t.Errorf("another origin got a header: %q", v)
		}
	}
}

func TestAStdioServerGetsOnlyItsOwnSecretsFromTheEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
	srv := stdioServer(t, "proc")
	srv.Env["LLM_MCP_TEST_TOKEN"] = "t0ken-t0ken"
	set := newSet(t, Options{}, srv)
	o := set.Offer(t.Context())
	wantText(t, call(t, t.Context(), handler(t, o, "proc__env"), `{}`), "ANTHROPIC_API_KEY=false\nLLM_MCP_TEST_TOKEN=true\nPATH=true")
}

func TestASlowServerIsLeftOutWithANote(t *testing.T) {
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	set := newSet(t, Options{ConnectTimeout: time.Second}, Server{Name: "slow", URL: slow.URL}, Server{Name: "web", URL: httpServer(t, "").URL})
	o := set.Offer(t.Context())
	wantNote(t, o.Notes, `mcp server "slow" cannot be reached: it did not answer in time`)
	if !slices.Contains(names(o), "web__echo") || slices.ContainsFunc(names(o), func(n string) bool { return strings.HasPrefix(n, "slow__") }) {
		t.Errorf("offered %v", names(o))
	}
}

func TestAClosedSetCallsNothing(t *testing.T) {
	set, err := NewSet([]Server{stdioServer(t, "proc")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := set.Offer(t.Context())
	h := handler(t, o, "proc__echo")
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	wantError(t, call(t, t.Context(), h, `{"text":"x"}`), "this MCP client was closed")
}

func TestServersSharingANameAreRefused(t *testing.T) {
	_, err := NewSet([]Server{{Name: "docs", URL: "http://a.example/mcp"}, {Name: "Docs", URL: "http://b.example/mcp"}}, Options{})
	var ierr *InvalidError
	if !errors.As(err, &ierr) || ierr.Field != "name" {
		t.Fatalf("got %v", err)
	}
}

// A message over the limit is refused, not buffered without end: over a
// JSON answer (the limit here), as over an event stream or stdio (the
// SDK's, set to the same).
func TestAnAnswerOverTheMessageLimitIsAnErrorResult(t *testing.T) {
	srv := testServer(func() { t.Error("die called") })
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	t.Cleanup(ts.Close)
	set := newSet(t, Options{}, Server{Name: "web", URL: ts.URL})
	o := set.Offer(t.Context())
	wantError(t, call(t, t.Context(), handler(t, o, "web__huge"), `{}`), "the server answered more than 16 MiB to tools/call, the most taken")
	wantText(t, call(t, t.Context(), handler(t, o, "web__echo"), `{"text":"fine"}`), "echo: fine")
}

// alive reports whether process pid runs (a zombie does not).
func alive(t *testing.T, pid string) bool {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// A server's child that holds its stdout and outlives it goes with it: the
// call sees the server die instead of waiting for an answer.
func TestAStdioServersWholeProcessGroupEnds(t *testing.T) {
	set := newSet(t, Options{CallTimeout: time.Minute}, stdioServer(t, "proc"))
	o := set.Offer(t.Context())
	child := call(t, t.Context(), handler(t, o, "proc__spawn"), `{}`).Content.String()
	if !alive(t, child) {
		t.Fatalf("the child %s did not start", child)
	}
	wantError(t, call(t, t.Context(), handler(t, o, "proc__die"), `{}`), `mcp server "proc" failed during the call`)
	for deadline := time.Now().Add(10 * time.Second); alive(t, child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's child %s lives on", child)
		}
	}
}

// A server that does not exit when its stdin closes is ended.
func TestCloseEndsAServerThatWillNotExit(t *testing.T) {
	srv := stdioServer(t, "deaf")
	srv.Env[stdioMode] = "deaf"
	set, err := NewSet([]Server{srv}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := set.Offer(t.Context())
	pid := call(t, t.Context(), handler(t, o, "deaf__pid"), `{}`).Content.String()
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(t, pid) {
		t.Errorf("the server %s lives on after close", pid)
	}
}

// TestServesTellsTheServersToolsByPrefixAlone pins that Serves names a
// server's tools by their prefix, exactly, without connecting: a kernel
// asks it for every tool name it sees.
func TestServesTellsTheServersToolsByPrefixAlone(t *testing.T) {
	set, err := NewSet([]Server{{Name: "docs", URL: "http://127.0.0.1:1/mcp"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for name, want := range map[string]bool{
		"docs__search": true, "docs__": true, "docs_search": false, "Docs__search": false,
		"doc__search": false, "docsx__search": false, "block_read": false, "x__docs__search": false,
	} {
		if got := set.Serves(name); got != want {
			t.Errorf("Serves(%q) = %v, want %v", name, got, want)
		}
	}
}
