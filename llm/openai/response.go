package openai

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"

	"github.com/llmkernels/kernels/llm"
)

// toResponse maps a chat completion's first choice to a Messages response.
func toResponse(c *oai.ChatCompletion, requestModel string) (*llm.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		id := ""
		if c != nil {
			id = c.ID
		}
		return nil, fmt.Errorf("llm/openai: chat completion %q has no choices", id)
	}
	choice := c.Choices[0]
	msg := choice.Message
	resp := &llm.Response{
		ID:      c.ID,
		Type:    "message",
		Role:    llm.RoleAssistant,
		Model:   c.Model,
		Content: []llm.ContentBlock{},
		Usage:   usage(c.Usage),
	}
	if resp.Model == "" {
		resp.Model = requestModel
	}

	text, refused := msg.Content, false
	if text == "" && msg.Refusal != "" {
		text, refused = msg.Refusal, true
	}
	if text != "" {
		resp.Content = append(resp.Content, llm.TextBlock(text))
	}
	for k, call := range msg.ToolCalls {
		if call.Type != "" && call.Type != "function" {
			return nil, fmt.Errorf("llm/openai: chat completion %q: tool call %d has type %q; only function tools are sent, so only function calls can be answered", c.ID, k, call.Type)
		}
		resp.Content = append(resp.Content, toolUse(call.ID, call.Function.Name, call.Function.Arguments))
	}
	resp.StopReason = stopReason(choice.FinishReason, len(msg.ToolCalls) > 0, refused)
	return resp, nil
}

// toolUse maps a function call to a tool_use block. Arguments that are a
// JSON object are the input as written; empty arguments are {} (a call
// without parameters). Anything else (cut-off or malformed JSON, or JSON
// that is not an object) becomes an input that is a JSON string holding
// the arguments verbatim: a handler decoding it into an object fails and
// reports that to the model, and the string goes back to the server
// unchanged as the call's arguments. A missing call id (some local
// servers omit it) is replaced by a fresh "call_…" id so the tool_result
// can answer it.
func toolUse(id, name, args string) llm.ContentBlock {
	if id == "" {
		id = newCallID()
	}
	b := llm.ContentBlock{Type: llm.BlockToolUse, ID: id, Name: name}
	trimmed := bytes.TrimSpace([]byte(args))
	var obj map[string]json.RawMessage
	switch {
	case len(trimmed) == 0:
		b.Input = json.RawMessage("{}")
	case trimmed[0] == '{' && json.Unmarshal(trimmed, &obj) == nil:
		b.Input = json.RawMessage(trimmed)
	default:
		quoted, _ := json.Marshal(args) // a Go string always marshals
		b.Input = quoted
	}
	return b
}

func newCallID() string {
	var buf [12]byte
	_, _ = rand.Read(buf[:]) // crypto/rand.Read never fails
	return "call_" + hex.EncodeToString(buf[:])
}

// stopReason maps finish_reason. Some local servers answer "stop" (or
// nothing) when the model called tools; the calls decide then.
func stopReason(finish string, toolCalls, refused bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	}
	switch {
	case toolCalls:
		return llm.StopToolUse
	case refused:
		return llm.StopRefusal
	}
	return llm.StopEndTurn
}

// usage maps token counts: cached prompt tokens are cache reads, the rest
// of the prompt is input.
func usage(u oai.CompletionUsage) llm.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	input := u.PromptTokens - cached
	if input < 0 {
		input = 0
	}
	return llm.Usage{
		InputTokens:          int(input),
		OutputTokens:         int(u.CompletionTokens),
		CacheReadInputTokens: int(cached),
	}
}
