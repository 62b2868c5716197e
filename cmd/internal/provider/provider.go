// Package provider turns the provider settings every kernel CLI shares
// (--provider, --model, --fallback, --script, --base-url, --beta, --prices,
// --no-cache, and the same keys of the environment and the config file)
// into an llm.Client.
package provider

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmkernels/kernels/internal/config"
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

// Names lists the providers.
var Names = []string{Anthropic, OpenAI, Script}

// Config is the provider set-up: what the flags set, and what internal/cli
// fills in from the environment and the config file where no flag was
// given.
type Config struct {
	Provider   string
	Model      string
	Fallback   []string
	Script     string
	BaseURL    string
	Betas      []string
	PricesFile string
	// Prices are price families from the config file, over the built-in
	// table; a PricesFile, when given, is used instead.
	Prices  llm.PriceTable
	NoCache bool
	// From names where a setting that did not come from its flag came
	// from, by flag name ("provider" → "LLMKERNELS_PROVIDER"), for the
	// messages that quote it.
	From map[string]string
	// KeyHint is one more way to give the Anthropic key, for the message
	// saying none was found ("store one with 'hermitcrab key set'").
	KeyHint string
	// Demo is the command that shows the kernel working without a key
	// ("solve run --demo"), for the same message.
	Demo string
}

// AddFlags declares the shared provider flags on fs.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Provider, "provider", Anthropic,
		"LLM provider: anthropic (ANTHROPIC_API_KEY), openai (OPENAI_API_KEY; OPENAI_BASE_URL for Ollama, vLLM, llama.cpp) or script (canned responses from --script, for tests and demos: nothing is charged, and the costs shown are what the same calls would cost on the models used); env LLMKERNELS_PROVIDER")
	fs.StringVar(&c.Model, "model", "", "model to use instead of the kernel's own choice; env LLMKERNELS_MODEL")
	fs.StringSliceVar(&c.Fallback, "fallback", nil, "models tried in order when the model is unavailable (comma-separated); env LLMKERNELS_FALLBACK")
	fs.StringVar(&c.Script, "script", "", "script file of canned responses for --provider script (format: docs/scripts.md); env LLMKERNELS_SCRIPT")
	fs.StringVar(&c.BaseURL, "base-url", "", "API base URL (overrides ANTHROPIC_BASE_URL / OPENAI_BASE_URL): proxies, gateways, local servers; env LLMKERNELS_BASE_URL")
	fs.StringSliceVar(&c.Betas, "beta", nil, "extra anthropic-beta header values (comma-separated); env LLMKERNELS_BETA")
	fs.StringVar(&c.PricesFile, "prices", "", "JSON file of model prices per million tokens, overriding the built-in table (docs/configuration.md); env LLMKERNELS_PRICES")
	fs.BoolVar(&c.NoCache, "no-cache", false, "send requests without prompt-cache breakpoints (a gateway that refuses them, or to measure); env LLMKERNELS_NO_CACHE")
}

// Client builds the llm.Client the settings describe. With --provider
// script it writes a one-line notice to notice, so scripted output is
// never taken for a model's.
func (c *Config) Client(notice io.Writer) (*llm.Client, error) {
	return c.ClientWithKey("", notice)
}

// ClientWithKey is Client with an API key given at run time (the web
// shell's key form, the key hermitcrab stores); "" means the environment's
// key.
func (c *Config) ClientWithKey(key string, notice io.Writer) (*llm.Client, error) {
	p, err := c.open(key)
	if err != nil {
		return nil, err
	}
	if c.Provider == Script {
		fmt.Fprintf(notice, "note: responses are scripted from %s (--provider script): no model is called and nothing is charged; costs are metered as a real run on the same models would be\n", c.Script)
	}
	client := &llm.Client{Provider: p, Fallback: c.Fallback, NoCache: c.NoCache, Scripted: c.Provider == Script}
	switch {
	case c.PricesFile != "":
		if client.Prices, err = llm.LoadPrices(c.PricesFile); err != nil {
			return nil, err
		}
	case c.Prices != nil:
		client.Prices = llm.PricesWith(c.Prices)
	}
	return client, nil
}

// FlagError is a provider set-up the settings cannot describe: a mistake
// in the invocation (a flag, a variable, the config file), which the CLIs
// report as a usage error (exit 2), as against a key, a file or a server
// that fails.
type FlagError struct {
	msg string
	// settings: the value at fault came from the environment or the
	// config file, which --help does not answer.
	settings bool
}

func (e *FlagError) Error() string { return e.msg }

// FromSettings reports whether the value at fault came from the
// environment or the config file rather than a flag.
func (e *FlagError) FromSettings() bool { return e.settings }

// UsageError marks the error as the command line's fault for internal/cli.
func (e *FlagError) UsageError() bool { return true }

// KeyError is a provider that needs an API key and was given none: the
// message says where a key goes.
type KeyError struct{ msg string }

func (e *KeyError) Error() string { return e.msg }

// named is how a message names the setting of flag: --flag when the flag
// gave it (or nothing did), else the setting and where it came from.
func (c *Config) named(flag, key string) string {
	if from := c.From[flag]; from != "" {
		return fmt.Sprintf("%s (from %s)", key, from)
	}
	return "--" + flag
}

// Check reports, as a *FlagError, what makes the settings describe no
// provider: an unknown provider, script without a script file, betas with
// openai, a base URL that is not an http(s) URL. It reads no file and
// needs no key. Client checks it first; a command that starts long work (a
// server) checks it before.
func (c *Config) Check() error {
	switch c.Provider {
	case Anthropic:
	case OpenAI:
		if len(c.Betas) > 0 {
			return &FlagError{fmt.Sprintf("%s is an Anthropic header (anthropic-beta); --provider openai cannot send it", c.named("beta", "beta")), c.From["beta"] != ""}
		}
	case Script:
		if c.Script == "" {
			return &FlagError{"--provider script needs --script FILE (or script in the config file; format: docs/scripts.md)", false}
		}
	default:
		msg := fmt.Sprintf("unknown --provider %q", c.Provider)
		if from := c.From["provider"]; from != "" {
			msg = fmt.Sprintf("unknown provider %q from %s", c.Provider, from)
		}
		msg += fmt.Sprintf(" (choose %s)", strings.Join(Names, ", "))
		if near := config.Nearest(c.Provider, Names); near != "" {
			msg += fmt.Sprintf("; did you mean %s?", near)
		}
		return &FlagError{msg, c.From["provider"] != ""}
	}
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &FlagError{fmt.Sprintf("%s %q is not an http(s) URL: give one such as %s", c.named("base-url", "base URL"), c.BaseURL, exampleURL[c.Provider]), c.From["base-url"] != ""}
		}
	}
	return nil
}

var exampleURL = map[string]string{Anthropic: "https://api.anthropic.com", OpenAI: "http://localhost:11434/v1", Script: "https://api.anthropic.com"}

func (c *Config) open(key string) (llm.Provider, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	switch c.Provider {
	case OpenAI:
		if key == "" && os.Getenv(openai.EnvAPIKey) == "" && c.BaseURL == "" && os.Getenv(openai.EnvBaseURL) == "" {
			return nil, &KeyError{"no OpenAI API key: set OPENAI_API_KEY for OpenAI's API, or give a server's URL with --base-url (or OPENAI_BASE_URL), such as Ollama's http://localhost:11434/v1, which needs no key"}
		}
		return openai.New(openai.Config{APIKey: key, BaseURL: c.BaseURL})
	case Script:
		s, err := script.Load(c.Script)
		if errors.Is(err, fs.ErrNotExist) { // a mistyped path: the invocation's mistake
			return nil, &FlagError{fmt.Sprintf("%s %s: no such file", c.named("script", "script"), c.Script), c.From["script"] != ""}
		}
		if err != nil {
			return nil, err
		}
		return script.New(s), nil
	}
	if key == "" && os.Getenv(anthropic.EnvAPIKey) == "" {
		hint := ""
		if c.KeyHint != "" {
			hint = ", " + c.KeyHint
		}
		demo := ""
		if c.Demo != "" {
			demo = "; to see it work without a key: " + c.Demo
		}
		return nil, &KeyError{"no Anthropic API key: set ANTHROPIC_API_KEY (create a key at https://console.anthropic.com/settings/keys)" + hint +
			", or choose another provider with --provider (openai for OpenAI or a local server such as Ollama; script to replay canned answers)" + demo}
	}
	return anthropic.New(anthropic.Config{APIKey: key, BaseURL: c.BaseURL, Betas: c.Betas})
}
