package conversation_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/shell"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/pscale"
)

// BenchmarkCompile compiles each tier's system prompt from the default shell
// in memory and reports its size (clean-build targets: boot ≤ 1,800 tokens,
// conversational ≤ 500). Target: under 100 µs per compile.
func BenchmarkCompile(b *testing.B) {
	blocks, err := shell.Default()
	if err != nil {
		b.Fatal(err)
	}
	src := prompt.Blocks(blocks)
	for tier := prompt.Light; tier <= prompt.Deep; tier++ {
		b.Run(fmt.Sprintf("tier%d", tier), func(b *testing.B) {
			var c prompt.Compiled
			b.ReportAllocs()
			for b.Loop() {
				if c, err = prompt.Compile(src, tier); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len([]rune(c.Text))), "prompt_chars")
			b.ReportMetric(float64(c.Tokens()), "prompt_tokens")
		})
	}
}

// resetHistory empties the history block, so that every call of a
// benchmark does the same work (no compressions).
func resetHistory(ctx context.Context, k *kernel.Kernel) {
	k.Blocks().Edit(ctx, "history", func(h *pscale.Block) error {
		h.Place, h.Tree.Children[0].Children = 1, [10]*pscale.Node{}
		return nil
	})
}

// wireTokens estimates the tokens of v as sent: its JSON, characters / 4.
func wireTokens(v any) int {
	data, _ := llm.MarshalWire(v)
	return prompt.EstimateTokens(string(data))
}

// BenchmarkBootTools makes the boot call (deep tier, BOOT) on the default
// shell and reports the tool definitions it sends, in estimated tokens
// (characters of their JSON / 4): the boot set, with allowed_callers for
// programmatic tool calling and the cache breakpoint, against the
// clean-build spec's budget of about 500 tokens of tools. all_tool_tokens
// is every tool the kernel has, for comparison.
func BenchmarkBootTools(b *testing.B) {
	k, p := benchKernel(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := k.Conversation().Call(ctx, []llm.Message{llm.UserText("BOOT")}, conversation.CallOptions{Tier: prompt.Deep}); err != nil {
			b.Fatal(err)
		}
		resetHistory(ctx, k)
	}
	var all []llm.Tool
	for _, h := range k.Conversation().Catalogue() {
		all = append(all, h.Tool)
	}
	b.ReportMetric(float64(wireTokens(p.last.Tools)), "boot_tool_tokens")
	b.ReportMetric(float64(len(p.last.Tools)), "boot_tools")
	b.ReportMetric(float64(wireTokens(append(all, serverTools...))), "all_tool_tokens")
}

// benchKernel opens a ready kernel on the default shell whose LLM answers
// at once.
func benchKernel(b testing.TB) (*kernel.Kernel, *instant) {
	p := &instant{}
	k, err := Open(b.TempDir(), kernel.Options{Client: &llm.Client{Provider: p}, ServerTools: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	if err := k.Ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	return k, p
}

// instant answers every request at once with the same reply.
type instant struct{ last *llm.Request }

func (p *instant) Messages(_ context.Context, req *llm.Request) (*llm.Response, error) {
	p.last = req.Clone() // the loop appends to its request after the call
	return &llm.Response{Model: req.Model, StopReason: llm.StopEndTurn, Content: []llm.ContentBlock{llm.TextBlock("Understood.")}}, nil
}

// BenchmarkConversationalCall makes a present-tier call on the default
// shell with a full 20-message window of ordinary chat (user turns of about
// 200 characters, replies of about 600) and reports the estimated input
// tokens of the request: system prompt, tools and messages (clean-build
// target: ≤ 5,000). The time per op is the kernel's own work per call,
// SQLite reads and the history write included.
func BenchmarkConversationalCall(b *testing.B) {
	k, p := benchKernel(b)
	ctx := context.Background()
	var msgs []llm.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, llm.UserText(strings.Repeat("What should we try next for the garden plan? ", 4)),
			llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.TextBlock(strings.Repeat("Let us plant basil near the tomatoes and keep notes in stash. ", 10))}})
	}
	// 21 messages: the window of 20 trims the first (and the reply after it,
	// so the kept part starts with the person).
	msgs = append(msgs, llm.UserText("And what about watering?"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Conversation().Call(ctx, msgs, conversation.CallOptions{}); err != nil {
			b.Fatal(err)
		}
		resetHistory(ctx, k)
	}
	sent := p.last
	system, tools, messages := prompt.EstimateTokens(sent.System[0].Text), wireTokens(sent.Tools), wireTokens(sent.Messages)
	b.ReportMetric(float64(system), "system_tokens")
	b.ReportMetric(float64(tools), "tools_tokens")
	b.ReportMetric(float64(messages), "messages_tokens")
	b.ReportMetric(float64(system+tools+messages), "input_tokens")
	b.ReportMetric(float64(len(sent.Messages)), "messages")
}

// usageByModel wraps a provider and sums the usage of its answers to one
// model.
type usageByModel struct {
	inner llm.Provider
	model string
	mu    sync.Mutex
	usage llm.Usage
	calls int
}

func (p *usageByModel) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := p.inner.Messages(ctx, req)
	if err == nil && req.Model == p.model {
		p.mu.Lock()
		p.usage, p.calls = p.usage.Add(resp.Usage), p.calls+1
		p.mu.Unlock()
	}
	return resp, err
}

// BenchmarkChatCache runs a 30-exchange chat at the present tier on the
// default shell (cachedChat) and reports, over the chat's requests, the
// share of input read from the cache (target ≥ 75%) and the effective
// input tokens per request, uncached + 1.25 × written + 0.1 × read (target
// ≤ 40% of the figure before the window kept its prefix). Sizes and shares
// do not vary with the machine's load; TestChatReadsFromTheCache pins them.
func BenchmarkChatCache(b *testing.B) {
	var rec *usageByModel
	for b.Loop() {
		rec = cachedChat(b, 30)
	}
	u := rec.usage
	b.ReportMetric(100*u.CacheReadShare(), "read_share_%")
	b.ReportMetric(u.EffectiveInputTokens()/float64(rec.calls), "effective_input_tokens/request")
	b.ReportMetric(float64(u.PromptTokens())/float64(rec.calls), "input_tokens/request")
	b.ReportMetric(float64(rec.calls), "requests")
}

// cachedChat says n lines of chatScript's chat (replies of about 600
// characters, a tool call every third exchange) on a kernel of the default
// shell, against the scripted provider's simulation of the API's prompt
// cache (the one llmtest serves: byte-identical prefixes, breakpoints,
// lookback, the model's minimum, 2,048 tokens for claude-sonnet-4-6), and
// returns the usage of its present-tier requests.
func cachedChat(tb testing.TB, n int) *usageByModel {
	tb.Helper()
	p, err := script.Parse([]byte(chatScript(n)))
	if err != nil {
		tb.Fatal(err)
	}
	rec := &usageByModel{inner: script.New(p), model: "claude-sonnet-4-6"}
	k, err := Open(tb.TempDir(), kernel.Options{Client: &llm.Client{Provider: rec}, ServerTools: true})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := k.Ready(ctx); err != nil {
		tb.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := k.Conversation().Say(ctx, "c", chatLine(i), conversation.CallOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := k.Close(); err != nil {
		tb.Fatal(err)
	}
	return rec
}
