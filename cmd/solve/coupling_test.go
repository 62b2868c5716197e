package main_test

import (
	"strings"
	"testing"
)

const (
	apiDocsGoal = "Document the payments API's errors and the client's retry rules"
	errorsDoc   = "Document the API's error response format"
	retryDoc    = "Document when the client retries a failed call"
)

// couplingSteps: two leaves that each pass alone but disagree on the
// error field's name; the consistency check adds a coupling constraint at
// their least common ancestor (the root), which is re-planned.
func couplingSteps() []step {
	leaf := func(goal, text string) []step {
		return []step{
			{OpIdentify, goal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "docs", "title": "an integrator can follow it", "rubric": "examples for every case"}}, "required_capabilities": []string{"technical_writing"}, "rationale": "docs"}},
			{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "the one rule"}},
			{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
			{OpResolve, goal, 1, m{"summary": trimmed(text), "text": text}},
			{OpVerify, goal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "has examples"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one page"}},
		}
	}
	root := func(attempt int, selected []string) []step {
		checks := []any{}
		for _, c := range selected {
			checks = append(checks, m{"ref": c, "passed": true, "sigma": 0.9, "detail": "the outline covers it"})
		}
		return []step{
			{OpSelect, apiDocsGoal, 0, m{"selected": selected, "rationale": "all needed"}},
			{OpRoute, apiDocsGoal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "an outline"}},
			{OpResolve, apiDocsGoal, attempt, m{"summary": "outline: error format page, retry page", "text": "1. errors\n2. retries"}},
			{OpVerify, apiDocsGoal, attempt, m{"checks": checks, "is_leaf": false, "leaf_reason": "two pages"}},
			{OpDecompose, apiDocsGoal, 0, m{"children": []any{
				m{"ref": "e", "goal": errorsDoc, "summary": "Error format page", "weight": 1, "depends_on": []string{}},
				m{"ref": "r", "goal": retryDoc, "summary": "Retry rules page", "weight": 1, "depends_on": []string{}}}, "rationale": "one page each"}},
		}
	}
	s := []step{{OpIdentify, apiDocsGoal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "docs", "title": "covers every error a client can see", "rubric": "4xx and 5xx"}},
		"required_capabilities": []string{"technical_writing"}, "rationale": "API docs"}}}
	s = append(s, root(1, []string{"c1"})...)
	s = append(s, leaf(errorsDoc, "Errors are JSON: {\"error_code\": \"card_declined\", \"message\": \"…\"}")...)
	s = append(s, leaf(retryDoc, "Retry when code is rate_limited or unavailable, with backoff")...)
	s = append(s, step{OpConsistency, apiDocsGoal, 0, m{"verdict": "UNSAT", "conflicts": []any{m{"leaves": []string{"l1", "l2"},
		"coupling_constraints": []any{m{"type": "semantic", "domain": "consistency", "title": "both pages name the error field code", "rubric": "the same field name everywhere"}},
		"reason":               "the error page names the field error_code, the retry page reads code"}}}})
	s = append(s, root(2, []string{"c1", "c2"})...)
	s = append(s, leaf(errorsDoc, "Errors are JSON: {\"code\": \"card_declined\", \"message\": \"…\"}")...)
	s = append(s, leaf(retryDoc, "Retry when code is rate_limited or unavailable, with backoff")...)
	return append(s, step{OpConsistency, apiDocsGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		step{OpAssemble, apiDocsGoal, 0, m{"summary": "two pages that agree on the code field"}})
}

func trimmed(s string) string { return strings.SplitN(s, ":", 2)[0] }

// Step 12: a coupling conflict between two leaves adds the coupling
// constraint at their least common ancestor, invalidates its subtree
// (history kept) and re-plans it; the second round is consistent.
func TestCouplingConflictReopensTheLeastCommonAncestor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := writeScript(t, dir, couplingSteps()...)
	r := runSolve(t, dir, "run", apiDocsGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	root := rootOf(t, r.stdout)
	invariants(t, dir, root)
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE node_id = ? AND summary LIKE '%COUPLING conflict%'", root); n != 1 {
		t.Errorf("%d coupling rounds logged on the root, want 1", n)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM nodes WHERE invalidated_at IS NOT NULL AND (SELECT COUNT(*) FROM resolution_attempts a WHERE a.node_id = nodes.id) = 1"); n != 2 {
		t.Errorf("%d invalidated first-round leaves with their attempt kept, want 2", n)
	}
	var selected int
	if err := db.QueryRow(`SELECT COUNT(*) FROM nodes n, json_each(n.constraints_selected_ids) j JOIN constraints c ON c.id = j.value
		WHERE n.id = ? AND c.title = 'both pages name the error field code'`, root).Scan(&selected); err != nil || selected != 1 {
		t.Errorf("the coupling constraint is not selected on the root: %d %v", selected, err)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM nodes WHERE root_id = ? AND invalidated_at IS NULL AND status = 'resolved'", root); n != 2 {
		t.Errorf("%d live resolved leaves, want the 2 of the second round", n)
	}
}
