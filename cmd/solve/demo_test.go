package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// solve run --demo runs its goal end to end on the embedded script, with no
// key and whatever provider the environment names, in the directory it
// names, and says it is a demo on a scripted model; the code, the database
// and the report are all in that directory, nothing in the current one.
func TestRunDemoRunsItsGoalOnTheScriptInItsOwnDirectory(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	demo := filepath.Join(t.TempDir(), "try")
	cmd := solveCommand(cwd, "run", "--demo", demo)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "LLMKERNELS_PROVIDER=openai", "LLMKERNELS_MODEL=gpt-5")
	r := finish(t, cmd)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"this is a demo", "A scripted model plays the LLM", "nothing is charged", "demo directory: " + demo + "\n",
		": achieved\n", "LLM calls: 20", "demo finished", "solve status --db " + filepath.Join(demo, "kernel.db")} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "RETRY 2/5 with feedback") {
		t.Errorf("the live view does not show the retry:\n%s", r.stderr)
	}
	root := rootOf(t, r.stdout)
	md, err := os.ReadFile(filepath.Join(demo, "run-"+root[:8]+".md"))
	if err != nil || !strings.Contains(string(md), "# Run: Add Mean and Median to package stats") {
		t.Errorf("the report: %v\n%.300s", err, md)
	}
	code, err := os.ReadFile(filepath.Join(demo, "ws", "median.go"))
	if err != nil || !strings.Contains(string(code), "sort.Float64s") {
		t.Errorf("the workspace does not hold the fixed Median: %v\n%s", err, code)
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("the demo wrote into the current directory: %v", left)
	}
	st := runSolve(t, cwd, "status", "--db", filepath.Join(demo, "kernel.db"), root[:8])
	if st.code != 0 || !strings.Contains(st.stdout, "achieved") {
		t.Errorf("the status the demo points to: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}

	// Without a directory it makes a temporary one and names it.
	tmp := t.TempDir()
	cmd = solveCommand(cwd, "run", "--demo")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	r = finish(t, cmd)
	made, _ := filepath.Glob(filepath.Join(tmp, "solve-demo-*"))
	if r.code != 0 || len(made) != 1 || !strings.Contains(r.stdout, "demo directory: "+made[0]+"\n") {
		t.Errorf("exit %d, made %v:\n%s%s", r.code, made, r.stdout, r.stderr)
	}
}

// --demo refuses what it would ignore, and a directory holding other work.
func TestRunDemoRefusesFlagsItSetsAndANonEmptyDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--demo", "--workspace", "."}, "drop --workspace"},
		{[]string{"run", "--demo", "--provider", "anthropic"}, "drop --provider"},
		{[]string{"run", "--demo", dir}, "is not empty"},
		{[]string{"run", "--demo", "a", "b"}, "accepts at most 1 arg"},
	} {
		r := runSolve(t, dir, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "keep.txt")); err != nil || string(data) != "mine" {
		t.Errorf("the directory's file: %q %v", data, err)
	}
	if h := runSolve(t, dir, "run", "--help"); !strings.Contains(h.stdout, "--demo") {
		t.Errorf("solve run --help does not show --demo:\n%s", h.stdout)
	}
	cmd := solveCommand(dir, "run", "a goal")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "LLMKERNELS_PROVIDER=")
	if r := finish(t, cmd); r.code != 1 || !strings.Contains(r.stderr, "no Anthropic API key") || !strings.Contains(r.stderr, "solve run --demo") {
		t.Errorf("solve run without a key: exit %d\n%s", r.code, r.stderr)
	}
}
