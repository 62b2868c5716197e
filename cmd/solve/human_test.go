package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/solve"
	"github.com/llmkernels/kernels/solve/loop"
)

const queueGoal = "Name the new message queue of the billing service"

// queueSteps: two human suggestions, each scored as an attempt of its own
// by the same verify as any output; the first breaks the naming rule.
func queueSteps() []step {
	return []step{
		{OpIdentify, queueGoal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "conventions", "title": "kebab-case <team>-<purpose>-queue name",
			"rubric": "lowercase words joined by hyphens: team, purpose, then queue"}}, "required_capabilities": []string{"naming"}, "rationale": "the platform's naming rule"}},
		{OpSelect, queueGoal, 0, m{"selected": []string{"c1"}, "rationale": "the only rule"}},
		{OpRoute, queueGoal, 0, m{"resolver_id": "claude-code-0", "capability": "naming", "rationale": "a short text answer"}},
		{OpVerify, queueGoal, 1, m{"checks": []any{m{"ref": "c1", "passed": false, "sigma": 0.2, "detail": "BillingQueue is CamelCase and has no purpose word",
			"repair_suggestion": "billing-<purpose>-queue"}}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "a single name", "feedback": "use kebab-case with a purpose word"}},
		{OpVerify, queueGoal, 2, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.95, "detail": "billing, invoices, queue in kebab-case"}},
			"is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "a single name"}},
		{OpConsistency, queueGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, queueGoal, 0, m{"summary": "queue name: billing-invoices-queue"}},
	}
}

// --suggest: each human idea is an unprivileged candidate, scored against
// the constraints like any other output. The one that breaks the rule is
// UNSAT (and not used); the one that holds becomes the leaf's artifact.
func TestSuggestionsAreScoredAgainstConstraintsLikeAnyCandidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := writeScript(t, dir, queueSteps()...)
	r := runSolve(t, dir, "run", queueGoal, "--suggest", "BillingQueue", "--suggest", "billing-invoices-queue",
		"--provider", "script", "--script", sc, "--budget", "5", "--time", "30m")
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	root := rootOf(t, r.stdout)
	invariants(t, dir, root)
	db := openDB(t, dir)
	rows, err := db.Query(`SELECT a.attempt_index, a.resolver_id, a.verdict, printf('%.2f', a.sigma_v), o.type FROM resolution_attempts a JOIN artifacts o ON o.id = a.output_artifact_id ORDER BY a.attempt_index`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var i, res, v, sigma, typ string
		if err := rows.Scan(&i, &res, &v, &sigma, &typ); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{i, res, v, sigma, typ}, " "))
	}
	rows.Close()
	want := "1 candidate-input UNSAT 0.20 doc\n2 candidate-input SAT 0.95 doc"
	if strings.Join(got, "\n") != want {
		t.Errorf("attempts:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	var out string
	if err := db.QueryRow("SELECT a.metadata->>'summary' FROM nodes n JOIN artifacts a ON a.id = n.output_artifact_id WHERE n.id = ? AND n.status = 'resolved'", root).Scan(&out); err != nil || out != "billing-invoices-queue" {
		t.Errorf("resolved output %q (%v), want the suggestion that holds", out, err)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3 AND summary = 'claude-code-0 resolve'"); n != 0 {
		t.Errorf("%d resolve calls: a candidate that holds needs none", n)
	}
}

// --interactive: the Step 1 extraction dialogue proposes candidate
// constraints and the human keeps one (the irreducible core); the
// hardware goal's HIRE is asked on the terminal at once and declined, so
// the node ends infeasible in the same process, with no request left open.
func TestInteractiveRunsTheExtractionDialogueAndAsksHireOnTheTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	steps := append([]step{{loop.OpSynthesize, pcbGoal, 0, m{"candidates": []any{
		m{"type": "logic", "domain": "thermal", "title": "hot spot below 85C at 10A in a 60C soak", "check": "test -f soak-passed"},
		m{"type": "semantic", "domain": "cost", "title": "bill of materials under $40 at 100 units"}},
		"questions": []string{"Is forced air available in the enclosure?"}}}}, pcbSteps()...)
	sc := writeScript(t, dir, steps...)
	r := runStdin(t, dir, "y\nn\nd\n", "run", pcbGoal, "--interactive", "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
	if r.code != cli.ExitInfeasible || !strings.Contains(r.stdout, ": infeasible") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	root := rootOf(t, r.stdout)
	invariants(t, dir, root)
	for _, want := range []string{"Candidate constraint (logic, thermal): hot spot below 85C at 10A in a 60C soak — keep? [y/N]",
		"Open question: Is forced air available in the enclosure?", "Irreducible core: hot spot below 85C at 10A in a 60C soak (logic)\n",
		"Need:   thermal_measurement (physical", "declined on the terminal"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("terminal lacks %q:\n%s", want, r.stderr)
		}
	}
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM constraints c, nodes n, json_each(n.constraints_core_ids) j WHERE n.id = ? AND j.value = c.id AND c.provenance->>'source' = 'human'", root); n != 1 {
		t.Errorf("%d human core constraints on the root, want the one kept", n)
	}
	// The kept candidate keeps the type, domain and check it was proposed
	// with, so the kernel checks it deterministically (it was stored as a
	// semantic constraint, judged by the model, before).
	if n := count(t, db, `SELECT COUNT(*) FROM constraints c, nodes n, json_each(n.constraints_core_ids) j WHERE n.id = ? AND j.value = c.id
		AND c.type = 'logic' AND c.domain = 'thermal' AND c.payload->>'check' = 'test -f soak-passed'`, root); n != 1 {
		t.Errorf("the kept logic candidate lost its type, domain or check")
	}
	if n := count(t, db, "SELECT COUNT(*) FROM capability_requests WHERE status = 'declined'"); n != 1 {
		t.Errorf("%d declined requests, want 1", n)
	}
	// The dialogue's call is metered like any other.
	if !strings.Contains(r.stdout, "LLM calls: 4") {
		t.Errorf("want 4 LLM calls (synthesize, identify, select, route):\n%s", r.stdout)
	}
	// An empty core is refused.
	e := runStdin(t, dir, "n\nn\n", "run", pcbGoal, "--interactive", "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
	if e.code == 0 || !strings.Contains(e.stderr, "the irreducible core is empty") {
		t.Errorf("an empty core was accepted: exit %d\n%s", e.code, e.stderr)
	}
}

// --json on the read commands: one JSON document on stdout in the shapes
// of docs/solve.md, HTML characters as they are.
func TestReadCommandsPrintOneJSONDocument(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	steps := queueSteps()
	steps[len(steps)-1] = step{OpAssemble, queueGoal, 0, m{"summary": "queue name: <billing-invoices-queue> & done"}}
	sc := writeScript(t, dir, steps...)
	r := runSolve(t, dir, "run", queueGoal, "--suggest", "BillingQueue", "--suggest", "billing-invoices-queue", "--provider", "script", "--script", sc, "--budget", "5", "--time", "30m")
	if r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	root := rootOf(t, r.stdout)
	get := func(v any, args ...string) string {
		t.Helper()
		res := runSolve(t, dir, append(args, "--json")...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d %s", args, res.code, res.stderr)
		}
		dec := json.NewDecoder(strings.NewReader(res.stdout))
		if err := dec.Decode(v); err != nil || dec.More() {
			t.Fatalf("%v: not one JSON document (%v):\n%s", args, err, res.stdout)
		}
		return res.stdout
	}
	var runs []solve.RunSummary
	get(&runs, "status")
	var st solve.RunStatus
	out := get(&st, "status", root[:8])
	if len(runs) != 1 || runs[0].Outcome != "achieved" || st.Result.Summary != "queue name: <billing-invoices-queue> & done" || len(st.Nodes) != 1 || !strings.Contains(out, "<billing-invoices-queue> & done") {
		t.Errorf("runs %+v, status %+v", runs, st)
	}
	var logs []solve.LogEntry
	get(&logs, "log", "--tier", "2")
	var rs []solve.Resolver
	get(&rs, "resolvers")
	var kg solve.KGReport
	get(&kg, "kg", "--capability", "naming")
	var arts []solve.Artifact
	get(&arts, "artifacts", root)
	var reqs []solve.CapabilityRequest
	get(&reqs, "hire", "--all")
	if len(logs) == 0 || logs[0].Tier != 2 || len(rs) != 3 || len(kg.Patterns) != 1 || kg.Lookup == nil || len(arts) == 0 || reqs == nil {
		t.Errorf("logs %d, resolvers %d, kg %+v, artifacts %d, requests %v", len(logs), len(rs), kg, len(arts), reqs)
	}
}
