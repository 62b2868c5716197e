package anthropic

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/llmkernels/kernels/llm"
)

// A call cancelled before its request reached the HTTP client is marked
// llm.ErrNotInFlight (nothing can have been billed); one cancelled after
// is not (the API may have charged for it).
func TestACancelledCallIsMarkedNotInFlightOnlyWhenNotSent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, sent := range []bool{false, true} {
		err := mapError(ctx, ctx.Err(), sent)
		if !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrNotInFlight) == sent {
			t.Errorf("sent=%v: %v", sent, err)
		}
	}
}

func TestRetryAfterReadsSecondsAndHTTPDates(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{" 30 ", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{"-3", 0},
		{"NaN", 0},
		{"1e300", 0},
		{"Sat, 21 Nov 2026 12:00:07 GMT", 7 * time.Second},
		{"Sat, 21 Nov 2026 11:59:00 GMT", 0}, // already past
		{"soon", 0},
	} {
		if got := retryAfter(c.in, now); got != c.want {
			t.Errorf("retryAfter(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestErrorBodyNotInTheAPIShapeKeepsItsText(t *testing.T) {
	res := &http.Response{StatusCode: 502, Header: http.Header{"Request-Id": {"req_proxy"}, "Retry-After": {"5"}}}
	e := &sdk.Error{StatusCode: 502, Response: res}
	if err := e.UnmarshalJSON([]byte("<html>Bad Gateway</html>")); err != nil {
		t.Fatal(err)
	}
	got := fromSDKError(e, time.Now())
	if got.Status != 502 || got.Type != "" || got.Message != "<html>Bad Gateway</html>" || got.RequestID != "req_proxy" || got.RetryAfter != 5*time.Second {
		t.Errorf("APIError = %+v", *got)
	}
	if !got.Retryable() {
		t.Error("a 502 should be retryable")
	}
}

func TestErrorBodyInTheAPIShapeGivesTypeAndMessage(t *testing.T) {
	res := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"Sat, 21 Nov 2026 12:00:10 GMT"}}}
	e := &sdk.Error{StatusCode: 429, Response: res, RequestID: "req_1"}
	if err := e.UnmarshalJSON([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)); err != nil {
		t.Fatal(err)
	}
	got := fromSDKError(e, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	if got.Status != 429 || got.Type != "rate_limit_error" || got.Message != "Number of requests has exceeded your rate limit" || got.RequestID != "req_1" || got.RetryAfter != 10*time.Second {
		t.Errorf("APIError = %+v", *got)
	}
}
