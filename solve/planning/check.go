package planning

import (
	"context"
	"fmt"
	"github.com/llmkernels/kernels/solve/store"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/solve/dag"
)

// Assertion is one assertion of the spec's framework.
type Assertion struct {
	Group  int    `json:"group"`
	ID     string `json:"id"`
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
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

func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func money(v float64) string { return fmt.Sprintf("$%.2f", v) }

// goalFigure matches a figure in a goal: a number not glued to a word
// (p99 and GPT-5 do not count), with its sign, currency and unit.
var goalFigure = regexp.MustCompile(`(?:^|[^\p{L}\p{N}_.\-])([<>≤≥~]?\$?\d[\d,]*(?:\.\d+)?(?:%|[\p{L}]+)?(?:/[\p{L}]+)?)`)

// GoalFigures lists the quantified figures a goal states; each is taken to
// be one explicit constraint.
func GoalFigures(goal string) []string {
	var out []string
	for _, m := range goalFigure.FindAllStringSubmatch(goal, -1) {
		out = append(out, strings.TrimRight(m[1], ","))
	}
	return out
}

// ExplicitMinimum is N of the framework's first assertion: the goal's
// figures, one per --constraint, one each for --budget and --time.
func ExplicitMinimum(goal string, in Inputs) (int, string) {
	figs := GoalFigures(goal)
	n := len(figs) + len(in.Constraints)
	flags := []string{}
	if in.BudgetUSD != nil {
		n++
		flags = append(flags, "--budget")
	}
	if in.TimeHours != nil {
		n++
		flags = append(flags, "--time")
	}
	why := fmt.Sprintf("goal figures: %s; %d --constraint", strings.Join(figs, ", "), len(in.Constraints))
	if len(figs) == 0 {
		why = fmt.Sprintf("no figures in the goal; %d --constraint", len(in.Constraints))
	}
	if len(flags) > 0 {
		why += "; " + strings.Join(flags, ", ")
	}
	return n, why
}

func normalize(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// quoteFound reports whether an explicit constraint's quote is in the goal
// or a --constraint (case and spacing ignored), or names a flag the kernel
// turned into a constraint.
func quoteFound(c Constraint, goal string, in Inputs) bool {
	q := normalize(c.Quote)
	if q == "" {
		return false
	}
	if c.Provenance.ResolverID == KernelResolverID && strings.HasPrefix(q, "--") {
		return true
	}
	if strings.Contains(normalize(goal), q) {
		return true
	}
	for _, t := range in.Constraints {
		if strings.Contains(normalize(t), q) {
			return true
		}
	}
	return false
}

// Check runs the spec's assertion framework on a plan, recomputing every
// figure from the raw tasks, constraints, surveys and repair choices.
func Check(ctx context.Context, p *Plan) []Assertion {
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
	checkSurveys(c, p, a)
	checkRepair(ctx, c, p, a)
	checkCriticalPath(c, p, m, a)
	return c.out
}

func checkConstraints(c *assertions, p *Plan) {
	n, why := ExplicitMinimum(p.Goal, p.Inputs)
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
	c.add(1, "1.1", "explicit constraints", explicit >= n, "%d explicit constraints, at least %d required (%s)", explicit, n, why)
	c.add(1, "1.2", "explicit constraints quote the goal", len(unquoted) == 0, "%s",
		orText(unquoted, "every explicit constraint quotes words of the goal, a --constraint or a flag", "not found in the goal or a --constraint: "))
	var implicit []string
	for _, k := range p.Constraints {
		if !k.Explicit && strings.TrimSpace(k.RemovalConsequence) != "" {
			implicit = append(implicit, k.ID)
		}
	}
	c.add(1, "1.3", "implicit constraint with removal consequence", len(implicit) > 0, "%d implicit constraint(s) with a removal consequence: %s", len(implicit), strings.Join(implicit, ", "))
	var bad []string
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
	_, problems := parseLogic(p.Constraints, p.Quantities)
	bad = append(bad, problems...)
	c.add(1, "1.4", "constraints well-formed", len(bad) == 0, "%s",
		orText(bad, fmt.Sprintf("%d constraints typed logic|semantic; logic expressions parse over known metrics with σ 1.0; semantic ones have a rubric", len(p.Constraints)), ""))
}

func orText(problems []string, ok, prefix string) string {
	if len(problems) == 0 {
		return ok
	}
	return prefix + strings.Join(problems, "; ")
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

func checkBudget(c *assertions, p *Plan, a *Analysis) {
	r := p.Analysis.Cost
	ok := approx(r.Mid, a.Cost.Mid) && approx(r.Low, a.Cost.Low) && approx(r.High, a.Cost.High) &&
		approx(r.PERTMean, a.Cost.PERTMean) && approx(r.PERTSigma, a.Cost.PERTSigma)
	c.add(3, "3.1", "sum of task mid costs equals the reported total", ok,
		"recomputed mid %s (low %s, high %s, PERT %s ± %s); plan reports mid %s (low %s, high %s, PERT %s ± %s)",
		money(a.Cost.Mid), money(a.Cost.Low), money(a.Cost.High), money(a.Cost.PERTMean), money(a.Cost.PERTSigma),
		money(r.Mid), money(r.Low), money(r.High), money(r.PERTMean), money(r.PERTSigma))

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
		if k > 0 && x.Cumulative < rows[k-1].Cumulative {
			problems = append(problems, fmt.Sprintf("row %d: cumulative falls from %s to %s", k+1, money(rows[k-1].Cumulative), money(x.Cumulative)))
		}
	}
	final := 0.0
	if len(a.Waterfall) > 0 {
		final = a.Waterfall[len(a.Waterfall)-1].Cumulative
	}
	c.add(3, "3.2", "waterfall cumulative values increase monotonically", len(problems) == 0, "%s",
		orText(problems, fmt.Sprintf("%d rows in execution order, cumulative %s → %s", len(rows), money(firstCum(a.Waterfall)), money(final)), ""))

	problems = nil
	if a.Cost.Limit == nil {
		c.add(3, "3.3", "remaining budget decreases monotonically", true, "no total_cost cap among the constraints, so no remaining budget to count down")
	} else {
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
		c.add(3, "3.3", "remaining budget decreases monotonically", len(problems) == 0, "%s",
			orText(problems, fmt.Sprintf("budget %s counts down to %s", money(*a.Cost.Limit), money(*a.Cost.Limit-final)), ""))
	}

	reported := map[string]Verdict{}
	for _, v := range p.Analysis.Verdicts {
		reported[v.ConstraintID] = v
	}
	for _, v := range a.Verdicts {
		if v.Type != Logic {
			continue
		}
		rv, ok := reported[v.ConstraintID]
		c.add(3, "3.4", "feasibility of "+v.ConstraintID+" matches the threshold comparison", ok && rv.Verdict == v.Verdict,
			"%s: %s → %s (holds at mid %v, at high %v); plan reports %s", v.Expr, v.Detail, v.Verdict, v.HoldsMid, v.HoldsHigh, orDash(rv.Verdict))
	}
	for _, cl := range p.Claims {
		computed, ok := a.Metrics[claimMetric(cl.Name)]
		want := computed.Mid
		c.add(3, "3.5", "model's stated "+cl.Name+" is reported, not used", ok && approx(cl.Computed, want) && cl.Agrees == approx(cl.Stated, want),
			"model stated %s, kernel computes %s from the tasks%s", num(cl.Stated), num(want), map[bool]string{true: "", false: " (disagreement reported; the kernel's figure is the one used)"}[approx(cl.Stated, want)])
	}
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

func checkSurveys(c *assertions, p *Plan, a *Analysis) {
	triggers := surveyTriggers(p.Tasks, a)
	task := map[string]Task{}
	for _, t := range p.Tasks {
		task[t.ID] = t
	}
	surveyed := map[string]bool{}
	if len(p.Surveys) == 0 && len(triggers) == 0 {
		c.add(4, "4.1", "surveys triggered", true, "no task has confidence < %.1f or sits in an UNSAT wall; nothing to survey", SurveyConfidence)
		return
	}
	declared := map[string]bool{}
	for _, q := range p.Quantities {
		declared[q.Name] = true
	}
	for _, sv := range p.Surveys {
		surveyed[sv.TaskID] = true
		t, ok := task[sv.TaskID]
		if !ok {
			c.add(4, "4.1", "survey of "+sv.TaskID+" is triggered", false, "the plan has no task %q", sv.TaskID)
			continue
		}
		why := triggers[sv.TaskID]
		c.add(4, "4.1", "survey of "+sv.TaskID+" is triggered", len(why) > 0, "%s",
			orText(why, fmt.Sprintf("%s has confidence %.2f ≥ %.1f and is in no UNSAT wall", sv.TaskID, t.Confidence, SurveyConfidence), sv.TaskID+": "))
		distinct := map[string]bool{}
		var dup []string
		for _, ap := range sv.Approaches {
			key := fmt.Sprintf("%s|%v|%v", normalize(ap.Title), ap.CostUSD, ap.Hours)
			if distinct[key] || ap.ID == OriginalApproach {
				dup = append(dup, ap.ID)
			}
			distinct[key] = true
		}
		c.add(4, "4.2", "survey of "+sv.TaskID+" has at least 2 distinct approaches", len(sv.Approaches)-len(dup) >= 2,
			"%d approaches%s", len(sv.Approaches), orText(dup, "", ", not distinct or reserved ids: "))
		var cheaper []string
		for _, ap := range sv.Approaches {
			if ap.CostUSD.Mid < t.CostUSD.Mid {
				cheaper = append(cheaper, fmt.Sprintf("%s %s", ap.ID, money(ap.CostUSD.Mid)))
			}
		}
		c.add(4, "4.3", "survey of "+sv.TaskID+" has a cheaper approach", len(cheaper) > 0, "original mid %s; cheaper: %s",
			money(t.CostUSD.Mid), orDash(strings.Join(cheaper, ", ")))
		var bad []string
		for _, ap := range sv.Approaches {
			bad = append(bad, workProblems(sv.TaskID+"/"+ap.ID, ap.CostUSD, ap.Hours, ap.Confidence, ap.Quantities, declared)...)
		}
		c.add(4, "4.4", "approach estimates of "+sv.TaskID+" plausible", len(bad) == 0, "%s", orText(bad, "no negative costs, no zero-time approaches", ""))
	}
	var missing []string
	for _, t := range p.Tasks {
		if len(triggers[t.ID]) > 0 && !surveyed[t.ID] {
			missing = append(missing, fmt.Sprintf("%s (%s)", t.ID, strings.Join(triggers[t.ID], ", ")))
		}
	}
	c.add(4, "4.5", "every triggered task is surveyed", len(missing) == 0, "%s", orText(missing, fmt.Sprintf("%d triggered, %d surveyed", len(triggers), len(p.Surveys)), "not surveyed: "))
}

func checkRepair(ctx context.Context, c *assertions, p *Plan, a *Analysis) {
	want, err := repairPlan(ctx, p.Tasks, p.Quantities, p.Constraints, p.Surveys, a)
	if err != nil {
		c.add(5, "5.0", "recompute repair", false, "cannot recompute the repair: %v", err)
		return
	}
	c.add(5, "5.1", "repair status", want.Status == p.Repair.Status, "recomputed %s; plan reports %s", want.Status, orDash(p.Repair.Status))
	switch p.Repair.Status {
	case RepairNotNeeded:
		return
	case RepairInfeasible:
		c.add(5, "5.2", "unsat core", slices.Equal(sortedCopy(want.UnsatCore), sortedCopy(p.Repair.UnsatCore)),
			"recomputed minimal conflicting set %s; plan reports %s", orDash(strings.Join(want.UnsatCore, ", ")), orDash(strings.Join(p.Repair.UnsatCore, ", ")))
		return
	case RepairRepaired:
	default:
		return
	}
	var missing []string
	for _, ch := range p.Repair.Choices {
		if _, ok := findApproach(p.Surveys, ch); !ok && ch.ApproachID != OriginalApproach {
			missing = append(missing, ch.TaskID+"/"+ch.ApproachID)
		}
	}
	if len(missing) > 0 {
		c.add(5, "5.2", "chosen approaches exist", false, "no such surveyed approach: %s", strings.Join(missing, ", "))
		return
	}
	revisedTasks := applyChoices(p.Tasks, p.Surveys, p.Repair.Choices)
	rev, err := Analyze(revisedTasks, p.Quantities, p.Constraints)
	if err != nil {
		c.add(5, "5.2", "revised plan", false, "cannot analyse the revised plan: %v", err)
		return
	}
	before := map[string]string{}
	for _, v := range a.Verdicts {
		before[v.ConstraintID] = v.Verdict
	}
	for _, v := range rev.Verdicts {
		if v.Type != Logic {
			continue
		}
		if before[v.ConstraintID] == UNSAT {
			c.add(5, "5.2", "revised plan satisfies previously violated "+v.ConstraintID, v.Verdict != UNSAT, "%s: %s → %s", v.Expr, v.Detail, v.Verdict)
		} else if v.Verdict == UNSAT {
			c.add(5, "5.2", "revision keeps "+v.ConstraintID, false, "%s was %s and is UNSAT after the revision (%s)", v.ConstraintID, before[v.ConstraintID], v.Detail)
		}
	}
	var floors []string
	for _, ex := range want.Excluded {
		for _, ch := range p.Repair.Choices {
			if ch.TaskID == ex.TaskID && ch.ApproachID == ex.ApproachID {
				floors = append(floors, fmt.Sprintf("%s/%s leaves %s at σ %.2f < %.2f", ex.TaskID, ex.ApproachID, ex.ConstraintID, ex.Sigma, ex.Floor))
			}
		}
	}
	c.add(5, "5.3", "semantic constraints kept above their floor", len(floors) == 0, "%s", orText(floors, fmt.Sprintf("no chosen approach lowers a semantic constraint below min(τ_local %.2f, its σ)", store.TauLocal), ""))
	reported := math.NaN()
	if p.Repair.Revised != nil {
		reported = p.Repair.Revised.Cost.Mid
	}
	c.add(5, "5.4", "revised total recomputed", approx(reported, rev.Cost.Mid), "revised mid total %s recomputed from the chosen approaches; plan reports %s", money(rev.Cost.Mid), money(reported))
	c.add(5, "5.5", "repair is the least-cost one", want.Revised != nil && approx(want.Revised.Cost.Mid, rev.Cost.Mid),
		"exact search finds least mid total %s; chosen approaches give %s", money(revisedCost(want)), money(rev.Cost.Mid))
	est := estimateProblems(revisedTasks, p.Quantities)
	c.add(5, "5.6", "revised estimates plausible", len(est) == 0, "%s", orText(est, "no negative costs, no zero-time tasks in the revised plan", ""))
}

func revisedCost(r Repair) float64 {
	if r.Revised == nil {
		return math.NaN()
	}
	return r.Revised.Cost.Mid
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
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
		if !r.Pass {
			n++
		}
	}
	return n
}
