package conversation

import (
	"fmt"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
)

// Progress levels of a described event.
const (
	LevelInfo    = "info"
	LevelSuccess = "success"
	LevelError   = "error"
)

// Describe turns an LLM or tool event into one progress line, as the
// original boot screen showed them; ok is false for events not worth a line.
func Describe(e llm.Event) (line, level string, ok bool) {
	switch e.Kind {
	case llm.EventResponse:
		u := e.Call.Usage
		return fmt.Sprintf("· %s: %d tokens in, %d out, %s, %s", e.Model, u.PromptTokens(), u.OutputTokens,
			llm.CostLine(e.Call.CostUSD, u), e.Call.Latency.Round(time.Millisecond)), LevelInfo, true
	case llm.EventToolCall:
		return fmt.Sprintf("→ %s %s", e.Tool, clip.Line(string(e.Input), 160)), LevelInfo, true
	case llm.EventToolResult:
		if e.IsError {
			return fmt.Sprintf("← error: %s %s", e.Tool, clip.Line(e.Result, 160)), LevelError, true
		}
		return fmt.Sprintf("← %s %s", e.Tool, clip.Line(e.Result, 160)), LevelSuccess, true
	case llm.EventRetry:
		return fmt.Sprintf("· retrying %s in %s: %v", e.Model, e.Wait.Round(time.Millisecond), e.Err), LevelError, true
	case llm.EventFallback:
		return fmt.Sprintf("· falling back to %s: %v", e.Model, e.Err), LevelError, true
	case llm.EventNote:
		return "· " + clip.Line(e.Note, 300), LevelInfo, true
	}
	return "", "", false
}
