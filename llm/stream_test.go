package llm

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// events turns "name data" lines into stream events.
func events(lines ...string) []StreamEvent {
	out := make([]StreamEvent, len(lines))
	for i, l := range lines {
		name, data, _ := strings.Cut(l, " ")
		out[i] = StreamEvent{Type: name, Data: json.RawMessage(data)}
	}
	return out
}

// A stream in the API's shapes (a thinking block with its signature, a
// tool call with its input in pieces, a block that has no deltas, usage
// completed by message_delta; data with trailing spaces, as the API
// sends) assembles into the blocks the API would have answered whole,
// and hands the pieces on as they come.
var thinkingToolStream = events(
	`message_start {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":423,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000,"cache_creation":{"ephemeral_5m_input_tokens":600,"ephemeral_1h_input_tokens":400},"output_tokens":6,"service_tier":"standard"}}}   `,
	`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}  `,
	`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user asks <weather> & "}}`,
	`ping {"type": "ping"}`,
	`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"\"Florence\"."}}`,
	`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EsQDCkYICBgCKkBr9+FTcKs=="}}`,
	`content_block_stop {"type":"content_block_stop","index":0 }`,
	`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va=="}}`,
	`content_block_stop {"type":"content_block_stop","index":1}`,
	`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"weather","input":{},"caller":{"type":"direct"}}}`,
	`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location"}}`,
	`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\": \"Florence, Italy\"}"}}`,
	`content_block_stop {"type":"content_block_stop","index":2}`,
	`content_block_start {"type":"content_block_start","index":3,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://x","encrypted_content":"zz"}]}}`,
	`content_block_stop {"type":"content_block_stop","index":3}`,
	`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":423,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000,"output_tokens":119}}`,
	`message_stop {"type":"message_stop"}`,
)

func TestStreamAssemblesTheBlocksTheAPISent(t *testing.T) {
	var got []Delta
	a := NewStreamAssembler(func(d Delta) { got = append(got, d) })
	for _, e := range thinkingToolStream {
		if err := a.Add(e); err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
	}
	resp, err := a.Response()
	if err != nil {
		t.Fatal(err)
	}
	wantBlocks := []string{
		`{"type":"thinking","thinking":"The user asks <weather> & \"Florence\".","signature":"EsQDCkYICBgCKkBr9+FTcKs=="}`,
		`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va=="}`,
		`{"type":"tool_use","id":"toolu_01","name":"weather","input":{"location": "Florence, Italy"},"caller":{"type":"direct"}}`,
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://x","encrypted_content":"zz"}]}`,
	}
	if len(resp.Content) != len(wantBlocks) {
		t.Fatalf("%d blocks, want %d", len(resp.Content), len(wantBlocks))
	}
	for i, want := range wantBlocks {
		if string(resp.Content[i].Raw) != want {
			t.Errorf("block %d:\n got %s\nwant %s", i, resp.Content[i].Raw, want)
		}
	}
	if b := resp.Content[0]; b.Thinking != `The user asks <weather> & "Florence".` || b.Signature != "EsQDCkYICBgCKkBr9+FTcKs==" {
		t.Errorf("thinking block fields: %+v", b)
	}
	if resp.ID != "msg_1" || resp.Model != "claude-sonnet-4-5" || resp.StopReason != StopToolUse || resp.StopSequence != nil {
		t.Errorf("head: %+v", resp)
	}
	wantUsage := Usage{InputTokens: 423, OutputTokens: 119, CacheCreationInputTokens: 1000, CacheReadInputTokens: 2000,
		CacheCreation: CacheCreation{Ephemeral5mInputTokens: 600, Ephemeral1hInputTokens: 400}}
	if resp.Usage != wantUsage {
		t.Errorf("usage %+v, want %+v", resp.Usage, wantUsage)
	}
	var thinking, input strings.Builder
	var kinds []string
	for _, d := range got {
		kinds = append(kinds, d.Kind)
		switch d.Kind {
		case DeltaThinking:
			thinking.WriteString(d.Text)
		case DeltaToolInput:
			input.WriteString(d.Text)
			if d.Name != "weather" || d.ID != "toolu_01" || d.Index != 2 {
				t.Errorf("a tool input piece without its tool: %+v", d)
			}
		}
	}
	if thinking.String() != resp.Content[0].Thinking || input.String() != string(resp.Content[2].Input) {
		t.Errorf("the pieces joined are not the blocks: %q, %q", thinking.String(), input.String())
	}
	wantKinds := []string{DeltaBlockStart, DeltaThinking, DeltaThinking, DeltaBlockStop, DeltaBlockStart, DeltaBlockStop,
		DeltaBlockStart, DeltaToolInput, DeltaToolInput, DeltaBlockStop, DeltaBlockStart, DeltaBlockStop}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("deltas %v\nwant   %v", kinds, wantKinds)
	}
}

// A text block's citations arrive as citations_delta events and join the
// block in order; pause_turn and the container come in message_delta.
func TestStreamCitationsPauseTurnAndContainer(t *testing.T) {
	a := NewStreamAssembler(nil)
	for _, e := range events(
		`message_start {"message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`content_block_start {"index":0,"content_block":{"type":"text","text":"","citations":[]}}`,
		`content_block_delta {"index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"a"}}}`,
		`content_block_delta {"index":0,"delta":{"type":"text_delta","text":"the grass"}}`,
		`content_block_delta {"index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"b"}}}`,
		`content_block_stop {"index":0}`,
		`message_delta {"delta":{"stop_reason":"pause_turn","stop_sequence":null,"container":{"id":"cntr_1","expires_at":"2026-11-04T10:00:00Z"}},"usage":{"output_tokens":9}}`,
		`message_stop {}`,
	) {
		if err := a.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := a.Response()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"text","text":"the grass","citations":[{"type":"char_location","cited_text":"a"},{"type":"char_location","cited_text":"b"}]}`
	if string(resp.Content[0].Raw) != want {
		t.Errorf("got  %s\nwant %s", resp.Content[0].Raw, want)
	}
	if resp.StopReason != StopPauseTurn || resp.Container == nil || resp.Container.ID != "cntr_1" || resp.Usage.InputTokens != 5 || resp.Usage.OutputTokens != 9 {
		t.Errorf("got %+v container %+v", resp, resp.Container)
	}
}

// An answer whose stream ends before message_stop is never returned: it is
// a connection error, which the Client retries. An error event is the
// API's error for its type, marked as coming mid-stream.
func TestABrokenStreamIsAnErrorNeverAPartialAnswer(t *testing.T) {
	a := NewStreamAssembler(nil)
	for _, e := range thinkingToolStream[:len(thinkingToolStream)-1] {
		if err := a.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := a.Response()
	apiErr, ok := AsAPIError(err)
	if resp != nil || !ok || !apiErr.Retryable() || !errors.Is(err, ErrStreamCut) {
		t.Fatalf("a stream without message_stop gave %v, %v", resp, err)
	}
	err = NewStreamAssembler(nil).Add(StreamEvent{Type: "error", Data: json.RawMessage(`{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`)})
	if apiErr, ok := AsAPIError(err); !ok || apiErr.Status != 529 || !apiErr.InStream || !apiErr.ModelUnavailable() || refused(apiErr) {
		t.Fatalf("error event gave %#v", err)
	}
	b := NewStreamAssembler(nil)
	for _, e := range thinkingToolStream[:2] {
		_ = b.Add(e)
	}
	err = b.Add(StreamEvent{Type: "content_block_delta", Data: json.RawMessage(`{"index":0,"delta":{"type":"compaction_delta","content":"x"}}`)})
	if err == nil || !strings.Contains(err.Error(), "compaction_delta") {
		t.Fatalf("a delta the runtime cannot assemble must refuse the answer: %v", err)
	}
	if err := NewStreamAssembler(nil).Add(thinkingToolStream[1]); err == nil {
		t.Fatal("a block before message_start must be refused")
	}
}

// streamingProvider plays a list of event lists, one per call, through
// req.OnDelta; a list that ends without message_stop breaks the stream.
type streamingProvider struct {
	calls [][]StreamEvent
	fails []error // the error of each call whose stream breaks
}

func (p *streamingProvider) Messages(ctx context.Context, req *Request) (*Response, error) {
	evs, fail := p.calls[0], p.fails[0]
	p.calls, p.fails = p.calls[1:], p.fails[1:]
	a := NewStreamAssembler(req.OnDelta)
	for _, e := range evs {
		if err := a.Add(e); err != nil {
			return nil, err
		}
	}
	if fail != nil {
		return nil, fail
	}
	return a.Response()
}

// A stream that breaks off mid-way is retried as a whole: the caller is
// told the pieces so far are void (DeltaRestart) before the new answer's
// pieces, and gets only the whole second answer.
func TestClientRestartsABrokenStream(t *testing.T) {
	p := &streamingProvider{
		calls: [][]StreamEvent{thinkingToolStream[:5], thinkingToolStream},
		fails: []error{StreamError("overloaded_error", "Overloaded"), nil},
	}
	var kinds []string
	req := simpleRequest("claude-sonnet-4-5")
	req.OnDelta = func(d Delta) { kinds = append(kinds, d.Kind) }
	c := &Client{Provider: p, Retry: RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }}}
	call, err := c.Send(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	restart := slices.Index(kinds, DeltaRestart)
	if restart != 3 || slices.Contains(kinds[restart+1:], DeltaRestart) || call.Attempts != 2 || len(call.Response.Content) != 4 {
		t.Fatalf("deltas %v, attempts %d", kinds, call.Attempts)
	}
	if got := kinds[restart+1:]; len(got) != 12 {
		t.Errorf("the second answer's deltas: %v", got)
	}
}

// The stream StreamEvents writes for an answer assembles back into the
// same answer, byte for byte, whatever its blocks.
func TestStreamEventsAssembleBackIntoTheAnswer(t *testing.T) {
	var resp Response
	if err := json.Unmarshal([]byte(`{"id":"msg_9","type":"message","role":"assistant","model":"claude-opus-4-6",
		"content":[
		{"type":"thinking","thinking":"Säure & <base>: a long thought that spans pieces, with ünïcödé throughout","signature":"c2lnbmF0dXJl"},
		{"type":"redacted_thinking","data":"cmVkYWN0ZWQ="},
		{"type":"text","text":"Look:","citations":[{"type":"char_location","cited_text":"x","document_index":0}]},
		{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"tallest building in Oslo"}},
		{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://x","encrypted_content":"zz"}]},
		{"type":"tool_use","id":"toolu_1","name":"run","input":{"cmd":"ls — ünïcödé","n":[1,2,3]},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_2"}},
		{"type":"tool_use","id":"toolu_2","name":"now","input":{}}],
		"stop_reason":"stop_sequence","stop_sequence":"END",
		"usage":{"input_tokens":10,"output_tokens":300,"cache_creation_input_tokens":4000,"cache_read_input_tokens":8000,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":4000}},
		"container":{"id":"cntr_1","expires_at":"2026-11-04T10:00:00Z"}}`), &resp); err != nil {
		t.Fatal(err)
	}
	evs, err := StreamEvents(&resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 30 || evs[0].Type != "message_start" || evs[2].Type != "ping" || evs[len(evs)-1].Type != "message_stop" {
		t.Fatalf("%d events: %v", len(evs), evs)
	}
	a := NewStreamAssembler(nil)
	for _, e := range evs {
		if err := a.Add(e); err != nil {
			t.Fatalf("%s %s: %v", e.Type, e.Data, err)
		}
	}
	got, err := a.Response()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := MarshalWire(&resp)
	back, _ := MarshalWire(got)
	if string(back) != string(want) {
		t.Fatalf("assembled\n%s\nwant\n%s", back, want)
	}
}
