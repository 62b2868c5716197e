package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
)

// Duration is d rounded for a person to read: 270ms, 2.5s, 1m30s.
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// Problem is an error from the model's API as a person reads it, without
// the runtime's package prefix: "HTTP 529 overloaded_error: Overloaded".
func Problem(err error) string {
	if e, ok := llm.AsAPIError(err); ok {
		where := fmt.Sprintf("HTTP %d", e.Status)
		if e.Status == 0 {
			where = "no response"
		}
		return clip.Line(fmt.Sprintf("%s %s: %s", where, e.Type, e.Message), 300)
	}
	return clip.Line(err.Error(), 300)
}

// CallObserver is the observer a command gives its client so that a
// person sees the calls as the output level says: at Normal and above
// every retry with its wait and every move along the fallback chain; at
// Verbose also each answer's model, stop reason, tokens, cost and time.
// What the request sent is said by SentLine, before the call.
func CallObserver(w io.Writer, level Output) func(llm.Event) {
	return func(e llm.Event) {
		if level < Normal {
			return
		}
		switch e.Kind {
		case llm.EventRetry:
			fmt.Fprintf(w, "retrying %s in %s (attempt %d failed: %s)\n", e.Model, Duration(e.Wait), e.Attempt, termtext.Line(Problem(e.Err)))
		case llm.EventFallback:
			fmt.Fprintf(w, "trying %s, the next model of --fallback (%s)\n", e.Model, termtext.Line(Problem(e.Err)))
		case llm.EventResponse:
			if level >= Verbose && e.Call != nil {
				fmt.Fprintln(w, ReceivedLine(e.Call))
			}
		}
	}
}

// SentLine summarises a request: "sent to claude-haiku-4-5: 1 message,
// 0 tools, max 64 tokens".
func SentLine(req *llm.Request) string {
	return fmt.Sprintf("sent to %s: %d message(s), %d tool(s), %d system block(s), max %d tokens",
		termtext.Line(req.Model), len(req.Messages), len(req.Tools), len(req.System), req.MaxTokens)
}

// ReceivedLine summarises an answer: "received from claude-haiku-4-5 in
// 1.2s: end_turn, 12 in (+0 cached), 3 out, cost $0.0001".
func ReceivedLine(c *llm.Call) string {
	u := c.Usage
	return fmt.Sprintf("received from %s in %s after %d attempt(s): %s, %d tokens in (%d written to the cache, %d read from it), %d out, %s",
		termtext.Line(c.Model), Duration(c.Latency), c.Attempts, c.Response.StopReason, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens, llm.CostLine(c.CostUSD, u))
}
