package planning

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

func needZ3(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("z3"); err != nil {
		t.Skip("z3 is not installed (Debian: apt-get install z3); skipping the SMT cross-check (CI installs it)")
	}
}

func solvedPlan(t *testing.T, p *Plan) *Plan {
	t.Helper()
	var err error
	if p.Analysis, err = Analyze(p.Tasks, p.Quantities, p.Constraints); err != nil {
		t.Fatal(err)
	}
	if p.Repair, err = repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, p.Analysis); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestZ3AgreesWithTheKernelOnGeneratedPlans(t *testing.T) {
	needZ3(t)
	seen := map[string]int{}
	for seed := range uint64(12) {
		p := solvedPlan(t, generatePlan(seed, 12, 4, 3))
		rep, err := CrossCheck(context.Background(), p)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !rep.Agree {
			t.Fatalf("seed %d (%s): z3 disagrees: %s", seed, p.Repair.Status, rep.Disagreements())
		}
		seen[p.Repair.Status]++
	}
	if seen[RepairRepaired] == 0 || seen[RepairInfeasible] == 0 {
		t.Fatalf("generated plans cover only %v; both repaired and infeasible are needed", seen)
	}
}

func TestZ3CatchesAWrongKernelAnswer(t *testing.T) {
	needZ3(t)
	p := solvedPlan(t, fixture())
	p.Analysis.Verdicts[0].HoldsMid = true // c1 fails at mid: the kernel "claims" it holds
	p.Repair.Revised.Cost.Mid = 330        // a cheaper repair exists than this "optimum"
	rep, err := CrossCheck(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Disagreements()
	if rep.Agree || !strings.Contains(d, "plan: c1 (total_cost <= 400) holds at mid estimates") || !strings.Contains(d, "no combination costs less") {
		t.Fatalf("agree %v, disagreements: %s", rep.Agree, d)
	}
}
