package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
)

func ask(t *testing.T, p *Provider, req *llm.Request) string {
	t.Helper()
	resp, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatalf("Messages(%q): %v", req.Messages[len(req.Messages)-1].Text(), err)
	}
	return resp.Text()
}

func TestScriptedPlainEntriesAnswerInOrder(t *testing.T) {
	p := New(mustParse(t, `{"responses":[
		{"content":[{"type":"text","text":"one"}]},
		{"content":[{"type":"text","text":"two"}]},
		{"content":[{"type":"text","text":"three"}]}]}`))
	for _, want := range []string{"one", "two", "three"} {
		if got := ask(t, p, userRequest("same question")); got != want {
			t.Errorf("answer = %q, want %q", got, want)
		}
	}
	if p.Remaining() != 0 {
		t.Errorf("Remaining = %d after playing every entry, want 0", p.Remaining())
	}
}

func TestScriptedFirstUnusedMatchingEntryWins(t *testing.T) {
	p := New(mustParse(t, `{"responses":[
		{"match":{"last_user_contains":"apple"},"response":{"content":[{"type":"text","text":"A1"}]}},
		{"match":{"last_user_contains":"apple"},"response":{"content":[{"type":"text","text":"A2"}]}},
		{"content":[{"type":"text","text":"ANY"}]},
		{"match":{"model":"claude-other"},"response":{"content":[{"type":"text","text":"OTHER"}]}}]}`))

	other := userRequest("apple")
	other.Model = "claude-other"
	steps := []struct {
		req  *llm.Request
		want string
	}{
		{userRequest("banana"), "ANY"},   // entries 0, 1 do not match; the entry without match holds
		{userRequest("apple pie"), "A1"}, // first matching entry
		{userRequest("apple"), "A2"},     // A1 is used: the next matching one
		{other, "OTHER"},                 // 0-2 used; the model matches entry 3
	}
	for i, s := range steps {
		if got := ask(t, p, s.req); got != s.want {
			t.Errorf("request %d: answer = %q, want %q", i+1, got, s.want)
		}
	}
	if _, err := p.Messages(context.Background(), userRequest("apple")); !errors.Is(err, ErrExhausted) {
		t.Errorf("fifth request: err = %v, want ErrExhausted", err)
	}
}

func TestScriptedMatchConditions(t *testing.T) {
	withSystem := userRequest("hello")
	withSystem.System = []llm.SystemBlock{{Type: llm.BlockText, Text: "first block"}, {Type: llm.BlockText, Text: "You are LUMEN."}}
	cases := []struct {
		name  string
		match string
		req   *llm.Request
		holds bool
	}{
		{"system_contains holds", `{"system_contains":"LUMEN"}`, withSystem, true},
		{"system_contains fails", `{"system_contains":"SOLVE"}`, withSystem, false},
		{"last_user_contains sees text", `{"last_user_contains":"hello"}`, withSystem, true},
		{"last_user_contains sees tool_result content", `{"last_user_contains":"sunny 21C"}`, toolResultRequest("sunny 21C"), true},
		{"last_user_contains ignores earlier turns", `{"last_user_contains":"Paris"}`, toolResultRequest("sunny"), false},
		{"tool_result_for holds", `{"tool_result_for":"get_weather"}`, toolResultRequest("sunny"), true},
		{"tool_result_for other tool", `{"tool_result_for":"get_time"}`, toolResultRequest("sunny"), false},
		{"tool_result_for without tool_result", `{"tool_result_for":"get_weather"}`, userRequest("get_weather"), false},
		{"model holds", `{"model":"` + testModel + `"}`, userRequest("x"), true},
		{"model is exact", `{"model":"claude-sonnet"}`, userRequest("x"), false},
		{"all conditions must hold", `{"system_contains":"LUMEN","last_user_contains":"bye"}`, withSystem, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(mustParse(t, `{"responses":[
				{"match":`+c.match+`,"response":{"content":[{"type":"text","text":"matched"}]}},
				{"content":[{"type":"text","text":"fallback"}]}]}`))
			got := ask(t, p, c.req)
			if want := map[bool]string{true: "matched", false: "fallback"}[c.holds]; got != want {
				t.Errorf("answer = %q, want %q", got, want)
			}
		})
	}
}

func TestScriptedConcurrentCallersEachGetTheirOwnMatch(t *testing.T) {
	const callers = 8
	var entries []string
	for i := callers - 1; i >= 0; i-- { // reverse order: taking entries in order would give wrong answers
		entries = append(entries, fmt.Sprintf(`{"match":{"last_user_contains":"marker-%d."},"response":{"content":[{"type":"text","text":"answer for %d"}]}}`, i, i))
	}
	p := New(mustParse(t, `{"responses":[`+strings.Join(entries, ",")+`]}`))

	start := make(chan struct{})
	got := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			resp, err := p.Messages(context.Background(), userRequest(fmt.Sprintf("I am marker-%d.", i)))
			if err != nil {
				errs[i] = err
				return
			}
			got[i] = resp.Text()
		})
	}
	close(start)
	wg.Wait()
	for i := range callers {
		if want := fmt.Sprintf("answer for %d", i); errs[i] != nil || got[i] != want {
			t.Errorf("caller %d: got %q, %v; want %q", i, got[i], errs[i], want)
		}
	}
	if p.Remaining() != 0 || len(p.Requests()) != callers {
		t.Errorf("Remaining = %d, recorded %d requests; want 0 and %d", p.Remaining(), len(p.Requests()), callers)
	}
}

func TestScriptedErrorEntryIsAPIErrorWithRetryAfter(t *testing.T) {
	p := New(mustParse(t, `{"responses":[
		{"error":{"status":529,"type":"overloaded_error","message":"Overloaded","retry_after":2}},
		{"content":[{"type":"text","text":"after the storm"}]}]}`))
	_, err := p.Messages(context.Background(), userRequest("hi"))
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want an *llm.APIError", err)
	}
	if apiErr.Status != 529 || apiErr.Type != "overloaded_error" || apiErr.Message != "Overloaded" || apiErr.RetryAfter != 2*time.Second {
		t.Errorf("APIError = %+v, want status 529, type overloaded_error, message Overloaded, retry-after 2s", *apiErr)
	}

	// Through llm.Client the error is retried after the scripted wait.
	p = New(mustParse(t, `{"responses":[
		{"error":{"status":529,"type":"overloaded_error","retry_after":2}},
		{"content":[{"type":"text","text":"after the storm"}]}]}`))
	var waits []time.Duration
	c := &llm.Client{Provider: p, Retry: llm.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}}
	call, err := c.Send(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatalf("Client.Send: %v", err)
	}
	if call.Response.Text() != "after the storm" || call.Attempts != 2 || len(waits) != 1 || waits[0] != 2*time.Second {
		t.Errorf("got %q after %d attempts, waits %v; want the second entry after 2 attempts and one 2s wait", call.Response.Text(), call.Attempts, waits)
	}
}

func TestScriptedExhaustionIsPlainErrorNamingTheRequest(t *testing.T) {
	p := New(mustParse(t, `{"responses":[
		{"content":[{"type":"text","text":"only"}]},
		{"match":{"model":"claude-never"},"response":{"content":[{"type":"text","text":"never"}]}}]}`))
	ask(t, p, userRequest("first"))
	long := "please summarise the quarterly report " + strings.Repeat("and the appendix ", 20)
	_, err := p.Messages(context.Background(), userRequest(long))
	if err == nil {
		t.Fatal("second request was answered; want the script to be exhausted")
	}
	if _, isAPI := llm.AsAPIError(err); isAPI {
		t.Errorf("exhaustion error %v is an APIError; it must not be retried", err)
	}
	if !errors.Is(err, ErrExhausted) {
		t.Errorf("err = %v, want it to wrap ErrExhausted", err)
	}
	msg := err.Error()
	for _, want := range []string{"request 2", `model "` + testModel + `"`, `"please summarise the quarterly report`, "…", "2 entries, 1 used", "1 unused do not match"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, strings.Repeat("and the appendix ", 5)) {
		t.Errorf("error %q quotes the whole message; want a short excerpt", msg)
	}
}

func TestStrictRejectsUnansweredToolUseWithAPIMessage(t *testing.T) {
	const apiText = "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"
	script := mustParse(t, `{"responses":[{"content":[{"type":"text","text":"should not be used"}]}]}`)

	t.Run("provider", func(t *testing.T) {
		p := New(script)
		_, err := p.Messages(context.Background(), unansweredToolUseRequest())
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, apiText) {
			t.Fatalf("err = %v, want a 400 invalid_request_error saying %q", err, apiText)
		}
		if p.Remaining() != 1 || len(p.Requests()) != 1 {
			t.Errorf("Remaining = %d, recorded %d; want the entry unused and the request recorded", p.Remaining(), len(p.Requests()))
		}
	})
}

func TestScriptedFillsDefaultsAndEstimatesUsage(t *testing.T) {
	p := New(mustParse(t, `{"responses":[
		{"content":[{"type":"text","text":"a plain answer of some length"}]},
		{"content":[{"type":"text","text":"let me look"},{"type":"tool_use","name":"get_weather","input":{"city":"Paris"}}]},
		{"id":"msg_given","model":"claude-given","stop_reason":"max_tokens","content":[{"type":"text","text":"x"}],
		 "usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":5}}]}`))
	req := userRequest("what is the weather like in Paris today?")
	reqJSON, _ := json.Marshal(req)

	r, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "msg_script_0" || r.Type != "message" || r.Role != "assistant" || r.Model != testModel || r.StopReason != llm.StopEndTurn {
		t.Errorf("defaults: id %q type %q role %q model %q stop %q; want msg_script_0, message, assistant, %s, end_turn", r.ID, r.Type, r.Role, r.Model, r.StopReason, testModel)
	}
	contentJSON, _ := json.Marshal(r.Content)
	wantIn, wantOut := (len(reqJSON)+3)/4, (len(contentJSON)+3)/4
	if r.Usage.InputTokens != wantIn || r.Usage.OutputTokens != wantOut || wantIn < 10 {
		t.Errorf("usage = %+v, want estimated input %d (request JSON/4), output %d (content JSON/4)", r.Usage, wantIn, wantOut)
	}

	r, err = p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != llm.StopToolUse || r.ID != "msg_script_1" {
		t.Errorf("tool_use response: stop %q id %q, want tool_use, msg_script_1", r.StopReason, r.ID)
	}
	if uses := r.ToolUses(); len(uses) != 1 || uses[0].ID != "toolu_script_1_1" {
		t.Errorf("tool_use blocks = %+v, want one with the filled id toolu_script_1_1", uses)
	}

	r, err = p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{InputTokens: 7, OutputTokens: 3, CacheReadInputTokens: 5}
	if r.ID != "msg_given" || r.Model != "claude-given" || r.StopReason != llm.StopMaxTokens || r.Usage != want {
		t.Errorf("given fields were overwritten: id %q model %q stop %q usage %+v", r.ID, r.Model, r.StopReason, r.Usage)
	}
}

func TestScriptedRecordsDeepCopiesOfRequests(t *testing.T) {
	p := New(mustParse(t, `{"responses":[{"content":[{"type":"text","text":"ok"}]}]}`))
	req := toolResultRequest("")
	req.Messages[2].Content[0].Content = llm.ToolResultContent{Blocks: []llm.ContentBlock{llm.TextBlock("sunny")}}
	before, _ := json.Marshal(req)
	if _, err := p.Messages(context.Background(), req); err != nil {
		t.Fatal(err)
	}

	// The caller reuses and edits its request in place.
	req.System[0].Text = "changed"
	req.Tools[0].InputSchema[2] = 'X'
	req.Messages[0].Content[0].Text = "changed"
	req.Messages[1].Content[0].Input[2] = 'X'
	req.Messages[2].Content[0].Content.Blocks[0].Text = "changed"
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant})

	rec := p.Requests()[0]
	if got, _ := json.Marshal(rec); string(got) != string(before) {
		t.Errorf("record changed with the caller's request:\n got %s\nwant %s", got, before)
	}
	rec.Messages[0].Content[0].Text = "edited record"
	if again, _ := json.Marshal(p.Requests()[0]); string(again) != string(before) {
		t.Errorf("editing a returned record changed the stored one: %s", again)
	}
	if rec.Messages[2].Content[0].Content.Blocks == nil {
		t.Error("record lost the list form of the tool_result content")
	}
}

// The provider holds thinking to the API's rules in-process too: a paused
// turn resumed without the thinking it had is refused; with thinking off,
// or resumed whole, it is not.
func TestScriptedThinkingOfAPausedTurnMustComeBack(t *testing.T) {
	const pausedScript = `{"responses":[
		{"content":[{"type":"thinking","thinking":"Search.","signature":"sig-p"},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}],"stop_reason":"pause_turn"},
		{"content":[{"type":"text","text":"found"}]}]}`
	resume := func(p *Provider, thinking *llm.Thinking, keep func([]llm.ContentBlock) []llm.ContentBlock) error {
		req := userRequest("Search.")
		req.MaxTokens, req.Thinking = 4096, thinking
		first, err := p.Messages(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: keep(first.Content)})
		_, err = p.Messages(context.Background(), req)
		return err
	}
	dropThinking := func(b []llm.ContentBlock) []llm.ContentBlock { return b[1:] }
	whole := func(b []llm.ContentBlock) []llm.ContentBlock { return b }

	err := resume(New(mustParse(t, pausedScript)), &llm.Thinking{Type: "adaptive"}, dropThinking)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || !strings.Contains(apiErr.Message, "messages.1: the thinking the API sent in this turn") {
		t.Fatalf("resumed without its thinking: err = %v, want the API's 400 naming messages.1", err)
	}
	if err := resume(New(mustParse(t, pausedScript)), &llm.Thinking{Type: "adaptive"}, whole); err != nil {
		t.Fatalf("resumed whole: %v", err)
	}
	if err := resume(New(mustParse(t, pausedScript)), nil, dropThinking); err != nil {
		t.Fatalf("thinking off: %v", err)
	}
}

func TestScriptedRefusedEchoUsesNoEntry(t *testing.T) {
	p := New(mustParse(t, `{"responses":[
		{"content":[{"type":"thinking","thinking":"A.","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},
		{"content":[{"type":"text","text":"done"}]}]}`))
	req := userRequest("go")
	req.MaxTokens, req.Thinking = 4096, &llm.Thinking{Type: "adaptive"}
	req.Tools = []llm.Tool{{Name: "f", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	first, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	changed := []llm.ContentBlock{{Type: llm.BlockThinking, Thinking: "B.", Signature: "sig"}, first.Content[1]}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: changed},
		llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock("toolu_1", llm.ToolResultContent{Text: "ok"}, false)}})
	if _, err := p.Messages(context.Background(), req); err == nil || !strings.Contains(err.Error(), "Invalid `signature`") {
		t.Fatalf("changed thinking: err = %v", err)
	}
	if p.Remaining() != 1 {
		t.Fatalf("Remaining = %d, want the refused request to use no entry", p.Remaining())
	}
}

// The provider delivers its answer as the API streams it: the pieces, in
// order, through the request's OnDelta, and the whole answer returned.
func TestScriptedAnswersArriveThroughOnDelta(t *testing.T) {
	p := New(mustParse(t, `{"responses":[{"content":[
		{"type":"text","text":"Let me look that up for you, it takes a moment."},
		{"type":"tool_use","id":"toolu_1","name":"search","input":{"query":"weather in Florence"}}]}]}`))
	req := userRequest("weather?")
	var text, input strings.Builder
	var starts []string
	req.OnDelta = func(d llm.Delta) {
		switch d.Kind {
		case llm.DeltaText:
			text.WriteString(d.Text)
		case llm.DeltaToolInput:
			input.WriteString(d.Text)
		case llm.DeltaBlockStart:
			starts = append(starts, d.Block+" "+d.Name)
		}
	}
	resp, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != resp.Text() || text.String() != "Let me look that up for you, it takes a moment." {
		t.Errorf("text pieces %q, answer %q", text.String(), resp.Text())
	}
	if input.String() != string(resp.ToolUses()[0].Input) || input.String() != `{"query":"weather in Florence"}` {
		t.Errorf("input pieces %q, answer %s", input.String(), resp.ToolUses()[0].Input)
	}
	if len(starts) != 2 || starts[1] != "tool_use search" {
		t.Errorf("block starts %q", starts)
	}
}
