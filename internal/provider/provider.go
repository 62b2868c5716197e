// Package provider turns the provider flags every kernel CLI shares
// (--provider, --model, --fallback, --script, --base-url, --beta, --prices)
// and the environment into an llm.Client.
package provider

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/openai"
	"github.com/llmkernels/kernels/llm/script"
)

// Names of the providers.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	Script    = "script"
)

// Config is what the flags set.
type Config struct {
	Provider   string
	Model      string
	Fallback   []string
	Script     string
	BaseURL    string
	Betas      []string
	PricesFile string
}

// AddFlags declares the shared provider flags on fs.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Provider, "provider", envOr("LLM_PROVIDER", Anthropic),
		"LLM provider: anthropic (ANTHROPIC_API_KEY), openai (OPENAI_API_KEY; OPENAI_BASE_URL for Ollama, vLLM, llama.cpp) or script (canned responses from --script, for tests and demos); env LLM_PROVIDER")
	fs.StringVar(&c.Model, "model", "", "model to use instead of the kernel's own choice")
	fs.StringSliceVar(&c.Fallback, "fallback", nil, "models tried in order when the model is unavailable (comma-separated)")
	fs.StringVar(&c.Script, "script", "", "script file of canned responses for --provider script (format: docs/scripts.md)")
	fs.StringVar(&c.BaseURL, "base-url", "", "API base URL (overrides ANTHROPIC_BASE_URL / OPENAI_BASE_URL): proxies, gateways, local servers")
	fs.StringSliceVar(&c.Betas, "beta", nil, "extra anthropic-beta header values (comma-separated)")
	fs.StringVar(&c.PricesFile, "prices", "", "JSON file of model prices per million tokens, overriding the built-in table (docs/configuration.md)")
}

// Client builds the llm.Client the flags describe. With --provider script
// it writes a one-line notice to notice, so scripted output is never taken
// for a model's.
func (c *Config) Client(notice io.Writer) (*llm.Client, error) {
	return c.ClientWithKey("", notice)
}

// ClientWithKey is Client with an API key given at run time (the web
// shell's key form); "" means the environment's key.
func (c *Config) ClientWithKey(key string, notice io.Writer) (*llm.Client, error) {
	p, err := c.open(key)
	if err != nil {
		return nil, err
	}
	if c.Provider == Script {
		fmt.Fprintf(notice, "note: responses are scripted from %s (--provider script); no model is called\n", c.Script)
	}
	client := &llm.Client{Provider: p, Fallback: c.Fallback}
	if c.PricesFile != "" {
		if client.Prices, err = llm.LoadPrices(c.PricesFile); err != nil {
			return nil, err
		}
	}
	return client, nil
}

// FlagError is a provider set-up the flags (or LLM_PROVIDER) cannot
// describe: a mistake on the command line, which the CLIs report as a
// usage error (exit 2), as against a key, a file or a server that fails.
type FlagError struct{ msg string }

func (e *FlagError) Error() string { return e.msg }

// UsageError marks the error as the command line's fault for internal/cli.
func (e *FlagError) UsageError() bool { return true }

// Check reports, as a *FlagError, what makes the flags describe no
// provider: an unknown --provider, --provider script without --script,
// --beta with openai. It reads no file and needs no key. Client checks
// it first; a command that starts long work (a server) checks it before.
func (c *Config) Check() error {
	switch c.Provider {
	case Anthropic:
	case OpenAI:
		if len(c.Betas) > 0 {
			return &FlagError{"--beta is an Anthropic header; --provider openai cannot send it"}
		}
	case Script:
		if c.Script == "" {
			return &FlagError{"--provider script needs --script FILE (format: docs/scripts.md)"}
		}
	default:
		return &FlagError{fmt.Sprintf("unknown --provider %q (or LLM_PROVIDER): choose %s", c.Provider, strings.Join([]string{Anthropic, OpenAI, Script}, ", "))}
	}
	return nil
}

func (c *Config) open(key string) (llm.Provider, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	switch c.Provider {
	case OpenAI:
		return openai.New(openai.Config{APIKey: key, BaseURL: c.BaseURL})
	case Script:
		s, err := script.Load(c.Script)
		if err != nil {
			return nil, err
		}
		return script.New(s), nil
	}
	return anthropic.New(anthropic.Config{APIKey: key, BaseURL: c.BaseURL, Betas: c.Betas})
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
