package conversation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/internal/termtext"
)

// hostile is text a stranger chose: bidirectional overrides and isolates
// (U+202E, U+2066), C1 CSI (U+009B), an OSC title sequence, DEL.
const hostile = "a\u202eexe.txt\u2066b\u009b2J\x1b]0;pwned\x07\x7f"

// rawControl says whether text holds a character the LLM would be handed
// raw that termtext escapes (line breaks and tabs aside).
func rawControl(text string) bool {
	return strings.ContainsFunc(text, func(r rune) bool { return termtext.Control(r) && r != '\n' && r != '\t' })
}

// Every tool result that carries foreign text (another agent's passport,
// mark or message, a beach's answer, a web page) reaches the LLM inert, as
// the wake message does: the tools' JSON stays JSON, and decodes to the
// text with its controls shown as escapes.
func TestForeignTextReachesTheLLMInert(t *testing.T) {
	ctx := context.Background()
	b := kerneltest.StartBeach(t, "sqlite")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; x=\u202e\u009b") // a header has no C0 controls
		w.Write([]byte("line one\n" + hostile))
	}))
	defer page.Close()
	k := kerneltest.Open(t, kernel.Options{Beach: b.URL, WebRequest: WebPolicy{Allow: []string{"127.0.0.1"}}})
	me, err := k.Network().Identity()
	if err != nil {
		t.Fatal(err)
	}
	evil, _ := identity.Generate()
	ec, _ := beach.NewClient(b.URL, evil)
	if _, err := ec.PublishPassport(ctx, beach.Passport{Name: hostile, Description: hostile, Offers: []string{hostile}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ec.Mark(ctx, "https://example.org/", hostile); err != nil {
		t.Fatal(err)
	}
	if _, err := ec.Send(ctx, beach.Message{To: me.Agent(), Type: beach.TypeGeneral, Content: "line one\n" + hostile, Spindle: hostile}); err != nil {
		t.Fatal(err)
	}
	escaped := termtext.Block(hostile)
	check := func(tool, input string, wantError bool) {
		t.Helper()
		out := runTool(t, k, tool, input)
		text := out.Content.Text
		if out.IsError != wantError || rawControl(text) || !strings.Contains(text, `\u202e`) {
			t.Errorf("%s %s: error %v, raw controls %v:\n%q", tool, input, out.IsError, rawControl(text), text)
		}
		if !wantError && strings.HasPrefix(text, "{") {
			var v any
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				t.Errorf("%s: the result is no longer JSON: %v", tool, err)
			} else if data, _ := json.Marshal(v); !strings.Contains(string(data), strings.ReplaceAll(escaped, `\`, `\\`)) {
				t.Errorf("%s: the result does not decode to the text made inert (%q):\n%s", tool, escaped, data)
			}
		}
	}
	check("passport_read", `{}`, false)
	check("passport_read", `{"agent":"`+evil.Agent()+`"}`, false)
	check("beach_read", `{"url":"https://example.org/"}`, false)
	check("inbox_check", `{}`, false)
	check("inbox_check", `{"all":true}`, false)
	check("fetch_url", `{"url":"`+page.URL+`"}`, false)
	check("web_request", `{"method":"POST","url":"`+page.URL+`"}`, false)
	check("passport_read", `{"agent":"hc\u202e\u009b"}`, true) // an error quoting it
	if out := runTool(t, k, "fetch_url", `{"url":"`+page.URL+`"}`); !strings.Contains(out.Content.Text, "line one\n") {
		t.Errorf("fetch_url lost the page's line breaks: %q", out.Content.Text)
	}

	// A hostile beach's acknowledgements of what the instance writes.
	acking := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		data, _ := json.Marshal(map[string]any{"agent": hostile, "time": hostile, "nonce": hostile, "id": 1})
		w.Write(data)
	}))
	defer acking.Close()
	k2 := kerneltest.Open(t, kernel.Options{Beach: acking.URL})
	for tool, input := range map[string]string{
		"passport_publish": `{"name":"me"}`,
		"beach_mark":       `{"url":"https://example.org/","purpose":"reading"}`,
		"inbox_send":       `{"to":"` + evil.Agent() + `","content":"hi"}`,
		"savepoint_save":   `{}`,
	} {
		out := runTool(t, k2, tool, input)
		if out.IsError || rawControl(out.Content.Text) {
			t.Errorf("%s on a hostile beach: error %v:\n%q", tool, out.IsError, out.Content.Text)
		}
	}
}

// inbox_send refuses a message type the beach would refuse before it
// reads anything or sends anything.
func TestInboxSendRefusesAnUnknownTypeBeforeSending(t *testing.T) {
	var reached atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) }))
	defer srv.Close()
	k := kerneltest.Open(t, kernel.Options{Beach: srv.URL})
	someone, _ := identity.Generate()
	out := runTool(t, k, "inbox_send", `{"to":"`+someone.Agent()+`","content":"hi","type":"bogus"}`)
	if !out.IsError || !strings.Contains(out.Content.Text, "grain_probe, grain_response or general") || reached.Load() {
		t.Fatalf("inbox_send with type bogus: %+v (the beach reached: %v)", out, reached.Load())
	}
}
