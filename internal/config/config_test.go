package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
)

func load(t *testing.T, text string) (*File, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path, func(string) string { return "" })
}

func TestEveryKeyIsFoundWithItsLine(t *testing.T) {
	f, err := load(t, `# a comment
provider = "openai"
fallback = ["a",
  "b"]
hermitcrab = { model = "h", models = { deep = "d" } }

[lumen]
model = "l"

[prices."claude-sonnet-4"]
input = 3
long_prompt = { input = 6 }
`)
	if err != nil {
		t.Fatal(err)
	}
	l := Layers{File: f}
	for key, want := range map[string]struct {
		value string
		line  string
	}{
		"provider":               {"openai", ":2 (provider)"},
		"hermitcrab.model":       {"h", ":5 (hermitcrab.model)"},
		"hermitcrab.models.deep": {"d", ":5 (hermitcrab.models.deep)"},
		"lumen.model":            {"l", ":8 (lumen.model)"},
	} {
		v, src, ok := l.String(key)
		if !ok || v != want.value || src.Kind != "file" || !strings.HasSuffix(src.Name, want.line) {
			t.Errorf("%s = %q from %v (%v), want %q from line %s", key, v, src, ok, want.value, want.line)
		}
	}
	if v, src, _ := l.List("fallback"); strings.Join(v, ",") != "a,b" || !strings.HasSuffix(src.Name, ":3 (fallback)") {
		t.Errorf("fallback = %v from %v", v, src)
	}
	if src := f.Where("prices"); !strings.HasSuffix(src.Name, ":10 (prices)") {
		t.Errorf("prices from %v, want the first line of its tables", src)
	}
	if p := f.Prices()["claude-sonnet-4"]; p.Input != 3 || p.LongPrompt == nil || p.LongPrompt.Input != 6 {
		t.Errorf("prices %+v", p)
	}
}

func TestMistakesNameTheLineAndTheKey(t *testing.T) {
	for text, want := range map[string]string{
		"provder = \"x\"":                                `line 1: unknown key "provder" (did you mean "provider"?)`,
		"\n[solve]\nmdoel = \"x\"":                       `line 3: unknown key "solve.mdoel" (did you mean "solve.model"?)`,
		"[hermitcrab.models]\nligth = \"x\"":             `line 2: unknown key "hermitcrab.models.ligth" (did you mean "hermitcrab.models.light"?)`,
		"[prices.m]\ninput = 1\noutptu = 2":              `line 3: unknown key "prices.m.outptu" (did you mean "prices.m.output"?)`,
		"zebra = 1":                                      `line 1: unknown key "zebra"`,
		"fallback = \"a\"":                               `line 1: fallback: give a list of strings`,
		"model = \"m\"\nfallback = [\"\", \"claude-x\"]": `line 2: fallback: an empty name in the list: remove it`,
		"beta = [\"b\", \" \"]":                          `line 1: beta: an empty name in the list`,
		"[lumen]\nmodel = 4":                             `line 2: lumen.model: give a string in quotes`,
		"output = \"loud\"":                              `line 1: output "loud": choose quiet, normal, verbose`,
		"[prices.m]\ninput = -1":                         `line 2: prices.m.input: give a number of US dollars per million tokens, from 0 to 1000000`,
		"[prices.m]\noutput = nan":                       `line 2: prices.m.output: give a number`,
		"[prices.m]\ncache_read = inf":                   `line 2: prices.m.cache_read: give a number`,
		"[prices.m]\ninput = 1e300":                      `line 2: prices.m.input: give a number`,
		"[prices.m]\nlong_prompt_over = -5":              `line 2: prices.m.long_prompt_over: give a whole number of tokens`,
		"provider = ":                                    `line 1: `,
		"provider = \"a\"\nprovider = \"b\"":             `line 2: key provider is already defined`,
		"[prices]\nm = 1":                                `line 2: prices.m: give a table of prices`,
		// A family with no name prefixes every model: it replaced the
		// whole built-in table and priced unknown models, unwarned.
		"[prices.\"\"]\ninput = 0\noutput = 0":     `line 1: prices."": a family with no name would price every model`,
		"no_cache = \"true\"\nzebra = 1\nzeta = 2": `line 1: no_cache: give true or false`,
	} {
		_, err := load(t, text)
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "config.toml: line") {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "struct") {
			t.Errorf("%q: the message names Go types: %v", text, err)
		}
	}
}

func TestEveryUnknownKeyIsListed(t *testing.T) {
	_, err := load(t, "zebra = 1\n[lumen]\nmodle = 2\n")
	if err == nil || !strings.Contains(err.Error(), `line 1: unknown key "zebra"`) || !strings.Contains(err.Error(), `line 3: unknown key "lumen.modle"`) {
		t.Fatalf("%v", err)
	}
}

// A file an editor saved with a byte-order mark, or with CRLF line ends,
// reads as any other.
func TestAByteOrderMarkAndCRLFAreRead(t *testing.T) {
	f, err := load(t, "\ufeffmodel = \"m\"\r\n[lumen]\r\nmodel = \"l\"\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if v, src, _ := (Layers{File: f}).String("lumen.model"); v != "l" || !strings.HasSuffix(src.Name, ":3 (lumen.model)") {
		t.Fatalf("lumen.model = %q from %v", v, src)
	}
}

// A type error does not hide the problems after it: each is listed,
// in the order of the lines.
func TestEveryProblemIsListed(t *testing.T) {
	_, err := load(t, "zebra = 1\nno_cache = \"yes\"\noutput = \"loud\"\n[lumen]\nmodel = 3\n[prices.m]\ninput = -1\noutput = nan\n")
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("%v", err)
	}
	want := []string{`line 1: unknown key "zebra"`, "line 2: no_cache: give true or false", `line 3: output "loud"`,
		"line 5: lumen.model: give a string", "line 7: prices.m.input: give a number", "line 8: prices.m.output: give a number"}
	if len(fe.Problems) != len(want) {
		t.Fatalf("%d problems, want %d: %v", len(fe.Problems), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(fe.Problems[i], w) {
			t.Errorf("problem %d: %q, want %q", i+1, fe.Problems[i], w)
		}
	}
}

// A file too large to be a config file (/dev/zero never ends) is refused
// having read a bounded part of it.
func TestAnEndlessFileIsRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := Load("/dev/zero", func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "/dev/zero: cannot read the config file --config names: it is larger than 1 MiB") {
		t.Fatalf("%v", err)
	}
	if f, err := Load(os.DevNull, func(string) string { return "" }); err != nil || !f.Found {
		t.Fatalf("%s: %+v %v, want an empty file", os.DevNull, f, err)
	}
}

// The file's prices are bounded as a --prices file's are.
func TestPricesAreBoundedAsAPricesFileIs(t *testing.T) {
	if maxPrice != llm.MaxPrice {
		t.Fatalf("maxPrice %v, llm.MaxPrice %v", maxPrice, llm.MaxPrice)
	}
}

func TestTheFileIsFoundWhereXDGSays(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": "/xdg", "HOME": "/home/me"}
	get := func(k string) string { return env[k] }
	if p := DefaultPath(get); p != "/xdg/llmkernels/config.toml" {
		t.Errorf("%s", p)
	}
	env["XDG_CONFIG_HOME"] = "relative" // the XDG specification: ignored
	if p := DefaultPath(get); p != "/home/me/.config/llmkernels/config.toml" {
		t.Errorf("%s", p)
	}
	// No file at the default path: no settings, and no error.
	env["XDG_CONFIG_HOME"] = t.TempDir()
	f, err := Load("", get)
	if err != nil || f.Found || f.Path != filepath.Join(env["XDG_CONFIG_HOME"], "llmkernels", "config.toml") {
		t.Fatalf("%+v %v", f, err)
	}
	// LLMKERNELS_CONFIG names another, which must exist; --config wins.
	other := filepath.Join(t.TempDir(), "other.toml")
	if err := os.WriteFile(other, []byte(`model = "m"`), 0o644); err != nil {
		t.Fatal(err)
	}
	env[EnvFile] = other
	if f, err := Load("", get); err != nil || !f.Found || f.From != EnvFile {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := Load(other+".missing", get); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Fatalf("a missing --config file: %v", err)
	}
}

func TestTheEnvironmentComesBeforeTheFile(t *testing.T) {
	f, err := load(t, "model = \"file\"\nno_cache = true\nbeta = [\"x\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	l := Layers{Getenv: func(k string) string { return env[k] }, File: f}
	if v, src, _ := l.String(Model); v != "file" || src.Kind != "file" {
		t.Fatalf("%s from %v", v, src)
	}
	env["LLMKERNELS_MODEL"] = "env"
	env["LLMKERNELS_BETA"] = " a, ,b "
	env["LLMKERNELS_NO_CACHE"] = "Off"
	if v, src, _ := l.String(Model); v != "env" || src != (Source{Kind: "env", Name: "LLMKERNELS_MODEL"}) {
		t.Fatalf("%s from %v", v, src)
	}
	if v, _, _ := l.List(Beta); strings.Join(v, "|") != "a|b" {
		t.Fatalf("%q", v)
	}
	if v, _, ok, err := l.Bool(NoCache); v || !ok || err != nil {
		t.Fatalf("%v %v %v", v, ok, err)
	}
	env["LLMKERNELS_NO_CACHE"] = "maybe"
	if _, _, _, err := l.Bool(NoCache); err == nil || !strings.Contains(err.Error(), `LLMKERNELS_NO_CACHE="maybe"`) {
		t.Fatalf("%v", err)
	}
	// The deprecated name is read after the new one.
	env["LLM_PROVIDER"] = "script"
	if v, src, _ := l.String(Provider); v != "script" || src.Name != "LLM_PROVIDER" {
		t.Fatalf("%s from %v", v, src)
	}
	env["LLMKERNELS_PROVIDER"] = "openai"
	if v, _, _ := l.String(Provider); v != "openai" {
		t.Fatalf("%s", v)
	}
	if Env("hermitcrab.models.light") != "LLMKERNELS_HERMITCRAB_MODELS_LIGHT" {
		t.Fatal(Env("hermitcrab.models.light"))
	}
}
