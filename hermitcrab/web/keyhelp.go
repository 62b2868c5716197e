package web

import (
	"context"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/llm"
)

// A boot reads its system prompt in each of its calls (a few: it reads
// blocks, then writes the shell) and writes a shell of a few thousand
// tokens; bootCalls and bootOutputTokens are those figures for the key
// form's estimate of what a boot costs.
const (
	bootCalls        = 3
	bootOutputTokens = 4000
)

// bootCost estimates what one boot costs with model, from the built-in
// price table and the size of the deep tier's compiled prompt, for a
// person deciding whether to give a key. ok is false when the table has
// no price for the model or the prompt does not compile.
func (s *Server) bootCost(ctx context.Context, model string) (map[string]any, bool) {
	p, err := s.kernel.Conversation().Prompt(ctx, prompt.Deep)
	if err != nil {
		return nil, false
	}
	table := llm.DefaultPriceTable()
	price, ok := table.Lookup(model)
	if !ok {
		return nil, false
	}
	usd, _ := table.Cost(model, llm.Usage{InputTokens: bootCalls * p.Tokens, OutputTokens: bootOutputTokens})
	return map[string]any{"usd": usd, "prompt_tokens": p.Tokens, "calls": bootCalls, "output_tokens": bootOutputTokens,
		"input_per_mtok": price.Input, "output_per_mtok": price.Output}, true
}
