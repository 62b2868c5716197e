// Package budget bounds what a wake spends: a Budget rides on the context
// of the wake's call (With), and every LLM request made under it goes
// through a client metered by it (Meter).
package budget

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/llmkernels/kernels/llm"
)

// Budget is a wake's budget: the least that any cap on its cost leaves it (the
// day's cost cap, and for an inbox trigger its share of that cap). It
// rides on the context of the wake's call, so every LLM request made under
// it is metered and bounded by it — the tool loop's own requests, and the
// ones its tools make (call_llm's delegations, compress, auto-save's
// compression), which the tool loop's count of its own cost does not see.
//
//   - Every request is reserved before it is sent at the most it can cost
//     (worstCase): a token for every byte of the request as sent, and all
//     of max_tokens as output, at the model's prices. One that does not fit
//     in what is left (the budget less what was spent and what requests
//     under way hold) is refused, and the refusal is kept for the wake's
//     record. Once answered, the request counts at what it cost.
//   - A model the price table does not know is counted at the table's
//     highest price of each kind (input, output, cache writes, cache
//     reads), so the cap holds whatever model the wake block names; the
//     wake says which models were so counted.
//   - What is spent is recorded after every response (onAnswer), so a
//     process killed during a wake leaves its spending counted, and the
//     wake known to have been answered.
type Budget struct {
	limit   float64
	cap     string // the cap that leaves the least, as a refusal names it
	prices  llm.PriceTable
	ceiling llm.Price
	// onAnswer is told, after every response, what the wake has spent.
	onAnswer func(total float64)

	mu       sync.Mutex
	spent    float64
	usage    llm.Usage // the answers' tokens, summed
	held     float64   // reserved by the requests under way
	answers  int       // responses received
	refusal  string    // the first request refused, said in the wake's record
	unpriced map[string]bool
}

// ErrRefused is the error of a request the wake's budget refuses.
var ErrRefused = errors.New("the wake's budget cannot pay for this request")

// framingTokens bound what the API adds to a request's own bytes: the
// system prompt it writes for tool use (a few hundred tokens) and the
// markers of roles and turns.
const framingTokens = 1024

// New is a budget of limit dollars; capName says which cap sets it ("the
// daily cap of $1.00 (earlier wakes today spent $0.2000)"); onAnswer is
// told, after every response, what the wake has spent in all.
func New(limit float64, capName string, prices llm.PriceTable, onAnswer func(total float64)) *Budget {
	if prices == nil {
		prices = llm.DefaultPriceTable()
	}
	b := &Budget{limit: limit, cap: capName, prices: prices, onAnswer: onAnswer, unpriced: map[string]bool{}}
	for _, p := range prices {
		b.ceiling.Input = max(b.ceiling.Input, p.Input)
		b.ceiling.Output = max(b.ceiling.Output, p.Output)
		b.ceiling.CacheWrite = max(b.ceiling.CacheWrite, p.CacheWrite)
		b.ceiling.CacheRead = max(b.ceiling.CacheRead, p.CacheRead)
	}
	return b
}

// price is what model is counted at: its price, or the ceiling when the
// table does not know it (the caller holds mu).
func (b *Budget) price(model string) llm.Price {
	p, ok := b.prices.Lookup(model)
	if !ok {
		b.unpriced[model] = true
		return b.ceiling
	}
	return p
}

// worstCase is the most req can cost at price p, and the input tokens it
// counts: no token is shorter than a byte, so the request's bytes as sent,
// plus framingTokens and what its images cost beyond their bytes
// (llm.ImageTokens), bound its input; all of max_tokens (thinking
// included) bounds its output. When the request marks a cache breakpoint,
// every input token is counted at the cache-write price if that is higher
// (writing the whole prompt is the dearest case; a one-hour write costs
// twice the input price).
func worstCase(req *llm.Request, p llm.Price) (usd float64, inputTokens int, err error) {
	wire, err := llm.MarshalWire(req)
	if err != nil {
		return 0, 0, fmt.Errorf("pricing the request: %w", err)
	}
	inputTokens = len(wire) + framingTokens
	for _, m := range req.Messages {
		inputTokens += llm.ImageTokens(m.Content) // an image's tokens go by its pixels, not its bytes
	}
	in := p.Input
	if write, marked := cacheWrite(req, p); marked {
		in = max(in, write)
	}
	const perToken = 1e-6
	return float64(inputTokens)*in*perToken + float64(max(req.MaxTokens, 0))*p.Output*perToken, inputTokens, nil
}

// cacheWrite is the price of a cache write for req, and whether req marks
// a cache breakpoint at all.
func cacheWrite(req *llm.Request, p llm.Price) (float64, bool) {
	price, marked := p.CacheWrite, false
	mark := func(c *llm.CacheControl) {
		if c == nil {
			return
		}
		marked = true
		if c.TTL == "1h" {
			price = max(price, 2*p.Input)
		}
	}
	for _, s := range req.System {
		mark(s.CacheControl)
	}
	for _, t := range req.Tools {
		mark(t.CacheControl)
	}
	for _, m := range req.Messages {
		for _, c := range m.Content {
			mark(c.CacheControl)
		}
	}
	return price, marked
}

// reserve holds the most req can cost, or refuses it when that does not
// fit in what is left. It returns what it holds.
func (b *Budget) reserve(req *llm.Request) (float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	worst, tokens, err := worstCase(req, b.price(req.Model))
	if err != nil {
		return 0, err
	}
	left := b.limit - b.spent - b.held
	if worst > left {
		err := fmt.Errorf("%w: a request to %s (%d input tokens at most, max_tokens %d) may cost $%.4f, and $%.4f is left of %s",
			ErrRefused, req.Model, tokens, req.MaxTokens, worst, max(left, 0), b.cap)
		if b.refusal == "" {
			b.refusal = strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ")
		}
		return 0, err
	}
	b.held += worst
	return worst, nil
}

// settle ends a reservation of held: an answered request counts at what
// its usage cost, one that failed at nothing (an error answer is not
// billed).
func (b *Budget) settle(held float64, model string, u *llm.Usage) {
	b.mu.Lock()
	b.held -= held
	if u == nil {
		b.mu.Unlock()
		return
	}
	cost, _ := llm.PriceTable{"": b.price(model)}.Cost(model, *u)
	b.spent += cost
	b.usage = b.usage.Add(*u)
	b.answers++
	total := b.spent
	b.mu.Unlock()
	if b.onAnswer != nil {
		b.onAnswer(total)
	}
}

// Spent is what the wake spent so far.
func (b *Budget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Usage is the tokens of the wake's answers so far, summed, and how many
// requests were answered.
func (b *Budget) Usage() (llm.Usage, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.usage, b.answers
}

// Answered reports whether any request of the wake got an answer.
func (b *Budget) Answered() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.answers > 0
}

// Refusal says the first request the budget refused, "" when none was.
func (b *Budget) Refusal() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refusal
}

// Note says which models were counted at the highest prices, "" when none.
func (b *Budget) Note() string {
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
	return fmt.Sprintf("%s not in the price table: counted at its highest prices ($%g input, $%g output per million tokens) against the daily cap; give the real prices in a prices file (docs/configuration.md)",
		strings.Join(models, ", "), b.ceiling.Input, b.ceiling.Output)
}

type budgetKey struct{}

// With makes every LLM request made under ctx count against b (through
// the client Meter gives).
func With(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// Meter is the client for a request made under ctx: c, metered by the
// budget ctx carries, if any. nil when c is.
func Meter(ctx context.Context, c *llm.Client) *llm.Client {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	if c == nil || b == nil {
		return c
	}
	metered := *c
	metered.Provider = meteredProvider{inner: c.Provider, b: b}
	return &metered
}

// meteredProvider sends a request only when the budget can hold the most
// it may cost, and counts what it did cost. Each try the client makes
// (retries, fallbacks) passes here, so each is reserved on its own.
type meteredProvider struct {
	inner llm.Provider
	b     *Budget
}

// Betas are the inner provider's (llm.ProviderBetas).
func (p meteredProvider) Betas() []string { return llm.ProviderBetas(p.inner) }

func (p meteredProvider) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	held, err := p.b.reserve(req)
	if err != nil {
		return nil, err
	}
	resp, err := p.inner.Messages(ctx, req)
	if err != nil {
		p.b.settle(held, req.Model, nil)
		return nil, err
	}
	p.b.settle(held, req.Model, &resp.Usage)
	return resp, nil
}

// Carried reports whether ctx carries a budget: the call is a wake's.
func Carried(ctx context.Context) bool {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b != nil
}
