package llm

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func respond(stop string, blocks ...ContentBlock) func(*Request) (*Response, error) {
	return func(r *Request) (*Response, error) {
		return &Response{Model: r.Model, Content: blocks, StopReason: stop, Usage: Usage{InputTokens: 100, OutputTokens: 10}}, nil
	}
}

func toolUse(id, name, input string) ContentBlock {
	return ContentBlock{Type: BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

func rawBlock(t *testing.T, s string) ContentBlock {
	t.Helper()
	var b ContentBlock
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

var echoTool = ToolHandler{
	Tool: Tool{Name: "echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`)},
	Run: func(_ context.Context, in json.RawMessage) (ToolOutput, error) {
		return TextOutput("echo:" + string(in)), nil
	},
}

func newLoop(p *fakeProvider, handlers ...ToolHandler) *Loop {
	return &Loop{Client: &Client{Provider: p}, Handlers: handlers}
}

func TestLoopEndsOnEachAPIStopReason(t *testing.T) {
	for _, stop := range []string{StopEndTurn, StopMaxTokens, StopSequence, StopRefusal, StopModelContextWindowExceeded} {
		p := &fakeProvider{steps: []func(*Request) (*Response, error){respond(stop, TextBlock("out"))}}
		res, err := newLoop(p).Run(context.Background(), simpleRequest("claude-haiku-4-5"))
		if err != nil {
			t.Fatalf("%s: %v", stop, err)
		}
		if res.StopReason != stop || len(res.Calls) != 1 || res.Text() != "out" {
			t.Fatalf("%s: stop %q after %d calls", stop, res.StopReason, len(res.Calls))
		}
		if n := len(res.Messages); n != 2 || res.Messages[1].Role != RoleAssistant {
			t.Fatalf("%s: want the assistant turn appended, got %d messages", stop, n)
		}
	}
}

func TestLoopRunsClientToolsAndAnswersInOrder(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopToolUse, TextBlock("using tools"), toolUse("t1", "echo", `{"a":1}`), toolUse("t2", "echo", `{"b":2}`)),
		respond(StopEndTurn, TextBlock("done")),
	}}
	res, err := newLoop(p, echoTool).Run(context.Background(), simpleRequest("m"))
	if err != nil {
		t.Fatal(err)
	}
	second := p.reqs[1]
	results := second.Messages[len(second.Messages)-1]
	if results.Role != RoleUser || len(results.Content) != 2 {
		t.Fatalf("want one user turn with two results, got %+v", results)
	}
	for i, want := range []struct{ id, text string }{{"t1", `echo:{"a":1}`}, {"t2", `echo:{"b":2}`}} {
		b := results.Content[i]
		if b.Type != BlockToolResult || b.ToolUseID != want.id || b.Content.Text != want.text || b.IsError {
			t.Fatalf("result %d: %+v", i, b)
		}
	}
	if len(p.reqs[0].Tools) != 1 || p.reqs[0].Tools[0].Name != "echo" {
		t.Fatalf("handler's tool not declared: %+v", p.reqs[0].Tools)
	}
	if res.StopReason != StopEndTurn || len(res.Messages) != 4 || res.Usage.InputTokens != 200 {
		t.Fatalf("stop %s, %d messages, usage %+v", res.StopReason, len(res.Messages), res.Usage)
	}
}

func TestLoopToolFailuresBecomeErrorResults(t *testing.T) {
	failing := ToolHandler{Tool: Tool{Name: "fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, json.RawMessage) (ToolOutput, error) {
			return ToolOutput{}, errors.New("disk full")
		}}
	panicking := ToolHandler{Tool: Tool{Name: "panics", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, json.RawMessage) (ToolOutput, error) { panic("nil map") }}
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopToolUse, toolUse("t1", "fails", `{}`), toolUse("t2", "panics", `{}`), toolUse("t3", "nosuch", `{}`)),
		respond(StopEndTurn, TextBlock("sorry")),
	}}
	if _, err := newLoop(p, failing, panicking).Run(context.Background(), simpleRequest("m")); err != nil {
		t.Fatal(err)
	}
	results := p.reqs[1].Messages[2].Content
	wants := []string{"tool fails failed: disk full", "tool panics failed: panic: nil map", `no tool named "nosuch"; the tools are: fails, panics`}
	for i, want := range wants {
		if !results[i].IsError || results[i].Content.Text != want {
			t.Fatalf("result %d: is_error=%v %q, want %q", i, results[i].IsError, results[i].Content.Text, want)
		}
	}
}

func TestLoopStopsAfterAHandlerAsksTo(t *testing.T) {
	recompile := ToolHandler{Tool: Tool{Name: "recompile", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, json.RawMessage) (ToolOutput, error) {
			out := TextOutput("compiled")
			out.Stop = true
			return out, nil
		}}
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopToolUse, toolUse("t1", "recompile", `{"jsx":"x"}`)),
		respond(StopEndTurn, TextBlock("must not be asked")),
	}}
	res, err := newLoop(p, recompile).Run(context.Background(), simpleRequest("m"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopToolStop || len(p.reqs) != 1 {
		t.Fatalf("stop %s after %d requests", res.StopReason, len(p.reqs))
	}
	last := res.Messages[len(res.Messages)-1]
	if last.Role != RoleUser || last.Content[0].ToolUseID != "t1" {
		t.Fatalf("the tool result must be recorded so the history stays valid: %+v", last)
	}
	if err := CheckRequest(&Request{Model: "m", MaxTokens: 1, Messages: res.Messages}); err != nil {
		t.Fatalf("history after stop is not sendable: %v", err)
	}
}

func TestLoopResumesPauseTurnWithTheAssistantTurnUnchanged(t *testing.T) {
	search := rawBlock(t, blockWire["server_tool_use"])
	result := rawBlock(t, blockWire["web_search_tool_result"])
	thinking := rawBlock(t, blockWire["thinking"])
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopPauseTurn, thinking, TextBlock("searching"), search, result),
		respond(StopEndTurn, TextBlock("found it")),
	}}
	webSearch := Tool{Type: "web_search_20260209", Name: "web_search"}
	req := simpleRequest("m")
	req.Tools = []Tool{webSearch}
	res, err := newLoop(p).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	second := p.reqs[1]
	if len(second.Messages) != 2 || second.Messages[1].Role != RoleAssistant {
		t.Fatalf("resumption must end with the paused assistant turn and no new user text: %+v", second.Messages)
	}
	got, _ := MarshalWire(second.Messages[1].Content)
	want, _ := MarshalWire([]ContentBlock{thinking, TextBlock("searching"), search, result})
	if string(got) != string(want) {
		t.Fatalf("assistant turn changed on resumption:\n got %s\nwant %s", got, want)
	}
	// The continuation joins the paused turn: one assistant message, blocks in order.
	if len(res.Messages) != 2 || len(res.Messages[1].Content) != 5 || res.Messages[1].Content[4].Text != "found it" {
		t.Fatalf("continuation not merged into the paused turn: %+v", res.Messages)
	}
}

func TestLoopStopsAtMaxLoops(t *testing.T) {
	p := &fakeProvider{}
	for i := range 5 {
		id := string(rune('a' + i))
		p.steps = append(p.steps, respond(StopToolUse, toolUse(id, "echo", `{}`)))
	}
	l := newLoop(p, echoTool)
	l.MaxLoops = 3
	res, err := l.Run(context.Background(), simpleRequest("m"))
	if err != nil || res.StopReason != StopMaxLoops || len(p.reqs) != 3 {
		t.Fatalf("err %v stop %s requests %d", err, res.StopReason, len(p.reqs))
	}
}

func TestLoopStopsAtCostLimit(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopToolUse, toolUse("a", "echo", `{}`)),
		respond(StopToolUse, toolUse("b", "echo", `{}`)),
	}}
	l := newLoop(p, echoTool)
	l.MaxCostUSD = 1e-9 // one haiku call costs more
	res, err := l.Run(context.Background(), simpleRequest("claude-haiku-4-5"))
	if err != nil || res.StopReason != StopCostLimit || len(p.reqs) != 1 || res.CostUSD <= 0 {
		t.Fatalf("err %v stop %s requests %d cost %v", err, res.StopReason, len(p.reqs), res.CostUSD)
	}
}

func TestLoopRefusesUnansweredToolUseBeforeSending(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer("never")}}
	req := simpleRequest("m")
	req.Messages = append(req.Messages,
		Message{Role: RoleAssistant, Content: []ContentBlock{toolUse("toolu_9", "echo", `{}`)}},
		UserText("and?"))
	_, err := newLoop(p, echoTool).Run(context.Background(), req)
	var inv *InvalidRequestError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "toolu_9") || len(p.reqs) != 0 {
		t.Fatalf("want the pairing error naming toolu_9 before any request, got %v (%d requests)", err, len(p.reqs))
	}
}

func TestLoopRejectsDuplicateToolNames(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer("never")}}
	req := simpleRequest("m")
	req.Tools = []Tool{echoTool.Tool}
	_, err := newLoop(p, echoTool).Run(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), `duplicate tool name "echo"`) || len(p.reqs) != 0 {
		t.Fatalf("got %v", err)
	}
}

func TestLoopRaisesMaxTokensAboveThinkingBudgetAndSaysSo(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer("ok")}}
	temp := 0.2
	req := simpleRequest("m")
	req.MaxTokens = 8000
	req.Thinking = &Thinking{Type: "enabled", BudgetTokens: 8000}
	req.Temperature = &temp
	res, err := newLoop(p).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sent := p.reqs[0]
	if sent.MaxTokens != 8000+thinkingHeadroom || sent.Temperature != nil {
		t.Fatalf("sent max_tokens %d temperature %v", sent.MaxTokens, sent.Temperature)
	}
	if len(res.Notes) != 2 || !strings.Contains(res.Notes[0], "max_tokens raised from 8000 to 12096") || !strings.Contains(res.Notes[1], "temperature") {
		t.Fatalf("notes %q", res.Notes)
	}
	if req.MaxTokens != 8000 {
		t.Fatal("the caller's request was modified")
	}
}

func TestLoopKeepsThinkingBlocksDuringToolUse(t *testing.T) {
	thinking := rawBlock(t, blockWire["thinking"])
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopToolUse, thinking, toolUse("t1", "echo", `{}`)),
		respond(StopEndTurn, TextBlock("done")),
	}}
	req := simpleRequest("m")
	req.MaxTokens = 4000
	req.Thinking = &Thinking{Type: "enabled", BudgetTokens: 2000}
	if _, err := newLoop(p, echoTool).Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if b := p.reqs[1].Messages[1].Content[0]; b.Type != BlockThinking || b.Signature != thinking.Signature {
		t.Fatalf("thinking block not kept first with its signature: %+v", b)
	}
}

func TestLoopCarriesTheCodeExecutionContainer(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		func(r *Request) (*Response, error) {
			return &Response{Content: []ContentBlock{toolUse("t1", "echo", `{}`)}, StopReason: StopToolUse, Container: &Container{ID: "cntr_42"}}, nil
		},
		answer("done"),
	}}
	if _, err := newLoop(p, echoTool).Run(context.Background(), simpleRequest("m")); err != nil {
		t.Fatal(err)
	}
	if p.reqs[1].Container != "cntr_42" {
		t.Fatalf("container not sent back: %q", p.reqs[1].Container)
	}
}

func TestLoopCutsLongToolResults(t *testing.T) {
	long := ToolHandler{Tool: Tool{Name: "long", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, json.RawMessage) (ToolOutput, error) {
			return TextOutput(strings.Repeat("é", 250)), nil
		}}
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopToolUse, toolUse("t1", "long", `{}`)), answer("ok"),
	}}
	l := newLoop(p, long)
	l.MaxResultChars = 100
	if _, err := l.Run(context.Background(), simpleRequest("m")); err != nil {
		t.Fatal(err)
	}
	got := p.reqs[1].Messages[2].Content[0].Content.Text
	want := strings.Repeat("é", 100) + "\n[output cut: 150 of 250 characters omitted]"
	if got != want {
		t.Fatalf("cut result %q", got)
	}
}

func TestCutResultAcrossBlocks(t *testing.T) {
	img := ContentBlock{Type: BlockImage, Source: &ImageSource{Type: "url", URL: "u"}}
	c := ToolResultContent{Blocks: []ContentBlock{TextBlock("aaaa"), img, TextBlock("bbbb"), TextBlock("cccc")}}
	got := cutResult(c, 6)
	texts := []string{}
	for _, b := range got.Blocks {
		texts = append(texts, b.Type+":"+b.Text)
	}
	want := "text:aaaa|image:|text:bb|text:\n[output cut: 6 of 12 characters omitted]"
	if strings.Join(texts, "|") != want {
		t.Fatalf("got %q", strings.Join(texts, "|"))
	}
}

func TestLoopAnswersClientToolCallsInAPausedTurn(t *testing.T) {
	exec := rawBlock(t, `{"type":"server_tool_use","id":"srvtoolu_05","name":"code_execution","input":{"code":"await block_read()"}}`)
	ptc := rawBlock(t, blockWire["tool_use from code execution"])
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopPauseTurn, exec, ptc),
		respond(StopEndTurn, TextBlock("read it")),
	}}
	blockRead := ToolHandler{Tool: Tool{Name: "block_read", InputSchema: json.RawMessage(`{"type":"object"}`), AllowedCallers: []string{"code_execution_20250825"}},
		Run: func(context.Context, json.RawMessage) (ToolOutput, error) { return TextOutput("wake text"), nil }}
	if _, err := newLoop(p, blockRead).Run(context.Background(), simpleRequest("m")); err != nil {
		t.Fatal(err)
	}
	second := p.reqs[1].Messages
	if len(second) != 3 || second[2].Content[0].ToolUseID != "toolu_02" || second[2].Content[0].Content.Text != "wake text" {
		t.Fatalf("the programmatic tool call was not answered: %+v", second)
	}
	if got := string(second[1].Content[1].Caller); got != `{"type":"code_execution_20250825","tool_id":"srvtoolu_05"}` {
		t.Fatalf("caller lost from the tool_use: %s", got)
	}
}

// What a provider says about how it answered reaches Result.Notes and
// Loop.Observe.
func TestProviderNotesReachTheResult(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){func(r *Request) (*Response, error) {
		resp, err := answer("ok")(r)
		resp.Notes = []string{"the server does not stream"}
		return resp, err
	}}}
	var observed []string
	l := &Loop{Client: &Client{Provider: p}, Observe: func(e Event) {
		if e.Kind == EventNote {
			observed = append(observed, e.Note)
		}
	}}
	res, err := l.Run(context.Background(), simpleRequest("claude-haiku-4-5"))
	if err != nil || !slices.Contains(res.Notes, "the server does not stream") || len(observed) != 1 {
		t.Fatalf("err %v, notes %q, observed %q", err, res.Notes, observed)
	}
}

func TestLoopBeforeSetsEachRequestAndCanEndTheRun(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		respond(StopToolUse, toolUse("a", "echo", `{}`)),
		respond(StopToolUse, toolUse("b", "echo", `{}`)),
	}}
	l := newLoop(p, echoTool)
	stop := errors.New("over budget")
	l.Before = func(r *Request, done *Result) error {
		if len(done.Calls) == 1 {
			return stop
		}
		r.MaxTokens = 77
		return nil
	}
	res, err := l.Run(context.Background(), simpleRequest("claude-haiku-4-5"))
	if !errors.Is(err, stop) || len(p.reqs) != 1 || p.reqs[0].MaxTokens != 77 || len(res.Calls) != 1 {
		t.Fatalf("err %v, %d requests, max_tokens %d", err, len(p.reqs), p.reqs[0].MaxTokens)
	}
}
