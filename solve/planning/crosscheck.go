package planning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/solve/expr"
	"github.com/llmkernels/kernels/solve/planning/smt"
)

// The optional cross-check through an SMT solver (solve/planning/smt).
// The kernel's own answers come first; the solver recomputes them
// independently, in exact rational arithmetic, from the raw task
// estimates and survey answers (not from the search's data): every metric
// is encoded from the tasks (sums, quantity aggregates, and the longest
// path as one finish-time variable per task with its precedence
// constraints, so the formula grows linearly with the DAG), and each
// question is one (check-sat) over the definitions of its own scenario.

// metrics defines <p>m_<metric> for every metric, given a term for each
// task's cost, hours and quantities.
func metrics(en *smt.Script, m *model, p string, cost, hours func(i int) string, quantity func(i int, name string) string) {
	n := len(m.tasks)
	var costs, hrs, sinks []string
	for i := range n {
		en.Define(fmt.Sprintf("%scost_%d", p, i), "Real", cost(i))
		en.Define(fmt.Sprintf("%shours_%d", p, i), "Real", hours(i))
		costs = append(costs, fmt.Sprintf("%scost_%d", p, i))
		hrs = append(hrs, fmt.Sprintf("%shours_%d", p, i))
	}
	// Finish times: ef_v = hours_v + the latest finish among v's
	// predecessors (hours_v alone for an entry task).
	for _, v := range m.g.Order {
		h := fmt.Sprintf("%shours_%d", p, v)
		var starts []string
		for _, u := range m.g.Preds[v] {
			starts = append(starts, fmt.Sprintf("(+ %sef_%d %s)", p, u, h))
		}
		if len(starts) == 0 {
			starts = []string{h}
		}
		en.DefineMax(fmt.Sprintf("%sef_%d", p, v), starts)
		if len(m.g.Succs[v]) == 0 {
			sinks = append(sinks, fmt.Sprintf("%sef_%d", p, v))
		}
	}
	en.Define(p+"m_total_cost", "Real", smt.Sum(costs))
	en.Define(p+"m_total_hours", "Real", smt.Sum(hrs))
	en.DefineMax(p+"m_critical_path_hours", sinks)
	en.Define(p+"m_task_count", "Real", expr.Decimal(float64(n)))
	en.Define(p+"m_wave_count", "Real", expr.Decimal(float64(len(m.waves))))
	en.Define(p+"m_max_parallel", "Real", expr.Decimal(float64(maxWave(m.waves))))
	for _, q := range m.quantities {
		var terms []string
		for i := range n {
			terms = append(terms, quantity(i, q.Name))
		}
		if q.Aggregate == "max" {
			en.DefineMax(p+"m_"+q.Name, terms)
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
// and at high estimates of the given tasks, against the verdicts claimed.
func verdictQuestions(label string, m *model, exprs map[string]*expr.Expr, a *Analysis) []smt.Question {
	var qs []smt.Question
	for s := 1; s <= 2; s++ {
		p := fmt.Sprintf("%s_%s_", label, scenarioNames[s])
		cost, hours, quantity := fixed(m, s)
		en := &smt.Script{}
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
				Defs:   en,
				Body:   fmt.Sprintf("(assert %s)\n", e.SMT(func(name string) string { return p + "m_" + name })),
			})
		}
	}
	return qs
}

// repairQuestions encodes the approach choice from the raw surveys: an
// integer x_k per surveyed task selects its option (0 keeps it as
// planned, j its j-th approach), each option's figures are those
// applyChoices gives the task, and requirements are assertions.
func repairQuestions(p *Plan, m *model, exprs map[string]*expr.Expr) []smt.Question {
	required, floors := requirements(p.Constraints, p.Surveys)
	en := repairEncoding(p, m)
	assertAll := func(ids []string) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(assertRequirement(p.Surveys, exprs, floors, id))
		}
		return b.String()
	}
	var qs []smt.Question
	switch p.Repair.Status {
	case RepairRepaired:
		var fix strings.Builder
		for k, sv := range p.Surveys {
			for _, ch := range p.Repair.Choices {
				if ch.TaskID != sv.TaskID {
					continue
				}
				j := slices.IndexFunc(sv.Approaches, func(a Approach) bool { return a.ID == ch.ApproachID }) + 1 // original: 0
				fmt.Fprintf(&fix, "(assert (= x_%d %d))\n", k, j)
			}
		}
		rank, err := rankOf(p.Tasks, p.Quantities, p.Surveys, p.Repair.Choices)
		if err != nil {
			return qs
		}
		eps := 1e-9 * max(1, rank.cost)
		better := fmt.Sprintf("(assert (or (< r_swaps %d) (and (= r_swaps %d) (< r_loss %d)) (and (= r_swaps %d) (= r_loss %d) (< r_m_total_cost %s))))\n",
			rank.swaps, rank.swaps, rank.loss, rank.swaps, rank.loss, expr.Decimal(rank.cost-eps))
		qs = append(qs,
			smt.Question{What: "repair: the chosen approaches keep every required constraint", Kernel: smt.Sat, Defs: en, Body: assertAll(required) + fix.String()},
			smt.Question{What: fmt.Sprintf("repair: no combination beats the choice (%s)", rank), Kernel: smt.Unsat, Defs: en, Body: assertAll(required) + better})
	case RepairInfeasible:
		core := p.Repair.UnsatCore
		qs = append(qs,
			smt.Question{What: "repair: no combination keeps every required constraint", Kernel: smt.Unsat, Defs: en, Body: assertAll(required)},
			smt.Question{What: "repair: the unsat core " + strings.Join(core, ", ") + " alone is infeasible", Kernel: smt.Unsat, Defs: en, Body: assertAll(core)})
		for _, id := range core {
			rest := slices.DeleteFunc(slices.Clone(core), func(x string) bool { return x == id })
			qs = append(qs, smt.Question{What: "repair: the core without " + id + " is feasible (minimality)", Kernel: smt.Sat, Defs: en, Body: assertAll(rest)})
		}
	}
	return qs
}

// repairEncoding declares the choice variables x_k, the repair's
// objective (r_swaps, r_loss) and the plan's metrics (r_m_…) as the
// chosen options make them: the definitions every repair question shares.
func repairEncoding(p *Plan, m *model) *smt.Script {
	en := &smt.Script{}
	index := map[string]int{}
	for i, t := range m.tasks {
		index[t.ID] = i
	}
	slotOf := map[int]int{}
	opts := make([][]Task, len(p.Surveys))
	var swaps, losses []string
	for k, sv := range p.Surveys {
		i := index[sv.TaskID]
		slotOf[i] = k
		opts[k] = []Task{m.tasks[i]}
		lossTerm := "0"
		for j, ap := range sv.Approaches {
			opts[k] = append(opts[k], applyChoices(m.tasks[i:i+1], p.Surveys, []Choice{{TaskID: sv.TaskID, ApproachID: ap.ID}})[0])
			lossTerm = fmt.Sprintf("(ite (= x_%d %d) %d %s)", k, j+1, confidenceLoss(m.tasks[i].Confidence, ap.Confidence), lossTerm)
		}
		en.Raw("(declare-const x_%d Int)\n(assert (and (>= x_%d 0) (<= x_%d %d)))\n", k, k, k, len(sv.Approaches))
		swaps = append(swaps, fmt.Sprintf("(ite (= x_%d 0) 0 1)", k))
		losses = append(losses, lossTerm)
	}
	en.Define("r_swaps", "Int", smt.IntSum(swaps))
	en.Define("r_loss", "Int", smt.IntSum(losses))
	choose := func(i int, value func(t Task) float64) string {
		k, ok := slotOf[i]
		if !ok {
			return expr.Decimal(value(m.tasks[i]))
		}
		term := expr.Decimal(value(opts[k][len(opts[k])-1]))
		for j := len(opts[k]) - 2; j >= 0; j-- {
			term = fmt.Sprintf("(ite (= x_%d %d) %s %s)", k, j, expr.Decimal(value(opts[k][j])), term)
		}
		return term
	}
	metrics(en, m, "r_",
		func(i int) string { return choose(i, func(t Task) float64 { return t.CostUSD.Mid }) },
		func(i int) string { return choose(i, func(t Task) float64 { return t.Hours.Mid }) },
		func(i int, name string) string {
			return choose(i, func(t Task) float64 { return t.Quantities[name].Mid })
		})
	return en
}

// assertRequirement asserts that requirement id holds: a logic one by its
// expression over the chosen metrics, a semantic one by ruling out every
// approach judged below its floor.
func assertRequirement(surveys []Survey, exprs map[string]*expr.Expr, floors map[string]float64, id string) string {
	if e := exprs[id]; e != nil {
		return fmt.Sprintf("(assert %s)\n", e.SMT(func(name string) string { return "r_m_" + name }))
	}
	var b strings.Builder
	for k, sv := range surveys {
		for j, ap := range sv.Approaches {
			for _, ef := range ap.ConstraintEffects {
				if ef.ConstraintID == id && ef.Sigma < floors[id] {
					fmt.Fprintf(&b, "(assert (not (= x_%d %d)))\n", k, j+1)
				}
			}
		}
	}
	return b.String()
}

// CrossCheck asks z3 the plan's feasibility and repair questions, each
// within timeout (0 = smt.DefaultTimeout), and compares its answers with
// the plan's claims.
func CrossCheck(ctx context.Context, p *Plan, timeout time.Duration) (*smt.Report, error) {
	version, err := smt.Version(ctx)
	if err != nil {
		return nil, err
	}
	if p.Analysis == nil {
		return nil, fmt.Errorf("the plan has no analysis to cross-check")
	}
	m, exprs, err := prepare(p.Tasks, p.Quantities, p.Constraints)
	if err != nil {
		return nil, err
	}
	qs := verdictQuestions("plan", m, exprs, p.Analysis)
	if p.Repair.Status == RepairRepaired && p.Repair.Revised != nil {
		rm, err := newModel(applyChoices(p.Tasks, p.Surveys, p.Repair.Choices), p.Quantities)
		if err != nil {
			return nil, err
		}
		qs = append(qs, verdictQuestions("revised", rm, exprs, p.Repair.Revised)...)
	}
	if p.Repair.Status != RepairNotNeeded {
		qs = append(qs, repairQuestions(p, m, exprs)...)
	}
	return smt.Ask(ctx, version, qs, timeout)
}
