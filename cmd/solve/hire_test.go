package main_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/solve/loop"
)

const pcbGoal = "Design a 4-layer PCB for a 48V to 12V 10A buck converter that passes a 60C thermal soak"

func pcbSteps() []step {
	return []step{
		{OpIdentify, pcbGoal, 0, m{"constraints": []any{
			m{"type": "logic", "domain": "thermal", "title": "hot spot below 85C at 10A in a 60C soak", "check": ""},
			m{"type": "semantic", "domain": "electrical", "title": "layout follows buck converter loop-area practice", "rubric": "input loop under 1 cm2, Kelvin sense on the shunt"}},
			"required_capabilities": []string{"pcb_layout", "thermal_measurement"}, "rationale": "a physical board must be laid out, fabricated and measured"}},
		{OpSelect, pcbGoal, 0, m{"selected": []string{"c1", "c2"}, "rationale": "thermal and layout are both irreducible"}},
		{OpRoute, pcbGoal, 0, m{"resolver_id": "", "capability": "", "rationale": "no candidate can fabricate or measure a board",
			"gap": m{"capability_tag": "thermal_measurement", "resolver_type": "physical",
				"build_constraints": []string{"measures board hot spots with a thermal camera during a 60C soak", "reports max temperature per component"},
				"rationale":         "verifying the thermal constraint needs a fabricated board and a measurement rig; digital resolvers cannot do it"}}},
	}
}

// The non-software goal is identified and routed sensibly, bottoms out at
// HIRE with a well-formed request; declining it makes the node infeasible
// and the same request is never asked again, in this run or the next.
func TestNonSoftwareGoalBottomsOutAtHireAndADeclineIsNotAskedTwice(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		sc := writeScript(t, dir, pcbSteps()...)
		r := runSolve(t, dir, "run", pcbGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
		if r.code != cli.ExitWaiting || !strings.Contains(r.stdout, "waiting_for_human") {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		root := rootOf(t, r.stdout)
		invariants(t, dir, root)
		h := runSolve(t, dir, "hire")
		for _, want := range []string{"Need:   thermal_measurement (physical", "Failed because: verifying the thermal constraint", "Budget remaining:", "Similar past resolutions:", "Tried:"} {
			if !strings.Contains(h.stdout, want) {
				t.Errorf("hire listing lacks %q:\n%s", want, h.stdout)
			}
		}
		id := strings.Fields(strings.TrimPrefix(h.stdout, "request "))[0]
		if d := runSolve(t, dir, "hire", id, "--decline", "--reason", "no thermal rig"); d.code != 0 {
			t.Fatalf("decline: %s%s", d.stdout, d.stderr)
		}
		resumePaysNothing(t, dir, root, sc, cli.ExitInfeasible, ": infeasible", "after a decline")
		invariants(t, dir, root)
		// A second run of the same goal meets the same gap: no new request.
		r2 := runSolve(t, dir, "run", pcbGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h")
		if r2.code != cli.ExitInfeasible || !strings.Contains(r2.stdout, ": infeasible") {
			t.Fatalf("second run:\n%s\n%s", r2.stdout, r2.stderr)
		}
		db := openDB(t, dir)
		if n := count(t, db, "SELECT COUNT(*) FROM capability_requests"); n != 1 {
			t.Errorf("%d capability requests, want the one declined", n)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM nodes WHERE status = 'infeasible'"); n != 2 {
			t.Errorf("%d infeasible nodes, want 2 (one per run)", n)
		}
	})
}

const (
	boardsGoal = "Measure the hot spots of prototype boards A and B"
	boardA     = "Measure the hot spot of prototype board A"
	boardB     = "Measure the hot spot of prototype board B"
)

// boardsSteps is a goal whose two leaves meet the same capability gap
// (same tag, same build constraints: one request fingerprint), then are
// resolved by the hired tool and judged.
func boardsSteps() []step {
	judged := func(goal string, leaf bool) step {
		return step{OpVerify, goal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "a reading"}}, "is_leaf": leaf, "leaf_kind": "atomic", "leaf_reason": "ok"}}
	}
	s := []step{
		{OpIdentify, boardsGoal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "hardware", "title": "a reading per board", "rubric": "two numbers"}},
			"required_capabilities": []string{"planning"}, "rationale": "two measurements"}},
		{OpSelect, boardsGoal, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
		{OpRoute, boardsGoal, 0, m{"resolver_id": "claude-code-0", "capability": "planning", "rationale": "a plan"}},
		{OpResolve, boardsGoal, 1, m{"summary": "one measurement per board", "text": "1. board A\n2. board B"}},
		judged(boardsGoal, false),
		{OpDecompose, boardsGoal, 0, m{"children": []any{
			m{"ref": "a", "goal": boardA, "summary": "Board A", "weight": 1, "depends_on": []string{}},
			m{"ref": "b", "goal": boardB, "summary": "Board B", "weight": 1, "depends_on": []string{}}}, "rationale": "one per board"}},
		{OpConsistency, boardsGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, boardsGoal, 0, m{"summary": "both boards measured"}},
	}
	for _, g := range []string{boardA, boardB} {
		s = append(s,
			step{OpIdentify, g, 0, m{"constraints": []any{m{"type": "semantic", "domain": "hardware", "title": "a reading in degrees C", "rubric": "a number"}},
				"required_capabilities": []string{"thermal_measurement"}, "rationale": "a measurement"}},
			step{OpSelect, g, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
			step{OpRoute, g, 0, m{"resolver_id": "", "capability": "", "rationale": "no candidate measures",
				"gap": m{"capability_tag": "thermal_measurement", "resolver_type": "physical", "build_constraints": []string{"reads a board with a thermal camera"}, "rationale": "hands and a camera"}}},
			judged(g, true))
	}
	return s
}

// boardsWaiting runs boardsGoal to its shared capability request and
// checks that both leaves wait on it durably: the run and status say
// waiting_for_human (exit 4), the listing names both nodes, and a resume
// before the answer pays for nothing. (Before, only the node that asked
// was recorded: a reload found the other ready, status read "stopped",
// and every resume paid for its route call again.) It returns the root
// and the request id.
func boardsWaiting(t *testing.T, dir string) (root, id string) {
	t.Helper()
	ws := workspace(t, dir, "example.com/boards")
	sc := writeScript(t, dir, boardsSteps()...)
	r := runSolve(t, dir, "run", boardsGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h")
	if r.code != cli.ExitWaiting || !strings.Contains(r.stdout, ": waiting_for_human") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	root = rootOf(t, r.stdout)
	invariants(t, dir, root)
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM capability_requests"); n != 1 {
		t.Fatalf("%d capability requests, want the one both leaves share", n)
	}
	if st := statusJSON(t, dir); st.Outcome != loop.OutcomeWaiting || st.OpenRequests != 1 {
		t.Errorf("status --json: outcome %s with %d open requests; want waiting_for_human with 1", st.Outcome, st.OpenRequests)
	}
	h := runSolve(t, dir, "hire")
	id = strings.Fields(strings.TrimPrefix(h.stdout, "request "))[0]
	_, waiting, _ := strings.Cut(h.stdout, "Waiting nodes: ")
	waiting, _, _ = strings.Cut(waiting, "\n")
	if strings.Count(waiting, ",") != 1 {
		t.Errorf("the listing does not name both waiting nodes (%q):\n%s", waiting, h.stdout)
	}
	for i := 0; i < 2; i++ {
		resumePaysNothing(t, dir, root, sc, cli.ExitWaiting, ": waiting_for_human", fmt.Sprintf("%d before the answer", i+1))
	}
	invariants(t, dir, root)
	return root, id
}

// Two leaves meeting the same capability gap share one request and both
// wait on it; one answer (a resolver command) lets both go on with the
// hired tool.
func TestTwoNodesWaitingOnOneRequestBothWaitAndBothGoOnWhenAnswered(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		root, id := boardsWaiting(t, dir)
		a := runSolve(t, dir, "hire", id, "--resolver-command", "echo 71C")
		if a.code != 0 || !strings.Contains(a.stdout, "the 2 nodes waiting on it use it") {
			t.Fatalf("hire: exit %d\n%s%s", a.code, a.stdout, a.stderr)
		}
		sc := writeScript(t, dir, boardsSteps()...)
		res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
		if res.code != 0 || !strings.Contains(res.stdout, ": achieved") {
			t.Fatalf("resume after the answer: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		invariants(t, dir, root)
		db := openDB(t, dir)
		if n := count(t, db, "SELECT COUNT(*) FROM resolution_attempts WHERE resolver_id = 'human-thermal_measurement-1'"); n != 2 {
			t.Errorf("the hired tool ran on %d nodes, want both leaves", n)
		}
		// Each leaf takes the delivered tool without asking the router
		// again: one route call per node in all (root, A, B).
		if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3 AND summary = 'claude-code-0 select_resolver'"); n != 3 {
			t.Errorf("%d route calls, want 3: a leaf waiting on the answered request asked the router again", n)
		}
	})
}

// A node that meets a gap whose request is answered with a resolver, but
// that was not waiting on it (here its wait is removed before the answer,
// as for a child made after a reopen), takes the answer too: the lookup
// before BUILD finds the hired tool by its capability, so the node never
// reaches the "answered, and still needs the same thing" end.
func TestANodeMeetingAnAnsweredRequestUsesItsAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, id := boardsWaiting(t, dir)
	db := openDB(t, dir)
	w := waitingOn(t, db, id)
	if _, err := db.Exec("DELETE FROM capability_request_nodes WHERE node_id = ?", w[1]); err != nil {
		t.Fatal(err)
	}
	if a := runSolve(t, dir, "hire", id, "--resolver-command", "echo 71C"); a.code != 0 {
		t.Fatalf("hire: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	sc := writeScript(t, dir, boardsSteps()...)
	res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
	if res.code != 0 || !strings.Contains(res.stdout, ": achieved") {
		t.Fatalf("resume after the answer: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM resolution_attempts WHERE resolver_id = 'human-thermal_measurement-1'"); n != 2 {
		t.Errorf("the hired tool ran on %d nodes, want both leaves", n)
	}
	invariants(t, dir, root)
}

// A decline of the shared request ends both waiting nodes infeasible at
// once: the resume pays for nothing and the run is infeasible.
func TestADeclinedSharedRequestEndsEveryNodeWaitingOnIt(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		root, id := boardsWaiting(t, dir)
		d := runSolve(t, dir, "hire", id, "--decline", "--reason", "no camera")
		if d.code != 0 || strings.Count(d.stdout, "is infeasible") != 2 {
			t.Fatalf("decline: exit %d\n%s%s", d.code, d.stdout, d.stderr)
		}
		resumePaysNothing(t, dir, root, writeScript(t, dir, boardsSteps()...), cli.ExitInfeasible, ": infeasible", "after the decline")
		invariants(t, dir, root)
	})
}

// A top-up of the shared request is shared evenly by its waiting nodes:
// the run's allowance grows by what the human gave, not twice that.
func TestATopUpOfASharedRequestIsSharedByItsWaitingNodes(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		root, id := boardsWaiting(t, dir)
		a := runSolve(t, dir, "hire", id, "--add-budget", "1")
		if a.code != 0 || !strings.Contains(a.stdout, "shared by the 2 nodes waiting on it ($0.5000 and 0s each") {
			t.Fatalf("add budget: exit %d\n%s%s", a.code, a.stdout, a.stderr)
		}
		db := openDB(t, dir)
		if n := count(t, db, "SELECT COUNT(DISTINCT node_id) FROM budget_ledger WHERE description = 'HIRE: budget added by a human' AND amount = 0.5"); n != 2 {
			t.Errorf("%d nodes got $0.50 of the top-up, want both", n)
		}
		if st := runSolve(t, dir, "status", root); !strings.Contains(st.stdout, " of $6.00"+scriptedOpus+" · LLM calls") {
			t.Errorf("status does not count the top-up once in the allowance:\n%s", st.stdout)
		}
	})
}

// waitingOn lists the nodes recorded as waiting on request id (prefix),
// in the order they met it, invalidated ones included.
func waitingOn(t *testing.T, db *testDB, id string) []string {
	t.Helper()
	rows, err := db.Query("SELECT node_id FROM capability_request_nodes WHERE request_id LIKE ? || '%' ORDER BY rowid", id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n)
	}
	if err := rows.Err(); err != nil || len(ids) != 2 {
		t.Fatalf("nodes waiting on %s: %v (%v), want both leaves", id, ids, err)
	}
	return ids
}

// invalidate marks nodes invalidated, as an ancestor's reopen does.
func invalidate(t *testing.T, db *testDB, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := db.Exec("UPDATE nodes SET invalidated_at = '2026-01-01 00:00:00' WHERE id = ?", id); err != nil {
			t.Fatal(err)
		}
	}
}

// A node invalidated since it met the shared request (an ancestor was
// reopened) waits no more: the listing leaves it out, and a top-up goes
// whole to the live node still waiting. (Before, the invalidated node was
// listed and took half, stranded where no step would spend it.)
func TestATopUpOfASharedRequestSkipsAnInvalidatedWaitingNode(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		_, id := boardsWaiting(t, dir)
		db := openDB(t, dir)
		w := waitingOn(t, db, id)
		invalidate(t, db, w[1])
		h := runSolve(t, dir, "hire")
		if !strings.Contains(h.stdout, "Waiting nodes: "+w[0][:8]+"\n") {
			t.Errorf("the listing should name only the live waiting node %s:\n%s", w[0][:8], h.stdout)
		}
		a := runSolve(t, dir, "hire", id, "--add-budget", "1")
		if a.code != 0 || !strings.Contains(a.stdout, "added $1.00 and 0s to node "+w[0][:8]) {
			t.Fatalf("add budget: exit %d\n%s%s", a.code, a.stdout, a.stderr)
		}
		var got float64
		if err := db.QueryRow("SELECT COALESCE(SUM(amount), 0) FROM budget_ledger WHERE description = 'HIRE: budget added by a human' AND node_id = ?", w[0]).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != 1 {
			t.Errorf("the live waiting node got $%v of the $1 top-up, want all of it", got)
		}
	})
}

// A top-up of a request no live node waits on any more goes to the
// nearest live ancestor of the node that asked, not onto a node no step
// will spend from.
func TestATopUpOfARequestWhoseNodesAreInvalidatedReachesALiveAncestor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, id := boardsWaiting(t, dir)
	db := openDB(t, dir)
	w := waitingOn(t, db, id)
	invalidate(t, db, w...)
	left := func() float64 {
		var v float64
		if err := db.QueryRow("SELECT budget_allocated - budget_spent - budget_reserved FROM nodes WHERE id = ?", w[0]).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if a := runSolve(t, dir, "hire", id, "--add-budget", "1"); a.code != 0 {
		t.Fatalf("add budget: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	if v := left(); v > 1e-9 {
		t.Errorf("$%.4f is left on the invalidated node that asked", v)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM budget_ledger WHERE node_id = ? AND event_type = 'refund' AND amount >= 1", root); n != 1 {
		t.Errorf("%d refunds of the top-up reached the root, want 1", n)
	}
	invariants(t, dir, root)
}

// solve hire … --allow-network records what the hired command may reach
// (the flag alone: all), solve resolvers lists it, and the flag without
// --resolver-command is a usage error that writes nothing; solve
// resolvers allow refuses a resolver that declares nothing.
func TestHireAllowNetworkIsRecordedAndListed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, id := boardsWaiting(t, dir)
	if a := runSolve(t, dir, "hire", id, "--add-budget", "1", "--allow-network"); a.code != 2 || !strings.Contains(a.stderr, "--allow-network goes with --resolver-command") {
		t.Fatalf("--allow-network with a budget: exit %d\n%s", a.code, a.stderr)
	}
	if a := runSolve(t, dir, "hire", id, "--resolver-command", "echo 71C", "--allow-network"); a.code != 0 {
		t.Fatalf("hire: exit %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	if r := runSolve(t, dir, "resolvers"); !strings.Contains(r.stdout, "network allowed: all") {
		t.Errorf("the listing does not show the allowance:\n%s", r.stdout)
	}
	if r := runSolve(t, dir, "resolvers", "allow", "codex-tools-0", "--network"); r.code != 1 || !strings.Contains(r.stderr, "declares no network need") || !strings.Contains(r.stderr, "solve hire REQUEST --resolver-command CMD --allow-network") {
		t.Errorf("allow a resolver that declares nothing: exit %d\n%s", r.code, r.stderr)
	}
}
