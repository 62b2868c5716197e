package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmkernels/kernels/llm"
)

// Environment variables New reads when Config leaves a field empty.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// defaultTimeout bounds one request when Config.Timeout is 0, so a server
// that accepts the connection and never answers cannot hang a call.
const defaultTimeout = 10 * time.Minute

// placeholderAPIKey is sent when a base URL is set and no key is given:
// local servers (Ollama, vLLM, llama.cpp) ignore the key, but the SDK and
// some servers expect an Authorization header to be present.
const placeholderAPIKey = "no-key"

// ErrUnsupported marks a request this provider refuses to send because
// Chat Completions cannot express part of it. It is not an *llm.APIError:
// sending the same request again cannot succeed.
var ErrUnsupported = errors.New("llm/openai: not supported by Chat Completions")

// Config configures a Provider. Empty fields fall back to the environment.
type Config struct {
	APIKey  string // default $OPENAI_API_KEY; may be empty when a base URL is set
	BaseURL string // default $OPENAI_BASE_URL, else the OpenAI API
	// Timeout is the longest a request waits with nothing arriving: for
	// the answer to begin, or for its next chunk; 0 means 10 minutes. A
	// streamed answer that keeps arriving is never cut off; a whole answer
	// (a server that does not stream) must come within it.
	Timeout    time.Duration
	HTTPClient *http.Client // nil means the SDK's default client
}

// Provider is an llm.Provider that sends Messages requests as Chat
// Completions requests through the official openai-go SDK.
type Provider struct {
	// completions is the SDK's Chat Completions service alone, not a whole
	// oai.Client: nothing else of the API is used (see New).
	completions oai.ChatCompletionService
	baseURL     string
	timeout     time.Duration
	// legacyMaxTokens sends max_tokens instead of max_completion_tokens,
	// for servers that are not OpenAI's (see the package doc).
	legacyMaxTokens bool
	// plain is set once the server showed it does not stream: requests
	// go without streaming from then on.
	plain atomic.Bool
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider. The key comes from cfg.APIKey or $OPENAI_API_KEY,
// the base URL from cfg.BaseURL or $OPENAI_BASE_URL. A base URL without a
// key is a local server and gets a placeholder key; with neither, New fails.
func New(cfg Config) (*Provider, error) {
	key := cfg.APIKey
	if key == "" {
		key = os.Getenv(EnvAPIKey)
	}
	base, from := cfg.BaseURL, "the configured base URL"
	if base == "" {
		base, from = os.Getenv(EnvBaseURL), EnvBaseURL
	}
	if key == "" && base == "" {
		return nil, fmt.Errorf("llm/openai: no API key and no base URL: set %s for the OpenAI API, or %s for an OpenAI-compatible server such as Ollama (http://localhost:11434/v1), vLLM or llama.cpp", EnvAPIKey, EnvBaseURL)
	}
	if key == "" {
		key = placeholderAPIKey
	}
	opts := []option.RequestOption{
		option.WithAPIKey(key),
		option.WithMaxRetries(0), // llm.Client retries; the adapter never does
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	p := &Provider{timeout: timeout}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("llm/openai: base URL %q (from %s) is not an absolute http(s) URL; want e.g. http://localhost:11434/v1", base, from)
		}
		opts = append(opts, option.WithBaseURL(base))
		p.baseURL = base
		p.legacyMaxTokens = !isOpenAIHost(u.Hostname())
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	// No request timeout for the SDK on a stream: it would cut off a long
	// answer still arriving. The stall limit watches it instead.
	//
	// Only the Chat Completions service, on the options oai.NewClient would
	// give it (DefaultClientOptions: the SDK's HTTP client and environment
	// variables). oai.NewClient builds every service of the API, which
	// keeps all their constructors in each binary (0.1 MB).
	p.completions = oai.NewChatCompletionService(append(oai.DefaultClientOptions(), opts...)...)
	return p, nil
}

// isOpenAIHost reports whether host serves OpenAI's own models, which take
// max_completion_tokens (reasoning models reject max_tokens).
func isOpenAIHost(host string) bool {
	host = strings.ToLower(host)
	return host == "api.openai.com" || strings.HasSuffix(host, ".openai.azure.com")
}

// Messages sends req as one streaming Chat Completions request, hands the
// answer's pieces to req.OnDelta as they arrive, and maps the answer back.
// A server that does not stream (it answers whole, or refuses the
// streaming request naming streaming) gets plain requests from then on,
// said once in the answer's Notes. It refuses (ErrUnsupported) what Chat
// Completions cannot express, and never retries: failures come back as
// *llm.APIError for llm.Client.
func (p *Provider) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	if !p.plain.Load() {
		resp, refused, err := p.streamed(ctx, req, params)
		if !refused {
			return resp, err
		}
	}
	resp, err := p.whole(ctx, params, req.Model)
	if err != nil {
		return nil, err
	}
	return p.arrivedWhole(resp, req)
}

// whole sends a plain (not streaming) request, limited to the timeout.
func (p *Provider) whole(ctx context.Context, params oai.ChatCompletionNewParams, model string) (*llm.Response, error) {
	var httpResp *http.Response
	sent := false // set once the SDK hands the request to the HTTP client
	markSent := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		sent = true
		return next(r)
	}
	completion, err := p.completions.New(ctx, params,
		option.WithResponseInto(&httpResp), option.WithMiddleware(markSent), option.WithRequestTimeout(p.timeout))
	if err != nil {
		return nil, p.mapError(ctx, err, sent, httpResp)
	}
	return toResponse(completion, model)
}
