//go:build linux

package solve_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/proc/proctest"
)

// TestKill9LeavesNoCheckRunning pins that a check command (model-written
// shell, with a background child) sees no provider key, and that kill -9 of
// `solve run` while it runs leaves neither the check nor its child alive.
func TestKill9LeavesNoCheckRunning(t *testing.T) {
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/mathx")
	pids := filepath.Join(dir, "check.pids")
	steps := clampSteps()
	steps[0].answer = m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "the check passes",
		"check": `sleep 60 & echo "$$ $! ${ANTHROPIC_API_KEY:-none}" > ` + pids + `.tmp; mv ` + pids + `.tmp ` + pids + `; wait`}},
		"required_capabilities": []string{"generate_code"}, "rationale": "a check that takes its time"}
	sc := writeScript(t, dir, steps...)
	cmd := exec.Command(solveBin, "run", clampGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "30m")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-kill-test-0123456789")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var fields []string
	for deadline := time.Now().Add(60 * time.Second); len(fields) != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the check never started")
		}
		data, _ := os.ReadFile(pids)
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
