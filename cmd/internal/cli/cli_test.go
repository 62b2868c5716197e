package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

const pongScript = `{"responses":[{"content":[{"type":"text","text":"pong"}],"stop_reason":"end_turn","usage":{"input_tokens":1000000,"output_tokens":0}}]}`

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	app := New("kernel", "test", "test")
	var out, errOut bytes.Buffer
	app.Root.SetOut(&out)
	app.Root.SetErr(&errOut)
	app.Root.SetArgs(args)
	err = app.Root.Execute()
	return out.String(), errOut.String(), err
}

// execute runs args through App.Execute, as Run does, with the test
// commands of testApp.
func execute(t *testing.T, ctx context.Context, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	app := testApp()
	var out, errOut bytes.Buffer
	app.Root.SetOut(&out)
	app.Root.SetErr(&errOut)
	status = app.Execute(ctx, args)
	return status, out.String(), errOut.String()
}

func TestPingWithAScriptSaysItIsScripted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ping.json")
	if err := os.WriteFile(path, []byte(pongScript), 0o644); err != nil {
		t.Fatal(err)
	}
	// No --model: the scripted call is metered at the model a real ping
	// would call, and the cost says that nothing was charged.
	out, notice, err := run(t, "ping", "--provider", "script", "--script", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `claude-haiku-4-5 answered`) || !strings.Contains(out, `"pong"`) ||
		!strings.Contains(out, "cost $1.000000 (scripted: what claude-haiku-4-5 would charge; nothing is charged);") {
		t.Fatalf("output: %s", out)
	}
	if !strings.Contains(notice, "responses are scripted from "+path+" (--provider script): no model is called and nothing is charged") {
		t.Fatalf("the scripted notice is missing: %q", notice)
	}
}

func TestPingThroughTheAnthropicSDKIntoTheFakeServer(t *testing.T) {
	sc, err := script.Parse([]byte(pongScript))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(sc)
	defer srv.Close()
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	out, notice, err := run(t, "ping", "--provider", "anthropic", "--base-url", srv.URL, "--beta", "b1,b2", "say pong")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `claude-haiku-4-5 answered`) || notice != "" {
		t.Fatalf("out %q notice %q", out, notice)
	}
	got := srv.Received()
	if len(got) != 1 || got[0].Header.Get("x-api-key") != "sk-test" || got[0].Header.Get("anthropic-beta") != "b1,b2" ||
		got[0].Request.Messages[0].Text() != "say pong" {
		t.Fatalf("the server saw %+v", got)
	}
}

func TestProviderMistakesAreClearErrors(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	cases := map[string][]string{
		"unknown --provider":      {"ping", "--provider", "gemini"},
		"--provider script needs": {"ping", "--provider", "script"},
		"ANTHROPIC_API_KEY":       {"ping", "--provider", "anthropic"},
		"--beta is an Anthropic":  {"ping", "--provider", "openai", "--base-url", "http://127.0.0.1:1", "--beta", "x"},
	}
	for want, args := range cases {
		if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want an error containing %q, got %v", args, want, err)
		}
	}
}

// The runtime's typed errors reach the terminal with the flags that
// answer them: llm names none itself.
func TestModelErrorsNameTheFlagsThatAnswerThem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone.json")
	gone := `{"responses":[{"error":{"status":404,"type":"not_found_error","message":"model: x"}},{"error":{"status":404,"type":"not_found_error","message":"model: y"}}]}`
	if err := os.WriteFile(path, []byte(gone), 0o644); err != nil {
		t.Fatal(err)
	}
	app := New("kernel", "test", "test")
	var out, errOut bytes.Buffer
	app.Root.SetOut(&out)
	app.Root.SetErr(&errOut)
	status := app.Execute(context.Background(), []string{"ping", "--provider", "script", "--script", path, "--model", "x", "--fallback", "x,y"})
	if status != ExitFailure || !strings.Contains(errOut.String(), "every model in the chain is unavailable") ||
		!strings.Contains(errOut.String(), "--model and --fallback") {
		t.Fatalf("status %d, stderr %q", status, errOut.String())
	}
}
