package budget

import (
	"context"
	"math"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
)

// The most a request can cost: a token per byte of the request as sent
// plus the API's framing, all of max_tokens as output, and the input at
// the cache-write price when the request marks a breakpoint (a one-hour
// write at twice the input price).
func TestTheWorstCaseOfARequest(t *testing.T) {
	price := llm.Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.3}
	req := &llm.Request{Model: "claude-sonnet-4-6", MaxTokens: 1000, Messages: []llm.Message{llm.UserText("hello")}}
	wire, _ := llm.MarshalWire(req)
	tokens := len(wire) + framingTokens
	for _, c := range []struct {
		name  string
		cache *llm.CacheControl
		in    float64
	}{{"no breakpoint", nil, 3}, {"a breakpoint", llm.Ephemeral(), 3.75}, {"a one-hour breakpoint", &llm.CacheControl{Type: "ephemeral", TTL: "1h"}, 6}} {
		r := req.Clone()
		r.System = []llm.SystemBlock{{Type: llm.BlockText, Text: "s", CacheControl: c.cache}}
		w, _ := llm.MarshalWire(r)
		usd, n, err := worstCase(r, price)
		want := float64(len(w)+framingTokens)*c.in/1e6 + 1000*15/1e6
		if err != nil || n != len(w)+framingTokens || math.Abs(usd-want) > 1e-12 || n < tokens {
			t.Fatalf("%s: $%v for %d tokens, want $%v: %v", c.name, usd, n, want, err)
		}
	}
}

// A call under a wake's budget goes through the meter wrapped around the
// provider; the request check must still see the provider's betas (with
// the interleaved-thinking beta a thinking budget may exceed max_tokens).
func TestTheBudgetMeterKeepsTheProvidersBetas(t *testing.T) {
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: "http://127.0.0.1:1", Betas: []string{llm.BetaInterleavedThinking}})
	if err != nil {
		t.Fatal(err)
	}
	c := Meter(With(context.Background(), New(1, "a test cap", nil, nil)), &llm.Client{Provider: p})
	if _, metered := c.Provider.(meteredProvider); !metered {
		t.Fatalf("the client under a budget is not metered: %T", c.Provider)
	}
	if !llm.HasBeta(c.Betas(), llm.BetaInterleavedThinking) {
		t.Errorf("betas under the meter: %q", c.Betas())
	}
}
