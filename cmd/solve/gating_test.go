package main_test

import (
	"strings"
	"testing"
)

const (
	runbookGoal  = "Write the runbook for moving the orders database from MySQL to Postgres"
	cutoverGoal  = "Write the cutover procedure"
	rollbackGoal = "Write the rollback procedure"
	dualGoal     = "Detail the dual-write phase of the cutover"
)

// gatingSteps: the runbook (σ 0.72) splits into cutover and rollback;
// cutover (σ 0.70, σ_path 0.504) splits again; the dual-write child is
// judged σ 0.75, so its σ_path 0.378 falls below τ_global 0.50. The
// weakest ancestor is cutover: its subtree is invalidated and it is
// re-resolved, with the gating as feedback, into a leaf.
func gatingSteps() []step {
	judged := func(goal string, attempt int, sigma float64, leaf bool, why string) step {
		return step{OpVerify, goal, attempt, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": sigma, "detail": why}}, "is_leaf": leaf, "leaf_kind": "atomic", "leaf_reason": why}}
	}
	node := func(goal, title string) []step {
		return []step{
			{OpIdentify, goal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "operations", "title": title, "rubric": title}}, "required_capabilities": []string{"technical_writing"}, "rationale": "an operator follows it"}},
			{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "the one that matters"}},
			{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
		}
	}
	var s []step
	s = append(s, node(runbookGoal, "every step can be undone within 15 minutes")...)
	s = append(s,
		step{OpResolve, runbookGoal, 1, m{"summary": "runbook outline: cutover, then rollback", "text": "1. cutover\n2. rollback"}},
		judged(runbookGoal, 1, 0.72, false, "the outline is plausible but unproven"),
		step{OpDecompose, runbookGoal, 0, m{"children": []any{
			m{"ref": "a", "goal": cutoverGoal, "summary": "Cutover procedure", "weight": 2, "depends_on": []string{}},
			m{"ref": "b", "goal": rollbackGoal, "summary": "Rollback procedure", "weight": 1, "depends_on": []string{"a"}}}, "rationale": "the two halves"}})
	s = append(s, node(cutoverGoal, "the order of steps keeps writes consistent")...)
	s = append(s,
		step{OpResolve, cutoverGoal, 1, m{"summary": "cutover plan: dual-write, backfill, switch reads", "text": "dual-write; backfill; switch reads"}},
		judged(cutoverGoal, 1, 0.70, false, "dual-write is hand-waved"),
		step{OpDecompose, cutoverGoal, 0, m{"children": []any{m{"ref": "d", "goal": dualGoal, "summary": "Dual-write phase", "weight": 1, "depends_on": []string{}}}, "rationale": "the risky part"}})
	s = append(s, node(dualGoal, "no write is lost")...)
	s = append(s,
		step{OpResolve, dualGoal, 1, m{"summary": "dual-write via triggers", "text": "triggers on MySQL copy each write to Postgres"}},
		judged(dualGoal, 1, 0.75, false, "triggers might miss bulk loads"),
		// The reopened cutover: routed again, resolved with the gating feedback.
		step{OpRoute, cutoverGoal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "retry with the feedback"}},
		step{OpResolve, cutoverGoal, 2, m{"summary": "cutover with logical replication and a verified switch", "text": "Postgres logical replication from a MySQL binlog reader; compare row counts and checksums; switch reads; switch writes"}},
		judged(cutoverGoal, 2, 0.9, true, "each step is concrete and checkable"))
	s = append(s, node(rollbackGoal, "rollback restores MySQL as the writer")...)
	s = append(s,
		step{OpResolve, rollbackGoal, 1, m{"summary": "rollback: stop replication, point writers back", "text": "stop replication; repoint writers to MySQL; replay the Postgres-only writes"}},
		judged(rollbackGoal, 1, 0.85, true, "concrete"),
		step{OpConsistency, runbookGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		step{OpAssemble, runbookGoal, 0, m{"summary": "runbook: replicated cutover and its rollback"}})
	return s
}

// Confidence gating: a SAT non-leaf whose σ_path falls below τ_global
// backtracks to the weakest ancestor, invalidates its subtree (rows,
// attempts and logs kept) and re-resolves it with the gating quoted.
func TestGatingBacktracksToWeakestAncestorAndKeepsInvalidatedHistory(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		sc := writeScript(t, dir, gatingSteps()...)
		r := runSolve(t, dir, "run", runbookGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
		if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		root := rootOf(t, r.stdout)
		invariants(t, dir, root)
		if !strings.Contains(r.stderr, "GATED: sigma_path 0.38 < tau_global 0.50; backtrack to weakest ancestor") || !strings.Contains(r.stderr, "(sigma_v 0.70)") {
			t.Errorf("no gating to the cutover node (sigma_v 0.70):\n%s", r.stderr)
		}
		db := openDB(t, dir)
		// The dual-write node is kept, invalidated, with its attempt and logs.
		var status string
		var invalidated bool
		var attempts, logs int
		if err := db.QueryRow(`SELECT status, invalidated_at IS NOT NULL, (SELECT COUNT(*) FROM resolution_attempts WHERE node_id = n.id),
			(SELECT COUNT(*) FROM logs WHERE node_id = n.id) FROM nodes n WHERE goal_summary = 'Dual-write phase'`).Scan(&status, &invalidated, &attempts, &logs); err != nil {
			t.Fatal(err)
		}
		if status != "pending" || !invalidated || attempts != 1 || logs == 0 {
			t.Errorf("invalidated child: status %s, invalidated %v, %d attempts, %d logs; want pending, invalidated, its attempt and logs kept", status, invalidated, attempts, logs)
		}
		// The final live tree: the root decomposed into two resolved leaves;
		// the cutover was resolved on its second attempt, told why.
		rows, err := db.Query("SELECT goal_summary, status, attempt_count FROM nodes WHERE invalidated_at IS NULL ORDER BY rowid")
		if err != nil {
			t.Fatal(err)
		}
		var tree []string
		for rows.Next() {
			var g, s string
			var a int
			if err := rows.Scan(&g, &s, &a); err != nil {
				t.Fatal(err)
			}
			tree = append(tree, g+" "+s+" "+string(rune('0'+a)))
		}
		rows.Close()
		want := []string{runbookGoal + " pending 1", "Cutover procedure resolved 2", "Rollback procedure resolved 1"}
		if strings.Join(tree, "\n") != strings.Join(want, "\n") {
			t.Errorf("live tree:\n%s\nwant:\n%s", strings.Join(tree, "\n"), strings.Join(want, "\n"))
		}
		var fb string
		if err := db.QueryRow(`SELECT a.feedback FROM resolution_attempts a JOIN nodes n ON n.id = a.node_id WHERE n.goal_summary = 'Cutover procedure' AND a.attempt_index = 2`).Scan(&fb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fb, "confidence gating") {
			t.Errorf("the cutover's retry was not told about the gating: %s", fb)
		}
	})
}
