package conversation

import (
	"context"
	"fmt"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/budget"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
)

// llmClient is the client for the requests of a call at tier (0 for the
// page's own request, props.callWithToolLoop) made under ctx: the
// configured one, whose every answer is logged as one line and, outside a
// wake, added to the store's tally of usage (a wake keeps its own, through
// its budget), metered by a wake's budget when ctx carries one. nil when
// no client is configured.
func (c *Caller) llmClient(ctx context.Context, tier int) *llm.Client {
	cl := c.Client()
	if cl == nil {
		return nil
	}
	keep := !budget.Carried(ctx)
	rec := *cl
	observe := cl.Observe
	rec.Observe = func(e llm.Event) {
		if observe != nil {
			observe(e)
		}
		if e.Kind == llm.EventResponse && e.Call != nil {
			c.recordUsage(ctx, keep, tier, e.Call, cl.Scripted)
		}
	}
	return budget.Meter(ctx, &rec)
}

// recordUsage logs an answered request, "tier 2 claude-sonnet-4-6: 2300
// tokens in, 410 out, cost $0.0123, 84% of input from cache, 2.1s", and
// with keep adds it to the day's usage, to its scripted part when a
// scripted provider answered.
func (c *Caller) recordUsage(ctx context.Context, keep bool, tier int, call *llm.Call, scripted bool) {
	u := call.Usage
	who := fmt.Sprintf("tier %d", tier)
	if tier == 0 {
		who = "the page's request" // props.callWithToolLoop
	}
	c.log.Info(fmt.Sprintf("%s %s: %d tokens in, %d out, %s, %.1fs", who, call.Model, u.PromptTokens(), u.OutputTokens,
		llm.CostLine(call.CostUSD, u), call.Latency.Seconds()))
	if !keep {
		return
	}
	// Counted even when the call's context ends now: the answer was paid for.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.store.AddUsage(sctx, store.UsageCall, time.Now().Format(time.DateOnly), 1, u, call.CostUSD, scripted); err != nil {
		c.log.Warn("keeping a call's usage", "err", err)
	}
}

// Usage is what the calls of a kind (store.UsageWake, store.UsageCall, ""
// for all) cost over the last days days, today included.
func (c *Caller) Usage(ctx context.Context, kind string, days int) (store.Usage, error) {
	from := time.Now().AddDate(0, 0, 1-days).Format(time.DateOnly)
	return c.store.UsageSince(ctx, kind, from)
}

// PageClient is the client for a request the page makes itself
// (props.callAPI through a provider other than Anthropic): its answer is
// logged and added to the day's usage like every call's.
func (c *Caller) PageClient(ctx context.Context) *llm.Client { return c.llmClient(ctx, 0) }

// RecordPageCall keeps a props.callAPI request the Anthropic API answered
// directly (the passthrough, which bypasses the client): logged and added
// to the day's usage, priced with the client's table.
func (c *Caller) RecordPageCall(ctx context.Context, model string, u llm.Usage, latency time.Duration) {
	table := llm.DefaultPriceTable()
	if cl := c.Client(); cl != nil && cl.Prices != nil {
		table = cl.Prices
	}
	cost, _ := table.Cost(model, u) // an unknown model counts nothing: the log line says $0
	// The Anthropic API answered: a real call, whatever the client is.
	c.recordUsage(ctx, !budget.Carried(ctx), 0, &llm.Call{Model: model, Usage: u, CostUSD: cost, Latency: latency}, false)
}
