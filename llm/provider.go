package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Provider sends one Messages request and returns the response. Adapters
// (llm/anthropic, llm/openai, llm/script) implement it; they do not retry,
// the Client does. An adapter streams the answer, handing its pieces to
// req.OnDelta as they arrive, and returns only a whole answer: a stream
// that breaks off is an error, never a partial response.
type Provider interface {
	Messages(ctx context.Context, req *Request) (*Response, error)
}

// APIError is an error answered by a provider, or a failure to reach it.
type APIError struct {
	Status     int           // HTTP status; 0 when the provider was not reached
	Type       string        // provider's error type, e.g. "overloaded_error"; "connection_error" when not reached
	Message    string        // provider's message
	RetryAfter time.Duration // from the retry-after header; 0 when absent
	RequestID  string        // provider's request id, when it gave one
	Err        error         // the transport error behind a connection_error
	// InStream is set on an error that broke off an answer already
	// streaming (an error event): the model had begun, so the attempt
	// may have been billed whatever the type.
	InStream bool
}

// Unwrap gives the transport error behind a connection error.
func (e *APIError) Unwrap() error { return e.Err }

func (e *APIError) Error() string {
	where := fmt.Sprintf("HTTP %d", e.Status)
	if e.Status == 0 {
		where = "no response"
	}
	msg := fmt.Sprintf("llm: %s %s: %s", where, e.Type, e.Message)
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// Retryable reports whether sending the same request again may succeed:
// rate limits, server errors, overload and connection failures. Client
// errors (400, 401, 403, 404, 413, …) never are, nor is a 429 that says the
// account is out of credit.
func (e *APIError) Retryable() bool {
	if strings.Contains(e.Type, "insufficient_quota") {
		return false // a 429 for an account out of credit: waiting will not help
	}
	switch e.Status {
	case 0, 408, 409, 429, 500, 502, 503, 504, 529:
		return true
	}
	return false
}

// ModelUnavailable reports whether another model might serve the request:
// the model was not found, or the provider stayed overloaded.
func (e *APIError) ModelUnavailable() bool {
	return e.Status == 404 || e.Status == 529 || e.Type == "overloaded_error" || e.Type == "not_found_error"
}

// ConnectionError wraps a transport failure as a retryable APIError.
func ConnectionError(err error) *APIError {
	return &APIError{Type: "connection_error", Message: err.Error(), Err: err}
}

// AsAPIError finds an APIError in err's chain. Network errors that are not
// wrapped yet count as connection errors; the caller's own cancellation or
// deadline does not, so it is never retried.
func AsAPIError(err error) (*APIError, bool) {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr, true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, false
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return ConnectionError(err), true
	}
	return nil, false
}
