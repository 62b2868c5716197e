package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/llm"
)

// Provider is an llm.Provider that answers from a Script. It is strict: a
// request that breaks the API's rules (llm.CheckRequest) is answered with
// the API's 400 invalid_request_error and uses no entry. It is safe for
// concurrent use.
type Provider struct {
	player *Player

	mu       sync.Mutex
	requests []*llm.Request
}

// New returns a provider playing s from its first entry.
func New(s *Script) *Provider {
	return &Provider{player: NewPlayer(s)}
}

// Messages records req, checks it, and answers it with the first unused
// entry of the script whose match holds: a response, streamed as the API
// streams it (its pieces go to req.OnDelta), or an error entry as an
// *llm.APIError. When no entry answers, the error wraps
// ErrExhausted and is not an *llm.APIError.
func (p *Provider) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req == nil {
		return nil, errors.New("script: Messages called with a nil request")
	}
	p.mu.Lock()
	p.requests = append(p.requests, deepCopy(req))
	number := len(p.requests)
	p.mu.Unlock()

	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := llm.CheckRequest(req); err != nil {
		return nil, InvalidRequest(err)
	}
	encoded, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("script: request %d cannot be encoded as JSON, so no API could receive it: %w", number, err)
	}
	resp, se, err := p.player.Answer(req, number, encoded)
	if err != nil {
		return nil, err
	}
	if se != nil {
		return nil, &llm.APIError{Status: se.Status, Type: se.Type, Message: se.Message, RetryAfter: se.RetryAfterDuration()}
	}
	// Delivered as the API streams it: the pieces a stream of it carries
	// go to OnDelta.
	if err := llm.EmitDeltas(resp, req.OnDelta); err != nil {
		return nil, fmt.Errorf("script: streaming the answer: %w", err)
	}
	return resp, nil
}

// SetClock sets the clock of the simulated prompt cache (see
// Player.SetClock).
func (p *Provider) SetClock(now func() time.Time) { p.player.SetClock(now) }

// Requests returns a deep copy of every request received, in order,
// including those rejected as invalid.
func (p *Provider) Requests() []*llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*llm.Request, len(p.requests))
	for i, r := range p.requests {
		out[i] = deepCopy(r)
	}
	return out
}

// Remaining is the number of script entries not used yet; a test asserts
// it is 0 to know the whole script was played.
func (p *Provider) Remaining() int { return p.player.Remaining() }

// invalidRequest turns llm.CheckRequest's error into the API's 400.
func InvalidRequest(err error) *llm.APIError {
	msg := err.Error()
	var inv *llm.InvalidRequestError
	if errors.As(err, &inv) {
		msg = strings.Join(inv.Violations, "; ")
	}
	return &llm.APIError{Status: 400, Type: "invalid_request_error", Message: msg}
}

// deepCopy copies v and everything it points to, so the copy shares no
// memory with v. It follows the type by reflection, so fields added to the
// llm types later are copied too; unexported fields are copied shallowly.
func deepCopy[T any](v T) T {
	var out T
	copyValue(reflect.ValueOf(&out).Elem(), reflect.ValueOf(v))
	return out
}

func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() { // nil and empty differ (ToolResultContent.Blocks)
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyValue(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Array:
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(src.Type().Elem()).Elem()
			copyValue(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Struct:
		dst.Set(src)
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				copyValue(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		v := reflect.New(src.Elem().Type()).Elem()
		copyValue(v, src.Elem())
		dst.Set(v)
	default:
		dst.Set(src)
	}
}
