//go:build linux

package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/cli/clitest"
	"github.com/llmkernels/kernels/solve/loop"
)

// A demo stopped by Ctrl-C says how to continue it, and that command,
// run from anywhere without a key, continues it on the demo's script and
// database to the end, the report beside them. (Before, the hint was
// 'solve resume ROOT8', which in another directory found no run and
// asked for an API key; resume's own --demo asked for a key too.)
func TestADemoStoppedByCtrlCContinuesWithTheCommandItNames(t *testing.T) {
	cwd, other := t.TempDir(), t.TempDir()
	demo := filepath.Join(t.TempDir(), "try")
	p := clitest.Start(t, solveCommand(cwd, "run", "--demo", demo))
	clitest.Until(t, p.Stderr, "RESOLVE 1/")
	stderr, state, _ := p.Stop(t, syscall.SIGINT)
	want := "continue it with 'solve resume --demo " + demo + "'"
	if state.ExitCode() != cli.ExitStopped || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, want 5 and %q:\n%s", state.ExitCode(), want, stderr)
	}
	cmd := solveCommand(other, "resume", "--demo", demo)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "LLMKERNELS_PROVIDER=")
	r := finish(t, cmd)
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved\n") || !strings.Contains(r.stdout, "demo finished") {
		t.Fatalf("solve resume --demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if reports, _ := filepath.Glob(filepath.Join(demo, "run-*.md")); len(reports) != 1 {
		t.Errorf("the report beside the demo: %v", reports)
	}
	if left, _ := os.ReadDir(other); len(left) > 0 {
		t.Errorf("resume --demo wrote into the current directory: %v", left)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"resume", "--demo", cwd}, "holds no demo to continue"},
		{[]string{"resume", "--demo"}, "give it, as in solve resume --demo DIR"},
		{[]string{"resume", "--demo", demo, "--db", "x.db"}, "drop --db"},
	} {
		if r := runSolve(t, other, c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
}

// A run on a database other than the default is told to resume with it.
func TestAStoppedRunNamesItsDatabaseInTheResumeCommand(t *testing.T) {
	dir := t.TempDir()
	sc := overloaded(t, dir)
	p := clitest.Start(t, solveCommand(dir, "run", "Write a sonnet", "--provider", "script", "--script", sc, "--db", "my runs.db"))
	clitest.Until(t, p.Stderr, "retrying in 20s\n")
	stderr, state, _ := p.Stop(t, syscall.SIGTERM)
	var runs []loop.Result
	st := runSolve(t, dir, "status", "--json", "--db", "my runs.db")
	if err := json.Unmarshal([]byte(st.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("status --json: %v\n%s%s", err, st.stdout, st.stderr)
	}
	want := "continue it with 'solve resume " + runs[0].RootID[:8] + ` --db "my runs.db"'`
	if state.ExitCode() != cli.ExitStopped || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, want 5 and %q:\n%s", state.ExitCode(), want, stderr)
	}
}
