package main_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli"
)

// overdrawn lists every node whose ledger says it used more than it was
// given (spends, allocations to children and held reservations above its
// allocations), and the run's paid spend.
func overdrawn(t *testing.T, dir string) ([]string, float64) {
	t.Helper()
	db := openDB(t, dir)
	rows, err := db.Query(`SELECT n.goal_summary,
		COALESCE(SUM(CASE WHEN l.event_type = 'allocate' THEN l.amount END), 0),
		COALESCE(SUM(CASE WHEN l.event_type = 'spend' THEN l.amount WHEN l.event_type = 'refund' THEN -l.amount END), 0)
		FROM nodes n LEFT JOIN budget_ledger l ON l.node_id = n.id GROUP BY n.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var g string
		var alloc, spent float64
		if err := rows.Scan(&g, &alloc, &spent); err != nil {
			t.Fatal(err)
		}
		if spent > alloc+1e-9 {
			bad = append(bad, fmt.Sprintf("%q used $%.4f of $%.4f", g, spent, alloc))
		}
	}
	var paid float64
	if err := db.QueryRow(`SELECT COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'spend' AND resolver_id IS NOT NULL`).Scan(&paid); err != nil {
		t.Fatal(err)
	}
	return bad, paid
}

const eightGoal = "Write eight short product blurbs"

// eightSteps: the root splits into eight leaves; each answer costs $0.01
// (scripted usage), each call is estimated at about $0.03.
func eightSteps() []step {
	var children []any
	s := []step{
		{OpIdentify, eightGoal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "content", "title": "each blurb names its product", "rubric": "named"}}, "required_capabilities": []string{"technical_writing"}, "rationale": "copy"}},
		{OpSelect, eightGoal, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
		{OpRoute, eightGoal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
		{OpResolve, eightGoal, 1, m{"summary": "eight blurbs, one per product", "text": "one each"}},
		{OpVerify, eightGoal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "plan"}}, "is_leaf": false, "leaf_reason": "eight pieces"}},
	}
	for i := range 8 {
		goal := fmt.Sprintf("Write the blurb for product %d", i+1)
		children = append(children, m{"ref": fmt.Sprintf("b%d", i+1), "goal": goal, "summary": fmt.Sprintf("Blurb %d", i+1), "weight": 1, "depends_on": []string{}})
		s = append(s,
			step{OpIdentify, goal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "content", "title": "names the product", "rubric": "named"}}, "required_capabilities": []string{"technical_writing"}, "rationale": "copy"}},
			step{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
			step{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
			step{OpResolve, goal, 1, m{"summary": "blurb", "text": "a blurb"}},
			step{OpVerify, goal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "named"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one blurb"}})
	}
	return append(s, step{OpDecompose, eightGoal, 0, m{"children": children, "rationale": "one each"}},
		step{OpConsistency, eightGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		step{OpAssemble, eightGoal, 0, m{"summary": "eight blurbs"}})
}

// --budget 0.25 --workers 8: eight siblings each short of their share
// draw on the parent's reserve at once. Each draw is reserved in the
// transaction that checks the reserve, so no node ever uses more than it
// was given and the run never spends more than its budget. (Before: each
// worker read the same reserve and took it, and the parent spent far more
// than it had.)
func TestEightWorkersNeverOverdrawTheParent(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, base string) {
		for round := range 3 { // the interleavings differ from run to run
			dir := likeDir(t, base)
			sc := writeScriptUsage(t, dir, map[string]int{"input_tokens": 1000, "output_tokens": 200}, eightSteps()...)
			r := runSolve(t, dir, "run", eightGoal, "--provider", "script", "--script", sc, "--budget", "0.25", "--time", "1h", "--workers", "8")
			if r.code != cli.ExitWaiting && r.code != 0 {
				t.Fatalf("round %d: exit %d\n%s\n%s", round, r.code, r.stdout, r.stderr)
			}
			invariants(t, dir, rootOf(t, r.stdout))
			bad, paid := overdrawn(t, dir)
			if len(bad) > 0 || paid > 0.25+1e-9 {
				t.Errorf("round %d: paid $%.4f of $0.25; overdrawn:\n%s", round, paid, strings.Join(bad, "\n"))
			}
			if !strings.Contains(r.stderr, "reallocated from the parent's reserve") {
				t.Errorf("round %d: no child drew on the parent's reserve:\n%s", round, r.stderr)
			}
		}
	})
}

const (
	launchGoal = "Plan the product launch"
	pressGoal  = "Write the press kit"
)

// launchSteps: the root (σ 0.70) splits into the press kit (σ 0.71, not a
// leaf): σ_path 0.497 < τ_global 0.50, and the root, weakest, is reopened.
// Its second plan (σ 0.9) splits into the press kit again, now a leaf.
func launchSteps() []step {
	node := func(goal string) []step {
		return []step{
			{OpIdentify, goal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "content", "title": "complete", "rubric": "nothing missing"}}, "required_capabilities": []string{"technical_writing"}, "rationale": "prose"}},
			{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
			{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
		}
	}
	judged := func(goal string, attempt int, sigma float64, leaf bool) step {
		return step{OpVerify, goal, attempt, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": sigma, "detail": "judged"}}, "is_leaf": leaf, "leaf_kind": "atomic", "leaf_reason": "judged"}}
	}
	kit := m{"children": []any{m{"ref": "p", "goal": pressGoal, "summary": "Press kit", "weight": 1, "depends_on": []string{}}}, "rationale": "the kit"}
	s := node(launchGoal)
	s = append(s,
		step{OpResolve, launchGoal, 1, m{"summary": "launch plan v1", "text": "press kit first"}},
		judged(launchGoal, 1, 0.70, false),
		step{OpDecompose, launchGoal, 0, kit},
		step{OpDecompose, launchGoal, 0, kit})
	s = append(s, node(pressGoal)...)
	s = append(s, node(pressGoal)...)
	return append(s,
		step{OpResolve, pressGoal, 1, m{"summary": "kit outline", "text": "sections"}},
		judged(pressGoal, 1, 0.71, false),
		step{OpRoute, launchGoal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "again"}},
		step{OpResolve, launchGoal, 2, m{"summary": "launch plan v2", "text": "press kit, with quotes"}},
		judged(launchGoal, 2, 0.9, false),
		step{OpResolve, pressGoal, 1, m{"summary": "the kit", "text": "the whole kit"}},
		judged(pressGoal, 1, 0.9, true),
		step{OpConsistency, launchGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		step{OpAssemble, launchGoal, 0, m{"summary": "launch plan with its press kit"}})
}

// Backtracking does not strand budget: what the invalidated press kit
// did not spend returns to the reopened root, and the root's second
// decomposition gives the new press kit about what the first one held.
// (Before: the new child got a share of the root's 20% reserve only.) The
// gating line shows as many digits as the comparison needs (before:
// "GATED: sigma_path 0.50 < tau_global 0.50").
func TestBacktrackingReturnsTheInvalidatedSubtreesMoneyToThePlan(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		sc := writeScript(t, dir, launchSteps()...)
		r := runSolve(t, dir, "run", launchGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
		if r.code != 0 || !strings.Contains(r.stderr, "GATED: sigma_path 0.497 < tau_global 0.500") {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		invariants(t, dir, rootOf(t, r.stdout))
		db := openDB(t, dir)
		var first, second, returned float64
		if err := db.QueryRow(`SELECT budget_allocated FROM nodes WHERE goal_summary = 'Press kit' AND invalidated_at IS NOT NULL`).Scan(&first); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT budget_allocated FROM nodes WHERE goal_summary = 'Press kit' AND invalidated_at IS NULL`).Scan(&second); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT COALESCE(SUM(amount), 0) FROM budget_ledger WHERE event_type = 'refund' AND description LIKE 'returned by invalidated child %'`).Scan(&returned); err != nil {
			t.Fatal(err)
		}
		if second < 0.9*first || returned < 0.9*first {
			t.Errorf("the first press kit was allocated $%.4f, the second $%.4f; $%.4f returned to the root", first, second, returned)
		}
		bad, paid := overdrawn(t, dir)
		if len(bad) > 0 || paid > 5 {
			t.Errorf("paid $%.4f; overdrawn: %v", paid, bad)
		}
	})
}

// An LLM request is cancelled at the node's deadline (here the fake API
// never answers): the run does not wait for it, and asks for more time.
func TestAnLLMCallIsCancelledAtTheNodesDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	api := newFakeAPI(t, 1, clampSteps()...)
	api.mu.Lock()
	api.hold = func(body []byte) bool { return strings.Contains(string(body), "operation: identify_constraints") }
	api.mu.Unlock()
	began := time.Now()
	cmd := api.command(dir, "run", clampGoal, "--budget", "5", "--time", "35s")
	done := make(chan result, 1)
	go func() {
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = -1
			if ee, ok := err.(interface{ ExitCode() int }); ok {
				code = ee.ExitCode()
			}
		}
		done <- result{code: code, stderr: string(out)}
	}()
	select {
	case r := <-done:
		took := time.Since(began)
		if r.code != cli.ExitWaiting || !strings.Contains(r.stderr, "HIRE (over_budget): need a human for budget (the node's wall time ran out during claude-code-0 identify_constraints") {
			t.Fatalf("exit %d after %s\n%s", r.code, took, r.stderr)
		}
		if took > 80*time.Second {
			t.Errorf("took %s with 35s of wall time", took)
		}
	case <-time.After(100 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the run waited for an LLM call past its node's deadline")
	}
	db := openDB(t, dir)
	var spent, held float64
	if err := db.QueryRow(`SELECT settled_amount, amount FROM budget_reservations WHERE operation = 'identify_constraints'`).Scan(&spent, &held); err != nil || math.Abs(spent-held) > 1e-12 || spent <= 0 {
		t.Errorf("the cut-off call was settled at $%v of its $%v reservation (%v): its cost is unknown, so the reservation is charged", spent, held, err)
	}
}
