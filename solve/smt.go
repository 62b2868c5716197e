package solve

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/solve/expr"
)

// The optional cross-check through an SMT solver (the `z3` binary, fed
// SMT-LIB2 on stdin). The kernel's own answers come first; the solver
// recomputes them independently, in exact rational arithmetic, from the
// raw task estimates: every metric is encoded from the tasks (sums, the
// longest path by max over predecessors, quantity aggregates) and each
// question is one (check-sat).

// SMTReport is the result of the cross-check.
type SMTReport struct {
	Solver string     `json:"solver"`
	Agree  bool       `json:"agree"`
	Checks []SMTCheck `json:"checks"`
}

// SMTCheck is one question answered by both.
type SMTCheck struct {
	What   string `json:"what"`
	Kernel string `json:"kernel"`
	Solver string `json:"solver"`
	Agree  bool   `json:"agree"`
}

// Z3 finds the z3 binary and its version; the error says how to install it.
func Z3(ctx context.Context) (string, error) {
	path, err := exec.LookPath("z3")
	if err != nil {
		return "", errors.New("--smt z3: the z3 binary is not on PATH; install it (Debian: apt-get install z3) or drop --smt")
	}
	r, err := proc.Run(ctx, proc.Cmd{Name: path, Args: []string{"--version"}})
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		return "", fmt.Errorf("--smt z3: %s --version: %w", path, err)
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// question is one (check-sat) in a script, with the kernel's answer.
type question struct {
	what   string
	kernel string // "sat" or "unsat"
	body   string // assertions inside (push) … (pop)
}

// runZ3 runs the questions after the shared prelude and returns z3's
// answer for each.
func runZ3(ctx context.Context, prelude string, qs []question) ([]string, error) {
	var b strings.Builder
	b.WriteString("(set-logic ALL)\n")
	b.WriteString(prelude)
	for _, q := range qs {
		fmt.Fprintf(&b, "(push)\n%s(check-sat)\n(pop)\n", q.body)
	}
	r, err := proc.Run(ctx, proc.Cmd{Name: "z3", Args: []string{"-in", "-smt2", "-T:30"}, Stdin: strings.NewReader(b.String())})
	if err != nil {
		return nil, fmt.Errorf("z3 failed: %w", err)
	}
	out := r.Stdout
	answers := strings.Fields(string(out))
	if err := r.Err(); err != nil && len(answers) < len(qs) {
		return nil, fmt.Errorf("z3 failed: %v: %s %s", err, strings.TrimSpace(string(out)), strings.TrimSpace(string(r.Stderr)))
	}
	if len(answers) != len(qs) {
		return nil, fmt.Errorf("z3 answered %d of %d questions: %s", len(answers), len(qs), strings.TrimSpace(string(out)))
	}
	return answers, nil
}

// encoder writes SMT-LIB2 definitions of a model's metrics.
type encoder struct {
	b strings.Builder
}

func (en *encoder) define(name, sort, term string) {
	fmt.Fprintf(&en.b, "(declare-const %s %s)\n(assert (= %s %s))\n", name, sort, name, term)
}

func smtSum(terms []string) string {
	switch len(terms) {
	case 0:
		return "0.0"
	case 1:
		return terms[0]
	}
	return "(+ " + strings.Join(terms, " ") + ")"
}

func smtMax(terms []string) string {
	if len(terms) == 0 {
		return "0.0"
	}
	acc := terms[0]
	for _, t := range terms[1:] {
		acc = fmt.Sprintf("(ite (>= %s %s) %s %s)", acc, t, acc, t)
	}
	return acc
}

// metrics defines <p>m_<metric> for every metric, given a term for each
// task's cost, hours and quantities.
func (en *encoder) metrics(m *model, p string, cost, hours func(i int) string, quantity func(i int, name string) string) {
	n := len(m.tasks)
	var costs, hrs, efs []string
	for i := range n {
		en.define(fmt.Sprintf("%scost_%d", p, i), "Real", cost(i))
		en.define(fmt.Sprintf("%shours_%d", p, i), "Real", hours(i))
		costs = append(costs, fmt.Sprintf("%scost_%d", p, i))
		hrs = append(hrs, fmt.Sprintf("%shours_%d", p, i))
	}
	for _, v := range m.g.Order {
		var preds []string
		for _, u := range m.g.Preds[v] {
			preds = append(preds, fmt.Sprintf("%sef_%d", p, u))
		}
		en.define(fmt.Sprintf("%sef_%d", p, v), "Real", fmt.Sprintf("(+ %s %shours_%d)", smtMax(preds), p, v))
	}
	for i := range n {
		efs = append(efs, fmt.Sprintf("%sef_%d", p, i))
	}
	en.define(p+"m_total_cost", "Real", smtSum(costs))
	en.define(p+"m_total_hours", "Real", smtSum(hrs))
	en.define(p+"m_critical_path_hours", "Real", smtMax(efs))
	en.define(p+"m_task_count", "Real", expr.Decimal(float64(n)))
	en.define(p+"m_wave_count", "Real", expr.Decimal(float64(len(m.waves))))
	en.define(p+"m_max_parallel", "Real", expr.Decimal(float64(maxWave(m.waves))))
	for _, q := range m.quantities {
		var terms []string
		for i := range n {
			terms = append(terms, quantity(i, q.Name))
		}
		if q.Aggregate == "max" {
			en.define(p+"m_"+q.Name, "Real", smtMax(terms))
		} else {
			en.define(p+"m_"+q.Name, "Real", smtSum(terms))
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
func verdictQuestions(label string, m *model, constraints []Constraint, exprs map[string]*expr.Expr, a *Analysis, en *encoder) []question {
	var qs []question
	for s := 1; s <= 2; s++ {
		p := fmt.Sprintf("%s_%s_", label, scenarioNames[s])
		cost, hours, quantity := fixed(m, s)
		en.metrics(m, p, cost, hours, quantity)
		for _, v := range a.Verdicts {
			e := exprs[v.ConstraintID]
			if e == nil {
				continue
			}
			holds := v.HoldsMid
			if s == 2 {
				holds = v.HoldsHigh
			}
			qs = append(qs, question{
				what:   fmt.Sprintf("%s: %s (%s) holds at %s estimates", label, v.ConstraintID, e, scenarioNames[s]),
				kernel: satWord(holds),
				body:   fmt.Sprintf("(assert %s)\n", e.SMT(func(name string) string { return p + "m_" + name })),
			})
		}
	}
	return qs
}

func satWord(b bool) string {
	if b {
		return "sat"
	}
	return "unsat"
}

// repairQuestions encodes the approach choice: an integer per surveyed task
// selects its option; requirements are named assertions.
func repairQuestions(s *search, r Repair, en *encoder) []question {
	slotOf := map[int]int{}
	for k, sl := range s.slots {
		slotOf[sl.task] = k
		fmt.Fprintf(&en.b, "(declare-const x_%d Int)\n(assert (and (>= x_%d 0) (<= x_%d %d)))\n", k, k, k, len(sl.options)-1)
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
	en.metrics(s.m, "r_",
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
	var qs []question
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
			question{what: "the kernel's chosen approaches keep every required constraint", kernel: "sat", body: assertAll(all) + fix.String()},
			question{what: fmt.Sprintf("no combination costs less than the kernel's $%s", num(r.Revised.Cost.Mid)), kernel: "unsat",
				body: assertAll(all) + fmt.Sprintf("(assert (< r_m_total_cost %s))\n", expr.Decimal(r.Revised.Cost.Mid-1e-6*max(1, r.Revised.Cost.Mid)))})
		return qs
	}
	qs = append(qs,
		question{what: "no combination keeps every required constraint", kernel: "unsat", body: assertAll(all)},
		question{what: "the unsat core " + strings.Join(r.UnsatCore, ", ") + " alone is infeasible", kernel: "unsat", body: assertAll(r.UnsatCore)})
	for _, id := range r.UnsatCore {
		rest := slices.DeleteFunc(slices.Clone(r.UnsatCore), func(x string) bool { return x == id })
		qs = append(qs, question{what: "the core without " + id + " is feasible (minimality)", kernel: "sat", body: assertAll(rest)})
	}
	return qs
}

// CrossCheck asks z3 the plan's feasibility and repair questions and
// compares its answers with the kernel's.
func CrossCheck(ctx context.Context, p *Plan) (*SMTReport, error) {
	version, err := Z3(ctx)
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
	var en encoder
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
	answers, err := runZ3(ctx, en.b.String(), qs)
	if err != nil {
		return nil, err
	}
	rep := &SMTReport{Solver: version, Agree: true}
	for k, q := range qs {
		c := SMTCheck{What: q.what, Kernel: q.kernel, Solver: answers[k], Agree: answers[k] == q.kernel}
		rep.Agree = rep.Agree && c.Agree
		rep.Checks = append(rep.Checks, c)
	}
	return rep, nil
}

// smtDisagreement describes the checks where the solver disagreed.
func smtDisagreement(r *SMTReport) string {
	var out []string
	for _, c := range r.Checks {
		if !c.Agree {
			out = append(out, strconv.Quote(c.What)+": kernel "+c.Kernel+", z3 "+c.Solver)
		}
	}
	return strings.Join(out, "; ")
}
