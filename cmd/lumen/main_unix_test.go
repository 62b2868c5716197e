//go:build unix

package main

import (
	"encoding/json"
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
