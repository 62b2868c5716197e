package planning

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/solve/dag"
	"github.com/llmkernels/kernels/solve/planning/smt"
	"github.com/llmkernels/kernels/solve/store"
)

// Assertion is one assertion of the spec's framework.
type Assertion struct {
	Group int    `json:"group"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	Pass  bool   `json:"pass"`
	// Undecided: the check could not finish within the time limit (solve
	// check --timeout, or z3's own per-question timeout); the claim is
	// neither proven nor refuted. Pass is false.
	Undecided bool   `json:"undecided,omitempty"`
	Detail    string `json:"detail"`
}

// AssertionGroups names the six groups of the spec's assertion framework.
var AssertionGroups = [7]string{1: "Constraint completeness", 2: "Decomposition validity", 3: "Budget arithmetic",
	4: "Approach survey triggers", 5: "Repair effectiveness", 6: "Critical path"}

type assertions struct {
	out []Assertion
}

func (c *assertions) add(group int, id, name string, pass bool, format string, args ...any) {
	c.out = append(c.out, Assertion{Group: group, ID: id, Name: name, Pass: pass, Detail: fmt.Sprintf(format, args...)})
}

// stopped records the check as undecided when it ended because ctx did
// (solve check --timeout, or Ctrl-C), and says so; any other error is the
// caller's to report.
func (c *assertions) stopped(ctx context.Context, group int, id, name string, err error) bool {
	if err == nil || ctx.Err() == nil {
		return false
	}
	c.undecided(ctx, group, id, name)
	return true
}

// undecided records a check whose proof or search ctx stopped. Only those
// are: every other check is a recomputation and is decided whatever the
// time left.
func (c *assertions) undecided(ctx context.Context, group int, id, name string) {
	c.out = append(c.out, Assertion{Group: group, ID: id, Name: name, Undecided: true,
		Detail: fmt.Sprintf("undecided within the time limit: stopped by %v before the claim was proven or refuted", context.Cause(ctx))})
}

func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func money(v float64) string { return fmt.Sprintf("$%.2f", v) }

// CheckOptions tune Check.
type CheckOptions struct {
	// SMT asks z3 every verdict and repair question too (solve check --smt
	// z3): the proof of a repair claim too large to enumerate.
	SMT bool
	// SMTTimeout is how long z3 may think about one question (0 =
	// smt.DefaultTimeout); a question it cannot decide is undecided.
	SMTTimeout time.Duration
	// SearchLimit bounds the repair search the check recomputes, in nodes
	// (0 = DefaultSearchLimit): give the limit the plan was made with.
	SearchLimit int
}

// Check runs the spec's assertion framework on a plan. Every field of the
// plan is recomputed from the raw goal, inputs, constraints, tasks and
// survey answers and compared, except those docs/solve-plan-format.md
// lists as taken on trust. A repair claim is proved without the search
// that made it (proof.go).
func Check(ctx context.Context, p *Plan, o CheckOptions) []Assertion {
	c := &assertions{}
	checkConstraints(c, p)
	m := checkDecomposition(c, p)
	if m == nil {
		for g := 3; g <= 6; g++ {
			c.add(g, fmt.Sprintf("%d.0", g), "recompute", false, "cannot recompute from the tasks: the decomposition is invalid (group 2)")
		}
		return c.out
	}
	a, err := Analyze(p.Tasks, p.Quantities, p.Constraints)
	if err != nil {
		for g := 3; g <= 6; g++ {
			c.add(g, fmt.Sprintf("%d.0", g), "recompute", false, "cannot recompute: %v", err)
		}
		return c.out
	}
	if p.Analysis == nil {
		c.add(3, "3.0", "analysis present", false, "the plan has no analysis section to compare with")
		return c.out
	}
	checkBudget(c, p, a)
	checkSurveys(ctx, c, p, a, o.SearchLimit)
	checkRepair(ctx, c, p, a, o)
	checkCriticalPath(c, p, m, a)
	if o.SMT {
		checkSMT(ctx, c, p, o.SMTTimeout)
	}
	slices.SortStableFunc(c.out, func(x, y Assertion) int { return x.Group - y.Group })
	return c.out
}

func checkConstraints(c *assertions, p *Plan) {
	cv := cover(p.Goal, p.Inputs, p.Constraints, p.Stated, p.NotStated)
	n, why := ExplicitMinimum(p.Stated, p.Inputs)
	explicit := 0
	var unquoted []string
	for _, k := range p.Constraints {
		if k.Explicit {
			explicit++
			if !quoteFound(k, p.Goal, p.Inputs) {
				unquoted = append(unquoted, fmt.Sprintf("%s quotes %q", k.ID, k.Quote))
			}
		}
	}
	bad := slices.Clone(cv.problems)
	if explicit < n {
		bad = append(bad, fmt.Sprintf("%d explicit constraints, at least %d required", explicit, n))
	}
	if d := diffJSON("stated_constraints", cv.stated, p.Stated); len(d) > 0 {
		bad = append(bad, "covered_by recomputed differs: "+strings.Join(d, "; "))
	}
	var covers []string
	for _, s := range cv.stated {
		covers = append(covers, fmt.Sprintf("%q by %s", s.Quote, orDash(strings.Join(s.CoveredBy, ", "))))
	}
	c.add(1, "1.1", "explicit constraints cover what the goal states", len(bad) == 0, "%d explicit constraints, at least %d required (%s)%s",
		explicit, n, why, orText(bad, "; covered: "+strings.Join(covers, "; "), "; "))
	c.add(1, "1.2", "explicit constraints quote the goal", len(unquoted) == 0, "%s",
		orText(unquoted, "every explicit constraint quotes words of the goal, a --constraint or a flag", "not found in the goal or a --constraint: "))
	var implicit []string
	for _, k := range p.Constraints {
		if !k.Explicit && strings.TrimSpace(k.RemovalConsequence) != "" {
			implicit = append(implicit, k.ID)
		}
	}
	c.add(1, "1.3", "implicit constraint with removal consequence", len(implicit) > 0, "%d implicit constraint(s) with a removal consequence: %s", len(implicit), strings.Join(implicit, ", "))
	bad = nil
	ids := map[string]bool{}
	for _, k := range p.Constraints {
		if ids[k.ID] {
			bad = append(bad, fmt.Sprintf("id %s used twice", k.ID))
		}
		ids[k.ID] = true
		switch {
		case k.Type == Logic && k.Sigma != 1:
			bad = append(bad, fmt.Sprintf("%s is logic with σ %v (must be 1.0)", k.ID, k.Sigma))
		case k.Type == Semantic && (k.Sigma < 0 || k.Sigma > 1 || strings.TrimSpace(k.Payload.Rubric) == ""):
			bad = append(bad, fmt.Sprintf("%s is semantic and needs a rubric and σ in 0..1", k.ID))
		case k.Type != Logic && k.Type != Semantic:
			bad = append(bad, fmt.Sprintf("%s has type %q", k.ID, k.Type))
		}
		if strings.TrimSpace(k.RemovalConsequence) == "" {
			bad = append(bad, k.ID+" has no removal consequence")
		}
	}
	bad = append(bad, provenanceProblems(p.Constraints, p.Inputs)...)
	_, problems := parseLogic(p.Constraints, p.Quantities)
	bad = append(bad, problems...)
	c.add(1, "1.4", "constraints well-formed", len(bad) == 0, "%s",
		orText(bad, fmt.Sprintf("%d constraints typed logic|semantic; logic expressions parse over known metrics with σ 1.0; semantic ones have a rubric", len(p.Constraints)), ""))
	figs := GoalFigures(p.Goal)
	c.add(1, "1.5", "every figure of the goal is accounted for", len(cv.unaccounts) == 0, "%s",
		orText(cv.unaccounts, fmt.Sprintf("figures %s each in a stated constraint or a not-constraint (%d not-constraints)", orDash(strings.Join(figs, ", ")), len(p.NotStated)), "in no stated or not-constraint quote: "))
}

func orText(problems []string, ok, prefix string) string {
	if len(problems) == 0 {
		return ok
	}
	return prefix + strings.Join(problems, "; ")
}

// diffJSON lists where got differs from want, compared as JSON (the plan
// file's own form): paths like analysis.waves[0][1], numbers within a
// relative 1e-6. At most 8 paths are listed.
func diffJSON(path string, want, got any) []string {
	var w, g any
	for _, x := range []struct {
		v   any
		dst *any
	}{{want, &w}, {got, &g}} {
		data, err := json.Marshal(x.v)
		if err != nil {
			return []string{fmt.Sprintf("%s: %v", path, err)}
		}
		if err := json.Unmarshal(data, x.dst); err != nil {
			return []string{fmt.Sprintf("%s: %v", path, err)}
		}
	}
	var out []string
	walkDiff(path, w, g, &out)
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("and %d more", len(out)-8))
	}
	return out
}

func walkDiff(path string, w, g any, out *[]string) {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s is %s, recomputed %s", path, short(g), short(w)))
			return
		}
		keys := map[string]bool{}
		for k := range wv {
			keys[k] = true
		}
		for k := range gv {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			walkDiff(path+"."+k, wv[k], gv[k], out)
		}
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			*out = append(*out, fmt.Sprintf("%s is %s, recomputed %s", path, short(g), short(w)))
			return
		}
		for i := range wv {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i], out)
		}
	case float64:
		if gv, ok := g.(float64); !ok || !approx(wv, gv) {
			*out = append(*out, fmt.Sprintf("%s is %s, recomputed %s", path, short(g), short(w)))
		}
	default:
		if fmt.Sprint(w) != fmt.Sprint(g) {
			*out = append(*out, fmt.Sprintf("%s is %s, recomputed %s", path, short(g), short(w)))
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// short renders a JSON value for a message, clipped.
func short(v any) string {
	if v == nil {
		return "absent"
	}
	data, _ := json.Marshal(v) // a decoded JSON value always marshals
	s := string(data)
	if len(s) > 60 {
		s = s[:57] + "…"
	}
	return s
}

func checkDecomposition(c *assertions, p *Plan) *model {
	ids := make([]string, len(p.Tasks))
	deps := make([][]string, len(p.Tasks))
	for i, t := range p.Tasks {
		ids[i], deps[i] = t.ID, t.DependsOn
	}
	_, vs := dag.Build(ids, deps)
	byKind := func(kinds ...string) []string {
		var out []string
		for _, v := range vs {
			if slices.Contains(kinds, v.Kind) {
				out = append(out, v.Message)
			}
		}
		return out
	}
	refs := byKind(dag.KindDangling, dag.KindEmptyID, dag.KindDuplicate, dag.KindSelf, dag.KindEmpty)
	c.add(2, "2.1", "dependency references resolve", len(refs) == 0, "%s", orText(refs, fmt.Sprintf("%d tasks; every depends_on names another task", len(p.Tasks)), ""))
	cyc := byKind(dag.KindCycle)
	c.add(2, "2.2", "no cycles", len(cyc) == 0, "%s", orText(cyc, "the dependency graph is acyclic", ""))
	entry := byKind(dag.KindNoEntry)
	var entries []string
	for _, t := range p.Tasks {
		if len(t.DependsOn) == 0 {
			entries = append(entries, t.ID)
		}
	}
	c.add(2, "2.3", "entry point", len(entry) == 0 && len(entries) > 0, "%s", orText(entry, "tasks with no dependencies: "+strings.Join(entries, ", "), ""))
	exits := byKind(dag.KindExits)
	m, err := newModel(p.Tasks, p.Quantities)
	switch {
	case len(exits) > 0:
		c.add(2, "2.4", "exit point reached by all", false, "%s", strings.Join(exits, "; "))
	case len(cyc) > 0:
		c.add(2, "2.4", "exit point reached by all", false, "undefined while the graph has a cycle")
	case m != nil:
		c.add(2, "2.4", "exit point reached by all", true, "%s depends on all %d other tasks transitively", p.Tasks[m.g.Exit].ID, len(p.Tasks)-1)
	default:
		c.add(2, "2.4", "exit point reached by all", len(vs) == 0, "single exit task")
	}
	est := estimateProblems(p.Tasks, p.Quantities)
	c.add(2, "2.5", "estimates plausible", len(est) == 0, "%s", orText(est, "no negative costs, no zero-time tasks, low ≤ mid ≤ high everywhere", ""))
	if err != nil {
		return nil
	}
	return m
}

// checkBudget runs group 3 (budget arithmetic): the total (3.1), the
// waterfall (3.2), the remaining budgets (3.3), the verdicts (3.4), the
// model's stated totals (3.5) and every other figure (3.6).
func checkBudget(c *assertions, p *Plan, a *Analysis) {
	checkTotal(c, p, a)
	final := checkWaterfall(c, p, a)
	checkRemaining(c, p, a, final)
	checkVerdicts(c, p, a)
	checkClaims(c, p, a)
	d := diffJSON("analysis", a, p.Analysis)
	c.add(3, "3.6", "every other figure of the analysis recomputed", len(d) == 0, "%s",
		orText(d, "metrics, rollups and P(within limit), budgets, waterfall, schedule, critical paths, waves, verdicts, walls and σ_v all match the tasks", ""))
}

// checkTotal checks the cost rollup against the tasks (3.1).
func checkTotal(c *assertions, p *Plan, a *Analysis) {
	r := p.Analysis.Cost
	ok := approx(r.Mid, a.Cost.Mid) && approx(r.Low, a.Cost.Low) && approx(r.High, a.Cost.High) &&
		approx(r.PERTMean, a.Cost.PERTMean) && approx(r.PERTSigma, a.Cost.PERTSigma)
	c.add(3, "3.1", "sum of task mid costs equals the reported total", ok,
		"recomputed mid %s (low %s, high %s, PERT %s ± %s); plan reports mid %s (low %s, high %s, PERT %s ± %s)",
		money(a.Cost.Mid), money(a.Cost.Low), money(a.Cost.High), money(a.Cost.PERTMean), money(a.Cost.PERTSigma),
		money(r.Mid), money(r.Low), money(r.High), money(r.PERTMean), money(r.PERTSigma))
}

// checkWaterfall checks the waterfall's rows in execution order (3.2)
// and returns the recomputed final cumulative cost.
func checkWaterfall(c *assertions, p *Plan, a *Analysis) float64 {
	var problems []string
	rows := p.Analysis.Waterfall
	if len(rows) != len(a.Waterfall) {
		problems = append(problems, fmt.Sprintf("%d rows reported, %d tasks", len(rows), len(a.Waterfall)))
	}
	for k := 0; k < len(rows) && k < len(a.Waterfall); k++ {
		w, x := a.Waterfall[k], rows[k]
		if w.TaskID != x.TaskID || !approx(w.Cumulative, x.Cumulative) || !approx(w.CostMid, x.CostMid) {
			problems = append(problems, fmt.Sprintf("row %d: reported %s cumulative %s, recomputed %s cumulative %s", k+1, x.TaskID, money(x.Cumulative), w.TaskID, money(w.Cumulative)))
		}
		if d := diffJSON(fmt.Sprintf("row %d budgets", k+1), stepsWithoutRemaining(w.Budgets), stepsWithoutRemaining(x.Budgets)); len(d) > 0 {
			problems = append(problems, d...)
		}
		if k > 0 && x.Cumulative < rows[k-1].Cumulative {
			problems = append(problems, fmt.Sprintf("row %d: cumulative falls from %s to %s", k+1, money(rows[k-1].Cumulative), money(x.Cumulative)))
		}
	}
	final := 0.0
	if len(a.Waterfall) > 0 {
		final = a.Waterfall[len(a.Waterfall)-1].Cumulative
	}
	c.add(3, "3.2", "waterfall cumulative values increase monotonically", len(problems) == 0, "%s",
		orText(problems, fmt.Sprintf("%d rows in execution order, cumulative %s → %s; %d other budgeted quantities", len(rows), money(firstCum(a.Waterfall)), money(final), len(a.Budgets)), ""))
	return final
}

// checkRemaining checks that every capped budget counts down row by row
// (3.3).
func checkRemaining(c *assertions, p *Plan, a *Analysis, final float64) {
	rows := p.Analysis.Waterfall
	problems := diffJSON("analysis.budgets", a.Budgets, p.Analysis.Budgets)
	var counted []string
	if a.Cost.Limit != nil {
		counted = append(counted, fmt.Sprintf("cost %s → %s", money(*a.Cost.Limit), money(*a.Cost.Limit-final)))
		for k, x := range rows {
			switch {
			case x.Remaining == nil:
				problems = append(problems, fmt.Sprintf("row %d (%s) has no remaining value", k+1, x.TaskID))
			case !approx(*x.Remaining, *a.Cost.Limit-x.Cumulative):
				problems = append(problems, fmt.Sprintf("row %d (%s): remaining %s, but %s − %s = %s", k+1, x.TaskID, money(*x.Remaining), money(*a.Cost.Limit), money(x.Cumulative), money(*a.Cost.Limit-x.Cumulative)))
			case k > 0 && rows[k-1].Remaining != nil && *x.Remaining > *rows[k-1].Remaining:
				problems = append(problems, fmt.Sprintf("row %d: remaining rises from %s to %s", k+1, money(*rows[k-1].Remaining), money(*x.Remaining)))
			}
		}
	}
	for j, b := range a.Budgets {
		last := b.Limit
		for k, x := range rows {
			if j >= len(x.Budgets) || x.Budgets[j].Metric != b.Metric {
				problems = append(problems, fmt.Sprintf("row %d (%s) has no %s column", k+1, x.TaskID, b.Metric))
				break
			}
			st := x.Budgets[j]
			switch {
			case !approx(st.Remaining, b.Limit-st.Cumulative):
				problems = append(problems, fmt.Sprintf("row %d (%s): %s remaining %s, but %s − %s = %s", k+1, x.TaskID, b.Metric, num(st.Remaining), num(b.Limit), num(st.Cumulative), num(b.Limit-st.Cumulative)))
			case st.Remaining > last+1e-9*math.Max(1, math.Abs(last)):
				problems = append(problems, fmt.Sprintf("row %d: %s remaining rises from %s to %s", k+1, b.Metric, num(last), num(st.Remaining)))
			}
			last = st.Remaining
		}
		if n := len(a.Waterfall); n > 0 && j < len(a.Waterfall[n-1].Budgets) {
			counted = append(counted, fmt.Sprintf("%s %s → %s", b.Metric, num(b.Limit), num(a.Waterfall[n-1].Budgets[j].Remaining)))
		}
	}
	if len(counted) == 0 && len(problems) == 0 {
		c.add(3, "3.3", "remaining budget decreases monotonically", true, "no capped budget (total_cost, total_hours or a sum quantity) among the constraints, so nothing to count down")
	} else {
		c.add(3, "3.3", "remaining budget decreases monotonically", len(problems) == 0, "%s", orText(problems, "counts down: "+strings.Join(counted, "; "), ""))
	}
}

// checkVerdicts checks each constraint's verdict (3.4).
func checkVerdicts(c *assertions, p *Plan, a *Analysis) {
	reported := map[string]Verdict{}
	for _, v := range p.Analysis.Verdicts {
		reported[v.ConstraintID] = v
	}
	for _, v := range a.Verdicts {
		rv, ok := reported[v.ConstraintID]
		if v.Type != Logic {
			c.add(3, "3.4", "feasibility of "+v.ConstraintID+" matches its judgment", ok && rv.Verdict == v.Verdict && approx(rv.Sigma, v.Sigma),
				"semantic: %s with σ %.2f as extracted; plan reports %s with σ %.2f", v.Verdict, v.Sigma, orDash(rv.Verdict), rv.Sigma)
			continue
		}
		c.add(3, "3.4", "feasibility of "+v.ConstraintID+" matches the threshold comparison", ok && rv.Verdict == v.Verdict,
			"%s: %s → %s (holds at mid %v, at high %v); plan reports %s", v.Expr, v.Detail, v.Verdict, v.HoldsMid, v.HoldsHigh, orDash(rv.Verdict))
	}
}

// checkClaims checks that the model's stated totals are reported and
// not used (3.5).
func checkClaims(c *assertions, p *Plan, a *Analysis) {
	// The decomposition answer states both totals; the plan keeps each
	// once, so a disagreement cannot be hidden by dropping its claim.
	var names []string
	for _, cl := range p.Claims {
		names = append(names, cl.Name)
	}
	if want := []string{"total_cost_mid", "critical_path_hours_mid"}; !slices.Equal(names, want) {
		c.add(3, "3.5", "model's stated totals are all reported", false, "claims are %s; want %s, each once", orDash(strings.Join(names, ", ")), strings.Join(want, ", "))
	}
	for _, cl := range p.Claims {
		computed, ok := a.Metrics[claimMetric(cl.Name)]
		want := computed.Mid
		c.add(3, "3.5", "model's stated "+cl.Name+" is reported, not used", ok && approx(cl.Computed, want) && cl.Agrees == approx(cl.Stated, want),
			"model stated %s, kernel computes %s from the tasks%s", num(cl.Stated), num(want), map[bool]string{true: "", false: " (disagreement reported; the kernel's figure is the one used)"}[approx(cl.Stated, want)])
	}
}

// stepsWithoutRemaining keeps what 3.2 compares; 3.3 checks remaining.
func stepsWithoutRemaining(steps []BudgetStep) []BudgetStep {
	out := slices.Clone(steps)
	for i := range out {
		out[i].Remaining = 0
	}
	return out
}

func firstCum(rows []WaterfallRow) float64 {
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Cumulative
}

func orDash(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// claimMetric maps a claim name to its metric.
func claimMetric(name string) string { return strings.TrimSuffix(name, "_mid") }

// rounds recomputes the survey rounds the plan's approaches belong to:
// round 1 from the analysis, each later round from a repair over the
// earlier rounds' approaches (the kernel's search: a round's trigger is
// taken from it; the final claim is proved independently in group 5).
func rounds(ctx context.Context, p *Plan, a *Analysis, limit int) ([]roundPlan, error) {
	last := 1
	for _, sv := range p.Surveys {
		for _, ap := range sv.Approaches {
			last = max(last, ap.Round)
		}
	}
	for _, r := range p.SurveyRounds {
		last = max(last, r.Round)
	}
	out := []roundPlan{firstRound(p.Tasks, a)}
	for r := 2; r <= last; r++ {
		if err := ctx.Err(); err != nil {
			return out, err // past the time limit no search starts, however small
		}
		prior := surveysBefore(p.Surveys, r)
		rep, err := repairPlan(ctx, p.Tasks, p.Quantities, p.Constraints, prior, a, limit)
		if err != nil {
			return out, err
		}
		if rep.Status != RepairInfeasible {
			return out, fmt.Errorf("round %d has no reason: the approaches of rounds before it already give %s", r, rep.Status)
		}
		rp, err := nextRound(p.Tasks, p.Quantities, p.Constraints, prior, rep, r)
		if err != nil {
			return out, err
		}
		out = append(out, rp)
	}
	return out, nil
}

// checkSurveys runs group 4 (approach survey triggers): each survey
// (4.1–4.4), then that every triggered task was surveyed (4.5) and the
// rounds (4.6).
func checkSurveys(ctx context.Context, c *assertions, p *Plan, a *Analysis, limit int) {
	// A later round is recomputed by a search; when the time limit stops
	// it, the checks that need that round's triggers are undecided and
	// the rest (ids, distinctness, estimates) still decided.
	rps, err := rounds(ctx, p, a, limit)
	stopped := err != nil && ctx.Err() != nil
	if err != nil && !stopped {
		c.add(4, "4.0", "survey rounds recomputed", false, "%v", err)
	}
	if len(p.Surveys) == 0 && len(rps[0].tasks) == 0 {
		c.add(4, "4.1", "surveys triggered", true, "no task has confidence < %.1f or sits in an UNSAT wall; nothing to survey", SurveyConfidence)
	}
	task := map[string]Task{}
	for _, t := range p.Tasks {
		task[t.ID] = t
	}
	for _, sv := range p.Surveys {
		t, ok := task[sv.TaskID]
		if !ok {
			c.add(4, "4.1", "survey of "+sv.TaskID+" is triggered", false, "the plan has no task %q", sv.TaskID)
			continue
		}
		checkSurvey(ctx, c, p, t, sv, rps, stopped)
	}
	if stopped {
		c.undecided(ctx, 4, "4.5", "every triggered task is surveyed")
		c.undecided(ctx, 4, "4.6", "survey rounds recomputed")
		return
	}
	checkSurveyed(c, p, rps)
	checkRounds(c, p, rps)
}

// surveyFindings is what the recomputed rounds say of one survey.
type surveyFindings struct {
	want, why []string     // the triggers recomputed; what is wrong with them
	items     itemProblems // distinctness, improvement and plausibility problems
	better    []string     // the approaches that offer what a round asked
	pending   bool         // an approach is from a round the time limit stopped
	known     int          // rounds that ran or were stopped
}

// recomputeSurvey holds one survey's approaches to the rounds that asked
// for them.
func recomputeSurvey(p *Plan, t Task, sv Survey, rps []roundPlan, stopped bool) surveyFindings {
	var f surveyFindings
	known := slices.Clone(rps)
	for _, ap := range sv.Approaches {
		if stopped && ap.Round > len(rps) {
			f.pending = true
			for r := len(known) + 1; r <= ap.Round; r++ {
				known = append(known, roundPlan{round: r})
			}
		}
	}
	f.known = len(known)
	for _, rp := range known {
		var aps []Approach
		for _, ap := range sv.Approaches {
			if ap.Round == rp.round {
				aps = append(aps, ap)
			}
		}
		if len(aps) == 0 {
			continue
		}
		texts := rp.texts(sv.TaskID)
		if len(texts) == 0 && rp.round <= len(rps) {
			f.why = append(f.why, fmt.Sprintf("round %d (%s) did not ask about %s", rp.round, rp.kind, sv.TaskID))
			continue
		}
		f.want = append(f.want, texts...)
		sc, err := newSurveyCheck(p, rp, surveysBefore(p.Surveys, rp.round))
		if err != nil {
			f.why = append(f.why, err.Error())
			continue
		}
		got := sc.item(sv.TaskID, aps, sv.NothingBetter)
		f.items.distinct = append(f.items.distinct, got.distinct...)
		f.items.better = append(f.items.better, got.better...)
		f.items.plausible = append(f.items.plausible, got.plausible...)
		for _, im := range sc.want[sv.TaskID] {
			var by []string
			for _, ap := range aps {
				if im.better(t, ap) {
					by = append(by, ap.ID)
				}
			}
			if len(by) > 0 {
				f.better = append(f.better, fmt.Sprintf("round %d asked for %s: %s", rp.round, im.want(t), strings.Join(by, ", ")))
			}
		}
	}
	return f
}

// checkSurvey checks one survey: triggered (4.1), distinct approaches
// (4.2), what its trigger asks (4.3), plausible estimates (4.4).
func checkSurvey(ctx context.Context, c *assertions, p *Plan, t Task, sv Survey, rps []roundPlan, stopped bool) {
	f := recomputeSurvey(p, t, sv, rps, stopped)
	if !slices.Equal(f.want, sv.Triggers) {
		f.why = append(f.why, fmt.Sprintf("triggers recorded %q, recomputed %q", sv.Triggers, f.want))
	}
	for _, ap := range sv.Approaches {
		if ap.Round < 1 || ap.Round > f.known {
			f.why = append(f.why, fmt.Sprintf("%s/%s is from round %d, which did not run", sv.TaskID, ap.ID, ap.Round))
		}
	}
	if f.pending {
		c.undecided(ctx, 4, "4.1", "survey of "+sv.TaskID+" is triggered")
	} else {
		c.add(4, "4.1", "survey of "+sv.TaskID+" is triggered", len(f.why) == 0 && len(f.want) > 0, "%s",
			orText(f.why, strings.Join(f.want, "; "), sv.TaskID+": "))
	}
	c.add(4, "4.2", "survey of "+sv.TaskID+" has at least 2 distinct approaches", len(f.items.distinct) == 0,
		"%d approaches%s", len(sv.Approaches), orText(f.items.distinct, "", "; "))
	detail := strings.Join(f.better, "; ")
	if strings.TrimSpace(sv.NothingBetter) != "" {
		detail = orDash(detail) + "; nothing better possible, the model says: " + sv.NothingBetter
	}
	if f.pending {
		c.undecided(ctx, 4, "4.3", "survey of "+sv.TaskID+" offers what its trigger asks")
	} else {
		c.add(4, "4.3", "survey of "+sv.TaskID+" offers what its trigger asks", len(f.items.better) == 0, "%s", orText(f.items.better, detail, ""))
	}
	c.add(4, "4.4", "approach estimates of "+sv.TaskID+" plausible", len(f.items.plausible) == 0, "%s",
		orText(f.items.plausible, "no negative costs, no zero-time approaches, effects only on semantic constraints", ""))
}

// checkSurveyed checks that every task a round that was answered asked
// about was surveyed in that round (4.5).
func checkSurveyed(c *assertions, p *Plan, rps []roundPlan) {
	var missing []string
	asked := 0
	for _, rp := range rps {
		answered := rp.round == 1 || slices.ContainsFunc(p.SurveyRounds, func(r SurveyRound) bool { return r.Round == rp.round && r.Outcome == RoundAnswered })
		if !answered {
			continue
		}
		for _, id := range rp.tasks {
			asked++
			ok := slices.ContainsFunc(p.Surveys, func(sv Survey) bool {
				return sv.TaskID == id && slices.ContainsFunc(sv.Approaches, func(ap Approach) bool { return ap.Round == rp.round })
			})
			if !ok {
				missing = append(missing, fmt.Sprintf("%s in round %d (%s)", id, rp.round, strings.Join(rp.texts(id), ", ")))
			}
		}
	}
	c.add(4, "4.5", "every triggered task is surveyed", len(missing) == 0, "%s", orText(missing, fmt.Sprintf("%d asked in %d round(s), %d surveyed", asked, len(rps), len(p.Surveys)), "not surveyed: "))
}

// checkRounds checks the recorded survey rounds against the recomputed
// ones: kinds, tasks, feedback, and approaches where answered (4.6).
func checkRounds(c *assertions, p *Plan, rps []roundPlan) {
	var bad []string
	for _, r := range p.SurveyRounds {
		if r.Round < 1 || r.Round > len(rps) {
			bad = append(bad, fmt.Sprintf("round %d cannot be recomputed", r.Round))
			continue
		}
		rp := rps[r.Round-1]
		want := SurveyRound{Round: rp.round, Kind: rp.kind, Tasks: rp.tasks, Feedback: rp.feedback, Outcome: r.Outcome}
		bad = append(bad, diffJSON(fmt.Sprintf("survey_rounds[%d]", r.Round-1), want, r)...)
		has := slices.ContainsFunc(p.Surveys, func(sv Survey) bool {
			return slices.ContainsFunc(sv.Approaches, func(ap Approach) bool { return ap.Round == r.Round })
		})
		if has != (r.Outcome == RoundAnswered) {
			bad = append(bad, fmt.Sprintf("round %d is %q but has %s approaches", r.Round, r.Outcome, map[bool]string{true: "some", false: "no"}[has]))
		}
	}
	if want := len(rps) - map[bool]int{true: 1, false: 0}[len(rps[0].tasks) == 0]; len(p.SurveyRounds) != want {
		bad = append(bad, fmt.Sprintf("%d round(s) recorded, %d recomputed", len(p.SurveyRounds), want))
	}
	c.add(4, "4.6", "survey rounds recomputed", len(bad) == 0, "%s", orText(bad, fmt.Sprintf("%d round(s): kinds, tasks and feedback match", len(p.SurveyRounds)), ""))
}

// repairCheck is what the steps of group 5 share: the plan, its analysis,
// the constraints the repair must keep, and the proof (or search) that
// recomputes the repair claim.
type repairCheck struct {
	ctx      context.Context
	c        *assertions
	p        *Plan
	a        *Analysis
	o        CheckOptions
	unsat    []string           // the logic constraints UNSAT before the repair
	required []string           // the constraints a repair must keep
	floors   map[string]float64 // each semantic constraint's σ floor
	en       *enumeration       // every combination, when done
	done     bool               // the enumeration covered them all
	stopped  bool               // the time limit stopped the proof
	search   Repair             // the kernel's search, when the combinations are too many
	how      string             // how the claim was proved, for the details
}

// checkRepair runs group 5 (repair effectiveness): the status (5.1), the
// requirements (5.8), then what the status claims: nothing (undecided),
// a minimal unsat core (infeasible), or a revision that holds (5.2–5.7).
func checkRepair(ctx context.Context, c *assertions, p *Plan, a *Analysis, o CheckOptions) {
	r := &repairCheck{ctx: ctx, c: c, p: p, a: a, o: o}
	for _, v := range a.Verdicts {
		if v.Verdict == UNSAT {
			r.unsat = append(r.unsat, v.ConstraintID)
		}
	}
	r.required, r.floors = requirements(p.Constraints, p.Surveys)
	if len(r.unsat) == 0 {
		c.add(5, "5.1", "repair status", p.Repair.Status == RepairNotNeeded && len(p.Repair.Choices) == 0,
			"no logic constraint is UNSAT, so no repair is needed; plan reports %s with %d choice(s)", orDash(p.Repair.Status), len(p.Repair.Choices))
		return
	}
	if !r.recompute() {
		return
	}
	r.status()
	r.requirements()
	switch p.Repair.Status {
	case RepairUndecided:
		c.add(5, "5.2", "an undecided repair claims nothing", len(p.Repair.Choices) == 0 && len(p.Repair.UnsatCore) == 0 && p.Repair.Revised == nil,
			"%d choice(s), unsat core {%s}, revised plan %v", len(p.Repair.Choices), strings.Join(p.Repair.UnsatCore, ", "), p.Repair.Revised != nil)
	case RepairInfeasible:
		r.infeasible()
	case RepairRepaired:
		r.repaired()
	}
}

// recompute enumerates every combination of surveyed options, or where
// they are too many runs the kernel's search (the claim is then proved by
// z3 with CheckOptions.SMT, in checkSMT). A proof the time limit stops
// leaves undecided only the claims it proves; every recomputation that
// follows is still decided. It reports false when nothing can be checked.
func (r *repairCheck) recompute() bool {
	p := r.p
	en, done, err := enumerate(r.ctx, p.Tasks, p.Quantities, p.Constraints, p.Surveys)
	r.en, r.done, r.stopped = en, done, err != nil && r.ctx.Err() != nil
	if err != nil && !r.stopped {
		r.c.add(5, "5.0", "recompute repair", false, "cannot enumerate the combinations: %v", err)
		return false
	}
	if r.stopped {
		return true
	}
	r.how = fmt.Sprintf("every one of the %s combinations tried", num(en.space))
	if done {
		return true
	}
	r.how = fmt.Sprintf("%s combinations are beyond the exhaustive check (%s units of work); taken from the kernel's search", num(en.space), num(ExhaustiveWork))
	if r.o.SMT {
		r.how += "; z3 proves it below (5.z)"
	} else {
		r.how += "; solve check --smt z3 proves it"
	}
	r.search, err = repairPlan(r.ctx, p.Tasks, p.Quantities, p.Constraints, p.Surveys, r.a, r.o.SearchLimit)
	r.stopped = err != nil && r.ctx.Err() != nil
	if err != nil && !r.stopped {
		r.c.add(5, "5.0", "recompute repair", false, "cannot recompute the repair: %v", err)
		return false
	}
	return true
}

// status checks the plan's repair status against the recomputed one
// (5.1).
func (r *repairCheck) status() {
	p, unsat := r.p, strings.Join(r.unsat, ", ")
	switch {
	case !r.stopped:
		status := RepairInfeasible
		switch {
		case (r.done && r.en.found) || (!r.done && r.search.Status == RepairRepaired):
			status = RepairRepaired
		case !r.done && r.search.Status == RepairUndecided:
			// The search's limit is in nodes, so it stops at the same place
			// here: the plan may say so, and claims nothing else.
			status = RepairUndecided
		}
		r.c.add(5, "5.1", "repair status", status == p.Repair.Status, "UNSAT %s; %s: %s; plan reports %s", unsat, r.how, status, orDash(p.Repair.Status))
	case p.Repair.Status == RepairRepaired && keepsRequired(p, r.floors):
		r.c.add(5, "5.1", "repair status", true, "UNSAT %s; the plan's own choices keep every required constraint (%s), so a repair exists; plan reports %s", unsat, strings.Join(r.required, ", "), p.Repair.Status)
	case p.Repair.Status == RepairRepaired || p.Repair.Status == RepairInfeasible || p.Repair.Status == RepairUndecided:
		r.c.undecided(r.ctx, 5, "5.1", "repair status")
	default:
		r.c.add(5, "5.1", "repair status", false, "UNSAT %s, so a repair is needed; plan reports %s", unsat, orDash(p.Repair.Status))
	}
}

// requirements checks the required constraints, the approaches excluded
// by a semantic floor and the size of the space (5.8).
func (r *repairCheck) requirements() {
	p := r.p
	var excluded []Exclusion
	for _, sv := range p.Surveys {
		for _, ap := range sv.Approaches {
			for _, ef := range ap.ConstraintEffects {
				if f, ok := r.floors[ef.ConstraintID]; ok && ef.Sigma < f {
					excluded = append(excluded, Exclusion{TaskID: sv.TaskID, ApproachID: ap.ID, ConstraintID: ef.ConstraintID, Sigma: ef.Sigma, Floor: f})
				}
			}
		}
	}
	d := diffJSON("repair.required", r.required, p.Repair.Required)
	d = append(d, diffJSON("repair.excluded", sortExclusions(excluded), sortExclusions(p.Repair.Excluded))...)
	space := spaceOf(p.Surveys)
	if !approx(space, p.Repair.Space) {
		d = append(d, fmt.Sprintf("repair.space is %s, recomputed %s", num(p.Repair.Space), num(space)))
	}
	r.c.add(5, "5.8", "required constraints, exclusions and space recomputed", len(d) == 0, "%s",
		orText(d, fmt.Sprintf("required %s; %d approach(es) below a semantic floor; %s combinations", strings.Join(r.required, ", "), len(excluded), num(space)), ""))
}

// infeasible checks a "no repair possible" claim: no combination keeps
// every required constraint, and the unsat core is infeasible alone and
// minimal (5.2).
func (r *repairCheck) infeasible() {
	const name = "no combination keeps every required constraint"
	core := r.p.Repair.UnsatCore
	switch {
	case r.stopped:
		r.c.undecided(r.ctx, 5, "5.2", name)
		return
	case !r.done:
		r.c.add(5, "5.2", name, slices.Equal(sortedCopy(r.search.UnsatCore), sortedCopy(core)),
			"%s; the search's minimal conflicting set %s; plan reports %s", r.how, orDash(strings.Join(r.search.UnsatCore, ", ")), orDash(strings.Join(core, ", ")))
		return
	}
	var bad []string
	if r.en.satisfiable(r.required) {
		bad = append(bad, fmt.Sprintf("a combination keeps all of %s: %s", strings.Join(r.required, ", "), choiceText(r.en.bestAt)))
	}
	if len(core) == 0 || r.en.satisfiable(core) {
		bad = append(bad, fmt.Sprintf("the unsat core {%s} is satisfiable by itself", strings.Join(core, ", ")))
	}
	for _, id := range core {
		if !slices.Contains(r.required, id) {
			bad = append(bad, id+" in the core is not a required constraint")
		}
		rest := slices.DeleteFunc(slices.Clone(core), func(x string) bool { return x == id })
		if !r.en.satisfiable(rest) {
			bad = append(bad, fmt.Sprintf("the core is not minimal: without %s it is still infeasible", id))
		}
	}
	r.c.add(5, "5.2", name, len(bad) == 0, "%s",
		orText(bad, fmt.Sprintf("%s: none keeps %s; the unsat core {%s} is infeasible alone and minimal (each one dropped, the rest is feasible)", r.how, strings.Join(r.required, ", "), strings.Join(core, ", ")), ""))
}

// repaired checks a repair: its choices (5.2), the revised plan (5.2–5.4),
// that it is the best (5.5), its estimates (5.6) and that each swap is
// needed (5.7).
func (r *repairCheck) repaired() {
	if !r.choicesValid() {
		return
	}
	revisedTasks, ok := r.revised()
	if !ok {
		return
	}
	r.best()
	est := estimateProblems(revisedTasks, r.p.Quantities)
	r.c.add(5, "5.6", "revised estimates plausible", len(est) == 0, "%s", orText(est, "no negative costs, no zero-time tasks in the revised plan", ""))
	r.swapsNeeded()
}

// choicesValid checks that the choices name one surveyed option per
// surveyed task (5.2, said only when they do not).
func (r *repairCheck) choicesValid() bool {
	p := r.p
	var problems []string
	seen := map[string]bool{}
	for _, ch := range p.Repair.Choices {
		if seen[ch.TaskID] {
			problems = append(problems, ch.TaskID+" is chosen twice")
		}
		seen[ch.TaskID] = true
		if _, ok := findApproach(p.Surveys, ch); !ok && ch.ApproachID != OriginalApproach {
			problems = append(problems, "no such surveyed approach: "+ch.TaskID+"/"+ch.ApproachID)
		}
	}
	for _, sv := range p.Surveys {
		if !seen[sv.TaskID] {
			problems = append(problems, "no choice for surveyed task "+sv.TaskID)
		}
	}
	if len(problems) > 0 || len(p.Repair.Choices) != len(p.Surveys) {
		r.c.add(5, "5.2", "the choices name one surveyed option per surveyed task", false, "%s", orText(problems, "extra choices", ""))
		return false
	}
	return true
}

// revised analyses the plan the choices make: it satisfies what was
// violated and breaks nothing that held (5.2), keeps every semantic
// constraint above its floor (5.3), and is the plan's revised plan (5.4).
// It returns the revised tasks, or false when they cannot be analysed.
func (r *repairCheck) revised() ([]Task, bool) {
	p := r.p
	revisedTasks := applyChoices(p.Tasks, p.Surveys, p.Repair.Choices)
	revisedCons := reviseSigmas(p.Constraints, p.Surveys, p.Repair.Choices)
	rev, err := Analyze(revisedTasks, p.Quantities, revisedCons)
	if err != nil {
		r.c.add(5, "5.2", "revised plan", false, "cannot analyse the revised plan: %v", err)
		return nil, false
	}
	before := map[string]string{}
	for _, v := range r.a.Verdicts {
		before[v.ConstraintID] = v.Verdict
	}
	for _, v := range rev.Verdicts {
		if v.Type != Logic {
			continue
		}
		if before[v.ConstraintID] == UNSAT {
			r.c.add(5, "5.2", "revised plan satisfies previously violated "+v.ConstraintID, v.Verdict != UNSAT, "%s: %s → %s", v.Expr, v.Detail, v.Verdict)
		} else if v.Verdict == UNSAT {
			r.c.add(5, "5.2", "revision keeps "+v.ConstraintID, false, "%s was %s and is UNSAT after the revision (%s)", v.ConstraintID, before[v.ConstraintID], v.Detail)
		}
	}
	var broken []string
	for _, ch := range p.Repair.Choices {
		ap, _ := findApproach(p.Surveys, ch)
		for _, ef := range ap.ConstraintEffects {
			if f, ok := r.floors[ef.ConstraintID]; ok && ef.Sigma < f {
				broken = append(broken, fmt.Sprintf("%s/%s leaves %s at σ %.2f < %.2f", ch.TaskID, ch.ApproachID, ef.ConstraintID, ef.Sigma, f))
			}
		}
	}
	r.c.add(5, "5.3", "semantic constraints kept above their floor", len(broken) == 0, "%s", orText(broken, fmt.Sprintf("no chosen approach lowers a semantic constraint below min(τ_local %.2f, its σ)", store.TauLocal), ""))
	d := diffJSON("repair.revised", rev, p.Repair.Revised)
	r.c.add(5, "5.4", "revised plan recomputed", len(d) == 0, "%s",
		orText(d, fmt.Sprintf("revised mid total %s, critical path %sh, verdicts, waterfall, schedule, walls and σ (updated by the chosen approaches' judged effects: σ_v %.2f) all recomputed from the chosen approaches", money(rev.Cost.Mid), num(rev.Time.Mid), rev.SigmaV), ""))
	return revisedTasks, true
}

// best checks that the repair is the best by the documented order (5.5).
func (r *repairCheck) best() {
	const name = "repair is the best by the documented order"
	p := r.p
	mine, err := rankOf(p.Tasks, p.Quantities, p.Surveys, p.Repair.Choices)
	switch {
	case err != nil:
		r.c.add(5, "5.5", name, false, "%v", err)
	case r.stopped:
		r.c.undecided(r.ctx, 5, "5.5", name)
	case r.done && !r.en.found:
		r.c.add(5, "5.5", name, false, "%s; none keeps every required constraint; the plan's choice: %s", r.how, mine)
	case r.done:
		r.c.add(5, "5.5", name, !r.en.best.better(mine), "%s; the best keeps every required constraint with %s (%s); the plan's choice: %s",
			r.how, r.en.best, choiceText(r.en.bestAt), mine)
	default:
		best, _ := rankOf(p.Tasks, p.Quantities, p.Surveys, r.search.Choices)
		r.c.add(5, "5.5", name, r.search.Status == RepairRepaired && !best.better(mine), "%s: best %s; the plan's choice: %s", r.how, best, mine)
	}
}

// swapsNeeded checks that each swap is needed: put back as planned, the
// constraints it names fail, and no others (5.7).
func (r *repairCheck) swapsNeeded() {
	p := r.p
	var needs, problems []string
	for k, ch := range p.Repair.Choices {
		if ch.ApproachID == OriginalApproach {
			if len(ch.NeededFor) > 0 {
				problems = append(problems, ch.TaskID+" is kept as planned but names constraints it is needed for")
			}
			continue
		}
		back := slices.Clone(p.Repair.Choices)
		back[k].ApproachID = OriginalApproach
		ra, err := Analyze(applyChoices(p.Tasks, p.Surveys, back), p.Quantities, p.Constraints)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		var fail []string
		for _, v := range ra.Verdicts {
			if v.Type == Logic && v.Verdict == UNSAT {
				fail = append(fail, v.ConstraintID)
			}
		}
		if len(fail) == 0 {
			problems = append(problems, fmt.Sprintf("%s → %s is not needed: with %s kept as planned every logic constraint still holds", ch.TaskID, ch.ApproachID, ch.TaskID))
		} else if !slices.Equal(fail, ch.NeededFor) {
			problems = append(problems, fmt.Sprintf("%s → %s is needed for %s; plan says %s", ch.TaskID, ch.ApproachID, strings.Join(fail, ", "), orDash(strings.Join(ch.NeededFor, ", "))))
		}
		needs = append(needs, fmt.Sprintf("%s → %s for %s", ch.TaskID, ch.ApproachID, strings.Join(fail, ", ")))
	}
	r.c.add(5, "5.7", "each swap is needed", len(problems) == 0, "%s", orText(problems, orDash(strings.Join(needs, "; "))+" (kept as planned, the constraint fails)", ""))
}

// keepsRequired reports whether the plan's own choices, one surveyed
// option per surveyed task, keep every required constraint: an example
// that proves a repair exists without a search.
func keepsRequired(p *Plan, floors map[string]float64) bool {
	seen := map[string]bool{}
	for _, ch := range p.Repair.Choices {
		ap, ok := findApproach(p.Surveys, ch)
		if seen[ch.TaskID] || !ok && ch.ApproachID != OriginalApproach {
			return false
		}
		seen[ch.TaskID] = true
		for _, ef := range ap.ConstraintEffects {
			if f, ok := floors[ef.ConstraintID]; ok && ef.Sigma < f {
				return false
			}
		}
	}
	for _, sv := range p.Surveys {
		if !seen[sv.TaskID] {
			return false
		}
	}
	rev, err := Analyze(applyChoices(p.Tasks, p.Surveys, p.Repair.Choices), p.Quantities, p.Constraints)
	if err != nil || len(p.Repair.Choices) != len(p.Surveys) {
		return false
	}
	for _, v := range rev.Verdicts {
		if v.Type == Logic && v.Verdict == UNSAT {
			return false
		}
	}
	return true
}

func choiceText(cs []Choice) string {
	var out []string
	for _, c := range cs {
		if c.ApproachID != OriginalApproach {
			out = append(out, c.TaskID+"→"+c.ApproachID)
		}
	}
	if len(out) == 0 {
		return "every task as planned"
	}
	return strings.Join(out, ", ")
}

func sortExclusions(es []Exclusion) []Exclusion {
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b Exclusion) int {
		return strings.Compare(a.TaskID+"/"+a.ApproachID+"/"+a.ConstraintID, b.TaskID+"/"+b.ApproachID+"/"+b.ConstraintID)
	})
	if out == nil {
		out = []Exclusion{}
	}
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// checkSMT asks z3 the plan's verdict and repair questions, recomputed
// from the raw plan, and reports each answer as an assertion: the proof
// of a repair claim too large to enumerate.
func checkSMT(ctx context.Context, c *assertions, p *Plan, timeout time.Duration) {
	rep, err := CrossCheck(ctx, p, timeout)
	if c.stopped(ctx, 5, "5.z", "z3 proof", err) {
		return
	}
	if err != nil {
		c.add(5, "5.z", "z3 proof", false, "z3 could not be asked: %v", err)
		return
	}
	for _, q := range rep.Checks {
		group := 3
		if !strings.HasPrefix(q.What, "plan:") {
			group = 5
		}
		id, name := fmt.Sprintf("%d.z", group), "z3: "+q.What
		if q.Solver == smt.Unknown {
			c.out = append(c.out, Assertion{Group: group, ID: id, Name: name, Undecided: true,
				Detail: fmt.Sprintf("%s could not decide within its timeout (%v a question): the claim is neither proven nor refuted", rep.Solver, smt.OrDefault(timeout))})
			continue
		}
		c.add(group, id, name, q.Agree, "%s answers %s; the plan's claim needs %s", rep.Solver, q.Solver, q.Kernel)
	}
}

func checkCriticalPath(c *assertions, p *Plan, m *model, a *Analysis) {
	reported := p.Analysis.Time.Mid
	var bad []string
	for _, path := range p.Analysis.CriticalPaths {
		if msg := pathProblem(m, path, a.Time.Mid); msg != "" {
			bad = append(bad, msg)
		}
	}
	c.add(6, "6.1", "critical path is the longest path", approx(reported, a.Time.Mid) && len(bad) == 0 && len(p.Analysis.CriticalPaths) > 0,
		"longest path by mid hours %sh recomputed; plan reports %sh%s", num(a.Time.Mid), num(reported), orText(bad, "", "; "))
	got, want := joinPaths(p.Analysis.CriticalPaths), joinPaths(a.CriticalPaths)
	c.add(6, "6.2", "every critical path reported", slices.Equal(got, want), "recomputed %d critical path(s): %s; plan reports %s",
		len(want), strings.Join(want, " | "), orDash(strings.Join(got, " | ")))
	var diff []string
	rows := map[string]ScheduleRow{}
	for _, r := range p.Analysis.Schedule {
		rows[r.TaskID] = r
	}
	for _, w := range a.Schedule {
		r, ok := rows[w.TaskID]
		if !ok || !approx(r.ES, w.ES) || !approx(r.EF, w.EF) || !approx(r.LS, w.LS) || !approx(r.LF, w.LF) ||
			!approx(r.TotalFloat, w.TotalFloat) || !approx(r.FreeFloat, w.FreeFloat) || r.Critical != w.Critical {
			diff = append(diff, fmt.Sprintf("%s: recomputed ES %s EF %s LS %s LF %s TF %s FF %s", w.TaskID, num(w.ES), num(w.EF), num(w.LS), num(w.LF), num(w.TotalFloat), num(w.FreeFloat)))
		}
	}
	c.add(6, "6.3", "schedule (ES/EF/LS/LF, floats) recomputed", len(diff) == 0, "%s", orText(diff, fmt.Sprintf("%d tasks match", len(a.Schedule)), "differs: "))
	reportedV := map[string]string{}
	for _, v := range p.Analysis.Verdicts {
		reportedV[v.ConstraintID] = v.Verdict
	}
	timed := false
	for _, v := range a.Verdicts {
		if v.Type != Logic || !strings.Contains(v.Expr, "critical_path_hours") {
			continue
		}
		timed = true
		ok := reportedV[v.ConstraintID] == v.Verdict
		c.add(6, "6.4", "critical path within "+v.ConstraintID+" or flagged", ok,
			"critical path %sh (high %sh) against %s: %s; plan reports %s", num(a.Time.Mid), num(a.Time.High), v.Expr, v.Verdict, orDash(reportedV[v.ConstraintID]))
	}
	if !timed {
		c.add(6, "6.4", "critical path within the time constraint", true, "no logic constraint uses critical_path_hours; critical path %sh", num(a.Time.Mid))
	}
}

func joinPaths(paths [][]string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, strings.Join(p, "→"))
	}
	slices.Sort(out)
	return out
}

// pathProblem checks that a reported path follows dependency edges and
// takes the given length.
func pathProblem(m *model, path []string, length float64) string {
	index := map[string]int{}
	for i, t := range m.tasks {
		index[t.ID] = i
	}
	total := 0.0
	for k, id := range path {
		i, ok := index[id]
		if !ok {
			return fmt.Sprintf("path names unknown task %q", id)
		}
		total += m.tasks[i].Hours.Mid
		if k > 0 && !slices.Contains(m.g.Preds[i], index[path[k-1]]) {
			return fmt.Sprintf("%s does not depend on %s, so %s is not a path", id, path[k-1], strings.Join(path, "→"))
		}
	}
	if !approx(total, length) {
		return fmt.Sprintf("path %s takes %sh, not %sh", strings.Join(path, "→"), num(total), num(length))
	}
	return ""
}

// Failed counts failing checks.
func Failed(results []Assertion) int {
	n := 0
	for _, r := range results {
		if !r.Pass && !r.Undecided {
			n++
		}
	}
	return n
}

// Undecided counts the checks that could not finish within the time limit.
func Undecided(results []Assertion) int {
	n := 0
	for _, r := range results {
		if r.Undecided {
			n++
		}
	}
	return n
}

// provenanceProblems checks what the kernel writes into each constraint's
// provenance: the source follows from explicit and derived_from (human,
// derived or resolver), derived_from names other constraints, and the
// kernel is the resolver of exactly the constraints it makes from
// --budget and --time, which must be as it makes them.
func provenanceProblems(constraints []Constraint, in Inputs) []string {
	var bad []string
	ids := map[string]bool{}
	for _, k := range constraints {
		ids[k.ID] = true
	}
	kernel := map[string]Constraint{}
	for _, k := range kernelConstraints(Request{BudgetUSD: in.BudgetUSD, TimeHours: in.TimeHours}) {
		kernel[k.ID] = k
	}
	for _, k := range constraints {
		pv := k.Provenance
		want := "resolver"
		switch {
		case k.Explicit:
			want = "human"
		case len(pv.DerivedFrom) > 0:
			want = "derived"
		}
		if pv.Source != want {
			bad = append(bad, fmt.Sprintf("%s provenance source is %q, want %q (explicit: human; implicit: resolver, or derived when derived from others)", k.ID, pv.Source, want))
		}
		for _, d := range pv.DerivedFrom {
			if !ids[d] || d == k.ID {
				bad = append(bad, fmt.Sprintf("%s is derived from %q, which is not another constraint", k.ID, d))
			}
		}
		made, isKernel := kernel[k.ID]
		switch {
		case isKernel:
			made.DBID = k.DBID
			bad = append(bad, diffJSON("constraint "+k.ID+" (made by the kernel from the flag)", made, k)...)
		case pv.ResolverID != ResolverID:
			bad = append(bad, fmt.Sprintf("%s resolver is %q, want %s (the kernel makes only the --budget and --time constraints)", k.ID, pv.ResolverID, ResolverID))
		}
	}
	for id := range kernel {
		if !ids[id] {
			bad = append(bad, fmt.Sprintf("the constraint %s the kernel makes from its flag is missing", id))
		}
	}
	return bad
}
