package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
)

// mapError turns an SDK failure into the error llm.Client expects: the
// caller's context error as is; *llm.APIError when the server answered;
// llm.ConnectionError when the request went out and no answer came; and a
// plain error, not retried, when the request could not be built.
func (p *Provider) mapError(ctx context.Context, err error, sent bool, httpResp *http.Response) error {
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return err
	}
	var sdkErr *oai.Error
	if errors.As(err, &sdkErr) {
		var body []byte
		if sdkErr.Response != nil && sdkErr.Response.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(sdkErr.Response.Body, 64<<10))
		}
		var header http.Header
		if sdkErr.Response != nil {
			header = sdkErr.Response.Header
		}
		return newAPIError(sdkErr.StatusCode, header, sdkErr.Type, sdkErr.Code, sdkErr.Message, body)
	}
	if httpResp != nil && !transportFailure(err) {
		// The server answered, but the SDK could not use the answer: an
		// error body it could not decode (the SDK left it readable), or a
		// success body that is not a chat completion.
		if httpResp.StatusCode >= 400 {
			var body []byte
			if httpResp.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(httpResp.Body, 64<<10))
			}
			return newAPIError(httpResp.StatusCode, httpResp.Header, "", "", "", body)
		}
		apiErr := newAPIError(httpResp.StatusCode, httpResp.Header, "invalid_response", "", "", nil)
		apiErr.Message = fmt.Sprintf("the server's answer is not a usable chat completion: %v", err)
		return apiErr
	}
	if !sent {
		return fmt.Errorf("llm/openai: request not sent: %w", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return llm.ConnectionError(fmt.Errorf("no response from %s within the %s timeout: %w", p.endpoint(), p.timeout, err))
	}
	return llm.ConnectionError(fmt.Errorf("%s: %w", p.endpoint(), err))
}

// transportFailure reports whether err is the connection failing (a body
// cut off, a timeout) rather than an answer the SDK could not decode.
func transportFailure(err error) bool {
	var netErr net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr)
}

func (p *Provider) endpoint() string {
	if p.baseURL == "" {
		return "the OpenAI API"
	}
	return p.baseURL
}

// newAPIError builds an *llm.APIError. Type is OpenAI's error type, with
// its code after a slash when both are given ("invalid_request_error/
// model_not_found"). When the SDK found no message (servers that do not
// wrap errors in {"error": {...}}), the body supplies it.
func newAPIError(status int, header http.Header, errType, code, message string, body []byte) *llm.APIError {
	if message == "" || errType == "" {
		bt, bc, bm := parseErrorBody(body)
		if message == "" {
			message = bm
		}
		if errType == "" {
			errType = bt
		}
		if code == "" {
			code = bc
		}
	}
	switch {
	case errType == "" && code == "":
		errType = "api_error"
	case errType == "":
		errType = code
	case code != "" && code != errType:
		errType += "/" + code
	}
	if message == "" {
		message = http.StatusText(status)
	}
	e := &llm.APIError{Status: status, Type: errType, Message: message}
	if header != nil {
		e.RetryAfter = retryAfter(header, time.Now())
		e.RequestID = header.Get("x-request-id")
	}
	return e
}

// parseErrorBody reads the error shapes OpenAI-compatible servers use that
// the SDK does not ({"error": {…}} it decodes itself): {"error": "text"}
// and the flat {"type", "code", "message"}; anything else is returned as
// text.
func parseErrorBody(body []byte) (errType, code, message string) {
	text := strings.TrimSpace(string(body))
	if text == "" {
		return "", "", ""
	}
	type fields struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	var outer struct {
		fields
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &outer); err != nil {
		return "", "", clip.Line(text, 500)
	}
	f := outer.fields
	var s string
	if len(outer.Error) > 0 && json.Unmarshal(outer.Error, &s) == nil {
		f.Message = s
	}
	if f.Message == "" {
		f.Message = clip.Line(text, 500)
	}
	return f.Type, codeString(f.Code), f.Message
}

// codeString renders an error code given as a string or a number.
func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// retryAfter reads retry-after-ms (OpenAI) or retry-after (seconds or an
// HTTP date); 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
