package hermitcrab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	msgs = append(msgs, llm.UserText(text))
	res, err := k.Call(ctx, msgs, opts)
	if err != nil {
		return res, err
	}
	// The call saw a trimmed window; the saved conversation keeps it all.
	return res, k.SaveConversation(ctx, id, append(msgs, res.Added...))
}
