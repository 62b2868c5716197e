package hermitcrab

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/llmkernels/kernels/llm"
)

// A wake's budget: what the day's cost cap leaves it. It rides on the
// context of the wake's call, so every LLM request made under it is
// metered and stopped by it — the tool loop's own requests, and the ones
// its tools make (call_llm's delegations, compress, auto-save's
// compression), which the tool loop's count of its own cost does not see.
//
//   - A request is refused before it is sent once the budget is spent, or
//     when the most one request to that model cost in this wake would pass
//     what is left (the next request carries at least the last one's
//     context). The first request to a model is judged at the claim, by
//     what recent wakes at the tier cost.
//   - A model the price table does not know is counted at the table's
//     highest price of each kind (input, output, cache writes, cache
//     reads), so the cap holds whatever model the wake block names; the
//     wake says which models were so counted.
//   - What is spent is recorded after every response (onSpend), so a
//     process killed during a wake leaves its spending counted.
type budget struct {
	limit   float64
	prices  llm.PriceTable
	ceiling llm.Price
	onSpend func(total float64)

	mu       sync.Mutex
	spent    float64
	most     map[string]float64 // the most one request to each model cost
	unpriced map[string]bool
}

// errBudget is the error of a request the wake's budget refuses.
var errBudget = errors.New("the wake's budget for today is spent (the daily cap on wakes' cost)")

func newBudget(limit float64, prices llm.PriceTable, onSpend func(float64)) *budget {
	if prices == nil {
		prices = llm.DefaultPrices
	}
	b := &budget{limit: limit, prices: prices, onSpend: onSpend, most: map[string]float64{}, unpriced: map[string]bool{}}
	for _, p := range prices {
		b.ceiling.Input = max(b.ceiling.Input, p.Input)
		b.ceiling.Output = max(b.ceiling.Output, p.Output)
		b.ceiling.CacheWrite = max(b.ceiling.CacheWrite, p.CacheWrite)
		b.ceiling.CacheRead = max(b.ceiling.CacheRead, p.CacheRead)
	}
	return b
}

// allow refuses a request to model that the budget cannot pay for.
func (b *budget) allow(model string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.spent >= b.limit:
		return fmt.Errorf("%w: $%.4f spent of the $%.4f it had", errBudget, b.spent, b.limit)
	case b.spent+b.most[model] > b.limit:
		return fmt.Errorf("%w: $%.4f spent of the $%.4f it had, and a request to %s has cost $%.4f", errBudget, b.spent, b.limit, model, b.most[model])
	}
	return nil
}

// spend counts a response's usage.
func (b *budget) spend(model string, u llm.Usage) {
	cost, ok := b.prices.Cost(model, u)
	b.mu.Lock()
	if !ok {
		cost, _ = llm.PriceTable{"": b.ceiling}.Cost(model, u)
		b.unpriced[model] = true
	}
	b.spent += cost
	b.most[model] = max(b.most[model], cost)
	total := b.spent
	b.mu.Unlock()
	if b.onSpend != nil {
		b.onSpend(total)
	}
}

// Spent is what the wake spent so far.
func (b *budget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Note says which models were counted at the highest prices, "" when none.
func (b *budget) Note() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.unpriced) == 0 {
		return ""
	}
	models := make([]string, 0, len(b.unpriced))
	for m := range b.unpriced {
		models = append(models, m)
	}
	sort.Strings(models)
	return fmt.Sprintf("%s not in the price table: counted at its highest prices ($%g input, $%g output per million tokens) against the daily cap; give the real prices in a --prices file",
		strings.Join(models, ", "), b.ceiling.Input, b.ceiling.Output)
}

type budgetKey struct{}

// withBudget makes every LLM request made under ctx count against b.
func withBudget(ctx context.Context, b *budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// clientFor is the LLM client for a request made under ctx: the
// kernel's, metered by the budget ctx carries, if any. nil without a
// client.
func (k *Kernel) clientFor(ctx context.Context) *llm.Client {
	c := k.Client()
	b, _ := ctx.Value(budgetKey{}).(*budget)
	if c == nil || b == nil {
		return c
	}
	metered := *c
	metered.Provider = meteredProvider{inner: c.Provider, b: b}
	return &metered
}

// meteredProvider sends a request only when the budget allows it, and
// counts what it cost.
type meteredProvider struct {
	inner llm.Provider
	b     *budget
}

// Betas are the inner provider's (llm.ProviderBetas).
func (p meteredProvider) Betas() []string { return llm.ProviderBetas(p.inner) }

func (p meteredProvider) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := p.b.allow(req.Model); err != nil {
		return nil, err
	}
	resp, err := p.inner.Messages(ctx, req)
	if err == nil {
		p.b.spend(req.Model, resp.Usage)
	}
	return resp, err
}
