package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
)

// Conversation returns a saved conversation; an unknown id is an empty one.
func (c *Caller) Conversation(ctx context.Context, id string) ([]llm.Message, error) {
	data, err := c.store.Conversation(ctx, id)
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
func (c *Caller) SaveConversation(ctx context.Context, id string, msgs []llm.Message) error {
	data, err := llm.MarshalWire(msgs)
	if err != nil {
		return err
	}
	return c.store.SaveConversation(ctx, id, data)
}

// Say adds the person's text to the saved conversation id, runs callLLM on
// it and saves the conversation with the reply and its tool turns. A failed
// call saves nothing, so the person can simply say it again.
func (c *Caller) Say(ctx context.Context, id, text string, opts CallOptions) (*CallResult, error) {
	msgs, err := c.Conversation(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs = continuable(append(msgs, llm.UserText(text)))
	res, err := c.Call(ctx, msgs, opts)
	if err != nil {
		return res, err
	}
	// The call saw a trimmed window; the saved conversation keeps it all.
	return res, c.SaveConversation(ctx, id, append(msgs, res.Added...))
}

// SayUnattended is Say for a conversation no person watches (the wakes'),
// with two differences: a call that fails after the model answered (a
// deadline, the LLM down) still keeps the turns it made, since no person
// is there to say it again and what was done is done; and the
// conversation is kept to its newest keep messages. A call the model
// never answered saves nothing: what it carried is carried by the next.
func (c *Caller) SayUnattended(ctx context.Context, id, text string, keep int, opts CallOptions) (*CallResult, error) {
	msgs, err := c.Conversation(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs = continuable(append(msgs, llm.UserText(text)))
	res, err := c.Call(ctx, msgs, opts)
	if res == nil || len(res.Added) == 0 {
		return res, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if serr := c.SaveConversation(sctx, id, keepNewest(append(msgs, res.Added...), keep)); serr != nil && err == nil {
		err = serr
	}
	return res, err
}

// keepNewest drops a conversation's oldest messages so at most max are
// left, cutting where a turn starts (never between a tool_use and its
// result); with no such place in the newest max, it keeps them all.
func keepNewest(msgs []llm.Message, max int) []llm.Message {
	for start := len(msgs) - max; start > 0 && start < len(msgs); start++ {
		if startsTurn(msgs, start) {
			return msgs[start:]
		}
	}
	return msgs
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
