package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeProvider answers from a list of steps, one per call, and records the
// models it was asked for.
type fakeProvider struct {
	mu     sync.Mutex
	steps  []func(*Request) (*Response, error)
	models []string
	reqs   []*Request
}

func (f *fakeProvider) Messages(_ context.Context, req *Request) (*Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.models = append(f.models, req.Model)
	f.reqs = append(f.reqs, req.Clone())
	if len(f.steps) == 0 {
		return nil, errors.New("fakeProvider: no step left")
	}
	step := f.steps[0]
	f.steps = f.steps[1:]
	return step(req)
}

func answer(text string) func(*Request) (*Response, error) {
	return func(r *Request) (*Response, error) {
		return &Response{Model: r.Model, Content: []ContentBlock{TextBlock(text)}, StopReason: StopEndTurn,
			Usage: Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
}

func fail(status int, typ string) func(*Request) (*Response, error) {
	return func(*Request) (*Response, error) { return nil, &APIError{Status: status, Type: typ, Message: typ} }
}

// recordSleeps makes a retry policy that waits for nothing and records the waits.
func recordSleeps(waits *[]time.Duration) RetryPolicy {
	return RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		return nil
	}}
}

func simpleRequest(model string) *Request {
	return &Request{Model: model, MaxTokens: 100, Messages: []Message{UserText("hi")}}
}

func TestRetryOn529ThenSuccess(t *testing.T) {
	var waits []time.Duration
	p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(529, "overloaded_error"), answer("ok")}}
	c := &Client{Provider: p, Retry: recordSleeps(&waits)}
	call, err := c.Send(context.Background(), simpleRequest("claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	if call.Attempts != 2 || len(waits) != 1 || call.Response.Text() != "ok" {
		t.Fatalf("want 2 attempts and 1 wait, got attempts=%d waits=%v", call.Attempts, waits)
	}
	if waits[0] < 250*time.Millisecond || waits[0] > 500*time.Millisecond {
		t.Fatalf("first backoff %s outside [250ms, 500ms]", waits[0])
	}
}

func TestRetryRetriesEveryTransientStatus(t *testing.T) {
	for _, status := range []int{429, 500, 502, 503, 504, 529, 0} {
		var waits []time.Duration
		p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(status, "x"), answer("ok")}}
		c := &Client{Provider: p, Retry: recordSleeps(&waits)}
		if _, err := c.Send(context.Background(), simpleRequest("m")); err != nil {
			t.Fatalf("status %d not retried: %v", status, err)
		}
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404} {
		var waits []time.Duration
		p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(status, "invalid_request_error"), answer("never")}}
		c := &Client{Provider: p, Retry: recordSleeps(&waits)}
		_, err := c.Send(context.Background(), simpleRequest("m"))
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Status != status {
			t.Fatalf("status %d: want the APIError back, got %v", status, err)
		}
		if len(p.models) != 1 || len(waits) != 0 {
			t.Fatalf("status %d was retried: %d calls", status, len(p.models))
		}
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	var waits []time.Duration
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		func(*Request) (*Response, error) {
			return nil, &APIError{Status: 429, Type: "rate_limit_error", RetryAfter: 7 * time.Second}
		},
		answer("ok"),
	}}
	c := &Client{Provider: p, Retry: recordSleeps(&waits)}
	if _, err := c.Send(context.Background(), simpleRequest("m")); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0] != 7*time.Second {
		t.Fatalf("want one wait of 7s, got %v", waits)
	}
}

func TestRetryStopsAtMaxAttempts(t *testing.T) {
	var waits []time.Duration
	p := &fakeProvider{}
	for range 10 {
		p.steps = append(p.steps, fail(503, "api_error"))
	}
	policy := recordSleeps(&waits)
	policy.MaxAttempts = 3
	c := &Client{Provider: p, Retry: policy}
	if _, err := c.Send(context.Background(), simpleRequest("m")); err == nil {
		t.Fatal("want an error after the attempts run out")
	}
	if len(p.models) != 3 {
		t.Fatalf("want 3 attempts, got %d", len(p.models))
	}
	// Exponential: the second wait's range [500ms,1s] lies above the first's [250ms,500ms].
	if waits[1] < 500*time.Millisecond || waits[1] > time.Second {
		t.Fatalf("second backoff %s outside [500ms, 1s]", waits[1])
	}
}

func TestRetryStopsAtTotalWaitBudget(t *testing.T) {
	var waits []time.Duration
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		func(*Request) (*Response, error) {
			return nil, &APIError{Status: 429, Type: "rate_limit_error", RetryAfter: time.Hour + 268072352*time.Nanosecond}
		},
		answer("never"),
	}}
	policy := recordSleeps(&waits)
	policy.MaxWait = time.Minute
	c := &Client{Provider: p, Retry: policy}
	_, err := c.Send(context.Background(), simpleRequest("m"))
	// The wait is said rounded, as a person reads it.
	if err == nil || !strings.Contains(err.Error(), "the next wait of 1h0m0.27s would pass the retry budget") || len(waits) != 0 {
		t.Fatalf("want a give-up error without waiting an hour, got %v after waits %v", err, waits)
	}
}

func TestFallbackChainMovesOnWhenModelUnavailable(t *testing.T) {
	var waits []time.Duration
	var events []Event
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		fail(404, "not_found_error"),                                 // opus: not found, not retried
		fail(529, "overloaded_error"), fail(529, "overloaded_error"), // sonnet: overloaded past retries
		answer("from haiku"),
	}}
	policy := recordSleeps(&waits)
	policy.MaxAttempts = 2
	c := &Client{Provider: p, Retry: policy, Fallback: []string{"claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"},
		Observe: func(e Event) { events = append(events, e) }}
	call, err := c.Send(context.Background(), simpleRequest("claude-opus-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude-opus-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"}
	if strings.Join(p.models, ",") != strings.Join(want, ",") {
		t.Fatalf("models tried %v, want %v", p.models, want)
	}
	if call.Model != "claude-haiku-4-5" || call.Attempts != 4 {
		t.Fatalf("call model %s attempts %d", call.Model, call.Attempts)
	}
	fallbacks := 0
	for _, e := range events {
		if e.Kind == EventFallback {
			fallbacks++
		}
	}
	if fallbacks != 2 {
		t.Fatalf("want 2 fallback events, got %d", fallbacks)
	}
}

func TestFallbackChainStartsWithAModelOutsideIt(t *testing.T) {
	c := &Client{Fallback: []string{"a", "b"}}
	if got := strings.Join(c.chain("x"), ","); got != "x,a,b" {
		t.Fatalf("chain for x: %s", got)
	}
	if got := strings.Join(c.chain("b"), ","); got != "b" {
		t.Fatalf("chain for b: %s", got)
	}
	if got := strings.Join(c.chain(""), ","); got != "a,b" {
		t.Fatalf("chain for empty model: %s", got)
	}
}

func TestFallbackDoesNotHideARequestError(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(400, "invalid_request_error"), answer("never")}}
	c := &Client{Provider: p, Fallback: []string{"a", "b"}}
	if _, err := c.Send(context.Background(), simpleRequest("a")); err == nil || len(p.models) != 1 {
		t.Fatalf("a 400 must end the call on the first model: err=%v models=%v", err, p.models)
	}
}

func TestEveryModelUnavailableSaysSo(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(404, "not_found_error"), fail(404, "not_found_error")}}
	c := &Client{Provider: p, Fallback: []string{"a", "b"}}
	_, err := c.Send(context.Background(), simpleRequest("a"))
	if err == nil || !strings.Contains(err.Error(), "every model in the chain is unavailable") {
		t.Fatalf("got %v", err)
	}
}

func TestCostArithmetic(t *testing.T) {
	u := Usage{InputTokens: 100_000, OutputTokens: 20_000, CacheCreationInputTokens: 40_000, CacheReadInputTokens: 60_000}
	// Sonnet 4.5 at 3 / 15 / 3.75 / 0.30 per MTok:
	// 0.3 + 0.3 + 0.15 + 0.018 = 0.768
	usd, ok := DefaultPriceTable().Cost("claude-sonnet-4-5-20250929", u)
	if !ok || math.Abs(usd-0.768) > 1e-9 {
		t.Fatalf("cost %v ok=%v, want 0.768", usd, ok)
	}
	// The longest family wins: opus 4.5 is not priced as opus 4.
	usd, _ = DefaultPriceTable().Cost("claude-opus-4-5", Usage{InputTokens: 1_000_000})
	if usd != 5 {
		t.Fatalf("opus 4.5 input priced %v, want 5", usd)
	}
	if _, ok := DefaultPriceTable().Cost("mystery-model", u); ok {
		t.Fatal("an unknown model must be reported unpriced")
	}
}

// Cache writes are priced by their lifetime: 1.25× input for 5 minutes,
// 2× for an hour; reads 0.1×. Writes the usage does not split are
// 5-minute writes.
func TestCacheWritesArePricedByLifetime(t *testing.T) {
	prices := DefaultPriceTable()
	cases := []struct {
		name string
		u    Usage
		want float64
	}{
		{"5-minute writes", Usage{CacheCreationInputTokens: 1_000_000, CacheCreation: CacheCreation{Ephemeral5mInputTokens: 1_000_000}}, 3.75},
		{"1-hour writes", Usage{CacheCreationInputTokens: 1_000_000, CacheCreation: CacheCreation{Ephemeral1hInputTokens: 1_000_000}}, 6},
		{"a split", Usage{CacheCreationInputTokens: 1_000_000, CacheCreation: CacheCreation{Ephemeral5mInputTokens: 500_000, Ephemeral1hInputTokens: 500_000}}, 1.875 + 3},
		{"no split", Usage{CacheCreationInputTokens: 1_000_000}, 3.75},
		{"reads", Usage{CacheReadInputTokens: 1_000_000}, 0.3},
	}
	for _, c := range cases {
		if got, _ := prices.Cost("claude-sonnet-4-6", c.u); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: cost %v, want %v", c.name, got, c.want)
		}
	}
	// A price without a 1-hour rate charges 2× input for it (1.6 × the
	// 5-minute write).
	table := PriceTable{"m": {Input: 2, CacheWrite: 2.5}}
	if got, _ := table.Cost("m", Usage{CacheCreationInputTokens: 1_000_000, CacheCreation: CacheCreation{Ephemeral1hInputTokens: 1_000_000}}); math.Abs(got-4) > 1e-9 {
		t.Errorf("default 1-hour write: cost %v, want 4", got)
	}
}

// A model with long-context rates charges every token of a request whose
// prompt passes the threshold at them, and none below.
func TestLongPromptRates(t *testing.T) {
	prices := DefaultPriceTable()
	short := Usage{InputTokens: 100_000, OutputTokens: 1_000_000}
	if got, _ := prices.Cost("claude-haiku-5-5", short); math.Abs(got-(0.01+0.5)) > 1e-9 {
		t.Errorf("haiku 5.5 at 100k prompt tokens: %v, want 0.51", got)
	}
	long := Usage{InputTokens: 50_000, CacheReadInputTokens: 50_001, OutputTokens: 1_000_000}
	if got, _ := prices.Cost("claude-haiku-5-5", long); math.Abs(got-(0.025+0.05*0.050001+2.5)) > 1e-9 {
		t.Errorf("haiku 5.5 over 100k prompt tokens: %v, want the long rates", got)
	}
	if got, _ := prices.Cost("claude-sonnet-4-6", Usage{InputTokens: 300_000}); math.Abs(got-0.9) > 1e-9 {
		t.Errorf("sonnet 4.6 has no long-context rate: %v, want 0.9", got)
	}
	if got, _ := prices.Cost("claude-sonnet-4-5", Usage{InputTokens: 300_000}); math.Abs(got-1.8) > 1e-9 {
		t.Errorf("sonnet 4.5 over 200k: %v, want 1.8", got)
	}
}

// One table gives both the prices and the minimum cacheable lengths; a
// family that prefixes another does not lend it its minimum.
func TestModelTable(t *testing.T) {
	for model, want := range map[string]int{"claude-opus-4-6": 4096, "claude-haiku-4-5-20251001": 4096, "claude-sonnet-4-5-20250929": 1024, "claude-sonnet-4-6": 2048, "claude-opus-4-8": 1024} {
		if got, ok := MinCacheTokens(model); !ok || got != want {
			t.Errorf("MinCacheTokens(%s) = %d %v, want %d", model, got, ok, want)
		}
	}
	if got, ok := MinCacheTokens("claude-opus-5-5"); ok {
		t.Errorf("claude-opus-5-5 has no known minimum, got %d from a shorter family", got)
	}
	prices := DefaultPriceTable()
	for family, m := range models {
		if prices[family] != m.Price {
			t.Errorf("%s: price table and model table differ", family)
		}
	}
	prices["claude-opus-4-6"] = Price{}
	if DefaultPriceTable()["claude-opus-4-6"].Input != 5 {
		t.Error("DefaultPriceTable hands out the table itself: a caller changed it")
	}
}

func TestReadShareAndCostLine(t *testing.T) {
	u := Usage{InputTokens: 100, CacheCreationInputTokens: 60, CacheReadInputTokens: 840, OutputTokens: 50}
	if got := u.CacheReadShare(); math.Abs(got-0.84) > 1e-12 {
		t.Errorf("read share %v, want 0.84", got)
	}
	if got := CostLine(0.0123, u); got != "cost $0.0123, 84% of input from cache" {
		t.Errorf("CostLine = %q", got)
	}
	if got := CostLine(0.5, Usage{InputTokens: 1, CacheReadInputTokens: 999}); got != "cost $0.5000, 99% of input from cache" {
		t.Errorf("a prompt not read whole shows below 100%%: %q", got)
	}
	if got := CostLine(0, Usage{}); got != "cost $0.0000" {
		t.Errorf("no input: %q", got)
	}
	if got, want := u.EffectiveInputTokens(), 100+1.25*60+0.1*840; math.Abs(got-want) > 1e-9 {
		t.Errorf("effective input %v, want %v", got, want)
	}
	sum := u.Add(Usage{CacheCreationInputTokens: 10, CacheCreation: CacheCreation{Ephemeral1hInputTokens: 10}})
	if sum.CacheCreationInputTokens != 70 || sum.CacheCreation.Ephemeral1hInputTokens != 10 {
		t.Errorf("Add lost the split: %+v", sum)
	}
}

func TestClientMetersEveryCall(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer("ok")}}
	c := &Client{Provider: p}
	call, err := c.Send(context.Background(), simpleRequest("claude-haiku-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	// 10 input at $1/MTok + 5 output at $5/MTok.
	if want := 10e-6 + 25e-6; !call.Priced || math.Abs(call.CostUSD-want) > 1e-12 || call.Latency <= 0 {
		t.Fatalf("call cost %v priced %v latency %v, want %v", call.CostUSD, call.Priced, call.Latency, want)
	}
}

func TestLoadPricesOverridesDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(path, []byte(`{"claude-sonnet-4":{"input":1,"output":2},"local-llama":{"input":0,"output":0}}`), 0o644)
	table, err := LoadPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := table.Lookup("claude-sonnet-4-5"); p.Input != 1 || p.Output != 2 {
		t.Fatalf("override not applied: %+v", p)
	}
	if _, ok := table.Cost("local-llama-3", Usage{}); !ok {
		t.Fatal("new family not added")
	}
	if p, _ := table.Lookup("claude-haiku-4-5"); p.Input != 1 {
		t.Fatal("defaults lost")
	}
	os.WriteFile(path, []byte(`{"x":`), 0o644)
	if _, err := LoadPrices(path); err == nil || !strings.Contains(err.Error(), "want {") {
		t.Fatalf("bad file must say what is wanted: %v", err)
	}
	// A family with no name prefixes every model: it replaced the whole
	// table and priced even unknown models at its rates, unwarned.
	os.WriteFile(path, []byte(`{"":{"input":0,"output":0}}`), 0o644)
	if _, err := LoadPrices(path); err == nil || !strings.Contains(err.Error(), "a family with no name") {
		t.Errorf("a family with no name: %v", err)
	}
	// A negative price would take from what a run has spent; a huge one
	// makes a cost of +Inf.
	for _, bad := range []string{`{"m":{"input":-1}}`, `{"m":{"output":1e300}}`, `{"m":{"long_prompt_over":1,"long_prompt":{"cache_read":-0.1}}}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := LoadPrices(path); err == nil || !strings.Contains(err.Error(), `"m": give prices from 0 to 1000000`) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestCancelledContextStopsRetrying(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &fakeProvider{steps: []func(*Request) (*Response, error){
		func(*Request) (*Response, error) { cancel(); return nil, ConnectionError(context.Canceled) },
		answer("never"),
	}}
	c := &Client{Provider: p, Fallback: []string{"a", "b"}}
	if _, err := c.Send(ctx, simpleRequest("a")); err == nil || len(p.models) != 1 {
		t.Fatalf("want one attempt then the error, got %d attempts, err %v", len(p.models), err)
	}
}

func TestConnectionErrorsWrapTheirCauseAndContextErrorsAreNotRetried(t *testing.T) {
	cause := errors.New("connection reset by peer")
	if err := ConnectionError(cause); !errors.Is(err, cause) || !err.Retryable() {
		t.Fatalf("connection error must wrap its cause and be retryable: %v", err)
	}
	if _, ok := AsAPIError(context.DeadlineExceeded); ok {
		t.Fatal("a context deadline (which is a net.Error) must not become a retryable connection error")
	}
}

func TestOutOfCreditIsNotRetried(t *testing.T) {
	if (&APIError{Status: 429, Type: "requests/insufficient_quota"}).Retryable() {
		t.Fatal("a 429 for an exhausted quota must not be retried")
	}
	if !(&APIError{Status: 429, Type: "rate_limit_error"}).Retryable() {
		t.Fatal("a plain rate limit must be retried")
	}
}

// A Send stopped while no request of its awaited an answer (before the
// first was sent, or waiting out a back-off after an error answer) says
// so with ErrNotInFlight, so a caller holding money for it knows nothing
// was billed; one stopped while its request was in flight does not.
func TestACancelledSendSaysWhetherARequestWasInFlight(t *testing.T) {
	t.Run("before sending", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		p := &fakeProvider{steps: []func(*Request) (*Response, error){answer("ok")}}
		_, err := (&Client{Provider: p}).Send(ctx, simpleRequest("claude-sonnet-4-5"))
		if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrNotInFlight) || len(p.reqs) != 0 {
			t.Fatalf("err %v, %d requests sent", err, len(p.reqs))
		}
	})
	t.Run("in a back-off", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(529, "overloaded_error"), answer("ok")}}
		c := &Client{Provider: p, Retry: RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error {
			cancel()
			return ctx.Err()
		}}}
		_, err := c.Send(ctx, simpleRequest("claude-sonnet-4-5"))
		if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrNotInFlight) || len(p.reqs) != 1 {
			t.Fatalf("err %v, %d requests sent", err, len(p.reqs))
		}
	})
	// After an attempt that may have been billed (no answer, a timeout, a
	// 5xx other than 503 and 529) the Send is not free, whenever it stops.
	for name, first := range map[string]func(*Request) (*Response, error){
		"in a back-off after no answer": func(*Request) (*Response, error) { return nil, ConnectionError(errors.New("read tcp: i/o timeout")) },
		"in a back-off after a 500":     fail(500, "api_error"),
		"in a back-off after a 408":     fail(408, "timeout_error"),
		// A stream broken off by an overload had begun: the model ran.
		"in a back-off after an overload in the stream": func(*Request) (*Response, error) { return nil, StreamError("overloaded_error", "Overloaded") },
		"in a back-off after a stream cut off":          func(*Request) (*Response, error) { return nil, ConnectionError(ErrStreamCut) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(529, "overloaded_error"), first, answer("ok")}}
			c := &Client{Provider: p, Retry: RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error {
				if len(p.reqs) == 2 {
					cancel()
				}
				return ctx.Err()
			}}}
			_, err := c.Send(ctx, simpleRequest("claude-sonnet-4-5"))
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotInFlight) || len(p.reqs) != 2 {
				t.Fatalf("err %v, %d requests sent: an attempt that may have been billed was forgotten", err, len(p.reqs))
			}
		})
	}
	t.Run("unsent after one that may have been billed", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := &fakeProvider{steps: []func(*Request) (*Response, error){
			func(*Request) (*Response, error) { return nil, ConnectionError(errors.New("read tcp: i/o timeout")) },
			func(*Request) (*Response, error) {
				cancel() // an adapter that saw the cancel before sending marks it
				return nil, fmt.Errorf("%w (%w)", ctx.Err(), ErrNotInFlight)
			}}}
		c := &Client{Provider: p, Retry: RetryPolicy{Sleep: func(context.Context, time.Duration) error { return nil }}}
		_, err := c.Send(ctx, simpleRequest("claude-sonnet-4-5"))
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotInFlight) {
			t.Fatalf("err %v: the first attempt may have been billed", err)
		}
	})
	t.Run("in flight", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := &fakeProvider{steps: []func(*Request) (*Response, error){func(*Request) (*Response, error) {
			cancel() // the request is out; the answer never comes
			return nil, ctx.Err()
		}}}
		_, err := (&Client{Provider: p}).Send(ctx, simpleRequest("claude-sonnet-4-5"))
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotInFlight) {
			t.Fatalf("err %v: a request in flight is not marked as not in flight", err)
		}
	})
}

// The runtime's errors are typed and name no command-line flag: the
// command maps them to its own flags.
func TestSendErrorsAreTypedAndFlagFree(t *testing.T) {
	_, err := (&Client{Provider: &fakeProvider{}}).Send(context.Background(), &Request{MaxTokens: 1})
	if !errors.Is(err, ErrNoModel) || strings.Contains(err.Error(), "--") {
		t.Errorf("no model: got %v, want ErrNoModel without a flag", err)
	}
	p := &fakeProvider{steps: []func(*Request) (*Response, error){fail(404, "not_found_error"), fail(529, "overloaded_error")}}
	c := &Client{Provider: p, Fallback: []string{"a", "b"}, Retry: RetryPolicy{MaxAttempts: 1}}
	_, err = c.Send(context.Background(), simpleRequest("a"))
	var ue *UnavailableError
	if !errors.As(err, &ue) || !slices.Equal(ue.Models, []string{"a", "b"}) || len(ue.Errs) != 2 || strings.Contains(err.Error(), "--") {
		t.Fatalf("every model unavailable: got %#v (%v)", ue, err)
	}
	if apiErr, ok := AsAPIError(err); !ok || apiErr.Status != 529 {
		t.Errorf("the error unwraps to the last model's: got %v", apiErr)
	}
}

// NoCache sends every request without a breakpoint; the caller's request
// keeps its own.
func TestNoCacheSendsNoBreakpoint(t *testing.T) {
	p := &fakeProvider{steps: []func(*Request) (*Response, error){answer("ok")}}
	req := simpleRequest("claude-sonnet-4-5")
	req.CacheControl = Ephemeral()
	req.System = []SystemBlock{{Type: BlockText, Text: "s", CacheControl: Ephemeral()}}
	if _, err := (&Client{Provider: p, NoCache: true}).Send(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sent, _ := json.Marshal(p.reqs[0])
	if strings.Contains(string(sent), "cache_control") || req.CacheControl == nil || req.System[0].CacheControl == nil {
		t.Fatalf("sent %s; the caller's request lost its breakpoints: %v", sent, req.CacheControl == nil)
	}
}

// TestUnbilledRetriesOnlyRefusals pins RetryPolicy.Unbilled: an answer
// that refused the work is retried (and falls back), one that may have
// been billed ends the Send, with an error MayBeBilled says so of, and so
// does an overloaded model after a billed attempt (no fallback).
func TestUnbilledRetriesOnlyRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		steps  []func(*Request) (*Response, error)
		sent   int
		billed bool // the Send's error may have been billed; "" for a success
		ok     bool
	}{
		{"a refusal is retried", []func(*Request) (*Response, error){fail(529, "overloaded_error"), answer("ok")}, 2, false, true},
		{"a 500 is not", []func(*Request) (*Response, error){fail(500, "api_error"), answer("ok")}, 1, true, false},
		{"nor no answer", []func(*Request) (*Response, error){fail(0, "connection_error"), answer("ok")}, 1, true, false},
		{"nor an error in the stream", []func(*Request) (*Response, error){func(*Request) (*Response, error) {
			return nil, &APIError{Type: "overloaded_error", InStream: true}
		}, answer("ok")}, 1, true, false},
	} {
		var waits []time.Duration
		p := &fakeProvider{steps: c.steps}
		policy := recordSleeps(&waits)
		policy.Unbilled = true
		client := &Client{Provider: p, Retry: policy, Fallback: []string{"m", "n"}}
		_, err := client.Send(context.Background(), simpleRequest("m"))
		if (err == nil) != c.ok || len(p.models) != c.sent || MayBeBilled(err) != c.billed {
			t.Errorf("%s: %v after %d requests (%v), may be billed %v", c.name, err, len(p.models), p.models, MayBeBilled(err))
		}
	}
	if MayBeBilled(&APIError{Status: 429, Type: "rate_limit_error"}) || MayBeBilled(&APIError{Status: 400}) || MayBeBilled(nil) {
		t.Error("a refusal, a bad request or no error may be billed")
	}
}
