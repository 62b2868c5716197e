//go:build unix

package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli/clitest"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

func hcCommand(data string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append([]string{"--data", data}, args...)...)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=")
	return cmd
}

// SIGTERM (what a service manager or `docker stop` sends) shuts the server
// down as gracefully as Ctrl-C: exit 0, the store closed and usable.
func TestServeStopsGracefullyOnSIGTERM(t *testing.T) {
	data := t.TempDir()
	p := clitest.Start(t, hcCommand(data, "serve", "--addr", "127.0.0.1:0", "--provider", "script", "--script", "testdata/chat.json"))
	first := clitest.Until(t, p.Stdout, "\n")
	if !strings.HasPrefix(first, "hermitcrab is serving http://127.0.0.1:") {
		t.Fatalf("first line %q", first)
	}
	url := strings.Fields(strings.TrimPrefix(first, "hermitcrab is serving "))[0]
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	stderr, _, err := p.Stop(t, syscall.SIGTERM)
	if err != nil || !strings.Contains(stderr, "hermitcrab: SIGTERM: stopping cleanly") {
		t.Fatalf("serve ended with %v after SIGTERM; stderr:\n%s", err, stderr)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("the server still answers after SIGTERM")
	}
	mustHC(t, data, "", "blocks", "list") // the store was closed cleanly
}

// A chat waiting for the next line ends at once on SIGTERM, exit 0, as on
// Ctrl-C (a read from a terminal cannot be cancelled; the chat does not
// wait for it).
func TestChatWaitingForInputStopsOnSIGTERM(t *testing.T) {
	p := clitest.Start(t, hcCommand(t.TempDir(), "chat", "--provider", "script", "--script", "testdata/chat.json"))
	clitest.Until(t, p.Stderr, "you> ") // the prompt: the chat waits for a line
	stderr, _, err := p.Stop(t, syscall.SIGTERM)
	if err != nil || !strings.Contains(stderr, "hermitcrab: SIGTERM: stopping cleanly") {
		t.Fatalf("chat ended with %v; stderr %q", err, stderr)
	}
}

// An answer shows on the terminal as it streams, before it is complete;
// Ctrl-C during the stream stops it at once, exits 5 and saves nothing of
// the exchange: the next line starts the conversation afresh.
func TestChatStreamsTheAnswerAndCtrlCSavesNothingPartial(t *testing.T) {
	s, err := script.Parse([]byte(`{"responses":[
  {"match": {"last_user_contains": "tell"}, "response": {"content": [{"type": "text", "text": "First words arrive early, then the rest of a long answer follows."}]}},
  {"match": {"last_user_contains": "again"}, "response": {"content": [{"type": "text", "text": "A fresh start."}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewServer(s)
	defer fake.Close()
	// The stream stalls after its first text pieces and never completes
	// by itself: what shows was shown while the answer was incomplete.
	fake.BreakStream(llmtest.StreamFault{After: 5, Stall: 10 * time.Minute})
	data := t.TempDir()
	cmd := hcCommand(data, "chat", "--base-url", fake.URL)
	cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=sk-ant-test")
	p := clitest.Start(t, cmd)
	if _, err := io.WriteString(p.Stdin, "tell me\n"); err != nil {
		t.Fatal(err)
	}
	clitest.Until(t, p.Stdout, "First words")
	stderr, state, _ := p.Stop(t, syscall.SIGINT)
	if state.ExitCode() != 5 || !strings.Contains(stderr, "nothing of this exchange was saved") {
		t.Fatalf("Ctrl-C during the answer: exit %d; stderr %q", state.ExitCode(), stderr)
	}
	if h, _ := mustHC(t, data, "", "blocks", "show", "history"); strings.Contains(h, "First words") {
		t.Fatalf("the stopped answer reached history:\n%s", h)
	}
	again := hcCommand(data, "chat", "--base-url", fake.URL)
	again.Env = append(again.Env, "ANTHROPIC_API_KEY=sk-ant-test")
	again.Stdin = strings.NewReader("say it again\n")
	if out, err := again.Output(); err != nil || strings.TrimSpace(string(out)) != "A fresh start." {
		t.Fatalf("the next chat: %v %q", err, out)
	}
	got := fake.Received()
	if last := got[len(got)-1]; strings.Contains(string(last.Body), "tell me") {
		t.Fatalf("the next line was sent with the stopped exchange: %s", last.Body)
	}
}
