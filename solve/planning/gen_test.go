package planning

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// generatePlan makes a random valid plan: n tasks, each depending on up to
// three earlier ones, the last depending on every other sink; a cost cap
// below the mid total (so UNSAT), a time cap near the critical path, a
// semantic constraint, and surveys of the `surveyed` costliest tasks with
// `approaches` approaches each. Figures are multiples of 0.5, exact in
// binary and in decimal, so an SMT solver sees the same numbers.
func generatePlan(seed uint64, n, surveyed, approaches int) *Plan {
	r := rand.New(rand.NewPCG(seed, 7))
	half := func(lo, hi float64) float64 { return float64(int((lo+r.Float64()*(hi-lo))*2)) / 2 }
	p := &Plan{Schema: SchemaVersion, Goal: "generated"}
	hasSucc := make([]bool, n)
	total := 0.0
	for i := range n {
		t := Task{ID: fmt.Sprintf("t%d", i+1), Type: []string{"build", "research", "evaluation"}[r.IntN(3)], Confidence: 0.5 + r.Float64()/2, Method: KnownMethod}
		mid := half(1, 100)
		t.CostUSD = Estimate{Low: half(0, mid), Mid: mid, High: mid + half(0, mid)}
		h := half(1, 8)
		t.Hours = Estimate{Low: max(0.5, h-half(0, h)), Mid: h, High: h + half(0, 4)}
		if i > 0 {
			for range 1 + r.IntN(min(3, i)) {
				d := r.IntN(i)
				if !slices.Contains(t.DependsOn, p.Tasks[d].ID) {
					t.DependsOn = append(t.DependsOn, p.Tasks[d].ID)
					hasSucc[d] = true
				}
			}
		}
		if i == n-1 {
			for j := range n - 1 {
				if !hasSucc[j] && !slices.Contains(t.DependsOn, p.Tasks[j].ID) {
					t.DependsOn = append(t.DependsOn, p.Tasks[j].ID)
				}
			}
		}
		total += mid
		p.Tasks = append(p.Tasks, t)
	}
	m, err := newModel(p.Tasks, nil)
	if err != nil {
		panic(err)
	}
	cp := m.g.Longest(m.scenario(1).hours, nil)
	p.Constraints = []Constraint{
		{ID: "c1", Type: Logic, Title: "cost", Payload: Payload{Expr: fmt.Sprintf("total_cost <= %v", float64(int(total*(0.6+r.Float64()*0.35))))}, Sigma: 1},
		{ID: "c2", Type: Logic, Title: "time", Payload: Payload{Expr: fmt.Sprintf("critical_path_hours <= %v", float64(int(cp*(0.9+r.Float64()*0.3))))}, Sigma: 1},
		{ID: "c3", Type: Semantic, Title: "quality", Payload: Payload{Rubric: "good"}, Sigma: 0.6},
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return int(p.Tasks[b].CostUSD.Mid*2) - int(p.Tasks[a].CostUSD.Mid*2)
	})
	for _, i := range order[:min(surveyed, n)] {
		t := p.Tasks[i]
		sv := Survey{TaskID: t.ID, Round: 1}
		for k := range approaches {
			c := half(t.CostUSD.Mid*0.2, t.CostUSD.Mid*1.1)
			h := half(t.Hours.Mid*0.6, t.Hours.Mid*1.6+0.5)
			ap := Approach{ID: fmt.Sprintf("%s-a%d", t.ID, k+1), Title: fmt.Sprintf("approach %d", k+1),
				CostUSD: Estimate{Low: c / 2, Mid: c, High: c * 1.5}, Hours: Estimate{Low: max(0.5, h-0.5), Mid: max(0.5, h), High: max(0.5, h) + 1},
				Confidence: 0.5, KnownMethodShare: 0.5, Round: 1}
			if r.IntN(3) == 0 {
				ap.ConstraintEffects = []Effect{{ConstraintID: "c3", Sigma: half(0.2, 0.9)}}
			}
			sv.Approaches = append(sv.Approaches, ap)
		}
		p.Surveys = append(p.Surveys, sv)
	}
	return p
}
