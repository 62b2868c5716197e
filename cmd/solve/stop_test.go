//go:build linux

package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/cli/clitest"
	"github.com/llmkernels/kernels/solve/loop"
)

// overloaded is a script whose only answer is a 529 asking for a 20 s wait.
func overloaded(t *testing.T, dir string) string {
	t.Helper()
	sc := filepath.Join(dir, "slow.json")
	data := `{"responses":[{"error":{"status":529,"type":"overloaded_error","message":"Overloaded","retry_after":20}}]}`
	if err := os.WriteFile(sc, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return sc
}

// A run stopped by a signal while its first call waits out a 529's
// retry-after is stopped (resumable), not infeasible, in status text and
// JSON, after a clean stop and after kill -9; the call cost nothing (the
// API answered with an error, which is not billed; before, the
// reservation was settled at its hold, $0.21 for no answer); and the
// clean stop folds SQLite's WAL in, leaving no side file.
func TestARunStoppedDuringARetryIsStoppedAndPaysNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := overloaded(t, dir)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		_ = os.Remove(filepath.Join(dir, "kernel.db"))
		_ = os.RemoveAll(filepath.Join(dir, "artifact_store"))
		p := clitest.Start(t, solveCommand(dir, "run", "Write a sonnet", "--provider", "script", "--script", sc, "--budget", "1"))
		clitest.Until(t, p.Stderr, "retrying in 20s\n")
		stderr, state, _ := p.Stop(t, sig)
		if state.ExitCode() != cli.ExitStopped {
			t.Fatalf("%v: exit %d\n%s", sig, state.ExitCode(), stderr)
		}
		for _, side := range []string{"kernel.db-wal", "kernel.db-shm"} {
			if _, err := os.Stat(filepath.Join(dir, side)); err == nil {
				t.Errorf("%v: %s left beside the database after a clean stop", sig, side)
			}
		}
		st := statusJSON(t, dir)
		if st.Outcome != loop.OutcomeStopped || st.SpentUSD != 0 || st.ReservedUSD != 0 {
			t.Errorf("%v: status --json: outcome %s, spent $%v, reserved $%v; want stopped, $0, $0", sig, st.Outcome, st.SpentUSD, st.ReservedUSD)
		}
		if r := runSolve(t, dir, "status"); !strings.Contains(r.stdout, " stopped ") || !strings.Contains(r.stdout, "spent $0.0000* of $1.00") || !strings.Contains(r.stdout, "\n* scripted: what claude-opus-4-6 would charge; nothing is charged\n") {
			t.Errorf("%v: status:\n%s", sig, r.stdout)
		}
	}
	// kill -9 during the wait: the reservation stays open (resume settles
	// it at its hold: no one can tell what happened), the run is stopped.
	p := clitest.Start(t, solveCommand(dir, "resume", "--provider", "script", "--script", sc))
	clitest.Until(t, p.Stderr, "retrying in 20s\n")
	_, _, _ = p.Stop(t, syscall.SIGKILL)
	if st := statusJSON(t, dir); st.Outcome != loop.OutcomeStopped || st.ReservedUSD <= 0 {
		t.Errorf("after kill -9: outcome %s, reserved $%v; want stopped with the call's hold open", st.Outcome, st.ReservedUSD)
	}
	if r := runSolve(t, dir, "status", rootOfStatus(t, dir)); !strings.Contains(r.stdout, "outcome stopped") {
		t.Errorf("status ROOT after kill -9:\n%s", r.stdout)
	}
}

// rootOfStatus is the root of the only run.
func rootOfStatus(t *testing.T, dir string) string {
	t.Helper()
	return statusJSON(t, dir).RootID
}

// A call cancelled (SIGINT) while its request is in flight, held by the
// fake API, is settled at its hold: the request went out, the answer never
// came, and what the API charged is unknown: the ledger and status say so,
// apart from what was billed for certain.
func TestACallCancelledInFlightIsSettledAtItsHold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/stats")
	api := newFakeAPI(t, 1, statsSteps()...)
	api.setHold(func(body []byte) bool {
		return bytes.Contains(body, []byte("Operation: resolve · attempt 1\\nGoal: Add Mean("))
	})
	p := clitest.Start(t, api.command(dir, "run", statsGoal, "--workspace", ws, "--budget", "5", "--time", "30m"))
	select {
	case <-api.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the Mean resolve call never reached the fake")
	}
	stderr, state, _ := p.Stop(t, syscall.SIGINT)
	if state.ExitCode() != cli.ExitStopped {
		t.Fatalf("exit %d\n%s", state.ExitCode(), stderr)
	}
	db := openDB(t, dir)
	// The Mean leaf's resolve (the root's was answered).
	var held, settled float64
	var status string
	if err := db.QueryRow(`SELECT amount, COALESCE(settled_amount, -1), status FROM budget_reservations WHERE operation = 'resolve' AND node_id <> root_id`).Scan(&held, &settled, &status); err != nil {
		t.Fatal(err)
	}
	if status != "settled" || held <= 0 || settled != held {
		t.Errorf("the call cancelled in flight: %s at $%v of $%v held; want settled at its hold", status, settled, held)
	}
	var unknown float64
	if err := db.QueryRow(`SELECT l.unknown_amount FROM budget_ledger l JOIN budget_reservations r ON r.id = l.reservation_id
		WHERE r.operation = 'resolve' AND r.node_id <> r.root_id`).Scan(&unknown); err != nil || unknown != held {
		t.Errorf("the call cancelled in flight is of unknown outcome for $%v of its $%v (%v)", unknown, held, err)
	}
	if st := statusJSON(t, dir); st.Outcome != loop.OutcomeStopped || st.UnknownUSD != held {
		t.Errorf("outcome %s with $%v of unknown outcome, want stopped with $%v", st.Outcome, st.UnknownUSD, held)
	}
}
