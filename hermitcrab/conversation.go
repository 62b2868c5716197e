package hermitcrab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
)

// Conversation returns a saved conversation; an unknown id is an empty one.
func (k *Kernel) Conversation(ctx context.Context, id string) ([]llm.Message, error) {
	data, err := k.store.Conversation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var msgs []llm.Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		return nil, fmt.Errorf("conversation %q is damaged (%w); start a new one", id, err)
	}
	return msgs, nil
}

// SaveConversation stores a conversation under id.
func (k *Kernel) SaveConversation(ctx context.Context, id string, msgs []llm.Message) error {
	data, err := llm.MarshalWire(msgs)
	if err != nil {
		return err
	}
	return k.store.SaveConversation(ctx, id, data)
}

// Say adds the person's text to the saved conversation id, runs callLLM on
// it and saves the conversation with the reply and its tool turns. A failed
// call saves nothing, so the person can simply say it again.
func (k *Kernel) Say(ctx context.Context, id, text string, opts CallOptions) (*CallResult, error) {
	msgs, err := k.Conversation(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs = continuable(append(msgs, llm.UserText(text)))
	res, err := k.Call(ctx, msgs, opts)
	if err != nil {
		return res, err
	}
	// The call saw a trimmed window; the saved conversation keeps it all.
	return res, k.SaveConversation(ctx, id, append(msgs, res.Added...))
}

// continuable makes a conversation one the API takes, the way a person
// continuing it means it: consecutive turns of one role become one turn
// (joinTurns), so a line typed after a tool loop that stopped at its limit
// joins the pending tool results; and a tool_use left unanswered (a turn
// cut off by max_tokens) is answered with an error result saying it did
// not run. The input is not changed.
func continuable(msgs []llm.Message) []llm.Message {
	out := joinTurns(msgs)
	for i := 0; i+1 < len(out); i++ {
		if out[i].Role != llm.RoleAssistant || out[i+1].Role != llm.RoleUser {
			continue
		}
		answered := map[string]bool{}
		for _, b := range out[i+1].Content {
			if b.Type == llm.BlockToolResult {
				answered[b.ToolUseID] = true
			}
		}
		var missing []llm.ContentBlock
		for _, b := range out[i].Content {
			if b.Type == llm.BlockToolUse && !answered[b.ID] {
				missing = append(missing, llm.ToolResultBlock(b.ID, llm.ToolResultContent{Text: "not run: the turn ended before this tool could run"}, true))
			}
		}
		if len(missing) > 0 {
			next := out[i+1]
			next.Content = append(missing, next.Content...)
			out[i+1] = next
		}
	}
	return out
}

// joinTurns returns msgs with each run of consecutive messages of one role
// made one message. Anthropic's API combines such a run itself, but
// OpenAI-compatible servers (vLLM's chat templates, llama.cpp) may refuse
// two user turns in a row, so the kernel never sends them. The input is
// not changed.
func joinTurns(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		n := len(out)
		if n == 0 || out[n-1].Role != m.Role {
			out = append(out, m)
			continue
		}
		out[n-1] = llm.Message{Role: m.Role, Content: append(slices.Clone(out[n-1].Content), m.Content...)}
	}
	return out
}
