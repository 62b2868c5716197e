//go:build unix

package main

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/llmkernels/kernels/internal/cli/clitest"
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
