//go:build unix

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lumenBinary builds the real binary once per test.
func lumenBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lumen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

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

	chat := exec.Command(bin, "chat", "--dir", dir, "--provider", "script", "--script", "../../docs/examples/ping.json")
	stdin, err := chat.StdinPipe() // held open: the chat waits for a line
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stderr, err := chat.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = chat.Process.Kill() }() // gone already when the test passes
	errs := bufio.NewReader(stderr)
	// The scripted provider's notice comes once the command runs, after
	// the signal handling is in place.
	if line, err := errs.ReadString('\n'); err != nil || !strings.Contains(line, "responses are scripted") {
		t.Fatalf("first stderr line %q (%v)", line, err)
	}
	if err := chat.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Read stderr to its end (the process exiting closes it), then Wait:
	// Wait closes the pipe, so it must come after the reads.
	rest := make(chan string, 1)
	go func() {
		b, _ := errs.ReadString(0) // up to EOF: there is no NUL byte
		rest <- b
	}()
	select {
	case tail := <-rest:
		if err := chat.Wait(); err != nil || !strings.Contains(tail, "lumen: SIGTERM: stopping cleanly") {
			t.Fatalf("chat ended with %v after SIGTERM; stderr %q", err, tail)
		}
	case <-time.After(time.Minute):
		t.Fatal("chat did not stop within a minute of SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "soul.md")); err != nil {
		t.Fatal(err)
	}
}
