package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
)

// sse replies with chat completion chunks as server-sent events, then
// [DONE] unless the list ends with "" (a stream cut off).
func sse(chunks ...string) func(http.ResponseWriter, chatRequest) {
	return func(w http.ResponseWriter, _ chatRequest) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			if c == "" {
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

// A streamed answer arrives in pieces through OnDelta and maps to the
// same response a whole one does: text, then each tool call with its
// arguments, the finish reason, and the usage of the last chunk.
func TestStreamedAnswerArrivesInPieces(t *testing.T) {
	f := newFake(t, sse(
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"Reading "}`, ""),
		chunk(`{"content":"both."}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39,"prompt_tokens_details":{"cached_tokens":20}}}`,
	))
	req := simpleRequest()
	req.Tools = []llm.Tool{readFileTool}
	var text, args strings.Builder
	var kinds []string
	req.OnDelta = func(d llm.Delta) {
		kinds = append(kinds, d.Kind)
		switch d.Kind {
		case llm.DeltaText:
			text.WriteString(d.Text)
		case llm.DeltaToolInput:
			args.WriteString(d.Text)
		}
	}
	resp, err := f.provider(t).Messages(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	uses := resp.ToolUses()
	if resp.Text() != "Reading both." || len(uses) != 2 || string(uses[0].Input) != `{"path":"a.txt"}` || uses[1].ID != "call_b" ||
		resp.StopReason != llm.StopToolUse || resp.Usage != (llm.Usage{InputTokens: 10, CacheReadInputTokens: 20, OutputTokens: 9}) {
		t.Fatalf("response %+v", resp)
	}
	if text.String() != resp.Text() || args.String() != `{"path":"a.txt"}{}` {
		t.Errorf("pieces: text %q, arguments %q", text.String(), args.String())
	}
	if want := "block_start text text block_start tool_input tool_input block_start tool_input block_stop block_stop block_stop"; strings.Join(kinds, " ") != want {
		t.Errorf("deltas %v\nwant   %s", kinds, want)
	}
	raw := f.last().Raw
	if string(raw["stream"]) != "true" || !strings.Contains(string(raw["stream_options"]), `"include_usage":true`) {
		t.Errorf("stream %s, stream_options %s", raw["stream"], raw["stream_options"])
	}
}

// A server that ignores "stream" and answers whole is read whole; it is
// said once, later requests go without streaming, and the pieces still
// reach OnDelta.
func TestAServerThatAnswersWholeGetsPlainRequests(t *testing.T) {
	f := newFake(t, answer(200, completion("stop", "whole answer")))
	p := f.provider(t)
	var notes []string
	c := &llm.Client{Provider: p, Observe: func(e llm.Event) {
		if e.Kind == llm.EventNote {
			notes = append(notes, e.Note)
		}
	}}
	for i := range 2 {
		var text strings.Builder
		req := simpleRequest()
		req.OnDelta = func(d llm.Delta) { text.WriteString(d.Text) }
		call, err := c.Send(context.Background(), req)
		if err != nil || call.Response.Text() != "whole answer" || text.String() != "whole answer" {
			t.Fatalf("request %d: %v, %q, pieces %q", i+1, err, call.Response.Text(), text.String())
		}
		if _, streamed := f.last().Raw["stream"]; streamed != (i == 0) {
			t.Errorf("request %d streamed: %v", i+1, streamed)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "does not stream") {
		t.Errorf("notes %q, want one", notes)
	}
}

// A server that refuses a streaming request, naming streaming, gets the
// same request plain at once.
func TestAServerThatRefusesStreamingGetsThePlainRequest(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, req chatRequest) {
		if req.Stream {
			answer(400, `{"error":{"message":"stream is not supported by this server","type":"invalid_request_error"}}`)(w, req)
			return
		}
		answer(200, completion("stop", "plain"))(w, req)
	})
	resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
	if err != nil || resp.Text() != "plain" || f.count() != 2 || len(resp.Notes) != 1 {
		t.Fatalf("%v, %+v, %d requests", err, resp, f.count())
	}
}

// A stream cut off before its finish reason is a retryable connection
// error, never a partial answer; another 400 is the server's error.
func TestAStreamCutOffIsAConnectionError(t *testing.T) {
	f := newFake(t, sse(chunk(`{"content":"Half an"}`, ""), ""))
	resp, err := f.provider(t).Messages(context.Background(), simpleRequest())
	var apiErr *llm.APIError
	if resp != nil || !errors.As(err, &apiErr) || apiErr.Type != "connection_error" || !apiErr.Retryable() {
		t.Fatalf("%+v, %v", resp, err)
	}
	f = newFake(t, sse(chunk(`{"content":"Half an"}`, "")))
	if _, err := f.provider(t).Messages(context.Background(), simpleRequest()); !errors.Is(err, llm.ErrStreamCut) {
		t.Fatalf("a stream ended without a finish reason: %v", err)
	}
	f = newFake(t, answer(400, `{"error":{"message":"bad model","type":"invalid_request_error"}}`))
	if _, err := f.provider(t).Messages(context.Background(), simpleRequest()); !errors.As(err, &apiErr) || apiErr.Status != 400 || f.count() != 1 {
		t.Fatalf("a 400 that is not about streaming: %v after %d requests", err, f.count())
	}
}
