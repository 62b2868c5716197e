package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
)

func hi() *llm.Request {
	return &llm.Request{Model: model, MaxTokens: 1000, Messages: []llm.Message{llm.UserText("Hi")}}
}

// The answer streams: its pieces reach OnDelta through the SDK as they
// arrive, and the blocks returned are those the fake served, byte for
// byte: the same the SDK's own accumulator makes of the same stream.
func TestAnswerStreamsThroughTheSDK(t *testing.T) {
	srv, p := serve(t, `{"responses":[`+fullResponse+`,`+fullResponse+`]}`, anthropic.Config{})
	var thinking, text, input strings.Builder
	var tools []string
	req := decodeRequest(t, fullRequest)
	req.OnDelta = func(d llm.Delta) {
		switch d.Kind {
		case llm.DeltaThinking:
			thinking.WriteString(d.Text)
		case llm.DeltaText:
			text.WriteString(d.Text)
		case llm.DeltaToolInput:
			if d.Block == llm.BlockToolUse {
				input.WriteString(d.Text)
			}
		case llm.DeltaBlockStart:
			if d.Name != "" {
				tools = append(tools, d.Name)
			}
		}
	}
	resp, err := p.Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if thinking.String() != "Let me run it." || text.String() != "Go has generics." || input.String() != `{"key":"c"}` ||
		!slices.Equal(tools, []string{"web_search", "code_execution", "lookup"}) {
		t.Errorf("deltas: thinking %q text %q input %q tools %q", thinking.String(), text.String(), input.String(), tools)
	}
	served := srv.Received()[0].Response
	var want struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(served, &want); err != nil {
		t.Fatalf("the fake recorded no answer: %v", err)
	}
	if len(resp.Content) != len(want.Content) {
		t.Fatalf("%d blocks, served %d", len(resp.Content), len(want.Content))
	}
	for i, b := range resp.Content {
		if !bytes.Equal(b.Raw, want.Content[i]) {
			t.Errorf("block %d\n got %s\nwant %s", i, b.Raw, want.Content[i])
		}
	}
	if resp.Usage.CacheReadInputTokens != 3000 || resp.Container == nil || resp.StopReason != llm.StopToolUse {
		t.Errorf("usage %+v container %v stop %s", resp.Usage, resp.Container, resp.StopReason)
	}

	// The SDK's accumulator, fed the same stream, makes the same blocks.
	client := sdk.NewClient(option.WithAPIKey("k"), option.WithBaseURL(srv.URL), option.WithMaxRetries(0))
	params := sdk.MessageNewParams{Model: model, MaxTokens: 100, Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("again"))}}
	stream := client.Messages.NewStreaming(context.Background(), params)
	var msg sdk.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	var theirs struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal([]byte(msg.RawJSON()), &theirs); err != nil || len(theirs.Content) != len(resp.Content) {
		t.Fatalf("the SDK's accumulation: %v, %s", err, msg.RawJSON())
	}
	for i, b := range resp.Content {
		var compact bytes.Buffer
		_ = json.Compact(&compact, theirs.Content[i])
		if !bytes.Equal(b.Raw, compact.Bytes()) {
			t.Errorf("block %d: ours %s\nthe SDK's %s", i, b.Raw, compact.Bytes())
		}
	}
}

// A stream broken off mid-way (an error event, a dropped connection) is
// retried as a whole by the Client: the caller hears DeltaRestart, gets
// only the whole second answer, and the loop saves no partial turn.
func TestABrokenStreamIsRetriedWhole(t *testing.T) {
	for name, fault := range map[string]llmtest.StreamFault{
		"error event":        {After: 4, Error: "overloaded_error"},
		"dropped connection": {After: 5, Drop: true},
		"api_error":          {After: 2, Error: "api_error"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"a whole answer in many pieces, long enough"}],"usage":{"input_tokens":5,"output_tokens":9}}]}`, anthropic.Config{})
			srv.BreakStream(fault)
			var kinds []string
			var text strings.Builder
			req := hi()
			req.OnDelta = func(d llm.Delta) {
				kinds = append(kinds, d.Kind)
				if d.Kind == llm.DeltaRestart {
					text.Reset()
				}
				if d.Kind == llm.DeltaText {
					text.WriteString(d.Text)
				}
			}
			var retries []error
			c := &llm.Client{Provider: p, Retry: llm.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }},
				Observe: func(e llm.Event) {
					if e.Kind == llm.EventRetry {
						retries = append(retries, e.Err)
					}
				}}
			res, err := (&llm.Loop{Client: c}).Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text() != "a whole answer in many pieces, long enough" || text.String() != res.Text() || len(res.Messages) != 2 ||
				res.Calls[0].Attempts != 2 || len(retries) != 1 || !slices.Contains(kinds, llm.DeltaRestart) {
				t.Fatalf("answer %q, pieces after the restart %q, %d messages, %d attempts, retries %v, deltas %v",
					res.Text(), text.String(), len(res.Messages), res.Calls[0].Attempts, retries, kinds)
			}
			if srv.Remaining() != 0 {
				t.Errorf("%d entries unused", srv.Remaining())
			}
		})
	}
}

// A stream that stalls longer than the timeout is cancelled and sent
// again; an answer that keeps arriving, slower than the timeout in all
// but never stalling for it, is not cut off.
func TestAStalledStreamIsCancelledAndRetried(t *testing.T) {
	const long = "arrives in the end, piece by piece by piece, slowly, as a long answer does, and never stops for long"
	answer := `{"content":[{"type":"text","text":"` + long + `"}]}`
	srv, p := serve(t, `{"responses":[`+answer+`,`+answer+`]}`, anthropic.Config{Timeout: time.Second})
	srv.BreakStream(llmtest.StreamFault{After: 3, Stall: time.Minute})
	c := &llm.Client{Provider: p, Retry: llm.RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }}}
	call, err := c.Send(context.Background(), hi())
	if err != nil {
		t.Fatal(err)
	}
	if call.Attempts != 2 || call.Response.Text() != long {
		t.Fatalf("attempts %d, answer %q", call.Attempts, call.Response.Text())
	}
	srv.SetEventDelay(150 * time.Millisecond) // 13 events: 1.8 s in all, never a second without one
	start := time.Now()
	call, err = c.Send(context.Background(), hi())
	if err != nil || call.Attempts != 1 || call.Response.Text() != long {
		t.Fatalf("a slow stream that never stalls: %v, %+v", err, call)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("the slow stream took %s: not slower than the timeout, so it proves nothing", took)
	}
}

// Cancelling the context (Ctrl-C) stops a stream at once: the error is
// the context's, not retried, and no answer is returned.
func TestACancelStopsAStreamAtOnce(t *testing.T) {
	srv, p := serve(t, `{"responses":[{"content":[{"type":"text","text":"this answer is never finished"}]}]}`, anthropic.Config{})
	srv.BreakStream(llmtest.StreamFault{After: 4, Stall: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := hi()
	req.OnDelta = func(d llm.Delta) {
		if d.Kind == llm.DeltaText {
			cancel() // the first words arrived; the user presses Ctrl-C
		}
	}
	call, err := (&llm.Client{Provider: p}).Send(ctx, req)
	if call != nil || !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrNotInFlight) {
		t.Fatalf("call %v, err %v", call, err)
	}
	if _, ok := llm.AsAPIError(err); ok {
		t.Error("a cancelled stream must not be retried")
	}
}

// A gateway that ignores "stream" and answers whole is read as a whole
// answer, and the Client says so once.
func TestAGatewayThatDoesNotStreamIsReadWhole(t *testing.T) {
	whole := `{"id":"msg_w","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"whole"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, whole)
	}))
	defer gw.Close()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: gw.URL})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	c := &llm.Client{Provider: p, Observe: func(e llm.Event) {
		if e.Kind == llm.EventNote {
			notes = append(notes, e.Note)
		}
	}}
	for range 2 {
		call, err := c.Send(context.Background(), hi())
		if err != nil || call.Response.Text() != "whole" || string(call.Response.Content[0].Raw) != `{"type":"text","text":"whole"}` {
			t.Fatalf("%v %+v", err, call)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "without streaming") {
		t.Errorf("notes %q, want one", notes)
	}
}
