//go:build linux

package main_test

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/cmd/internal/cli/clitest"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/solve/loop"
)

// Ctrl-C while an answer is streaming in (the fake API stalls a stream
// after its first pieces) stops the run at once with exit 5, whatever
// the stall: the half answer is saved nowhere (no attempt of the node,
// no output artifact), its call is settled at its hold as of unknown outcome,
// and `solve resume` asks again and finishes the run.
func TestCtrlCMidStreamSavesNothingPartialAndResumeContinues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	steps := append(queueSteps()[:3:3], step{OpResolve, queueGoal, 1, m{"summary": "BillingQueue", "text": "BillingQueue"}},
		step{OpResolve, queueGoal, 2, m{"summary": "billing-invoices-queue", "text": "billing-invoices-queue"}})
	api := newFakeAPI(t, 1, append(steps, queueSteps()[3:]...)...)
	streaming := make(chan struct{})
	var once sync.Once
	api.setHold(func(body []byte) bool {
		if bytes.Contains(body, []byte("Operation: resolve · attempt 1")) {
			once.Do(func() {
				api.api.BreakStream(llmtest.StreamFault{After: 4, Stall: 10 * time.Minute})
				close(streaming)
			})
		}
		return false
	})
	p := clitest.Start(t, api.command(dir, "run", queueGoal, "--budget", "5", "--time", "1h"))
	select {
	case <-streaming:
	case <-time.After(60 * time.Second):
		t.Fatal("the resolve call never reached the fake")
	}
	time.Sleep(300 * time.Millisecond) // its first pieces arrive, then it stalls
	began := time.Now()
	stderr, state, _ := p.Stop(t, syscall.SIGINT)
	if state.ExitCode() != cli.ExitStopped || time.Since(began) > 30*time.Second {
		t.Fatalf("exit %d after %s\n%s", state.ExitCode(), time.Since(began), stderr)
	}
	db := openDB(t, dir)
	if n := count(t, db, `SELECT COUNT(*) FROM resolution_attempts WHERE output_artifact_id IS NOT NULL OR verdict IS NOT NULL`); n != 0 {
		t.Errorf("%d attempts with an output or a verdict saved from a half answer", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM artifacts WHERE type NOT IN ('run_config', 'tool_plan')`); n != 0 {
		t.Errorf("%d artifacts besides the run's settings and the plan saved from a half answer", n)
	}
	var held, unknown float64
	if err := db.QueryRow(`SELECT r.amount, l.unknown_amount FROM budget_reservations r JOIN budget_ledger l ON l.reservation_id = r.id
		WHERE r.operation = 'resolve'`).Scan(&held, &unknown); err != nil || held <= 0 || unknown != held {
		t.Errorf("the stopped call: held $%v, of unknown outcome $%v (%v); want settled at its hold", held, unknown, err)
	}
	r := api.run(t, dir, "resume")
	if r.code != 0 || !strings.Contains(r.stdout, "achieved") {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if st := statusJSON(t, dir); st.Outcome != loop.OutcomeAchieved {
		t.Errorf("after resume: %s", st.Outcome)
	}
}
