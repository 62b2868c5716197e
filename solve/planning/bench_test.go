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

// BenchmarkCrossCheck measures --smt z3 on generated plans of 100 and
// 1,000 tasks with 8 surveyed tasks × 3 approaches: every verdict at mid
// and high for the plan and the revised plan, and the repair's proof
// (feasible, none better); wide (a task depends on any earlier ones, a
// loose time cap) and deep (on the 30 before it, the time cap at the
// critical path). Target: 1,000 tasks under 60 s, every question decided;
// 10,000 tasks measured too.
func BenchmarkCrossCheck(b *testing.B) {
	needZ3(b)
	for _, deep := range []bool{false, true} {
		for _, n := range []int{100, 1000, 10000} {
			p := bigPlan(b, n, true, deep)
			b.Run(fmt.Sprintf("%s/tasks=%d", map[bool]string{false: "wide", true: "deep"}[deep], n), func(b *testing.B) {
				for b.Loop() {
					rep, err := CrossCheck(context.Background(), p)
					if err != nil || !rep.Agree {
						b.Fatalf("%v %+v", err, rep)
					}
				}
			})
		}
	}
}

// BenchmarkCheckEnumeration measures solve check's independent proof of a
// repair claim: every one of the 4^8 combinations of 8 surveyed tasks × 3
// approaches in a 20-task plan. Target: under 2 s.
func BenchmarkCheckEnumeration(b *testing.B) {
	p := generatePlan(2, 20, 8, 3)
	for b.Loop() {
		en, done, err := enumerate(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys)
		if err != nil || !done || en.space != 65536 {
			b.Fatalf("%v %v %v", err, done, en)
		}
	}
}
