package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
)

const noteGoal = "Write the release note for v2.3"

// noteSteps is a one-leaf text goal with two semantic constraints (and
// extra, when given), judged by verifyAnswers for attempt 1 in turn.
func noteSteps(extra []any, verifyAnswers ...any) []step {
	cs := append([]any{m{"type": "semantic", "domain": "content", "title": "mentions the database migration", "rubric": "the migration is named"},
		m{"type": "semantic", "domain": "style", "title": "under 200 words", "rubric": "short"}}, extra...)
	sel := []string{}
	for i := range cs {
		sel = append(sel, "c"+string(rune('1'+i)))
	}
	s := []step{
		{OpIdentify, noteGoal, 0, m{"constraints": cs, "required_capabilities": []string{"technical_writing"}, "rationale": "a note"}},
		{OpSelect, noteGoal, 0, m{"selected": sel, "rationale": "all"}},
		{OpRoute, noteGoal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
		{OpResolve, noteGoal, 1, m{"summary": "release note", "text": "v2.3 migrates the orders table to Postgres."}},
	}
	for _, a := range verifyAnswers {
		s = append(s, step{OpVerify, noteGoal, 1, a})
	}
	return append(s,
		step{OpGap, noteGoal, 0, m{"capability_tag": "editor_review", "resolver_type": "physical", "build_constraints": []string{"a person reads it"}, "rationale": "taste"}},
		step{OpConsistency, noteGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		step{OpAssemble, noteGoal, 0, m{"summary": "the release note"}})
}

var skipAll = m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one note"}

// A verify answer that judges nothing does not pass: each selected
// constraint the verifier skipped is asked again, alone; one still
// unjudged fails (σ 0). (Before: "checks": [] was SAT with σ_v 1.0.)
func TestAVerifierThatSkipsConstraintsDoesNotPassThem(t *testing.T) {
	t.Parallel()
	t.Run("skipped twice fails", func(t *testing.T) {
		dir := t.TempDir()
		sc := writeScript(t, dir, noteSteps(nil, skipAll, skipAll)...)
		r := runSolve(t, dir, "run", noteGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h", "--tmax", "1")
		if r.code != cli.ExitWaiting || !strings.Contains(r.stdout, ": waiting_for_human") {
			t.Fatalf("exit %d, want %d (UNSAT, then HIRE)\n%s\n%s", r.code, cli.ExitWaiting, r.stdout, r.stderr)
		}
		db := openDB(t, dir)
		var ver string
		if err := db.QueryRow(`SELECT verification FROM resolution_attempts WHERE attempt_index = 1`).Scan(&ver); err != nil {
			t.Fatal(err)
		}
		var v struct {
			Verdict string  `json:"verdict"`
			SigmaV  float64 `json:"sigma_v"`
			Checks  []struct {
				Ref    string `json:"ref"`
				Passed bool   `json:"passed"`
				Detail string `json:"detail"`
			} `json:"checks"`
		}
		if err := json.Unmarshal([]byte(ver), &v); err != nil {
			t.Fatal(err)
		}
		if v.Verdict != "UNSAT" || v.SigmaV != 0 || len(v.Checks) != 2 || v.Checks[0].Passed || !strings.Contains(v.Checks[1].Detail, "gave no verdict") {
			t.Errorf("verification %s", ver)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3 AND summary = 'claude-code-0 verify'"); n != 2 {
			t.Errorf("%d verify calls, want 2 (the skipped constraints asked again)", n)
		}
	})
	t.Run("judged when asked again", func(t *testing.T) {
		dir := t.TempDir()
		judged := m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "names it"}, m{"ref": "c2", "passed": true, "sigma": 0.8, "detail": "8 words"}},
			"is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one note"}
		sc := writeScript(t, dir, noteSteps(nil, skipAll, judged)...)
		r := runSolve(t, dir, "run", noteGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
		if r.code != 0 || !strings.Contains(r.stdout, "σ_system 0.80") {
			t.Fatalf("exit %d, want achieved with σ_system 0.80 (the verdicts of the second ask)\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		invariants(t, dir, rootOf(t, r.stdout))
	})
}

// A logic cost constraint is its own expression over the node's real
// spend, evaluated by the kernel: "costs at most $0.000001" fails once a
// call was paid, and since spend only grows the node ends infeasible at
// once, spending nothing more. (Before: it passed while the node's budget
// was not exhausted.)
func TestALogicCostConstraintIsEvaluatedOverTheRealSpend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		code int
		want string
	}{
		{"cost_usd <= 0.000001", cli.ExitInfeasible, "cost_usd <= 0.000001 is false with cost_usd = 0.0"},
		{"cost_usd <= 5 && time_seconds < 3600", 0, "Goal achieved"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			dir := t.TempDir()
			cost := m{"type": "logic", "domain": "cost", "title": "costs at most what the expression says", "expr": tc.expr}
			judged := m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "names it"}, m{"ref": "c2", "passed": true, "sigma": 0.9, "detail": "short"},
				m{"ref": "c3", "passed": true, "sigma": 1, "detail": "cheap, surely"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one note"}
			sc := writeScript(t, dir, noteSteps([]any{cost}, judged)...)
			r := runSolve(t, dir, "run", noteGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d with %q\n%s\n%s", r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
			invariants(t, dir, latestRoot(t, dir))
			if tc.code != 0 {
				if !strings.Contains(r.stderr, "INFEASIBLE: a limit on the node's own spend and time failed and can never hold again") {
					t.Errorf("not ended at once:\n%s", r.stderr)
				}
				if n := count(t, openDB(t, dir), "SELECT COUNT(*) FROM resolution_attempts"); n != 1 {
					t.Errorf("%d attempts: a limit that can never hold again must not be retried", n)
				}
			}
		})
	}
}
