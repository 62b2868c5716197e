package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/solve/loop"
)

const clampGoal = "Add Clamp(x, lo, hi float64) float64 to package mathx, with a test"

// clampSteps is a one-leaf software goal.
func clampSteps() []step {
	return []step{
		{OpIdentify, clampGoal, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "a tested function"}},
		{OpSelect, clampGoal, 0, m{"selected": []string{"c1"}, "rationale": "the test decides"}},
		{OpRoute, clampGoal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "one small function"}},
		{OpResolve, clampGoal, 1, m{"summary": "Clamp with a table test", "files": []any{
			m{"path": "clamp.go", "content": "package mathx\n\n// Clamp limits x to [lo, hi].\nfunc Clamp(x, lo, hi float64) float64 {\n\treturn min(max(x, lo), hi)\n}\n"},
			m{"path": "clamp_test.go", "content": "package mathx\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tfor _, c := range [][4]float64{{-1, 0, 1, 0}, {0.5, 0, 1, 0.5}, {2, 0, 1, 1}} {\n\t\tif got := Clamp(c[0], c[1], c[2]); got != c[3] {\n\t\t\tt.Errorf(\"Clamp(%v, %v, %v) = %v, want %v\", c[0], c[1], c[2], got, c[3])\n\t\t}\n\t}\n}\n"}}}},
		{OpVerify, clampGoal, 1, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one function with its test"}},
		{OpConsistency, clampGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, clampGoal, 0, m{"summary": "package mathx gains Clamp, tested"}},
	}
}

// Over budget → HIRE: a pre_check the node's budget cannot cover becomes
// an over_budget capability request; `solve hire ID --add-budget` tops up
// the ledger and `solve resume` completes the run without repeating any
// recorded resolver call.
func TestOverBudgetHiresAndAddedBudgetLetsResumeComplete(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		ws := workspace(t, dir, "example.com/mathx")
		sc := writeScript(t, dir, clampSteps()...)
		r := runSolve(t, dir, "run", clampGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "0.05", "--time", "30m")
		if r.code != cli.ExitWaiting || !strings.Contains(r.stdout, ": waiting_for_human") || !strings.Contains(r.stderr, "HIRE (over_budget)") {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		root := rootOf(t, r.stdout)
		t.Logf("run:\n%s%s", r.stderr, r.stdout)
		invariants(t, dir, root)
		h := runSolve(t, dir, "hire")
		if !strings.Contains(h.stdout, "Need:   budget (digital, over_budget)") || !strings.Contains(h.stdout, "budget pre_check DENIED") {
			t.Fatalf("hire listing:\n%s%s", h.stdout, h.stderr)
		}
		id := strings.Fields(strings.TrimPrefix(h.stdout, "request "))[0]
		if a := runSolve(t, dir, "hire", id, "--add-budget", "1"); a.code != 0 || !strings.Contains(a.stdout, "added $1.00") {
			t.Fatalf("add budget: %s%s", a.stdout, a.stderr)
		}
		db := openDB(t, dir)
		before := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3")
		res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
		if res.code != 0 || !strings.Contains(res.stdout, ": achieved") {
			t.Fatalf("resume: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		t.Logf("resume:\n%s%s", res.stderr, res.stdout)
		invariants(t, dir, root)
		if n := count(t, db, "SELECT COUNT(*) FROM budget_ledger WHERE event_type = 'allocate' AND description = 'HIRE: budget added by a human' AND amount = 1"); n != 1 {
			t.Errorf("%d HIRE allocations of $1 in the ledger, want 1", n)
		}
		// Every recorded call happened once: the scripted answers are each
		// used once across both processes (the run would fail otherwise), and
		// the resumed process made only the calls that were left.
		after := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3")
		if after <= before || count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3 AND summary = 'claude-code-0 identify_constraints'") != 1 {
			t.Errorf("resolver calls: %d before resume, %d after; identify must be called once", before, after)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM capability_requests WHERE status = 'requested'"); n != 0 {
			t.Errorf("%d requests still open", n)
		}
		// The human's top-up is part of the run's allowance, the money
		// labelled as scripted (before: only
		// --budget was counted, "spent $0.06 of $0.05").
		if st := runSolve(t, dir, "status", root); !strings.Contains(st.stdout, " of $1.05"+scriptedOpus+" · LLM calls") {
			t.Errorf("status does not count the top-up in the allowance:\n%s", st.stdout)
		}
	})
}

// A software goal's over-budget HIRE, declined, ends the node as
// infeasible and is never asked again: not on resume, not by a new run
// of the same goal with the same budget.
func TestDeclinedSoftwareHireIsNotAskedTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/mathx")
	sc := writeScript(t, dir, clampSteps()...)
	args := []string{"run", clampGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "0.05", "--time", "30m"}
	r := runSolve(t, dir, args...)
	if r.code != cli.ExitWaiting || !strings.Contains(r.stdout, ": waiting_for_human") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	root := rootOf(t, r.stdout)
	h := runSolve(t, dir, "hire")
	id := strings.Fields(strings.TrimPrefix(h.stdout, "request "))[0]
	d := runSolve(t, dir, "hire", id, "--decline", "--reason", "not worth more")
	if d.code != 0 || !strings.Contains(d.stdout, "is infeasible") {
		t.Fatalf("decline: %s%s", d.stdout, d.stderr)
	}
	// The resume sees the decline before any paid call (before: it paid
	// for identify_constraints again, then met the decline at HIRE).
	resumePaysNothing(t, dir, root, sc, cli.ExitInfeasible, ": infeasible", "after a decline")
	if l := runSolve(t, dir, "log"); !strings.Contains(l.stdout, "INFEASIBLE: capability request "+id) {
		t.Errorf("the log does not say why the node is infeasible:\n%s", l.stdout)
	}
	invariants(t, dir, root)
	r2 := runSolve(t, dir, args...)
	if r2.code != cli.ExitInfeasible || !strings.Contains(r2.stdout, ": infeasible") || strings.Contains(r2.stderr, "HIRE (") {
		t.Fatalf("second run asked again or did not end infeasible:\n%s\n%s", r2.stdout, r2.stderr)
	}
	invariants(t, dir, rootOf(t, r2.stdout))
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM capability_requests"); n != 1 {
		t.Errorf("%d capability requests, want the one declined", n)
	}
}

// statusJSON is `solve status --json`'s one run.
func statusJSON(t *testing.T, dir string) loop.Result {
	t.Helper()
	r := runSolve(t, dir, "status", "--json")
	var runs []loop.Result
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("status --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	return runs[0]
}

// A done tree whose Step 12 pre_check is denied is a HIRE on the root:
// the run waits for a human (exit 4, waiting_for_human in status), and a
// resume before the answer pays for nothing and still waits; once budget
// is added the resume assembles. Before, the root's wait was counted as
// work left: the run read "stopped" (exit 5) and suggested a resume that
// could only be denied again.
func TestARootWaitingForAHumanAtAssemblyIsWaitingNotStopped(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		ws := workspace(t, dir, "example.com/mathx")
		// Each call costs $0.06: the five calls of the leaf leave $0.01,
		// less than the consistency check's estimate.
		sc := writeScriptUsage(t, dir, map[string]int{"input_tokens": 2000, "output_tokens": 2000}, clampSteps()...)
		r := runSolve(t, dir, "run", clampGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "0.32", "--time", "30m")
		if r.code != cli.ExitWaiting || !strings.Contains(r.stdout, ": waiting_for_human") || !strings.Contains(r.stderr, "check_consistency estimated") {
			t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		root := rootOf(t, r.stdout)
		if st := statusJSON(t, dir); st.Outcome != loop.OutcomeWaiting || st.OpenRequests != 1 {
			t.Errorf("status --json: outcome %s with %d open requests; want waiting_for_human with 1", st.Outcome, st.OpenRequests)
		}
		resumePaysNothing(t, dir, root, sc, cli.ExitWaiting, ": waiting_for_human", "before the answer")
		invariants(t, dir, root)
		h := runSolve(t, dir, "hire")
		id := strings.Fields(strings.TrimPrefix(h.stdout, "request "))[0]
		if a := runSolve(t, dir, "hire", id, "--add-budget", "1"); a.code != 0 {
			t.Fatalf("add budget: %s%s", a.stdout, a.stderr)
		}
		if res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc); res.code != 0 || !strings.Contains(res.stdout, ": achieved") {
			t.Fatalf("resume after the answer: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		invariants(t, dir, root)
	})
}

// scriptedOpus is the label of a scripted run's money: the tests' runs are
// scripted, metered at solve's default model.
const scriptedOpus = " (scripted: what claude-opus-4-6 would charge; nothing is charged)"
