//go:build linux

package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/proc/proctest"
)

// TestKill9LeavesNoCheckRunning pins that a check command (model-written
// shell, with a background child) sees no provider key, and that kill -9 of
// `solve run` while it runs leaves neither the check nor its child alive.
func TestKill9LeavesNoCheckRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/mathx")
	steps := clampSteps()
	// The check runs confined: it writes its pids in its own directory, the
	// attempt's copy of the workspace, made under TMPDIR.
	steps[0].answer = m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "the check passes",
		"check": `sleep 60 & echo "$$ $! ${ANTHROPIC_API_KEY:-none}" > check.pids.tmp; mv check.pids.tmp check.pids; wait`}},
		"required_capabilities": []string{"generate_code"}, "rationale": "a check that takes its time"}
	sc := writeScript(t, dir, steps...)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(solveBin, "run", clampGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "30m")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-kill-test-0123456789", "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var fields []string
	for deadline := time.Now().Add(60 * time.Second); len(fields) != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the check never started")
		}
		found, _ := filepath.Glob(filepath.Join(tmp, "solve-attempt-*", "check.pids"))
		if len(found) == 0 {
			continue
		}
		data, _ := os.ReadFile(found[0])
		fields = strings.Fields(string(data))
	}
	if fields[2] != "none" {
		t.Errorf("the check saw ANTHROPIC_API_KEY=%s", fields[2])
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	var check []int
	for _, f := range fields[:2] {
		pid, _ := strconv.Atoi(f)
		check = append(check, pid)
	}
	if left := proctest.WaitGone(check, time.Now().Add(10*time.Second)); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes %v of the check outlived kill -9 of solve", left)
	}
}

// A check that hangs is killed when the node's wall time runs out, not
// at a fixed timeout, and the node asks a human for more time. (Before:
// it ran two minutes whatever the node's time.)
func TestAHangingCheckIsKilledAtTheNodesDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/mathx")
	pid := filepath.Join(dir, "check.pid")
	steps := clampSteps()
	steps[0].answer = m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "the check passes", "check": "echo $$ > " + pid + "; sleep 600"}},
		"required_capabilities": []string{"generate_code"}, "rationale": "a check that hangs"}
	sc := writeScript(t, dir, steps...)
	// 65 s: the check is estimated at a minute, so it may start. Unconfined:
	// the check writes its pid where the test reads it after the attempt's
	// copy of the workspace is gone (a confined command's deadline is
	// pinned in internal/proc).
	began := time.Now()
	r := runSolve(t, dir, "run", clampGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "65s", "--unconfined")
	took := time.Since(began)
	if r.code != cli.ExitWaiting || !strings.Contains(r.stderr, "HIRE (over_budget): need a human for budget (the node's wall time ran out during codex-tools-0 run_check") {
		t.Fatalf("exit %d after %s\n%s\n%s", r.code, took, r.stdout, r.stderr)
	}
	if took > 110*time.Second {
		t.Errorf("the run took %s with 65s of wall time", took)
	}
	data, err := os.ReadFile(pid)
	if err != nil {
		t.Fatal(err)
	}
	var p int
	if _, err := fmt.Sscan(string(data), &p); err != nil {
		t.Fatal(err)
	}
	if left := proctest.WaitGone([]int{p}, time.Now().Add(10*time.Second)); len(left) > 0 {
		_ = syscall.Kill(p, syscall.SIGKILL)
		t.Errorf("the check (pid %d) outlived its deadline", p)
	}
	db := openDB(t, dir)
	var secs float64
	if err := db.QueryRow(`SELECT time_spent FROM nodes WHERE parent_id IS NULL`).Scan(&secs); err != nil || secs > 65+1e-6 {
		t.Errorf("the root spent %vs of 65s (%v)", secs, err)
	}
}
