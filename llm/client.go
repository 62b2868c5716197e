package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Client sends requests through a Provider with the retry policy, the model
// fallback chain and cost metering every kernel needs.
type Client struct {
	Provider Provider
	Retry    RetryPolicy
	// Fallback is the model chain: when a model is unavailable (404, or
	// still overloaded after retries) the next one is tried. A request for
	// a model in the chain continues from its place; a request for another
	// model tries it first, then the whole chain.
	Fallback []string
	Prices   PriceTable // nil means DefaultPriceTable()
	Observe  func(Event)
	// NoCache sends every request without cache breakpoints
	// (Request.WithoutCache): the commands' --no-cache.
	NoCache bool
	// Scripted marks a client whose provider answers from a script
	// (llm/script): no model is called and nothing is charged. Its calls
	// are metered all the same, at the models the requests name, so that
	// budgets, caps and holds act as in a real run; whatever shows that
	// money labels it with CostNote.
	Scripted bool
}

// CostNote labels money a client's calls were metered at, once per
// output: "" for a real provider; for a scripted one, " (scripted: what
// claude-sonnet-4-6 would charge; nothing is charged)", naming the models
// the calls were priced at.
func (c *Client) CostNote(models ...string) string {
	if c == nil || !c.Scripted {
		return ""
	}
	return " (" + ScriptedNote(models...) + ")"
}

// BetaProvider is a Provider that sends anthropic-beta values with every
// request. The Loop and AskSchema check requests against them, since some
// betas relax the API's rules.
type BetaProvider interface {
	Provider
	Betas() []string
}

// Betas are the anthropic-beta values the provider sends with every
// request; nil when it sends none or is not a BetaProvider.
func (c *Client) Betas() []string { return ProviderBetas(c.Provider) }

// ProviderBetas is p's Betas when p is a BetaProvider, else nil. A
// Provider that wraps another (a meter, a spend cap) passes its inner
// provider's betas on with it, so the request check sees them.
func ProviderBetas(p Provider) []string {
	if bp, ok := p.(BetaProvider); ok {
		return bp.Betas()
	}
	return nil
}

// ErrNoModel is Send's error for a request that names no model sent by a
// Client without a fallback chain. A command maps it to its model flag.
var ErrNoModel = errors.New("llm: no model: the request names none and the client has no fallback chain")

// UnavailableError is Send's error when every model of the chain was
// unavailable (not found, or still overloaded after the retries): waiting,
// or choosing other models, may help. It unwraps to the last model's error.
type UnavailableError struct {
	Models []string // the models tried, in order
	Errs   []error  // each model's last error
}

func (e *UnavailableError) Error() string {
	parts := make([]string, len(e.Models))
	for i, m := range e.Models {
		parts[i] = fmt.Sprintf("%s: %v", m, e.Errs[i])
	}
	return "llm: every model in the chain is unavailable: " + strings.Join(parts, "; ")
}

// Unwrap gives the last model's error.
func (e *UnavailableError) Unwrap() error { return e.Errs[len(e.Errs)-1] }

// Call is one request's outcome: the response and what it cost.
type Call struct {
	Model    string // the model that answered (after any fallback)
	Response *Response
	Usage    Usage
	CostUSD  float64
	Priced   bool          // false when the model is not in the price table
	Latency  time.Duration // wall time of Send, retries and fallbacks included
	Attempts int           // provider calls made
}

// ErrNotInFlight marks the error of a Send its context stopped while none
// of its requests awaited an answer: before a request was handed to the
// network, or while it waited out a retry back-off after answers that
// refused the work (429, 409, 503, 529). Such answers are not billed, so
// such a Send cost nothing: a caller that
// holds money for the call settles it at what was paid (solve does). A Send
// stopped while a request was in flight is not marked, nor one with an
// earlier attempt that got no answer, a timeout or a 5xx: the API may have
// charged for it, and no one knows how much.
var ErrNotInFlight = errors.New("no request was in flight")

// notInFlight marks a context error with ErrNotInFlight, unless an earlier
// attempt of the same Send may have been billed (maybeBilled): then the
// error says so and is not marked.
func notInFlight(err error, maybeBilled bool) error {
	if maybeBilled {
		return fmt.Errorf("%w (an earlier attempt may have been billed)", err)
	}
	return fmt.Errorf("%w (%w)", err, ErrNotInFlight)
}

// MayBeBilled reports whether err is an answer of the API that may have
// come after the model ran, and so may have been billed, at a cost no one
// knows: no answer at all, a timeout, a 5xx, an error in the stream. An
// answer that refused the work (409, 429, 503, 529, or any 4xx) is not.
func MayBeBilled(err error) bool {
	e, ok := AsAPIError(err)
	return ok && e.Retryable() && !refused(e)
}

// refused reports whether an attempt's error is an answer the API gives
// before doing the work (rate limited, overloaded, a conflict): it is not
// billed. Anything else a retry follows (no answer at all, a timeout, a
// 500, a gateway's 502 or 504) may have come after the model ran, and may
// have been billed.
func refused(e *APIError) bool {
	if e.InStream {
		return false
	}
	switch e.Status {
	case 409, 429, 503, 529:
		return true
	}
	return false
}

// Event reports progress to Client.Observe and Loop.Observe.
type Event struct {
	Kind    string // EventRetry, EventFallback, EventResponse, EventToolCall, EventToolResult, EventNote
	Model   string
	Attempt int
	Wait    time.Duration
	Err     error
	Call    *Call
	Tool    string
	ToolID  string
	Input   []byte
	Result  string
	IsError bool
	Note    string
}

// Event kinds.
const (
	EventRetry      = "retry"
	EventFallback   = "fallback"
	EventResponse   = "response"
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventNote       = "note"
)

// RetryPolicy retries transient failures with exponential backoff and full
// jitter, honouring retry-after. Zero fields take the defaults.
type RetryPolicy struct {
	MaxAttempts int                                              // per model, first try included; default 4
	BaseDelay   time.Duration                                    // default 500ms
	MaxDelay    time.Duration                                    // one wait at most; default 30s
	MaxWait     time.Duration                                    // all waits together at most; default 90s
	Sleep       func(ctx context.Context, d time.Duration) error // default waits on a timer; tests replace it
	// Unbilled retries, and falls back after, only answers that refused
	// the work (409, 429, 503, 529), which are not billed: an attempt
	// that may have been billed (MayBeBilled) ends the Send with its
	// error. For a caller that holds money for each request, which a
	// second billed attempt could overspend: it retries under a new hold.
	Unbilled bool
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 90 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// delay is the wait before retry number n (1 for the first retry): the
// provider's retry-after when given, else a random point in the upper half
// of base·2^(n−1), capped at MaxDelay. Half-jitter keeps waits from
// collapsing to zero while still spreading concurrent clients apart.
func (p RetryPolicy) delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := p.BaseDelay << (n - 1)
	if d <= 0 || d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d/2 + rand.N(d/2+1)
}

// Send sends req, retrying and falling back as configured, and meters the
// answer. req is not modified: a fallback sends a copy with its model changed.
func (c *Client) Send(ctx context.Context, req *Request) (*Call, error) {
	models := c.chain(req.Model)
	if len(models) == 0 {
		return nil, ErrNoModel
	}
	start := time.Now()
	attempts := 0
	maybeBilled := false // an attempt so far may have been billed (refused)
	unavailable := &UnavailableError{}
	base, deltas := req, (*restarter)(nil)
	if c.NoCache {
		base = req.WithoutCache()
	}
	if req.OnDelta != nil {
		deltas = &restarter{onDelta: req.OnDelta}
		withDeltas := *base
		withDeltas.OnDelta = deltas.deliver
		base = &withDeltas
	}
	for i, model := range models {
		r := base
		if model != req.Model {
			r = base.Clone()
			r.Model = model
		}
		resp, n, err := c.sendWithRetry(ctx, r, &maybeBilled, deltas)
		attempts += n
		if err == nil {
			for _, note := range resp.Notes {
				c.observe(Event{Kind: EventNote, Model: model, Note: note})
			}
			call := &Call{Model: model, Response: resp, Usage: resp.Usage, Latency: time.Since(start), Attempts: attempts}
			call.CostUSD, call.Priced = c.prices().Cost(model, resp.Usage)
			c.observe(Event{Kind: EventResponse, Model: model, Call: call})
			return call, nil
		}
		apiErr, ok := AsAPIError(err)
		if !ok || !apiErr.ModelUnavailable() || ctx.Err() != nil || len(models) == 1 || (c.Retry.Unbilled && maybeBilled) {
			return nil, err
		}
		unavailable.Models = append(unavailable.Models, model)
		unavailable.Errs = append(unavailable.Errs, err)
		if i+1 < len(models) {
			c.observe(Event{Kind: EventFallback, Model: models[i+1], Err: err})
			deltas.restart()
			continue
		}
		return nil, unavailable
	}
	panic("unreachable: the loop returns on its last model")
}

// restarter hands a request's deltas on, and says DeltaRestart before the
// request is sent again once pieces of the broken answer were delivered.
// A nil restarter (a request without OnDelta) does nothing.
type restarter struct {
	onDelta   func(Delta)
	delivered bool
}

func (s *restarter) deliver(d Delta) {
	s.delivered = true
	s.onDelta(d)
}

func (s *restarter) restart() {
	if s != nil && s.delivered {
		s.delivered = false
		s.onDelta(Delta{Kind: DeltaRestart})
	}
}

func (c *Client) sendWithRetry(ctx context.Context, req *Request, maybeBilled *bool, deltas *restarter) (*Response, int, error) {
	p := c.Retry.withDefaults()
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, attempt - 1, notInFlight(err, *maybeBilled)
		}
		resp, err := c.Provider.Messages(ctx, req)
		if err == nil {
			return resp, attempt, nil
		}
		if *maybeBilled && errors.Is(err, ErrNotInFlight) {
			// This attempt was never sent, but an earlier one may have
			// been billed: the Send as a whole is not free.
			return nil, attempt, notInFlight(ctx.Err(), true)
		}
		apiErr, ok := AsAPIError(err)
		if ok && !refused(apiErr) {
			*maybeBilled = true
		}
		if !ok || !apiErr.Retryable() || (p.Unbilled && !refused(apiErr)) || attempt >= p.MaxAttempts || ctx.Err() != nil {
			return nil, attempt, err
		}
		wait := p.delay(attempt, apiErr.RetryAfter)
		if waited+wait > p.MaxWait {
			return nil, attempt, fmt.Errorf("%w (gave up: the next wait of %s would pass the retry budget of %s)", err, wait.Round(10*time.Millisecond), p.MaxWait)
		}
		c.observe(Event{Kind: EventRetry, Model: req.Model, Attempt: attempt, Wait: wait, Err: err})
		deltas.restart()
		if err := p.Sleep(ctx, wait); err != nil {
			return nil, attempt, notInFlight(err, *maybeBilled)
		}
		waited += wait
	}
}

func (c *Client) chain(model string) []string {
	if model == "" {
		return c.Fallback
	}
	for i, m := range c.Fallback {
		if m == model {
			return c.Fallback[i:]
		}
	}
	return append([]string{model}, c.Fallback...)
}

func (c *Client) prices() PriceTable {
	if c.Prices == nil {
		return builtinPrices
	}
	return c.Prices
}

// builtinPrices is the Client's copy of the built-in table, which nothing
// changes.
var builtinPrices = DefaultPriceTable()

func (c *Client) observe(e Event) {
	if c.Observe != nil {
		c.Observe(e)
	}
}
