package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
)

// mapError turns the SDK's error into the runtime's: the caller's context
// error as is; an HTTP error answer as *llm.APIError, and an error
// event that broke off the stream as llm.StreamError; a failure after the
// request was handed to the HTTP client (a connection dropped mid-stream
// among them) as llm.ConnectionError; and any other (encoding,
// configuration) as a plain error that is not retried. The caller's
// context error is marked llm.ErrNotInFlight when the request was never
// handed to the HTTP client: nothing can have been billed.
func mapError(ctx context.Context, err error, sent bool) error {
	if ctx.Err() != nil {
		if !sent {
			return fmt.Errorf("%w (%w)", err, llm.ErrNotInFlight)
		}
		return err
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		e := fromSDKError(apiErr, time.Now())
		if apiErr.StatusCode < 400 {
			// An error event in a 200 stream: the answer had begun.
			se := llm.StreamError(e.Type, e.Message)
			se.RequestID = e.RequestID
			return se
		}
		return e
	}
	if sent {
		return llm.ConnectionError(err)
	}
	return fmt.Errorf("llm/anthropic: request not sent: %w", err)
}

func fromSDKError(e *sdk.Error, now time.Time) *llm.APIError {
	out := &llm.APIError{Status: e.StatusCode, RequestID: e.RequestID}
	var header http.Header
	if e.Response != nil {
		header = e.Response.Header
		if out.Status == 0 {
			out.Status = e.Response.StatusCode
		}
	}
	if out.RequestID == "" {
		out.RequestID = header.Get("request-id")
	}
	out.RetryAfter = retryAfter(header.Get("retry-after"), now)

	raw := e.RawJSON()
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) == nil && body.Error.Type != "" {
		out.Type, out.Message = body.Error.Type, body.Error.Message
		return out
	}
	// Not the API's error shape (a proxy's HTML page, an empty body): keep
	// what there is to read.
	out.Message = clip.Line(raw, 300)
	if out.Message == "" {
		out.Message = http.StatusText(out.Status)
	}
	return out
}

// retryAfter reads a retry-after value: delay seconds, or an HTTP date.
// Anything else, or a time already past, is 0.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || math.IsNaN(secs) || secs > math.MaxInt64/float64(time.Second) {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
