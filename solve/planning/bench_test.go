package planning

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAnalyze measures the whole plan arithmetic (rollups with PERT,
// waterfall, three critical-path passes, critical paths, waves, verdicts,
// walls) on generated DAGs. Target: 1,000 tasks under 20 ms.
func BenchmarkAnalyze(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		p := generatePlan(1, n, 0, 0)
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Analyze(p.Tasks, p.Quantities, p.Constraints); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRepairSearch measures the exact repair search on 12 surveyed
// tasks with 3 approaches each (4^12 combinations with "keep as planned"),
// in a 40-task plan: one instance that repairs, one where nothing works
// and the unsat core is computed too. Target: under 100 ms.
func BenchmarkRepairSearch(b *testing.B) {
	for _, want := range []string{RepairRepaired, RepairInfeasible} {
		var p *Plan
		var a *Analysis
		for seed := uint64(0); ; seed++ {
			p = generatePlan(seed, 40, 12, 3)
			a, _ = Analyze(p.Tasks, p.Quantities, p.Constraints)
			r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a)
			if err != nil {
				b.Fatal(err)
			}
			if r.Status == want {
				break
			}
		}
		b.Run("12x3/"+want, func(b *testing.B) {
			var r Repair
			var err error
			for b.Loop() {
				if r, err = repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.Explored), "nodes/op")
			b.ReportMetric(r.Space, "combinations")
		})
	}
}
