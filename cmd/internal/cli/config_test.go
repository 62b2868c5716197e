package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// isolate gives the test a config directory of its own and clears every
// variable a setting reads; it returns the config file's path (not
// written).
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LLMKERNELS_") {
			t.Setenv(name, "")
		}
	}
	for _, name := range []string{"LLM_PROVIDER", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		t.Setenv(name, "")
	}
	return filepath.Join(dir, "llmkernels", "config.toml")
}

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// settingsApp is a CLI named name (a kernel's: the file has a table for
// each) whose "client" command prints the
// client it would use and the output level.
func settingsApp(name string, defaults map[string]string) *App {
	app := New(name, "test", "test")
	app.DefaultModels = defaults
	app.Root.AddCommand(&cobra.Command{Use: "client", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		c, err := app.Provider.Client(cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "provider=%s model=%s fallback=%s no_cache=%v output=%s light=%s\n", app.Provider.Provider, app.Provider.Model,
			strings.Join(c.Fallback, ","), c.NoCache, app.Output(), app.Setting(name+".models.light"))
		return nil
	}})
	return app
}

func executeApp(app *App, args ...string) (status int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	app.Root.SetOut(&out)
	app.Root.SetErr(&errOut)
	status = app.Execute(context.Background(), args)
	return status, out.String(), errOut.String()
}

// configDoc runs config --json.
func configDoc(t *testing.T, app *App, args ...string) map[string]Setting {
	t.Helper()
	status, out, stderr := executeApp(app, append([]string{"config", "--json"}, args...)...)
	if status != ExitOK {
		t.Fatalf("config: status %d, stderr %q", status, stderr)
	}
	var doc struct {
		Settings []Setting `json:"settings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("config --json: %v\n%s", err, out)
	}
	m := map[string]Setting{}
	for _, s := range doc.Settings {
		m[s.Key] = s
	}
	return m
}

// Flags win over the environment, which wins over the file, which wins
// over the defaults; config says where each value came from.
func TestSettingsTakeFlagsThenEnvironmentThenFileThenDefaults(t *testing.T) {
	path := isolate(t)
	writeConfig(t, path, "provider = \"script\"\nscript = \"answers.json\"\nmodel = \"from-file\"\nfallback = [\"f1\", \"f2\"]\nno_cache = true\noutput = \"quiet\"\n")
	writeConfig(t, filepath.Join(filepath.Dir(path), "answers.json"), pongScript)
	defaults := map[string]string{"anthropic": "default-model", "script": "scripted-default"}

	_, out, stderr := executeApp(settingsApp("lumen", defaults), "client")
	if want := "provider=script model=from-file fallback=f1,f2 no_cache=true output=quiet"; !strings.Contains(out, want) {
		t.Fatalf("file: %q, want %q (stderr %q)", out, want, stderr)
	}
	doc := configDoc(t, settingsApp("lumen", defaults))
	if s := doc["model"]; s.Kind != "file" || !strings.HasPrefix(s.From, path+":3 ") {
		t.Errorf("model from %s %s, want the file's line 3", s.Kind, s.From)
	}
	if s := doc["script"]; s.Value != filepath.Join(filepath.Dir(path), "answers.json") {
		t.Errorf("script %v: a path in the file is relative to the file", s.Value)
	}

	t.Setenv("LLMKERNELS_MODEL", "from-env")
	t.Setenv("LLMKERNELS_FALLBACK", "e1, e2")
	t.Setenv("LLMKERNELS_NO_CACHE", "0")
	t.Setenv("LLMKERNELS_OUTPUT", "verbose")
	_, out, _ = executeApp(settingsApp("lumen", defaults), "client")
	if want := "model=from-env fallback=e1,e2 no_cache=false output=verbose"; !strings.Contains(out, want) {
		t.Fatalf("environment: %q, want %q", out, want)
	}
	// The kernel's own key wins over the shared one, in the same layer.
	t.Setenv("LLMKERNELS_LUMEN_MODEL", "kernel-env")
	_, out, _ = executeApp(settingsApp("lumen", defaults), "client")
	if !strings.Contains(out, "model=kernel-env") {
		t.Fatalf("kernel.model: %q", out)
	}

	_, out, _ = executeApp(settingsApp("lumen", defaults), "client", "--model", "from-flag", "--fallback", "x", "--no-cache", "--quiet")
	if want := "model=from-flag fallback=x no_cache=true output=quiet"; !strings.Contains(out, want) {
		t.Fatalf("flags: %q, want %q", out, want)
	}
	doc = configDoc(t, settingsApp("lumen", defaults), "--model", "m")
	if s := doc["model"]; s.Kind != "flag" || s.From != "--model" {
		t.Errorf("model from %s %s, want the flag", s.Kind, s.From)
	}
	if s := doc["fallback"]; s.Kind != "env" || s.From != "LLMKERNELS_FALLBACK" {
		t.Errorf("fallback from %s %s, want LLMKERNELS_FALLBACK", s.Kind, s.From)
	}

	// Nothing set: the defaults, the model by provider.
	isolate(t)
	doc = configDoc(t, settingsApp("lumen", defaults))
	if s := doc["model"]; s.Value != "default-model" || s.Kind != "default" {
		t.Errorf("default model %v from %s", s.Value, s.Kind)
	}
	if s := doc["provider"]; s.Value != "anthropic" || s.Kind != "default" {
		t.Errorf("default provider %v from %s", s.Value, s.Kind)
	}
}

// An empty model, in the file or on the command line, is no model: config
// shows the one the kernel then uses, the next layer's or the default.
// Before, it showed "-" from the file while the run used the default.
func TestAnEmptyModelIsNoModel(t *testing.T) {
	path := isolate(t)
	defaults := map[string]string{"anthropic": "default-model"}
	writeConfig(t, path, "model = \"\"\n")
	if s := configDoc(t, settingsApp("lumen", defaults)); s["model"].Value != "default-model" || s["model"].Kind != "default" {
		t.Errorf("model = \"\": config shows %v from %s %s", s["model"].Value, s["model"].Kind, s["model"].From)
	}
	writeConfig(t, path, "model = \"shared\"\n[lumen]\nmodel = \"\"\n")
	if s := configDoc(t, settingsApp("lumen", defaults)); s["model"].Value != "shared" || s["model"].Kind != "file" {
		t.Errorf("an empty lumen.model over model: config shows %v from %s %s", s["model"].Value, s["model"].Kind, s["model"].From)
	}
	if s := configDoc(t, settingsApp("lumen", defaults), "--model", ""); s["model"].Value != "shared" {
		t.Errorf("--model \"\": config shows %v from %s %s", s["model"].Value, s["model"].Kind, s["model"].From)
	}
}

// A kernel that chooses its own models (hermitcrab's wake block) takes its
// own key only: a model set for the other kernels never replaces the
// instance's choice. Its per-tier models are read from the file.
func TestAKernelThatChoosesItsModelsTakesOnlyItsOwnKey(t *testing.T) {
	path := isolate(t)
	writeConfig(t, path, "model = \"shared\"\n[hermitcrab.models]\nlight = \"tier-one\"\n")
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	_, out, _ := executeApp(settingsApp("hermitcrab", nil), "client")
	if !strings.Contains(out, "model= ") || !strings.Contains(out, "light=tier-one") {
		t.Fatalf("%q: the shared model applied, or the tier's did not", out)
	}
	writeConfig(t, path, "model = \"shared\"\n[hermitcrab]\nmodel = \"own\"\n")
	_, out, _ = executeApp(settingsApp("hermitcrab", nil), "client")
	if !strings.Contains(out, "model=own ") {
		t.Fatalf("%q: kernel.model did not apply", out)
	}
}

// A typo in the config file names the file, the line and the key, with
// the key meant; nothing runs, and the exit status is 2.
func TestATypoInTheConfigFileNamesFileLineAndKey(t *testing.T) {
	path := isolate(t)
	writeConfig(t, path, "provider = \"anthropic\"\n\n[hermitcrab]\nmodle = \"x\"\n")
	status, out, stderr := executeApp(settingsApp("hermitcrab", nil), "client")
	want := fmt.Sprintf("hermitcrab: config file %s: line 4: unknown key \"hermitcrab.modle\" (did you mean \"hermitcrab.model\"?)\n", path)
	if status != ExitUsage || out != "" || stderr != want {
		t.Fatalf("status %d, stdout %q, stderr %q\nwant %q", status, out, stderr, want)
	}
	writeConfig(t, path, "no_cache = \"yes\"\n")
	if status, _, stderr := executeApp(settingsApp("hermitcrab", nil), "client"); status != ExitUsage || !strings.Contains(stderr, "line 1: no_cache: give true or false") {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	// --version and --help need no settings.
	for _, args := range [][]string{{"--version"}, {"--help"}, {"client", "--help"}} {
		if status, out, _ := executeApp(settingsApp("hermitcrab", nil), args...); status != ExitOK || out == "" {
			t.Fatalf("%v with a broken config file: status %d", args, status)
		}
	}
}

// config shows settings a command would refuse, then refuses them as it
// would: an unknown provider needs no key, nor is it scripted.
func TestConfigRefusesAnUnknownProviderAfterShowingIt(t *testing.T) {
	isolate(t)
	t.Setenv("LLMKERNELS_PROVIDER", "antropic")
	status, out, stderr := executeApp(settingsApp("lumen", map[string]string{"anthropic": "m"}), "config")
	if status != ExitUsage || !strings.Contains(out, "antropic") || strings.Contains(out, "scripted") ||
		!strings.Contains(stderr, `unknown provider "antropic" from LLMKERNELS_PROVIDER`) {
		t.Fatalf("status %d, stdout %q, stderr %q", status, out, stderr)
	}
}

func TestAConfigFileNamedMustExist(t *testing.T) {
	isolate(t)
	missing := filepath.Join(t.TempDir(), "nope.toml")
	if status, _, stderr := executeApp(settingsApp("hermitcrab", nil), "client", "--config", missing); status != ExitUsage || !strings.Contains(stderr, missing) {
		t.Fatalf("--config: status %d, stderr %q", status, stderr)
	}
	t.Setenv("LLMKERNELS_CONFIG", missing)
	if status, _, stderr := executeApp(settingsApp("hermitcrab", nil), "client"); status != ExitUsage || !strings.Contains(stderr, "LLMKERNELS_CONFIG") {
		t.Fatalf("LLMKERNELS_CONFIG: status %d, stderr %q", status, stderr)
	}
}

// config says whether a key is set and where, never its value.
func TestConfigNeverPrintsAKey(t *testing.T) {
	isolate(t)
	const secret = "sk-ant-very-secret-0123456789"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	for _, args := range [][]string{{"config"}, {"config", "--json"}} {
		status, out, stderr := executeApp(settingsApp("hermitcrab", nil), args...)
		if status != ExitOK || strings.Contains(out+stderr, secret) || strings.Contains(out+stderr, secret[:12]) {
			t.Fatalf("%v: status %d, the key is shown:\n%s%s", args, status, out, stderr)
		}
	}
	doc := configDoc(t, settingsApp("hermitcrab", nil))
	if s := doc["api_key"]; s.Value != "set" || s.From != "ANTHROPIC_API_KEY" {
		t.Fatalf("api_key %+v", s)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	if s := configDoc(t, settingsApp("hermitcrab", nil))["api_key"]; s.Value != "not set" || !strings.Contains(s.Note, "ANTHROPIC_API_KEY") {
		t.Fatalf("api_key %+v", s)
	}
}

// The well-known variables keep working: ANTHROPIC_BASE_URL over the
// file's base_url, LLMKERNELS_BASE_URL over both; LLM_PROVIDER, as a
// deprecated name, with a note.
func TestWellKnownAndDeprecatedVariables(t *testing.T) {
	path := isolate(t)
	writeConfig(t, path, "base_url = \"https://file.example\"\n")
	t.Setenv("ANTHROPIC_BASE_URL", "https://anthropic.example")
	if s := configDoc(t, settingsApp("hermitcrab", nil))["base_url"]; s.Value != "https://anthropic.example" || s.From != "ANTHROPIC_BASE_URL" {
		t.Fatalf("base_url %+v", s)
	}
	t.Setenv("LLMKERNELS_BASE_URL", "https://ours.example")
	if s := configDoc(t, settingsApp("hermitcrab", nil))["base_url"]; s.Value != "https://ours.example" {
		t.Fatalf("base_url %+v", s)
	}
	t.Setenv("LLM_PROVIDER", "openai")
	status, _, stderr := executeApp(settingsApp("hermitcrab", nil), "config")
	if status != ExitOK || !strings.Contains(stderr, "note: LLM_PROVIDER is deprecated: use LLMKERNELS_PROVIDER") {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	// from names the variable, as for any other; the note says what to use.
	if s := configDoc(t, settingsApp("hermitcrab", nil))["provider"]; s.Value != "openai" || s.From != "LLM_PROVIDER" || s.Note != "deprecated: use LLMKERNELS_PROVIDER" {
		t.Fatalf("provider %+v", s)
	}
	t.Setenv("LLMKERNELS_PROVIDER", "bogus")
	status, _, stderr = executeApp(settingsApp("hermitcrab", nil), "client")
	if status != ExitUsage || !strings.Contains(stderr, `unknown provider "bogus" from LLMKERNELS_PROVIDER`) || strings.Contains(stderr, "--help") {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
}

// The config file's prices price a model as a --prices file would.
func TestTheConfigFilesPricesPriceTheCalls(t *testing.T) {
	path := isolate(t)
	script := filepath.Join(t.TempDir(), "pong.json")
	writeConfig(t, script, pongScript) // 1M input tokens
	writeConfig(t, path, "[prices.\"llama3\"]\ninput = 2.5\noutput = 0\n")
	status, out, stderr := executeApp(settingsApp("hermitcrab", nil), "ping", "--provider", "script", "--script", script, "--model", "llama3.2")
	if status != ExitOK || !strings.Contains(out, "cost $2.500000") {
		t.Fatalf("status %d, stdout %q, stderr %q", status, out, stderr)
	}
}

func TestOutputLevels(t *testing.T) {
	isolate(t)
	if status, _, stderr := executeApp(settingsApp("hermitcrab", nil), "client", "-q", "-v"); status != ExitUsage || !strings.Contains(stderr, "--quiet and --verbose") {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	t.Setenv("LLMKERNELS_OUTPUT", "loud")
	if status, _, stderr := executeApp(settingsApp("hermitcrab", nil), "client"); status != ExitUsage || !strings.Contains(stderr, `LLMKERNELS_OUTPUT="loud": give quiet, normal, verbose`) {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
}

// ping says it is retrying, with the wait rounded, unless --quiet; with
// --verbose it says what it sent and received.
func TestPingSaysItIsRetrying(t *testing.T) {
	isolate(t)
	script := filepath.Join(t.TempDir(), "busy.json")
	writeConfig(t, script, `{"responses":[{"error":{"status":529,"type":"overloaded_error","message":"Overloaded"}},`+strings.TrimPrefix(pongScript, `{"responses":[`))
	status, _, stderr := executeApp(settingsApp("hermitcrab", nil), "ping", "--provider", "script", "--script", script, "--model", "m")
	if status != ExitOK || !regexp.MustCompile(`retrying m in \d+ms \(attempt 1 failed: HTTP 529 overloaded_error: Overloaded\)\n`).MatchString(stderr) {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	status, _, stderr = executeApp(settingsApp("hermitcrab", nil), "ping", "--provider", "script", "--script", script, "--model", "m", "--quiet")
	if status != ExitOK || strings.Contains(stderr, "retrying") {
		t.Fatalf("--quiet: status %d, stderr %q", status, stderr)
	}
	status, _, stderr = executeApp(settingsApp("hermitcrab", nil), "ping", "--provider", "script", "--script", script, "--model", "m", "--verbose")
	if status != ExitOK || !strings.Contains(stderr, "sent to m: 1 message(s)") || !strings.Contains(stderr, "received from m in ") {
		t.Fatalf("--verbose: status %d, stderr %q", status, stderr)
	}
}

func TestDurationsAreRounded(t *testing.T) {
	for d, want := range map[time.Duration]string{
		268072352 * time.Nanosecond:           "270ms",
		2512 * time.Millisecond:               "2.5s",
		90*time.Second + 400*time.Millisecond: "1m30s",
		0:                                     "0s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %s, want %s", d, got, want)
		}
	}
}

// A base URL may carry a proxy's password or a gateway's token in its
// query: config shows where the calls go, never those (as mcp list).
func TestConfigNeverPrintsABaseURLsSecrets(t *testing.T) {
	path := isolate(t)
	writeConfig(t, path, "base_url = \"https://user:filepass@proxy.example/v1?key=filetoken\"\n")
	t.Setenv("LLMKERNELS_BASE_URL", "")
	for _, env := range []string{"", "https://user:envpass@proxy.example/v1?key=envtoken"} {
		t.Setenv("ANTHROPIC_BASE_URL", env)
		for _, args := range [][]string{{"config"}, {"config", "--json"}, {"config", "--base-url", "https://user:flagpass@proxy.example/?key=flagtoken"}} {
			status, out, stderr := executeApp(settingsApp("hermitcrab", nil), args...)
			for _, secret := range []string{"filepass", "filetoken", "envpass", "envtoken", "flagpass", "flagtoken"} {
				if strings.Contains(out+stderr, secret) {
					t.Fatalf("%v: status %d, %s is shown:\n%s%s", args, status, secret, out, stderr)
				}
			}
			if status != ExitOK || !strings.Contains(out, "proxy.example") {
				t.Fatalf("%v: status %d, the base URL is not shown:\n%s%s", args, status, out, stderr)
			}
		}
	}
}
