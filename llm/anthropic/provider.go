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
	// Timeout caps one request; default 10 minutes. Setting it also lets
	// the SDK send large max_tokens without streaming, which it otherwise
	// refuses above about 21k tokens.
	Timeout time.Duration
	// HTTPClient sends the requests; default http.DefaultClient.
	HTTPClient *http.Client
}

// defaultTimeout is the SDK's own limit for a non-streaming request.
const defaultTimeout = 10 * time.Minute

// Provider is an llm.Provider on the official Anthropic Go SDK. It makes
// exactly one HTTP request per call: retries belong to llm.Client.
type Provider struct {
	client sdk.Client
	betas  []string // Config.Betas
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
		return nil, errors.New("llm/anthropic: no API key: set " + EnvAPIKey + " or pass anthropic.Config.APIKey")
	}
	opts := []option.RequestOption{
		// Credentials and base URL are resolved here, not by the SDK's
		// own chain (auth tokens, profiles, custom-header env vars).
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithMiddleware(markSent),
	}
	base, from := cfg.BaseURL, "anthropic.Config.BaseURL"
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
	opts = append(opts, option.WithRequestTimeout(timeout))
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{client: sdk.NewClient(opts...), betas: Betas(cfg.Betas, nil)}, nil
}

// Betas are the configured anthropic-beta values, sent with every request
// (llm.BetaProvider): the kernel's request check relaxes what they relax.
func (p *Provider) Betas() []string { return p.betas }

// Messages sends req with the SDK's Messages.New and returns the response
// read from the response body's raw JSON.
func (p *Provider) Messages(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := buildParams(req)
	if err != nil {
		return nil, err
	}
	var opts []option.RequestOption
	if betas := Betas(p.betas, req.Tools); len(betas) > 0 {
		opts = append(opts, option.WithHeader("anthropic-beta", strings.Join(betas, ",")))
	}
	sent := new(atomic.Bool)
	msg, err := p.client.Messages.New(context.WithValue(ctx, sentKey{}, sent), params, opts...)
	if err != nil {
		return nil, mapError(ctx, err, sent.Load())
	}
	raw := msg.RawJSON()
	if raw == "" {
		return nil, errors.New("llm/anthropic: the response has no JSON body")
	}
	var resp llm.Response
	if err := json.Unmarshal([]byte(raw), &resp); err != nil {
		return nil, fmt.Errorf("llm/anthropic: reading the response: %w", err)
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
