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

// answer is a chat completion's first choice, read from a whole
// completion or assembled from a stream's chunks.
type answer struct {
	id, model        string
	content, refusal string
	calls            []toolCall
	finish           string
	usage            oai.CompletionUsage
}

type toolCall struct{ id, typ, name, args string }

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
	a := answer{id: c.ID, model: c.Model, content: choice.Message.Content, refusal: choice.Message.Refusal,
		finish: choice.FinishReason, usage: c.Usage}
	for _, call := range choice.Message.ToolCalls {
		a.calls = append(a.calls, toolCall{call.ID, call.Type, call.Function.Name, call.Function.Arguments})
	}
	return a.response(requestModel)
}

// response maps the answer to a Messages response.
func (a answer) response(requestModel string) (*llm.Response, error) {
	resp := &llm.Response{
		ID:      a.id,
		Type:    "message",
		Role:    llm.RoleAssistant,
		Model:   a.model,
		Content: []llm.ContentBlock{},
		Usage:   usage(a.usage),
	}
	if resp.Model == "" {
		resp.Model = requestModel
	}

	text, refused := a.content, false
	if text == "" && a.refusal != "" {
		text, refused = a.refusal, true
	}
	if text != "" {
		resp.Content = append(resp.Content, llm.TextBlock(text))
	}
	for k, call := range a.calls {
		if call.typ != "" && call.typ != "function" {
			return nil, fmt.Errorf("llm/openai: chat completion %q: tool call %d has type %q; only function tools are sent, so only function calls can be answered", a.id, k, call.typ)
		}
		resp.Content = append(resp.Content, toolUse(call.id, call.name, call.args))
	}
	resp.StopReason = stopReason(a.finish, len(a.calls) > 0, refused)
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
