package cli

import (
	"fmt"
	"github.com/llmkernels/kernels/internal/redact"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmkernels/kernels/cmd/internal/provider"
	"github.com/llmkernels/kernels/internal/config"
	"github.com/llmkernels/kernels/internal/termtext"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/openai"
)

// Output is how much a command says, the same in the three CLIs
// (docs/configuration.md#output): --quiet, --verbose, or the config key
// output.
type Output int

const (
	// Quiet: results and errors only (and the note that answers are
	// scripted, so they are never taken for a model's).
	Quiet Output = iota - 1
	// Normal: results, and one line per model call, step or wake as it
	// happens (a retry and its wait included).
	Normal
	// Verbose: as Normal, and what each call sent and received, in
	// summary (model, messages, tools and tokens; stop reason, usage).
	Verbose
)

func (o Output) String() string { return config.OutputLevels[o+1] }

// Setting is a setting in force, as `config` shows it.
type Setting struct {
	Key   string `json:"key"`
	Value any    `json:"value"` // a string, a list of strings or a boolean; "" when not set
	// Kind is where the value came from: "flag", "env", "file" or
	// "default" ("" for an API key that is not set); From names the flag,
	// the variable, the file with its line and key, or the default.
	Kind string `json:"source"`
	From string `json:"from"`
	Note string `json:"note,omitempty"` // what the value means, when the value alone does not say
}

// settingsFlags are the flags the settings hold besides the provider's.
func (a *App) addSettingsFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.configPath, "config", "", "config file to read instead of $XDG_CONFIG_HOME/llmkernels/config.toml (~/.config/llmkernels/config.toml); env "+config.EnvFile)
	fs.BoolVarP(&a.quiet, "quiet", "q", false, "print results and errors only; env LLMKERNELS_OUTPUT=quiet")
	fs.BoolVarP(&a.verbose, "verbose", "v", false, "also print what each model call sent and received, in summary; env LLMKERNELS_OUTPUT=verbose")
}

// Output is how much the command should say: --quiet or --verbose, else
// what the environment or the config file says (output).
func (a *App) Output() Output {
	switch {
	case a.quiet:
		return Quiet
	case a.verbose:
		return Verbose
	}
	return a.output
}

// Setting is the value of a setting that has no flag (hermitcrab's
// per-tier models), from the environment or the config file; "" when
// neither sets it.
func (a *App) Setting(key string) string {
	v, _, _ := a.layers.String(key)
	return v
}

// resolve fills the settings no flag gave from the environment, then the
// config file, then the defaults, and records where each came from. cmd's
// flags are parsed.
func (a *App) resolve(cmd *cobra.Command) error {
	fs := cmd.Flags()
	file, err := config.Load(a.configPath, os.Getenv)
	if err != nil {
		return err
	}
	a.layers = config.Layers{Getenv: os.Getenv, File: file}
	a.file = file
	a.settings = nil
	p := &a.Provider
	p.From = map[string]string{}
	changed := func(flag string) bool { f := fs.Lookup(flag); return f != nil && f.Changed }
	record := func(key string, v any, src config.Source, note string) {
		if alias := config.Aliases[key]; alias != "" && src.Kind == "env" && src.Name == alias {
			note = "deprecated: use " + config.Env(key)
		}
		a.settings = append(a.settings, Setting{Key: key, Value: v, Kind: src.Kind, From: src.Name, Note: note})
	}
	str := func(key, flag string, dst *string) config.Source {
		src := config.Source{Kind: "default"}
		switch v, from, ok := a.layers.String(key); {
		case changed(flag):
			src = config.Source{Kind: "flag", Name: "--" + flag}
		case ok:
			*dst, src = v, from
			p.From[flag] = src.Name
		}
		record(key, *dst, src, "")
		return src
	}
	list := func(key, flag string, dst *[]string) {
		switch v, src, ok := a.layers.List(key); {
		case changed(flag):
			record(key, *dst, config.Source{Kind: "flag", Name: "--" + flag}, "")
		case ok:
			*dst = v
			p.From[flag] = src.Name
			record(key, v, src, "")
		default:
			record(key, []string{}, config.Source{Kind: "default"}, "")
		}
	}
	str(config.Provider, "provider", &p.Provider)
	a.resolveModel(changed("model"), record)
	list(config.Fallback, "fallback", &p.Fallback)
	a.resolveBaseURL(changed("base-url"), record)
	list(config.Beta, "beta", &p.Betas)
	if src := str(config.Script, "script", &p.Script); src.Kind == "file" && !filepath.IsAbs(p.Script) {
		p.Script = filepath.Join(filepath.Dir(file.Path), p.Script) // the file's paths are relative to it
		a.settings[len(a.settings)-1].Value = p.Script
	}
	a.resolvePrices(changed("prices"), record)
	switch v, src, ok, err := a.layers.Bool(config.NoCache); {
	case err != nil:
		return err
	case changed("no-cache"):
		record(config.NoCache, p.NoCache, config.Source{Kind: "flag", Name: "--no-cache"}, "")
	case ok:
		p.NoCache = v
		record(config.NoCache, v, src, "")
	default:
		record(config.NoCache, false, config.Source{Kind: "default"}, "")
	}
	if alias := config.Aliases[config.Provider]; p.From["provider"] == alias && a.Output() > Quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s is deprecated: use %s\n", alias, config.Env(config.Provider))
	}
	return a.resolveOutput(record)
}

// resolveModel: the kernel's own key (lumen.model) before the shared one
// (model), in the environment then the file. A kernel that chooses its
// own models (no DefaultModels: hermitcrab, whose wake block names them)
// takes only its own key, so that a model set for the other kernels never
// replaces the instance's choice.
func (a *App) resolveModel(flag bool, record func(string, any, config.Source, string)) {
	p := &a.Provider
	// An empty model is no model: the kernel takes its default for it,
	// so config must not show "" as the one in force.
	if flag && strings.TrimSpace(p.Model) != "" {
		record(config.Model, p.Model, config.Source{Kind: "flag", Name: "--model"}, "")
		return
	}
	own := a.Root.Name() + ".model"
	keys := []string{own}
	if a.DefaultModels != nil {
		keys = append(keys, config.Model)
	}
	for _, layer := range []config.Layers{{Getenv: a.layers.Getenv}, {File: a.layers.File}} {
		for _, k := range keys {
			if v, src, ok := layer.String(k); ok && strings.TrimSpace(v) != "" {
				p.Model = v
				p.From["model"] = src.Name
				record(config.Model, v, src, "")
				return
			}
		}
	}
	if a.DefaultModels == nil {
		record(config.Model, "", config.Source{Kind: "default"}, "each call uses the model its tier names in the wake block; "+own+" or --model replaces it on every tier")
		return
	}
	record(config.Model, a.DefaultModels[p.Provider], config.Source{Kind: "default", Name: a.Root.Name() + "'s for " + p.Provider}, "")
}

// resolveBaseURL: --base-url, LLMKERNELS_BASE_URL, then the provider's
// own variable (ANTHROPIC_BASE_URL, OPENAI_BASE_URL), then the file.
func (a *App) resolveBaseURL(flag bool, record func(string, any, config.Source, string)) {
	p := &a.Provider
	shown := func(key string, v any, src config.Source, note string) {
		// A proxy's password or a gateway's token is never shown.
		if s, ok := v.(string); ok && s != "" {
			v = redact.URL(s)
		}
		record(key, v, src, note)
	}
	if flag {
		shown(config.BaseURL, p.BaseURL, config.Source{Kind: "flag", Name: "--base-url"}, "")
		return
	}
	env := map[string]string{provider.Anthropic: anthropic.EnvBaseURL, provider.OpenAI: openai.EnvBaseURL}[p.Provider]
	if v, src, ok := (config.Layers{Getenv: a.layers.Getenv}).String(config.BaseURL); ok {
		p.BaseURL, p.From["base-url"] = v, src.Name
		shown(config.BaseURL, v, src, "")
		return
	}
	if v := os.Getenv(env); env != "" && v != "" {
		p.BaseURL, p.From["base-url"] = v, env
		shown(config.BaseURL, v, config.Source{Kind: "env", Name: env}, "")
		return
	}
	if v, src, ok := (config.Layers{File: a.layers.File}).String(config.BaseURL); ok {
		p.BaseURL, p.From["base-url"] = v, src.Name
		shown(config.BaseURL, v, src, "")
		return
	}
	shown(config.BaseURL, "", config.Source{Kind: "default"}, "the provider's own API")
}

// resolvePrices: a JSON file from --prices or LLMKERNELS_PRICES, else
// the file's [prices] families over the built-in table.
func (a *App) resolvePrices(flag bool, record func(string, any, config.Source, string)) {
	p := &a.Provider
	builtin := "the built-in table (docs/llm.md#models-prices-and-cache-minimums)"
	if flag {
		record(config.Prices, p.PricesFile, config.Source{Kind: "flag", Name: "--prices"}, "a JSON file over "+builtin)
		return
	}
	if v, src, ok := (config.Layers{Getenv: a.layers.Getenv}).String(config.Prices); ok {
		p.PricesFile, p.From["prices"] = v, src.Name
		record(config.Prices, v, src, "a JSON file over "+builtin)
		return
	}
	if fams := a.layers.File.Prices(); len(fams) > 0 && a.layers.File.Found {
		p.Prices = llm.PriceTable{}
		var names []string
		for family, price := range fams {
			p.Prices[family] = llmPrice(price)
			names = append(names, family)
		}
		slices.Sort(names)
		record(config.Prices, names, a.layers.File.Where(config.Prices), "these families over "+builtin)
		return
	}
	record(config.Prices, "", config.Source{Kind: "default"}, builtin)
}

func llmPrice(p config.Price) llm.Price {
	out := llm.Price{Input: p.Input, Output: p.Output, CacheWrite: p.CacheWrite, CacheWrite1h: p.CacheWrite1h, CacheRead: p.CacheRead, LongPromptOver: p.LongPromptOver}
	if p.LongPrompt != nil {
		lp := llmPrice(*p.LongPrompt)
		out.LongPrompt = &lp
	}
	return out
}

// resolveOutput: --quiet or --verbose (not both), else output.
func (a *App) resolveOutput(record func(string, any, config.Source, string)) error {
	switch {
	case a.quiet && a.verbose:
		return Usagef("--quiet and --verbose contradict each other: give one")
	case a.quiet:
		record(config.Output, Quiet.String(), config.Source{Kind: "flag", Name: "--quiet"}, "")
		return nil
	case a.verbose:
		record(config.Output, Verbose.String(), config.Source{Kind: "flag", Name: "--verbose"}, "")
		return nil
	}
	a.output = Normal
	v, src, ok := a.layers.String(config.Output)
	if !ok {
		record(config.Output, Normal.String(), config.Source{Kind: "default"}, "")
		return nil
	}
	i := slices.Index(config.OutputLevels, v)
	if i < 0 {
		return &config.EnvError{Name: src.Name, Value: v, Want: strings.Join(config.OutputLevels, ", ")}
	}
	a.output = Output(i - 1)
	record(config.Output, v, src, "")
	return nil
}

// apiKey is the row for the provider's key: whether one is set and
// where, never its value.
func (a *App) apiKey() Setting {
	row := func(value, kind, from, note string) Setting {
		return Setting{Key: "api_key", Value: value, Kind: kind, From: from, Note: note}
	}
	switch a.Provider.Provider {
	case provider.Anthropic:
		if os.Getenv(anthropic.EnvAPIKey) != "" {
			return row("set", "env", anthropic.EnvAPIKey, "")
		}
		note := "set ANTHROPIC_API_KEY"
		if a.Provider.KeyHint != "" {
			note += ", or " + strings.TrimPrefix(a.Provider.KeyHint, "or ")
		}
		return row("not set", "", "", note)
	case provider.OpenAI:
		if os.Getenv(openai.EnvAPIKey) != "" {
			return row("set", "env", openai.EnvAPIKey, "")
		}
		if a.Provider.BaseURL != "" || os.Getenv(openai.EnvBaseURL) != "" {
			return row("not needed", "", "", "a server at a base URL (Ollama, vLLM, llama.cpp) takes none")
		}
		return row("not set", "", "", "set OPENAI_API_KEY, or a base URL for a local server")
	case provider.Script:
		return row("not needed", "", "", "scripted answers")
	}
	return row("", "", "", "no such provider")
}

func (a *App) configCommand() *cobra.Command {
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the settings in force and where each came from (flag, environment, config file, default)",
		Long: `Show the settings in force for this command line: the provider, the model, the
fallback chain, the base URL, the beta headers, the script, the prices, --no-cache
and the output level, each with where it came from: a flag, an environment variable
(LLMKERNELS_…), the config file (its path and line) or the default. An API key is
shown as set or not, and from which variable, never its value.

The config file is $XDG_CONFIG_HOME/llmkernels/config.toml (~/.config/llmkernels/config.toml
without XDG_CONFIG_HOME), or the one --config or LLMKERNELS_CONFIG names. Its keys:
docs/configuration.md. With --json: {"config_file": {"path", "found", "from"},
"settings": [{"key", "value", "source", "from", "note"}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			settings := slices.Insert(slices.Clone(a.settings), 1, a.apiKey())
			if a.DefaultModels == nil {
				for _, tier := range []string{"light", "present", "deep"} {
					key := a.Root.Name() + ".models." + tier
					v, src, ok := a.layers.String(key)
					if !ok {
						src = config.Source{Kind: "default"}
					}
					settings = append(settings, Setting{Key: key, Value: v, Kind: src.Kind, From: src.Name,
						Note: "the " + tier + " tier's model where the wake block names none"})
				}
			}
			if *asJSON {
				if err := PrintJSON(cmd.OutOrStdout(), configJSON{File: fileJSON{Path: a.file.Path, Found: a.file.Found, From: a.file.From}, Settings: settings}); err != nil {
					return err
				}
				return a.Provider.Check()
			}
			printConfig(cmd.OutOrStdout(), a.file, settings)
			// Settings a command would refuse (an unknown provider) are
			// shown, then refused as that command would.
			return a.Provider.Check()
		},
	}
	asJSON = JSONFlag(cmd)
	return cmd
}

// configJSON is config --json.
type configJSON struct {
	File     fileJSON  `json:"config_file"`
	Settings []Setting `json:"settings"`
}

type fileJSON struct {
	Path  string `json:"path"`
	Found bool   `json:"found"`
	From  string `json:"from"` // "--config", "LLMKERNELS_CONFIG", or "" for the default location
}

func printConfig(w io.Writer, f *config.File, settings []Setting) {
	switch {
	case f.Path == "":
		fmt.Fprintln(w, "config file: none (no home directory: give one with --config)")
	case f.Found:
		fmt.Fprintf(w, "config file: %s\n", f.Path)
	default:
		fmt.Fprintf(w, "config file: %s (none there: create it to keep settings; docs/configuration.md)\n", f.Path)
	}
	for _, s := range settings {
		v := ""
		switch x := s.Value.(type) {
		case string:
			v = x
		case []string:
			v = strings.Join(x, ", ")
		default:
			v = fmt.Sprint(x)
		}
		if v == "" {
			v = "-"
		}
		from := s.Kind
		switch {
		case s.Kind == "default" && s.From != "":
			from += " (" + s.From + ")"
		case s.From != "":
			from += " " + s.From
		}
		if s.Note != "" {
			from = strings.TrimPrefix(from+"; "+s.Note, "; ")
		}
		fmt.Fprintf(w, "%-26s %-28s %s\n", s.Key, termtext.Line(v), termtext.Line(from))
	}
}
