package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/identity"
)

// envelopeArgs turns an envelope into MCP tool arguments, as an MCP client
// holding a `hermitcrab beach sign` output would send them.
func envelopeArgs(t *testing.T, e *identity.Envelope) map[string]any {
	t.Helper()
	data, _ := json.Marshal(e)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAnMCPClientListsTheToolsAndSendsASignedMessage(t *testing.T) {
	b := startBeach(t, "sqlite", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"beach_info", "passport_publish", "passport_read", "passport_list", "beach_mark", "beach_read",
		"inbox_send", "inbox_check", "savepoint_put", "savepoint_get"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s missing from %v", want, names)
		}
	}

	alice, _ := identity.Generate()
	bob, bc := newAgent(t, b)
	call := func(name string, args any) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return res, text.String()
	}

	// Send a signed message through MCP; bob's instance receives it verified.
	msg, _ := alice.Sign(beach.KindMessage, beach.Message{To: bob.Agent(), Type: beach.TypeGrainProbe, Content: "probe <via> MCP & co", Spindle: "purpose 0.2"}, time.Now())
	if res, text := call("inbox_send", envelopeArgs(t, msg)); res.IsError {
		t.Fatalf("inbox_send: %s", text)
	}
	got, refused, err := bc.Inbox(ctx, 10)
	if err != nil || len(refused) != 0 || len(got) != 1 || got[0].Body.Content != "probe <via> MCP & co" || got[0].Agent != alice.Agent() {
		t.Fatalf("bob's inbox after an MCP send: %+v %+v %v", got, refused, err)
	}
	// The same envelope again is a replay; a forged one does not verify.
	if res, text := call("inbox_send", envelopeArgs(t, msg)); !res.IsError || !strings.Contains(text, identity.ReasonReplay) {
		t.Fatalf("replayed through MCP: %v %s", res.IsError, text)
	}
	mallory, _ := identity.Generate()
	forged, _ := mallory.Sign(beach.KindPassport, beach.Passport{Name: "alice"}, time.Now())
	forged.Agent = alice.Agent()
	if res, text := call("passport_publish", envelopeArgs(t, forged)); !res.IsError || !strings.Contains(text, identity.ReasonSignature) {
		t.Fatalf("forged passport through MCP: %v %s", res.IsError, text)
	}

	// Publish and read back a passport and a mark.
	pp, _ := alice.Sign(beach.KindPassport, beach.Passport{Name: "alice", Offers: []string{"0.3"}}, time.Now())
	if res, text := call("passport_publish", envelopeArgs(t, pp)); res.IsError {
		t.Fatalf("passport_publish: %s", text)
	}
	if res, text := call("passport_read", map[string]any{"agent": alice.Agent()}); res.IsError || !strings.Contains(text, `"body":{"name":"alice"`) {
		t.Fatalf("passport_read: %s", text)
	}
	mk, _ := alice.Sign(beach.KindMark, beach.Mark{URLHash: beach.URLHash(" HTTPS://Example.org/Page "), Purpose: "reading"}, time.Now())
	if res, text := call("beach_mark", envelopeArgs(t, mk)); res.IsError {
		t.Fatalf("beach_mark: %s", text)
	}
	if res, text := call("beach_read", map[string]any{"url": "https://example.org/page"}); res.IsError || !strings.Contains(text, alice.Agent()) {
		t.Fatalf("beach_read: %s", text)
	}
	if res, text := call("beach_info", map[string]any{}); res.IsError || !strings.Contains(text, identity.Domain) {
		t.Fatalf("beach_info: %s", text)
	}
}

// postMCP posts a JSON-RPC text to the MCP endpoint as it is, as a
// stateless client does, and returns the status and the answer.
func postMCP(t *testing.T, b *testBeach, rpc string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.URL+"/mcp", strings.NewReader(rpc))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// A JSON-RPC batch (MCP before 2025-06-18 allows them, and the SDK serves
// them to a request without a protocol version header) is as many calls as
// it holds: each is charged to the per-address limit, so one HTTP request
// cannot carry a thousand tool calls past it.
func TestAnMCPBatchIsChargedPerCall(t *testing.T) {
	b := startBeach(t, "sqlite", func(c *Config) { c.AddrPerMinute, c.AddrBurst = 1, 5 })
	batch := func(n int) (int, string) {
		var calls []string
		for i := range n {
			calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"beach_info","arguments":{}}}`, i+1))
		}
		st, data := postMCP(t, b, "["+strings.Join(calls, ",")+"]")
		return st, string(data)
	}
	if st, body := batch(1000); st != http.StatusRequestEntityTooLarge || !strings.Contains(body, "too_large") {
		t.Fatalf("a batch of 1,000 calls (over the cap on batches): %d %.200s", st, body)
	}
	if st, body := batch(50); st != http.StatusTooManyRequests || !strings.Contains(body, "rate_limited") {
		t.Fatalf("a batch of 50 calls on a burst of 5: %d %.200s", st, body)
	}
	if st, body := batch(3); st != http.StatusOK || strings.Count(body, `"result"`) != 3 {
		t.Fatalf("a batch of 3 calls within the burst: %d %.200s", st, body)
	}
	// The refused batches spent one token each (the request), the three
	// calls three: none is left of the five.
	if st, _ := batch(1); st != http.StatusTooManyRequests {
		t.Fatalf("a call with no token left: %d", st)
	}
}

// One envelope text, one reading: what the HTTP routes refuse (a duplicate
// key, an escaped lone surrogate) the MCP tools refuse too, though the SDK
// decodes tool arguments with a reader that merges duplicate keys and
// reads \ud800 as U+FFFD, and an envelope-level duplicate or a key spelled
// in another case, which encoding/json would take, is refused on both.
func TestHTTPAndMCPReadAnEnvelopeTheSameWay(t *testing.T) {
	b := startBeach(t, "sqlite", nil)
	alice, _ := identity.Generate()
	other, _ := identity.Generate()
	var signAs func(id *identity.Identity, body any, bodyText string) string
	// sign signs body and returns the envelope as JSON text, with the body
	// replaced by the text given (which reads as the signed body to a
	// reader that merges keys or replaces surrogates).
	sign := func(body any, bodyText string) string { return signAs(alice, body, bodyText) }
	signAs = func(id *identity.Identity, body any, bodyText string) string {
		e, err := id.Sign(beach.KindPassport, body, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if bodyText != "" {
			e.Body = json.RawMessage(bodyText)
		}
		data, _ := json.Marshal(e)
		return string(data)
	}
	postHTTP := func(text string) (int, string) { return postText(t, b, "/v1/passports", []byte(text)) }
	callMCP := func(args string) (bool, string) {
		st, data := postMCP(t, b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"passport_publish","arguments":`+args+`}}`)
		var out struct {
			Result struct {
				IsError bool `json:"isError"`
				Content []struct{ Text string }
			}
			Error *struct{ Message string }
		}
		if err := json.Unmarshal(data, &out); err != nil || out.Error != nil || len(out.Result.Content) == 0 {
			t.Fatalf("MCP answer %d: %s (%v)", st, data, err)
		}
		return !out.Result.IsError, out.Result.Content[0].Text
	}
	cases := map[string]func() string{
		"duplicate key in the body": func() string {
			return sign(beach.Passport{Name: "alice"}, `{"name":"mallory","name":"alice"}`)
		},
		"escaped lone surrogate in the body": func() string {
			return sign(beach.Passport{Name: "alice\ufffd"}, `{"name":"alice\ud800"}`)
		},
		"duplicate key in the envelope": func() string {
			text := sign(beach.Passport{Name: "alice"}, "")
			return strings.Replace(text, `{"kind"`, `{"agent":"`+other.Agent()+`","kind"`, 1)
		},
		"a key in another case": func() string {
			return strings.Replace(sign(beach.Passport{Name: "alice"}, ""), `"nonce"`, `"Nonce"`, 1)
		},
	}
	for name, envelope := range cases {
		if st, reason := postHTTP(envelope()); st != http.StatusBadRequest || reason != identity.ReasonMalformed {
			t.Errorf("%s, over HTTP: %d %s, want 400 malformed", name, st, reason)
		}
		if ok, text := callMCP(envelope()); ok {
			t.Errorf("%s, over MCP: accepted (%s)", name, text)
		}
	}
	// Well formed, the same envelopes go through both (another signer
	// over MCP: a second passport signed in the same millisecond would be
	// refused as superseded).
	if st, reason := postHTTP(sign(beach.Passport{Name: "alice"}, "")); st != http.StatusOK {
		t.Fatalf("a good envelope over HTTP: %d %s", st, reason)
	}
	if ok, text := callMCP(signAs(other, beach.Passport{Name: "other"}, "")); !ok {
		t.Fatalf("a good envelope over MCP: %s", text)
	}
}
