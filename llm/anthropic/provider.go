package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
)

// Environment variables New reads when Config leaves the value empty.
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// Config configures a Provider. Zero fields take the defaults.
type Config struct {
	APIKey  string // default: env ANTHROPIC_API_KEY; required
	BaseURL string // default: env ANTHROPIC_BASE_URL, else the SDK's https://api.anthropic.com
	// Betas are sent in the anthropic-beta header of every request, with
	// the values the request's tools need (see RequiredBeta), each once.
	Betas []string
	// Timeout is the longest a request waits with nothing arriving: for
	// the answer to begin, or for the next piece of its stream (the API's
	// pings count). A request that stalls longer is cancelled and fails
	// as a connection error, which llm.Client retries; an answer that
	// keeps arriving is never cut off. Default 10 minutes.
	Timeout time.Duration
	// HTTPClient sends the requests; default http.DefaultClient.
	HTTPClient *http.Client
}

// defaultTimeout is the default stall limit: the SDK's own limit for a
// whole request that does not stream.
const defaultTimeout = 10 * time.Minute

// Provider is an llm.Provider on the official Anthropic Go SDK. It makes
// exactly one HTTP request per call: retries belong to llm.Client.
type Provider struct {
	// messages is the SDK's Messages service alone, not a whole sdk.Client
	// (see New).
	messages  sdk.MessageService
	betas     []string      // Config.Betas
	timeout   time.Duration // Config.Timeout: the stall limit
	saidWhole atomic.Bool   // the note that the server does not stream was given
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider for cfg, or an error saying which setting is
// missing or malformed.
func New(cfg Config) (*Provider, error) {
	key := cfg.APIKey
	if key == "" {
		key = os.Getenv(EnvAPIKey)
	}
	if key == "" {
		return nil, errors.New("anthropic: no API key: set " + EnvAPIKey + " (create a key at https://console.anthropic.com/settings/keys)")
	}
	opts := []option.RequestOption{
		// Credentials and base URL are resolved here, not by the SDK's
		// own chain (auth tokens, profiles, custom-header env vars): New
		// builds the Messages service without sdk.DefaultClientOptions.
		option.WithEnvironmentProduction(),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithMiddleware(markSent),
	}
	base, from := cfg.BaseURL, "the configured base URL"
	if base == "" {
		base, from = os.Getenv(EnvBaseURL), EnvBaseURL
	}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("llm/anthropic: base URL %q (from %s) is not an absolute http(s) URL; want e.g. https://api.anthropic.com", base, from)
		}
		opts = append(opts, option.WithBaseURL(base))
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	// No request timeout for the SDK: it would cut off a long answer that
	// is still streaming. The stall limit watches the stream instead.
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	// Only the Messages service: sdk.NewClient builds every service of the
	// API and reaches the SDK's credential chain (profiles, token files),
	// which would all stay in each binary unused.
	return &Provider{messages: sdk.NewMessageService(opts...), betas: Betas(cfg.Betas, nil), timeout: timeout}, nil
}

// Betas are the configured anthropic-beta values, sent with every request
// (llm.BetaProvider): the kernel's request check relaxes what they relax.
func (p *Provider) Betas() []string { return p.betas }

// Messages sends req with the SDK's streaming Messages.NewStreaming,
// hands the answer's pieces to req.OnDelta as they arrive and returns the
// answer the events assemble into (llm.StreamAssembler), built from their
// raw JSON. A stream that breaks off, or stalls longer than the timeout,
// is an error: a partial answer is never returned.
func (p *Provider) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := buildParams(req)
	if err != nil {
		return nil, err
	}
	attempt, watch := llm.WatchStream(ctx, p.timeout)
	defer watch.Stop()
	opts := []option.RequestOption{option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		return res, errors.Join(err, watch.Response(res))
	})}
	if betas := Betas(p.betas, req.Tools); len(betas) > 0 {
		opts = append(opts, option.WithHeader("anthropic-beta", strings.Join(betas, ",")))
	}
	sent := new(atomic.Bool)
	stream := p.messages.NewStreaming(context.WithValue(attempt, sentKey{}, sent), params, opts...)
	defer func() { _ = stream.Close() }() // read to its end or abandoned: nothing to report
	asm := llm.NewStreamAssembler(req.OnDelta)
	for stream.Next() {
		ev := stream.Current()
		if err := asm.Add(llm.StreamEvent{Type: ev.Type, Data: json.RawMessage(ev.RawJSON())}); err != nil {
			return nil, err
		}
	}
	if err := stream.Err(); err != nil {
		if watch.Stalled() {
			return nil, watch.StallError("the API")
		}
		return nil, mapError(ctx, err, sent.Load())
	}
	if watch.Whole != nil {
		return p.wholeAnswer(watch.Whole)
	}
	return asm.Response()
}

// wholeAnswer reads the answer of a server that does not stream, and says
// so once.
func (p *Provider) wholeAnswer(body []byte) (*llm.Response, error) {
	var resp llm.Response
	if err := json.Unmarshal(body, &resp); err != nil || resp.Type != "message" {
		return nil, &llm.APIError{Status: 200, Type: "invalid_response", Message: "the answer is neither a stream nor a message: " + clip.Line(string(body), 300)}
	}
	if !p.saidWhole.Swap(true) {
		resp.Notes = append(resp.Notes, "the Anthropic API server answers without streaming: answers arrive whole")
	}
	return &resp, nil
}

// sentKey marks, in a call's context, whether the SDK handed the request to
// the HTTP client: an error after that is a transport failure, one before
// it (encoding, configuration) is not, and must not be retried.
type sentKey struct{}

func markSent(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if sent, ok := req.Context().Value(sentKey{}).(*atomic.Bool); ok {
		sent.Store(true)
	}
	return next(req)
}
