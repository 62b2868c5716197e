package planning

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Beyond the property test's one-metric caps: composite constraints (sums
// of weighted metrics, && and ||, negations, strict and non-strict
// comparisons, floors) over budgets and time together, with integer
// figures so that ties between combinations are common. The kernel's
// status and rank must equal brute force's, and solve check must pass it.
func TestRepairEqualsBruteForceOnCompositeConstraints(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(250) {
		p := randomRepairPlan(seed + 10_000)
		r := rand.New(rand.NewPCG(seed, 99))
		base := map[string]float64{}
		if vals, err := Analyze(p.Tasks, p.Quantities, p.Constraints); err == nil {
			for name, e := range vals.Metrics {
				base[name] = e.Mid
			}
		}
		lim := func(metric string, lo, hi float64) string {
			return fmt.Sprint(math.Round(base[metric] * (lo + r.Float64()*(hi-lo))))
		}
		forms := []func() string{
			func() string {
				return fmt.Sprintf("total_cost + 10 * critical_path_hours <= %s", fmt.Sprint(math.Round((base["total_cost"]+10*base["critical_path_hours"])*(0.6+r.Float64()*0.5))))
			},
			func() string {
				return fmt.Sprintf("total_cost <= %s && critical_path_hours <= %s", lim("total_cost", 0.6, 1.1), lim("critical_path_hours", 0.8, 1.3))
			},
			func() string {
				return fmt.Sprintf("total_cost <= %s || parts_usd <= %s", lim("total_cost", 0.5, 1), lim("parts_usd", 0.3, 1))
			},
			func() string { return fmt.Sprintf("!(total_cost > %s)", lim("total_cost", 0.6, 1.1)) },
			func() string { return fmt.Sprintf("-total_cost >= -%s", lim("total_cost", 0.6, 1.1)) },
			func() string { return fmt.Sprintf("total_cost < %s", lim("total_cost", 0.6, 1.1)) },
			func() string {
				return fmt.Sprintf("total_cost / 2 + latency_ms <= %s", fmt.Sprint(math.Round((base["total_cost"]/2+base["latency_ms"])*(0.6+r.Float64()*0.5))))
			},
			func() string { return fmt.Sprintf("total_hours >= %s", lim("total_hours", 0.6, 1)) },
			func() string { return fmt.Sprintf("total_cost - total_hours <= %s", lim("total_cost", 0.6, 1.1)) },
			func() string { return fmt.Sprintf("critical_path_hours <= %s", lim("critical_path_hours", 0.7, 1.2)) },
		}
		p.Constraints = p.Constraints[len(p.Constraints)-1:] // keep the semantic one
		if p.Constraints[0].Type != Semantic {
			p.Constraints = nil
		}
		for k := range 1 + r.IntN(4) {
			p.Constraints = append(p.Constraints, Constraint{ID: fmt.Sprintf("k%d", k+1), Type: Logic, Payload: Payload{Expr: forms[r.IntN(len(forms))]()}, Sigma: 1})
		}
		// Integer costs, many equal: ties in swaps, loss and cost.
		for i := range p.Surveys {
			for j := range p.Surveys[i].Approaches {
				ap := &p.Surveys[i].Approaches[j]
				c := float64(10 * (1 + r.IntN(4)))
				ap.CostUSD = Estimate{Low: c, Mid: c, High: c}
				if r.IntN(2) == 0 {
					ap.Confidence = taskOf(p.Tasks, p.Surveys[i].TaskID).Confidence
				}
			}
		}
		a, err := Analyze(p.Tasks, p.Quantities, p.Constraints)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		rep, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		seen[rep.Status]++
		if rep.Status == RepairNotNeeded {
			continue
		}
		var best *naive
		for _, c := range bruteForce(t, p) {
			feasible := true
			for _, id := range rep.Required {
				feasible = feasible && c.holds[id]
			}
			if feasible && (best == nil || c.swaps < best.swaps || (c.swaps == best.swaps && (c.loss < best.loss || (c.loss == best.loss && c.cost < best.cost-1e-9)))) {
				nv := c.naive
				best = &nv
			}
		}
		if (best != nil) != (rep.Status == RepairRepaired) {
			t.Fatalf("seed %d %v: brute force feasible %v, kernel %s core %v", seed, exprsOf(p), best != nil, rep.Status, rep.UnsatCore)
		}
		if best != nil {
			pick := map[string]*Approach{}
			for _, ch := range rep.Choices {
				if ap, ok := findApproach(p.Surveys, ch); ok {
					pick[ch.TaskID] = &ap
				}
			}
			got := evalNaive(t, p, pick)
			if got.swaps != best.swaps || got.loss != best.loss || math.Abs(got.cost-best.cost) > 1e-9 {
				t.Fatalf("seed %d %v: kernel %s (%d, %d, %v), brute force (%d, %d, %v)", seed, exprsOf(p), choiceText(rep.Choices), got.swaps, got.loss, got.cost, best.swaps, best.loss, best.cost)
			}
		}
		p.Analysis, p.Repair = a, rep
		for _, as := range Check(context.Background(), p, CheckOptions{}) {
			if as.Group == 5 && !as.Pass {
				t.Fatalf("seed %d %v: solve check fails the kernel's repair: %s %s: %s", seed, exprsOf(p), as.ID, as.Name, as.Detail)
			}
		}
	}
	t.Logf("statuses: %v", seen)
	if seen[RepairRepaired] < 40 || seen[RepairInfeasible] < 40 {
		t.Fatalf("cover %v", seen)
	}
}

func exprsOf(p *Plan) []string {
	var out []string
	for _, c := range p.Constraints {
		out = append(out, c.ID+": "+c.Payload.Expr)
	}
	return out
}

// A cost cap that needs many swaps (17 of 30 surveyed tasks) is repaired
// in few search nodes: the swaps a cap still needs bound the search. It
// visited over 23 million nodes without finishing before (the run then
// failed at --max-wall). Counted in nodes, not seconds, so the machine's
// load cannot flip it.
func TestRepairSearchBoundsTheSwapsACapStillNeeds(t *testing.T) {
	p := generatePlan(1, 200, 30, 3)
	p.Constraints = p.Constraints[:1] // total_cost <= 8419, mid 9430.5
	a := analyse(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := repairPlan(ctx, p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	swaps := 0
	for _, c := range r.Choices {
		if c.ApproachID != OriginalApproach {
			swaps++
		}
	}
	if r.Status != RepairRepaired || swaps != 17 || r.Explored > 1_000_000 {
		t.Fatalf("%s with %d swaps after %d search nodes", r.Status, swaps, r.Explored)
	}
}

// A search that reaches its limit says the repair is undecided, with
// the best combination it met, instead of running until --max-wall and
// failing the run with no plan; solve check recomputes the same outcome
// (the limit is in nodes) and accepts nothing more.
func TestARepairSearchPastItsLimitIsUndecided(t *testing.T) {
	const limit = 300_000
	p := generatePlan(1, 200, 30, 3) // cost and time caps: millions of nodes
	a := analyse(t, p)
	r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, limit)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RepairUndecided || len(r.Choices) != 0 || r.Revised != nil || !strings.Contains(r.Note, "limit of 300000 nodes") || !strings.Contains(r.Note, "a better one may exist") {
		t.Fatalf("%s %+v: %s", r.Status, r.Choices, r.Note)
	}
	p.Analysis, p.Repair = a, r
	check := func() []string {
		var f []string
		for _, as := range Check(context.Background(), roundTrip(t, p), CheckOptions{SearchLimit: limit}) {
			if as.Group == 5 && !as.Pass {
				f = append(f, as.ID+" "+as.Detail)
			}
		}
		return f
	}
	if f := check(); len(f) > 0 {
		t.Fatalf("solve check fails the undecided repair:\n%s", strings.Join(f, "\n"))
	}
	p.Repair.Status = RepairInfeasible
	p.Repair.UnsatCore = []string{"c1"}
	if f := check(); len(f) == 0 {
		t.Fatal("an undecided search passed off as infeasible passes solve check")
	}
	p.Repair.Status, p.Repair.UnsatCore = RepairUndecided, nil
	if s := Summary(p, Files{}); !strings.Contains(s, "repair: undecided: the search reached its limit") {
		t.Fatal(s)
	}
	p.Repair.Choices = []Choice{{TaskID: p.Surveys[0].TaskID, ApproachID: p.Surveys[0].Approaches[0].ID}}
	if f := check(); len(f) != 1 || !strings.HasPrefix(f[0], "5.2 ") {
		t.Fatalf("an undecided repair with a choice: %q", f)
	}
}
