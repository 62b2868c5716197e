package conversation_test

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
)

// Every answer is kept in the store's tally of usage, priced with cache
// writes at 1.25× and reads at 0.1× an input token, and logged as one line
// with the tier, the tokens, the cost and the share read from the cache.
func TestCallsKeepAndLogTheirUsageWithCachePrices(t *testing.T) {
	var log bytes.Buffer
	k, _ := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"Hello."}],
		"usage":{"input_tokens":1000,"output_tokens":100,"cache_creation_input_tokens":2000,"cache_read_input_tokens":7000}}]}`,
		func(o *kernel.Options) { o.Log = slog.New(slog.NewTextHandler(&log, nil)) })
	ctx := context.Background()
	if _, err := k.Conversation().Say(ctx, "c", "hi", conversation.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := k.Conversation().Usage(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{InputTokens: 1000, OutputTokens: 100, CacheCreationInputTokens: 2000, CacheReadInputTokens: 7000}
	// claude-sonnet-4-6 at $3 input, $15 output per million: writes $3.75, reads $0.30.
	cost := (1000*3 + 100*15 + 2000*3.75 + 7000*0.3) / 1e6
	if u.Calls != 1 || u.Tokens != want || math.Abs(u.CostUSD-cost) > 1e-9 {
		t.Fatalf("usage kept: %+v, want %+v at $%.6f", u, want, cost)
	}
	if wakes, _ := k.Conversation().Usage(ctx, store.UsageWake, 1); wakes.Calls != 0 {
		t.Fatalf("a call made in chat counted as a wake's: %+v", wakes)
	}
	if line := log.String(); !strings.Contains(line, "tier 2 claude-sonnet-4-6: 10000 tokens in, 100 out, cost $0.0141, 70% of input from cache") {
		t.Fatalf("the log line: %s", line)
	}
}
