//go:build unix

package main

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM (what a service manager or `docker stop` sends) shuts the server
// down as gracefully as Ctrl-C: exit 0, the store closed and usable.
func TestServeStopsGracefullyOnSIGTERM(t *testing.T) {
	data := t.TempDir()
	cmd := exec.Command(binary, "--data", data, "serve", "--addr", "127.0.0.1:0", "--provider", "script", "--script", "testdata/chat.json")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }() // gone already when the test passes
	first, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "hermitcrab is serving http://127.0.0.1:") {
		t.Fatalf("first line %q (%v); stderr %s", first, err, stderr.String())
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
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve ended with %v after SIGTERM; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute of SIGTERM")
	}
	if !strings.Contains(stderr.String(), "hermitcrab: SIGTERM: stopping cleanly") {
		t.Fatalf("stderr:\n%s", stderr.String())
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
	data := t.TempDir()
	cmd := exec.Command(binary, "--data", data, "chat", "--provider", "script", "--script", "testdata/chat.json")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "HERMITCRAB_DATA=")
	stdin, err := cmd.StdinPipe() // held open: no line comes
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }() // gone already when the test passes
	stderr := bufio.NewReader(errOut)
	// The prompt "you> " is written once the chat waits for a line.
	for seen := ""; !strings.HasSuffix(seen, "you> "); {
		b, err := stderr.ReadByte()
		if err != nil {
			t.Fatalf("stderr ended before the prompt: %q (%v)", seen, err)
		}
		seen += string(b)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest := make(chan string, 1)
	go func() {
		s, _ := stderr.ReadString(0) // to EOF: the process has exited
		rest <- s
	}()
	select {
	case tail := <-rest:
		if err := cmd.Wait(); err != nil || !strings.Contains(tail, "hermitcrab: SIGTERM: stopping cleanly") {
			t.Fatalf("chat ended with %v; stderr %q", err, tail)
		}
	case <-time.After(time.Minute):
		t.Fatal("chat did not stop within a minute of SIGTERM")
	}
}
