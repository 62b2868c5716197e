package hermitcrab

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
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

// After failed wakes in a row a trigger waits a minute, two, four, …, at
// most an hour from the last failure.
func TestRetryPauseDoublesUpToAnHour(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{t: wakeT0}
	k := openAt(t, t.TempDir(), respondAll(), clock)
	writeTriggers(t, k, "every 1h tier 1: x")
	set, _ := k.Triggers(ctx)
	tr := set.Triggers[0]
	last := wakeT0
	for n := 1; n <= 8; n++ {
		w, ok, err := k.store.ClaimWake(ctx, store.WakeClaim{Trigger: tr.Key(), Due: last.String(), At: last, Day: k.day(last), Tier: 1})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := k.store.FinishWake(ctx, w.ID, store.WakeEnd{Status: store.WakeFailed, Reply: "down", At: last}); err != nil {
			t.Fatal(err)
		}
		wait := min(time.Minute<<(n-1), time.Hour)
		for _, c := range []struct {
			at    time.Time
			pause bool
		}{{last.Add(wait - time.Second), true}, {last.Add(wait), false}} {
			if pause, err := k.retryPause(ctx, tr, c.at); err != nil || pause != c.pause {
				t.Fatalf("after %d failures, %s after the last: pause %v, want %v (%v)", n, c.at.Sub(last), pause, c.pause, err)
			}
		}
		last = last.Add(2 * time.Hour)
	}
}
