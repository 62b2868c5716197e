package solve_test

import (
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/cli"
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
		calls, spent := paid(t, dir)
		res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
		if res.code != cli.ExitInfeasible || !strings.Contains(res.stdout, ": infeasible") {
			t.Fatalf("resume after decline:\n%s\n%s", res.stdout, res.stderr)
		}
		if c, s := paid(t, dir); c != calls || s != spent {
			t.Errorf("the resume after a decline paid for %d more calls ($%.4f)", c-calls, s-spent)
		}
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
