package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
)

// lookup is a client tool that answers "found <key>".
var lookup = llm.ToolHandler{
	Tool: llm.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}}}`),
		AllowedCallers: []string{"direct", "code_execution_20250825"}},
	Run: func(_ context.Context, in json.RawMessage) (llm.ToolOutput, error) {
		var v struct{ Key string }
		if err := json.Unmarshal(in, &v); err != nil {
			return llm.ToolOutput{}, err
		}
		return llm.TextOutput("found " + v.Key), nil
	},
}

// runLoop runs the tool loop through the real SDK against the strict fake,
// checking every request it answered and that every block it served came
// back byte for byte.
func runLoop(t *testing.T, scriptJSON string, req *llm.Request) (*llm.Result, *llmtest.Server) {
	t.Helper()
	srv, p := serve(t, scriptJSON, anthropic.Config{})
	loop := &llm.Loop{Client: &llm.Client{Provider: p}, Handlers: []llm.ToolHandler{lookup}}
	res, err := loop.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("loop: %v", err)
	}
	for i, r := range srv.Received() {
		if r.Status != 200 {
			t.Errorf("request %d was refused: %d %s", i+1, r.Status, r.Response)
		}
	}
	if srv.Remaining() != 0 {
		t.Errorf("%d script entries unused", srv.Remaining())
	}
	if err := srv.CheckRoundTrips(); err != nil {
		t.Errorf("blocks did not come back byte for byte:\n%v", err)
	}
	return res, srv
}

func TestAdaptiveThinkingToolTurnWithoutThinkingContinues(t *testing.T) {
	res, srv := runLoop(t, `{"responses":[
	 {"content":[{"type":"thinking","thinking":"I should look a up.","signature":"sig-a"},{"type":"tool_use","id":"toolu_a","name":"lookup","input":{"key":"a"}}]},
	 {"content":[{"type":"tool_use","id":"toolu_b","name":"lookup","input":{"key":"b"}}]},
	 {"content":[{"type":"thinking","thinking":"Both found.","signature":"sig-c"},{"type":"text","text":"a and b are there."}]}]}`,
		&llm.Request{Model: model, MaxTokens: 4096, Thinking: &llm.Thinking{Type: "adaptive"}, Messages: []llm.Message{llm.UserText("Find a, then b.")}})
	if res.StopReason != llm.StopEndTurn || res.Text() != "a and b are there." || len(res.Calls) != 3 {
		t.Fatalf("loop ended with %s after %d calls: %q", res.StopReason, len(res.Calls), res.Text())
	}
	third := srv.Received()[2].Request
	if got := third.Messages[3].Content[0].Type; got != llm.BlockToolUse {
		t.Errorf("the turn answered without thinking was sent back starting with %s", got)
	}
	if third.Thinking == nil || third.Thinking.Type != "adaptive" {
		t.Errorf("thinking on the wire = %+v", third.Thinking)
	}
}

// thinkingTurn is the first answer of the tests below: thinking, then a
// tool call.
const thinkingTurn = `{"responses":[
 {"content":[{"type":"thinking","thinking":"Look it up.","signature":"sig-1"},{"type":"redacted_thinking","data":"EmwKAhgBEgy"},{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"key":"a"}}]},
 {"content":[{"type":"text","text":"done"}]}]}`

// continueWith sends the first request, then a continuation whose assistant
// turn is edit(the turn the API sent), answering its tool call.
func continueWith(t *testing.T, thinking *llm.Thinking, edit func([]llm.ContentBlock) []llm.ContentBlock) (*llmtest.Server, error) {
	t.Helper()
	srv, p := serve(t, thinkingTurn, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 4096, Thinking: thinking, Tools: []llm.Tool{lookup.Tool}, Messages: []llm.Message{llm.UserText("Find a.")}}
	first, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatalf("first request: %v", err)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: edit(first.Content)},
		llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock("toolu_1", llm.ToolResultContent{Text: "found a"}, false)}})
	_, err = p.Messages(context.Background(), req)
	return srv, err
}

func wantRefused(t *testing.T, err error, text string) {
	t.Helper()
	apiErr, ok := llm.AsAPIError(err)
	if !ok || apiErr.Status != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, text) {
		t.Fatalf("err = %v, want a 400 invalid_request_error containing %q", err, text)
	}
}

func without(types ...string) func([]llm.ContentBlock) []llm.ContentBlock {
	return func(blocks []llm.ContentBlock) []llm.ContentBlock {
		var out []llm.ContentBlock
		for _, b := range blocks {
			if !strings.Contains(strings.Join(types, " "), b.Type) {
				out = append(out, b)
			}
		}
		return out
	}
}

func unchanged(blocks []llm.ContentBlock) []llm.ContentBlock { return blocks }

func TestThinkingSentBackAsReceivedIsAcceptedInBothModes(t *testing.T) {
	for _, th := range []*llm.Thinking{{Type: "adaptive"}, {Type: "enabled", BudgetTokens: 2048}} {
		if _, err := continueWith(t, th, unchanged); err != nil {
			t.Errorf("%s: %v", th.Type, err)
		}
	}
}

func TestEnabledThinkingDroppedFromAToolTurnIsRefused(t *testing.T) {
	srv, err := continueWith(t, &llm.Thinking{Type: "enabled", BudgetTokens: 2048}, without("thinking", "redacted_thinking"))
	wantRefused(t, err, "expected `thinking` or `redacted_thinking`, but found `tool_use`")
	if n := len(srv.Received()); n != 2 {
		t.Errorf("server received %d requests, want 2", n)
	}
}

func TestAdaptiveThinkingTheAPISentMustComeBack(t *testing.T) {
	adaptive := &llm.Thinking{Type: "adaptive"}
	_, err := continueWith(t, adaptive, without("thinking"))
	wantRefused(t, err, "did not all come back unchanged and in order")
	_, err = continueWith(t, adaptive, without("redacted_thinking"))
	wantRefused(t, err, "did not all come back unchanged and in order")

	_, err = continueWith(t, adaptive, func(b []llm.ContentBlock) []llm.ContentBlock {
		changed := append([]llm.ContentBlock(nil), b...)
		changed[0] = llm.ContentBlock{Type: llm.BlockThinking, Thinking: "Look it up, quickly.", Signature: changed[0].Signature}
		return changed
	})
	wantRefused(t, err, "messages.1.content.0: Invalid `signature` in `thinking` block")

	_, err = continueWith(t, adaptive, func(b []llm.ContentBlock) []llm.ContentBlock {
		return []llm.ContentBlock{b[1], b[0], b[2]} // reordered
	})
	wantRefused(t, err, "did not all come back unchanged and in order")
}

func TestThinkingMayBeDroppedFromTurnsThatAreNotContinued(t *testing.T) {
	// The API only needs the thinking of the turn a request continues;
	// earlier turns may lose theirs.
	srv, p := serve(t, `{"responses":[
	 {"content":[{"type":"thinking","thinking":"Look.","signature":"sig-1"},{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"key":"a"}}]},
	 {"content":[{"type":"text","text":"found"}]}]}`, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 4096, Thinking: &llm.Thinking{Type: "adaptive"}, Tools: []llm.Tool{lookup.Tool}, Messages: []llm.Message{llm.UserText("Find a.")}}
	first, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: first.Content[1:]},
		llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock("toolu_1", llm.ToolResultContent{Text: "found a"}, false), llm.TextBlock("And now?")}},
	)
	// The last user turn answers the tool call, so that turn is continued:
	// refused. Closing it with an answer and a new question is not.
	if _, err := p.Messages(context.Background(), req); err == nil {
		t.Fatal("dropped thinking in the continued turn was accepted")
	}
	req.Messages = append(req.Messages[:2], llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock("toolu_1", llm.ToolResultContent{Text: "found a"}, false)}},
		llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.TextBlock("Found a.")}}, llm.UserText("And now?"))
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("thinking dropped from an earlier turn: %v", err)
	}
	if srv.Remaining() != 0 {
		t.Errorf("%d entries unused", srv.Remaining())
	}
}

func TestForcedToolChoiceWithAdaptiveThinkingIsAcceptedAndWithManualRefused(t *testing.T) {
	_, p := serve(t, `{"responses":[{"content":[{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"key":"a"}}]}]}`, anthropic.Config{})
	req := &llm.Request{Model: model, MaxTokens: 4096, Thinking: &llm.Thinking{Type: "adaptive"}, Tools: []llm.Tool{lookup.Tool},
		ToolChoice: &llm.ToolChoice{Type: "tool", Name: "lookup"}, Messages: []llm.Message{llm.UserText("Find a.")}}
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatalf("adaptive with a forced tool: %v", err)
	}
	req.Thinking = &llm.Thinking{Type: "enabled", BudgetTokens: 2048}
	_, err := p.Messages(context.Background(), req)
	wantRefused(t, err, "thinking may not be enabled when tool_choice forces tool use")
}

// ptcTurn is an answer with every kind of block, written the way the API
// writes them and with members llm does not interpret: a tool_use made by
// code execution (its caller), one from a toolset, thinking whose members
// come in another order, text with <, > and & and citations.
const ptcTurn = `{"content":[
 {"signature":"EqQBCkYIBxgC","type":"thinking","thinking":"Use code & the <lookup> tool."},
 {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3p"},
 {"type":"server_tool_use","id":"srvtoolu_01","name":"code_execution","input":{"code":"print(await lookup(key='a'))"}},
 {"type":"tool_use","id":"toolu_01","name":"lookup","input":{"key":"a"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_01"}},
 {"type":"tool_use","id":"toolu_02","name":"lookup","input":{"key":"b"},"toolset_name":"lookups","future_member":{"n":1.50}},
 {"type":"text","text":"a < b && b > c","citations":[{"type":"web_search_result_location","url":"https://go.dev","title":"Go","encrypted_index":"Eo8B","cited_text":"x"}]}],
 "stop_reason":"tool_use","container":{"id":"container_1","expires_at":"2026-11-21T12:00:00Z"}}`

func TestEveryBlockComesBackByteForByteIncludingTheCaller(t *testing.T) {
	res, srv := runLoop(t, `{"responses":[`+ptcTurn+`,
	 {"content":[{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_01","content":{"type":"code_execution_result","stdout":"found a\n","stderr":"","return_code":0,"content":[]}},{"type":"text","text":"done"}]}]}`,
		&llm.Request{Model: model, MaxTokens: 4096, Thinking: &llm.Thinking{Type: "adaptive"},
			Tools:    []llm.Tool{{Type: "code_execution_20250825", Name: "code_execution"}},
			Messages: []llm.Message{llm.UserText("Look a and b up.")}})
	if res.Text() != "done" {
		t.Fatalf("loop ended with %q", res.Text())
	}
	second := srv.Received()[1]
	for _, want := range []string{
		`{"type":"tool_use","id":"toolu_01","name":"lookup","input":{"key":"a"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_01"}}`,
		`"toolset_name":"lookups","future_member":{"n":1.50}}`,
		`{"signature":"EqQBCkYIBxgC","type":"thinking","thinking":"Use code \u0026 the \u003clookup\u003e tool."}`,
	} {
		if !strings.Contains(string(second.Body), want) {
			t.Errorf("second request lacks %s:\n%s", want, second.Body)
		}
	}
	if got := second.Request.Container; got != "container_1" {
		t.Errorf("container = %q", got)
	}
}

// A long run: 100 tool turns, thinking on every third, a programmatic call
// on every fifth, all through the SDK; every request is accepted and every
// served block comes back byte for byte in every later request.
func TestAHundredTurnAdaptiveLoopKeepsEveryBlock(t *testing.T) {
	const turns = 100
	var entries []string
	for i := range turns {
		var blocks []string
		if i%3 == 0 {
			blocks = append(blocks, fmt.Sprintf(`{"type":"thinking","thinking":"step %d <think> & go","signature":"sig-%d"}`, i, i))
		}
		caller := ""
		if i%5 == 0 {
			blocks = append(blocks, fmt.Sprintf(`{"type":"server_tool_use","id":"srvtoolu_%d","name":"code_execution","input":{"code":"lookup()"}}`, i))
			caller = fmt.Sprintf(`,"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_%d"}`, i)
		}
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d","name":"lookup","input":{"key":"k%d"}%s}`, i, i, caller))
		entries = append(entries, `{"content":[`+strings.Join(blocks, ",")+`],"stop_reason":"tool_use"}`)
	}
	entries = append(entries, `{"content":[{"type":"text","text":"all found"}]}`)
	srv, p := serve(t, `{"responses":[`+strings.Join(entries, ",")+`]}`, anthropic.Config{})
	loop := &llm.Loop{Client: &llm.Client{Provider: p}, Handlers: []llm.ToolHandler{lookup}, MaxLoops: turns + 1}
	res, err := loop.Run(context.Background(), &llm.Request{Model: model, MaxTokens: 4096, Thinking: &llm.Thinking{Type: "adaptive"},
		Tools: []llm.Tool{{Type: "code_execution_20250825", Name: "code_execution"}}, Messages: []llm.Message{llm.UserText("Look everything up.")}})
	if err != nil {
		t.Fatalf("loop: %v", err)
	}
	if res.Text() != "all found" || len(res.Calls) != turns+1 || srv.Remaining() != 0 {
		t.Fatalf("loop ended %s after %d calls with %d entries left", res.StopReason, len(res.Calls), srv.Remaining())
	}
	if err := srv.CheckRoundTrips(); err != nil {
		t.Fatalf("blocks did not come back byte for byte:\n%v", err)
	}
}

// TestUnusualJSONComesBackByteForByte: big numbers, exponent forms, line
// separators, emoji, escaped slashes and unknown members in odd key order, as
// an API may send them, come back as sent (runLoop checks every block).
func TestUnusualJSONComesBackByteForByte(t *testing.T) {
	odd := `{"caller":{"type":"direct"},"input":{"key":"a","n":123456789012345678901234567890,"f":1.0e+2,"u":"\u00e9\u2028 é😀","esc":"a\/b<&>"},"zzz":{"b":1,"a":[]},"name":"lookup","id":"toolu_1","type":"tool_use"}`
	th := `{"type":"thinking","thinking":"line\u2028sep \"q\" \\ ","signature":"s\/1"}`
	_, srv := runLoop(t, `{"responses":[{"content":[`+th+`,`+odd+`]},{"content":[{"type":"text","text":"ok"}]}]}`,
		&llm.Request{Model: model, MaxTokens: 4096, Thinking: &llm.Thinking{Type: "adaptive"}, Messages: []llm.Message{llm.UserText("x")}})
	if body := string(srv.Received()[1].Body); !strings.Contains(body, `"n":123456789012345678901234567890`) || !strings.Contains(body, `"zzz":{"b":1,"a":[]}`) {
		t.Errorf("the second request lost the unusual members of the tool_use block:\n%s", body)
	}
}

// With the interleaved-thinking beta a thinking budget is the whole turn's
// and may exceed max_tokens: the API takes it, so the loop sends it as set;
// without the beta the loop raises max_tokens above the budget, as the API
// requires.
func TestInterleavedThinkingBudgetAboveMaxTokensGoesOutAsSet(t *testing.T) {
	const answers = `{"responses":[
	 {"content":[{"type":"thinking","thinking":"Look a up.","signature":"sig-a"},{"type":"tool_use","id":"toolu_a","name":"lookup","input":{"key":"a"}}]},
	 {"content":[{"type":"thinking","thinking":"Found it.","signature":"sig-b"},{"type":"text","text":"a is there."}]}]}`
	for _, tc := range []struct {
		betas []string
		want  int // max_tokens on the wire
	}{
		{[]string{"files-api-2025-04-14," + llm.BetaInterleavedThinking}, 4000},
		{nil, 8000 + 4096},
	} {
		srv, p := serve(t, answers, anthropic.Config{Betas: tc.betas})
		loop := &llm.Loop{Client: &llm.Client{Provider: p}, Handlers: []llm.ToolHandler{lookup}}
		res, err := loop.Run(context.Background(), &llm.Request{Model: model, MaxTokens: 4000,
			Thinking: &llm.Thinking{Type: "enabled", BudgetTokens: 8000}, Messages: []llm.Message{llm.UserText("Find a.")}})
		if err != nil {
			t.Fatalf("betas %q: %v", tc.betas, err)
		}
		if res.Text() != "a is there." {
			t.Errorf("betas %q: answer %q", tc.betas, res.Text())
		}
		for i, r := range srv.Received() {
			if r.Status != 200 || r.Request.MaxTokens != tc.want {
				t.Errorf("betas %q: request %d: status %d, max_tokens %d, want 200 and %d: %s", tc.betas, i+1, r.Status, r.Request.MaxTokens, tc.want, r.Response)
			}
		}
	}
}
