//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/llmkernels/kernels/internal/cli/clitest"
)

// SIGTERM ends a chat as Ctrl-C does: cleanly, exit 0; command-line
// mistakes exit 2.
func TestChatStopsCleanlyOnSIGTERMAndUsageErrorsExit2(t *testing.T) {
	bin := lumenBinary(t)
	dir := filepath.Join(t.TempDir(), "mind")
	if out, err := exec.Command(bin, "init", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("lumen init: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"status", "extra"}, {"bogus"}, {"run", "--cycles", "x"}} {
		err := exec.Command(bin, append(args, "--dir", dir)...).Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("lumen %v: %v, want exit status 2", args, err)
		}
	}

	chat := clitest.Start(t, exec.Command(bin, "chat", "--dir", dir, "--provider", "script", "--script", "../../docs/examples/ping.json"))
	// The scripted provider's notice comes once the command runs, after
	// the signal handling is in place.
	clitest.Until(t, chat.Stderr, "no model is called\n")
	stderr, _, err := chat.Stop(t, syscall.SIGTERM)
	if err != nil || !strings.Contains(stderr, "lumen: SIGTERM: stopping cleanly") {
		t.Fatalf("chat ended with %v after SIGTERM; stderr %q", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "soul.md")); err != nil {
		t.Fatal(err)
	}
}
