//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli/clitest"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
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
	clitest.Until(t, chat.Stderr, "costs are metered as a real run on the same models would be\n")
	stderr, _, err := chat.Stop(t, syscall.SIGTERM)
	if err != nil || !strings.Contains(stderr, "lumen: SIGTERM: stopping cleanly") {
		t.Fatalf("chat ended with %v after SIGTERM; stderr %q", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "soul.md")); err != nil {
		t.Fatal(err)
	}
}

// Ctrl-C while lumen run waits between cycles stops it (exit 5) with a
// kernel memory saying where the loop stopped, as one during a cycle does.
func TestRunInterruptedBetweenCyclesRecordsWhereItStopped(t *testing.T) {
	bin, dir := lumenInstance(t)
	testdata, _ := filepath.Abs("../../lumen/testdata")
	run := clitest.Start(t, exec.Command(bin, "run", "--dir", dir, "--interval", "10m",
		"--provider", "script", "--script", filepath.Join(testdata, "demo-run.json")))
	clitest.Until(t, run.Stdout, "cycle 1 · ") // printed once the cycle is over: the wait begins
	stderr, state, _ := run.Stop(t, syscall.SIGINT)
	if state.ExitCode() != 5 || !strings.Contains(stderr, "lumen: SIGINT: stopping cleanly") {
		t.Fatalf("lumen run after SIGINT: exit %d, stderr %s", state.ExitCode(), stderr)
	}
	out, err := exec.Command(bin, "memory", "--author", "kernel", "--dir", dir, "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var mems []struct {
		Step        string `json:"step"`
		Situation   string `json:"situation"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(out, &mems); err != nil || len(mems) == 0 {
		t.Fatalf("memory --json: %v\n%s", err, out)
	}
	last := mems[len(mems)-1]
	if last.Step != "run" || last.Situation != "interrupted" || !strings.Contains(last.Description, "between cycles, after cycle 1") {
		t.Fatalf("the last kernel memory is %+v, not where the run stopped", last)
	}
	if n := strings.Count(string(out), `"situation": "interrupted"`); n != 1 {
		t.Errorf("%d interrupted memories, want 1:\n%s", n, out)
	}
}

// A reader that goes away (lumen run | head -1) stops the run as Ctrl-C
// does: exit 5 and a kernel memory saying where it stopped, never a death
// by SIGPIPE with nothing recorded.
func TestRunWhoseOutputClosesStopsAsCtrlCDoes(t *testing.T) {
	bin, dir := lumenInstance(t)
	testdata, _ := filepath.Abs("../../lumen/testdata")
	cmd := exec.Command(bin, "run", "--dir", dir, "--interval", "1s",
		"--provider", "script", "--script", filepath.Join(testdata, "demo-run.json"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil { // cycle 1's report: head -1
		t.Fatal(err)
	}
	stdout.Close()
	_ = cmd.Wait() // the exit status is checked below
	if code := cmd.ProcessState.ExitCode(); code != 5 || !strings.Contains(stderr.String(), "lumen: standard output closed: stopping cleanly") {
		t.Fatalf("lumen run with its output closed: exit %d (%v), stderr:\n%s", code, cmd.ProcessState, stderr.String())
	}
	out, err := exec.Command(bin, "memory", "--author", "kernel", "--dir", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "interrupted: lumen run stopped between cycles") || !strings.Contains(string(out), "a closed output") {
		t.Fatalf("no memory of where the run stopped:\n%s", out)
	}
}

// lumen chat | head -1 ends the chat when the next answer finds no reader:
// exit 5, never a death by SIGPIPE, and the next line is not taken.
func TestChatWhoseOutputClosesStops(t *testing.T) {
	bin, dir := lumenInstance(t)
	cmd := exec.Command(bin, "chat", "--dir", dir, "--provider", "script", "--script", "../../docs/examples/ping.json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "Hello\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	stdout.Close()
	if _, err := io.WriteString(stdin, "Again\n"); err != nil { // its answer finds no reader
		t.Fatal(err)
	}
	_ = cmd.Wait() // the exit status is checked below
	if code := cmd.ProcessState.ExitCode(); code != 5 || !strings.Contains(stderr.String(), "lumen: standard output closed: stopping cleanly") {
		t.Fatalf("lumen chat with its output closed: exit %d (%v), stderr:\n%s", code, cmd.ProcessState, stderr.String())
	}
}

// Ctrl-C while a turn's answer streams in (here the stream stalls after
// the thinking began) stops the call at once and exits 5, saying nothing
// of the answer is kept; on a pipe the thinking shows as one plain line.
func TestChatCtrlCDuringTheAnswerExits5(t *testing.T) {
	bin, dir := lumenInstance(t)
	sc, err := script.Parse([]byte(`{"responses":[{"content":[{"type":"thinking","thinking":"Who is there?","signature":"c2ln"},{"type":"text","text":"{}"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(sc)
	defer srv.Close()
	srv.BreakStream(llmtest.StreamFault{After: 4, Stall: 30 * time.Second})
	cmd := exec.Command(bin, "chat", "--dir", dir, "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--base-url", srv.URL)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=test-key")
	cmd.Stdin = strings.NewReader("Hello?\n")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errs := bufio.NewReader(stderr)
	clitest.Until(t, errs, "think: thinking…\n")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(errs)
	_ = cmd.Wait() // the exit status is checked below
	if code := cmd.ProcessState.ExitCode(); code != 5 || !strings.Contains(string(rest), "nothing of the answer under way is kept") {
		t.Fatalf("exit %d after Ctrl-C mid-answer; stderr:\n%s", code, rest)
	}
	out, err := exec.Command(bin, "memory", "--all", "--dir", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "THINK:") || !strings.Contains(string(out), "interrupted: stopped during THINK") {
		t.Fatalf("the memories after the interrupted turn:\n%s", out)
	}
}
