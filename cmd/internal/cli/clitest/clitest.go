// Package clitest runs a kernel CLI as a child process for a test that
// signals it: stdin held open (input comes only as the test writes it), stdout and stderr piped,
// the process stopped with a signal and its exit awaited. Only tests
// import it.
package clitest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// timeout bounds every wait: generous, since the machine may be busy.
const timeout = time.Minute

// Process is a started CLI.
type Process struct {
	Cmd *exec.Cmd
	// Stdin is the process's standard input, held open until the test
	// ends; a test may write lines to it.
	Stdin  io.WriteCloser
	Stdout *bufio.Reader
	Stderr *bufio.Reader
}

// Start starts cmd with its stdin held open and its stdout and stderr
// piped. A process still running when the test ends is killed.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()            // nothing was written to it: closing has nothing to report
		if cmd.ProcessState == nil { // not stopped by the test: it failed before
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // killed: the error says so, and the test has failed already
		}
	})
	return &Process{Cmd: cmd, Stdin: stdin, Stdout: bufio.NewReader(stdout), Stderr: bufio.NewReader(stderr)}
}

// Until reads r (p.Stdout or p.Stderr) until what was read ends with
// suffix, and returns it: a prompt, or a line the command writes once it
// runs. The test fails if r ends first or nothing comes within a minute.
func Until(t testing.TB, r *bufio.Reader, suffix string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var seen strings.Builder
		for !strings.HasSuffix(seen.String(), suffix) {
			b, err := r.ReadByte()
			if err != nil {
				break
			}
			seen.WriteByte(b)
		}
		got <- seen.String()
	}()
	select {
	case s := <-got:
		if !strings.HasSuffix(s, suffix) {
			t.Fatalf("the output ended before %q: %q", suffix, s)
		}
		return s
	case <-time.After(timeout):
		t.Fatalf("no %q within %s", suffix, timeout)
		return ""
	}
}

// Stop sends sig (nil: none, the process ends by itself) and waits for
// the process to end. It reads stderr to its end first (Wait closes the
// pipe) and returns the rest of it, with the process's state and Wait's
// error. The test fails if the process does not end within a minute.
func (p *Process) Stop(t testing.TB, sig os.Signal) (stderr string, state *os.ProcessState, err error) {
	t.Helper()
	if sig != nil {
		if err := p.Cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(p.Stderr) // to EOF: the process has exited
		rest <- string(b)
	}()
	go func() { _, _ = io.Copy(io.Discard, p.Stdout) }() // a full stdout pipe must not hold it up
	select {
	case stderr = <-rest:
	case <-time.After(timeout):
		t.Fatalf("the process did not end within %s of %v", timeout, sig)
	}
	err = p.Cmd.Wait()
	return stderr, p.Cmd.ProcessState, err
}
