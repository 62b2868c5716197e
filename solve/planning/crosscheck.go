package planning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/solve/expr"
	"github.com/llmkernels/kernels/solve/planning/smt"
)

// The optional cross-check through an SMT solver (solve/planning/smt).
// The kernel's own answers come first; the solver recomputes them
// independently, in exact rational arithmetic, from the raw task
// estimates: every metric is encoded from the tasks (sums, the longest
// path by max over predecessors, quantity aggregates) and each question
// is one (check-sat).

// metrics defines <p>m_<metric> for every metric, given a term for each
// task's cost, hours and quantities.
func metrics(en *smt.Script, m *model, p string, cost, hours func(i int) string, quantity func(i int, name string) string) {
	n := len(m.tasks)
	var costs, hrs, efs []string
	for i := range n {
		en.Define(fmt.Sprintf("%scost_%d", p, i), "Real", cost(i))
		en.Define(fmt.Sprintf("%shours_%d", p, i), "Real", hours(i))
		costs = append(costs, fmt.Sprintf("%scost_%d", p, i))
		hrs = append(hrs, fmt.Sprintf("%shours_%d", p, i))
	}
	for _, v := range m.g.Order {
		var preds []string
		for _, u := range m.g.Preds[v] {
			preds = append(preds, fmt.Sprintf("%sef_%d", p, u))
		}
		en.Define(fmt.Sprintf("%sef_%d", p, v), "Real", fmt.Sprintf("(+ %s %shours_%d)", smt.Max(preds), p, v))
	}
	for i := range n {
		efs = append(efs, fmt.Sprintf("%sef_%d", p, i))
	}
	en.Define(p+"m_total_cost", "Real", smt.Sum(costs))
	en.Define(p+"m_total_hours", "Real", smt.Sum(hrs))
	en.Define(p+"m_critical_path_hours", "Real", smt.Max(efs))
	en.Define(p+"m_task_count", "Real", expr.Decimal(float64(n)))
	en.Define(p+"m_wave_count", "Real", expr.Decimal(float64(len(m.waves))))
	en.Define(p+"m_max_parallel", "Real", expr.Decimal(float64(maxWave(m.waves))))
	for _, q := range m.quantities {
		var terms []string
		for i := range n {
			terms = append(terms, quantity(i, q.Name))
		}
		if q.Aggregate == "max" {
			en.Define(p+"m_"+q.Name, "Real", smt.Max(terms))
		} else {
			en.Define(p+"m_"+q.Name, "Real", smt.Sum(terms))
		}
	}
}

func fixed(m *model, s int) (cost, hours func(int) string, quantity func(int, string) string) {
	return func(i int) string { return expr.Decimal(m.tasks[i].CostUSD.at(s)) },
		func(i int) string { return expr.Decimal(m.tasks[i].Hours.at(s)) },
		func(i int, name string) string { return expr.Decimal(m.tasks[i].Quantities[name].at(s)) }
}

// verdictQuestions asks, for each logic constraint, whether it holds at mid
// and at high estimates of the given tasks.
func verdictQuestions(label string, m *model, constraints []Constraint, exprs map[string]*expr.Expr, a *Analysis, en *smt.Script) []smt.Question {
	var qs []smt.Question
	for s := 1; s <= 2; s++ {
		p := fmt.Sprintf("%s_%s_", label, scenarioNames[s])
		cost, hours, quantity := fixed(m, s)
		metrics(en, m, p, cost, hours, quantity)
		for _, v := range a.Verdicts {
			e := exprs[v.ConstraintID]
			if e == nil {
				continue
			}
			holds := v.HoldsMid
			if s == 2 {
				holds = v.HoldsHigh
			}
			qs = append(qs, smt.Question{
				What:   fmt.Sprintf("%s: %s (%s) holds at %s estimates", label, v.ConstraintID, e, scenarioNames[s]),
				Kernel: smt.Answer(holds),
				Body:   fmt.Sprintf("(assert %s)\n", e.SMT(func(name string) string { return p + "m_" + name })),
			})
		}
	}
	return qs
}

// repairQuestions encodes the approach choice: an integer per surveyed task
// selects its option; requirements are named assertions.
func repairQuestions(s *search, r Repair, en *smt.Script) []smt.Question {
	slotOf := map[int]int{}
	for k, sl := range s.slots {
		slotOf[sl.task] = k
		en.Raw("(declare-const x_%d Int)\n(assert (and (>= x_%d 0) (<= x_%d %d)))\n", k, k, k, len(sl.options)-1)
	}
	choose := func(i int, value func(o option) float64, own float64) string {
		k, ok := slotOf[i]
		if !ok {
			return expr.Decimal(own)
		}
		opts := s.slots[k].options
		term := expr.Decimal(value(opts[len(opts)-1]))
		for j := len(opts) - 2; j >= 0; j-- {
			term = fmt.Sprintf("(ite (= x_%d %d) %s %s)", k, j, expr.Decimal(value(opts[j])), term)
		}
		return term
	}
	metrics(en, s.m, "r_",
		func(i int) string {
			return choose(i, func(o option) float64 { return o.cost }, s.m.tasks[i].CostUSD.Mid)
		},
		func(i int) string {
			return choose(i, func(o option) float64 { return o.hours }, s.m.tasks[i].Hours.Mid)
		},
		func(i int, name string) string {
			return choose(i, func(o option) float64 { return o.q[name] }, s.m.tasks[i].Quantities[name].Mid)
		})
	assertReq := func(req requirement) string {
		if req.e != nil {
			return fmt.Sprintf("(assert %s)\n", req.e.SMT(func(name string) string { return "r_m_" + name }))
		}
		var terms []string
		for k, sl := range s.slots {
			for j, o := range sl.options {
				if sigma, ok := o.effects[req.id]; ok && sigma < req.floor {
					terms = append(terms, fmt.Sprintf("(not (= x_%d %d))", k, j))
				}
			}
		}
		if len(terms) == 0 {
			return ""
		}
		return fmt.Sprintf("(assert (and %s true))\n", strings.Join(terms, " "))
	}
	assertAll := func(ids []string) string {
		var b strings.Builder
		for _, req := range s.reqs {
			if slices.Contains(ids, req.id) {
				b.WriteString(assertReq(req))
			}
		}
		return b.String()
	}
	all := s.requiredIDs()
	var qs []smt.Question
	if r.Status == RepairRepaired {
		var fix strings.Builder
		for k, sl := range s.slots {
			for j, o := range sl.options {
				for _, ch := range r.Choices {
					if ch.TaskID == s.m.tasks[sl.task].ID && ch.ApproachID == o.id {
						fmt.Fprintf(&fix, "(assert (= x_%d %d))\n", k, j)
					}
				}
			}
		}
		qs = append(qs,
			smt.Question{What: "the kernel's chosen approaches keep every required constraint", Kernel: "sat", Body: assertAll(all) + fix.String()},
			smt.Question{What: fmt.Sprintf("no combination costs less than the kernel's $%s", num(r.Revised.Cost.Mid)), Kernel: "unsat",
				Body: assertAll(all) + fmt.Sprintf("(assert (< r_m_total_cost %s))\n", expr.Decimal(r.Revised.Cost.Mid-1e-6*max(1, r.Revised.Cost.Mid)))})
		return qs
	}
	qs = append(qs,
		smt.Question{What: "no combination keeps every required constraint", Kernel: "unsat", Body: assertAll(all)},
		smt.Question{What: "the unsat core " + strings.Join(r.UnsatCore, ", ") + " alone is infeasible", Kernel: "unsat", Body: assertAll(r.UnsatCore)})
	for _, id := range r.UnsatCore {
		rest := slices.DeleteFunc(slices.Clone(r.UnsatCore), func(x string) bool { return x == id })
		qs = append(qs, smt.Question{What: "the core without " + id + " is feasible (minimality)", Kernel: "sat", Body: assertAll(rest)})
	}
	return qs
}

// CrossCheck asks z3 the plan's feasibility and repair questions and
// compares its answers with the kernel's.
func CrossCheck(ctx context.Context, p *Plan) (*smt.Report, error) {
	version, err := smt.Version(ctx)
	if err != nil {
		return nil, err
	}
	m, err := newModel(p.Tasks, p.Quantities)
	if err != nil {
		return nil, err
	}
	exprs, problems := parseLogic(p.Constraints, p.Quantities)
	if len(problems) > 0 {
		return nil, &InvalidPlanError{Problems: problems}
	}
	var en smt.Script
	qs := verdictQuestions("plan", m, p.Constraints, exprs, p.Analysis, &en)
	if p.Repair.Status == RepairRepaired && p.Repair.Revised != nil {
		rm, err := newModel(applyChoices(p.Tasks, p.Surveys, p.Repair.Choices), p.Quantities)
		if err != nil {
			return nil, err
		}
		qs = append(qs, verdictQuestions("revised", rm, p.Constraints, exprs, p.Repair.Revised, &en)...)
	}
	if p.Repair.Status != RepairNotNeeded {
		s, err := newSearch(ctx, m, p.Constraints, exprs, p.Surveys)
		if err != nil {
			return nil, err
		}
		qs = append(qs, repairQuestions(s, p.Repair, &en)...)
	}
	return smt.Ask(ctx, version, &en, qs)
}
