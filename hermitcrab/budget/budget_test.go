package budget

import (
	"context"
	"encoding/base64"
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

// An image costs about width × height / 750 tokens, whatever its bytes: a
// 2,000-pixel square WebP of one colour is a few dozen bytes, and its
// tokens are counted from its size.
func TestTheWorstCaseCountsAnImageByItsPixels(t *testing.T) {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00")
	const side = 1999 // the header holds the side less one
	b = append(b, side&0xff, side>>8, 0, side&0xff, side>>8, 0)
	img := llm.ContentBlock{Type: llm.BlockImage, Source: &llm.ImageSource{Type: "base64", MediaType: "image/webp", Data: base64.StdEncoding.EncodeToString(b)}}
	req := &llm.Request{Model: "claude-sonnet-4-6", MaxTokens: 1, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.ContentBlock{
		llm.ToolResultBlock("toolu_1", llm.ToolResultContent{Blocks: []llm.ContentBlock{img}}, false)}}}}
	price, _ := llm.DefaultPriceTable().Lookup(req.Model)
	if _, n, err := worstCase(req, price); err != nil || n < 2000*2000/750 {
		t.Errorf("%d input tokens counted (%v), want at least %d", n, err, 2000*2000/750)
	}
}
