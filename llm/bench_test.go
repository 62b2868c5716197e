package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// instantProvider answers tool_use for the first rounds-1 calls of a run and
// end_turn on the last, from prebuilt responses: what is measured is the
// loop's own work, not a provider's.
type instantProvider struct {
	rounds int
	n      int
	use    *Response
	end    *Response
}

func (p *instantProvider) Messages(context.Context, *Request) (*Response, error) {
	p.n++
	if p.n%p.rounds == 0 {
		return p.end, nil
	}
	return p.use, nil
}

// BenchmarkLoopRoundTrip measures the tool loop's overhead per round trip
// (check the request, send, meter, dispatch one tool, append the turns) in
// a run of 10 round trips with an instant provider.
func BenchmarkLoopRoundTrip(b *testing.B) {
	const rounds = 10
	p := &instantProvider{
		rounds: rounds,
		use: &Response{Model: "claude-haiku-4-5", StopReason: StopToolUse, Usage: Usage{InputTokens: 100, OutputTokens: 20},
			Content: []ContentBlock{toolUse("toolu_1", "echo", `{"q":"x"}`)}},
		end: &Response{Model: "claude-haiku-4-5", StopReason: StopEndTurn, Content: []ContentBlock{TextBlock("done")}},
	}
	quiet := ToolHandler{Tool: echoTool.Tool, Run: func(context.Context, json.RawMessage) (ToolOutput, error) {
		return TextOutput("ok"), nil
	}}
	l := &Loop{Client: &Client{Provider: p}, Handlers: []ToolHandler{quiet}}
	req := &Request{Model: "claude-haiku-4-5", MaxTokens: 1024, Messages: []Message{UserText("go")}}
	ctx := context.Background()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := l.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*rounds), "ns/roundtrip")
}

// BenchmarkMarshalDecodedConversation measures writing back a decoded
// conversation of 100 turns (thinking, text with citations, tool_use with
// a caller, tool_result): each decoded block is compared with its raw
// bytes before they are reused, the price of the byte-for-byte guarantee.
func BenchmarkMarshalDecodedConversation(b *testing.B) {
	var msgs []Message
	for range 50 {
		msgs = append(msgs,
			Message{Role: RoleAssistant, Content: []ContentBlock{
				mustBlock(b, `{"type":"thinking","thinking":"`+strings.Repeat("reasoning ", 200)+`","signature":"EqQBCkYIBxgCKkBsig=="}`),
				mustBlock(b, blockWire["text with citations"]),
				mustBlock(b, blockWire["tool_use from code execution"])}},
			Message{Role: RoleUser, Content: []ContentBlock{mustBlock(b, `{"type":"tool_result","tool_use_id":"toolu_02","content":"`+strings.Repeat("result ", 100)+`"}`)}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MarshalWire(msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func mustBlock(b *testing.B, wire string) ContentBlock {
	var c ContentBlock
	if err := json.Unmarshal([]byte(wire), &c); err != nil {
		b.Fatal(err)
	}
	return c
}
