package planning

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/llmkernels/kernels/solve/store"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/solve/dag"
	"github.com/llmkernels/kernels/solve/expr"
)

// Built-in metrics a logic constraint can use (docs/solve.md#metrics).
var builtinMetrics = []string{"total_cost", "total_hours", "critical_path_hours", "task_count", "wave_count", "max_parallel"}

// Analysis is the kernel's arithmetic over a task list. Every figure in it
// is computed from the tasks; none comes from the model.
type Analysis struct {
	Metrics           map[string]Estimate `json:"metrics"`
	Cost              Rollup              `json:"cost"`
	Time              Rollup              `json:"time"`
	Budgets           []Budget            `json:"budgets"`
	Waterfall         []WaterfallRow      `json:"waterfall"`
	Schedule          []ScheduleRow       `json:"schedule"`
	CriticalPaths     [][]string          `json:"critical_paths"`
	CriticalPathCount float64             `json:"critical_path_count"`
	Waves             [][]string          `json:"waves"`
	Verdicts          []Verdict           `json:"verdicts"`
	Walls             []Wall              `json:"walls"`
	SigmaV            float64             `json:"sigma_v"`
}

// Rollup is a total at the three estimates, its PERT mean and σ, and the
// normal-approximation probability of staying within the limit.
type Rollup struct {
	Low          float64  `json:"low"`
	Mid          float64  `json:"mid"`
	High         float64  `json:"high"`
	PERTMean     float64  `json:"pert_mean"`
	PERTSigma    float64  `json:"pert_sigma"`
	Limit        *float64 `json:"limit,omitempty"`
	PWithinLimit *float64 `json:"p_within_limit,omitempty"`
}

// Budget is a budgeted quantity besides total cost: a metric that adds
// up over the tasks (total_hours, a declared sum quantity) with a plain
// cap among the logic constraints (parts_usd <= 80). The waterfall counts
// each down like the cost budget.
type Budget struct {
	Metric string  `json:"metric"`
	Limit  float64 `json:"limit"`
}

// WaterfallRow is one step of the budget waterfall, in execution order:
// the task's mid cost, the cumulative cost and the cost budget left, and
// the same for every other budgeted quantity (Analysis.Budgets, in order).
type WaterfallRow struct {
	TaskID     string       `json:"task_id"`
	CostMid    float64      `json:"cost_mid"`
	Cumulative float64      `json:"cumulative"`
	Remaining  *float64     `json:"remaining,omitempty"`
	Budgets    []BudgetStep `json:"budgets,omitempty"`
}

// BudgetStep is one budgeted quantity in a waterfall row.
type BudgetStep struct {
	Metric     string  `json:"metric"`
	Amount     float64 `json:"amount"`
	Cumulative float64 `json:"cumulative"`
	Remaining  float64 `json:"remaining"`
}

// ScheduleRow is one task's critical-path figures at mid estimates.
type ScheduleRow struct {
	TaskID     string  `json:"task_id"`
	Hours      float64 `json:"hours"`
	ES         float64 `json:"es"`
	EF         float64 `json:"ef"`
	LS         float64 `json:"ls"`
	LF         float64 `json:"lf"`
	TotalFloat float64 `json:"total_float"`
	FreeFloat  float64 `json:"free_float"`
	Critical   bool    `json:"critical"`
	Wave       int     `json:"wave"`
}

// Verdict is one constraint's feasibility.
type Verdict struct {
	ConstraintID string  `json:"constraint_id"`
	Type         string  `json:"type"`
	Expr         string  `json:"expr,omitempty"`
	Verdict      string  `json:"verdict"`
	HoldsMid     bool    `json:"holds_mid"`
	HoldsHigh    bool    `json:"holds_high"`
	SlackMid     float64 `json:"slack_mid"`
	SlackHigh    float64 `json:"slack_high"`
	Sigma        float64 `json:"sigma"`
	Detail       string  `json:"detail"`
}

// Wall lists what pushes an UNSAT constraint over its limit.
type Wall struct {
	ConstraintID string         `json:"constraint_id"`
	Overshoot    float64        `json:"overshoot"`
	Tasks        []Contribution `json:"tasks"`
	Wall         []string       `json:"wall"`
	Clusters     []Contribution `json:"clusters"`
}

// Contribution is a task's (or a cluster's) share of a constraint's slack.
type Contribution struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
	Share  float64 `json:"share"`
}

// InvalidPlanError lists why a task list is not a valid plan.
type InvalidPlanError struct{ Problems []string }

func (e *InvalidPlanError) Error() string {
	return "invalid plan: " + strings.Join(e.Problems, "; ")
}

// model is a task list with its graph, ready for arithmetic.
type model struct {
	tasks      []Task
	quantities []Quantity
	g          *dag.Graph
	waves      [][]int
}

// newModel validates the tasks (graph and estimates) and builds the model.
func newModel(tasks []Task, quantities []Quantity) (*model, error) {
	ids := make([]string, len(tasks))
	deps := make([][]string, len(tasks))
	for i, t := range tasks {
		ids[i], deps[i] = t.ID, t.DependsOn
	}
	g, vs := dag.Build(ids, deps)
	var problems []string
	for _, v := range vs {
		problems = append(problems, v.Message)
	}
	problems = append(problems, estimateProblems(tasks, quantities)...)
	if len(problems) > 0 {
		return nil, &InvalidPlanError{Problems: problems}
	}
	return &model{tasks: tasks, quantities: quantities, g: g, waves: g.Waves()}, nil
}

// estimateProblems checks every task's estimates and quantities.
func estimateProblems(tasks []Task, quantities []Quantity) []string {
	declared := map[string]bool{}
	var problems []string
	for _, q := range quantities {
		if declared[q.Name] {
			problems = append(problems, fmt.Sprintf("quantity %q is declared twice", q.Name))
		}
		declared[q.Name] = true
		if q.Aggregate != "sum" && q.Aggregate != "max" {
			problems = append(problems, fmt.Sprintf("quantity %q has aggregate %q; use sum or max", q.Name, q.Aggregate))
		}
	}
	estimated := map[string]bool{}
	for _, t := range tasks {
		problems = append(problems, workProblems(t.ID, t.CostUSD, t.Hours, t.Confidence, t.Quantities, declared)...)
		if t.Method != KnownMethod && t.Method != JudgmentRequired {
			problems = append(problems, fmt.Sprintf("%s method is %q; use %s or %s", t.ID, t.Method, KnownMethod, JudgmentRequired))
		}
		for name := range t.Quantities {
			estimated[name] = true
		}
	}
	for _, q := range quantities {
		if !estimated[q.Name] {
			problems = append(problems, fmt.Sprintf("quantity %q (%s) is declared but no task estimates it; give it in the quantities of the task(s) that determine it", q.Name, q.Unit))
		}
	}
	return problems
}

// MaxFigure bounds every estimate: far beyond any real cost, duration or
// quantity, and small enough that sums and squares over any number of
// tasks stay finite (an overflowed total was +Inf, which is not JSON).
const MaxFigure = 1e100

// workProblems checks one task's or approach's estimates: costs not
// negative, durations positive, low ≤ mid ≤ high, confidence in [0, 1],
// quantities declared and not negative.
func workProblems(who string, cost, hours Estimate, confidence float64, qs map[string]Estimate, declared map[string]bool) []string {
	var out []string
	check := func(field string, e Estimate, positive bool) {
		for s := range 3 {
			v := e.at(s)
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				out = append(out, fmt.Sprintf("%s %s.%s is %v; give a finite number", who, field, scenarioNames[s], v))
			case math.Abs(v) > MaxFigure:
				out = append(out, fmt.Sprintf("%s %s.%s is %g: beyond any real figure (at most %g), and the kernel's sums must stay finite", who, field, scenarioNames[s], v, MaxFigure))
			case positive && v <= 0:
				out = append(out, fmt.Sprintf("%s %s.%s is %s: every task takes time, so zero or negative durations are not allowed", who, field, scenarioNames[s], num(v)))
			case !positive && v < 0:
				out = append(out, fmt.Sprintf("%s %s.%s is %s: estimates cannot be negative", who, field, scenarioNames[s], num(v)))
			}
		}
		if e.Low > e.Mid || e.Mid > e.High {
			out = append(out, fmt.Sprintf("%s %s is low %s, mid %s, high %s: need low ≤ mid ≤ high", who, field, num(e.Low), num(e.Mid), num(e.High)))
		}
	}
	check("cost_usd", cost, false)
	check("hours", hours, true)
	if confidence < 0 || confidence > 1 || math.IsNaN(confidence) {
		out = append(out, fmt.Sprintf("%s confidence is %s; it must be within 0..1", who, num(confidence)))
	}
	for _, name := range slices.Sorted(maps.Keys(qs)) {
		if !declared[name] {
			out = append(out, fmt.Sprintf("%s estimates quantity %q, which is not declared (declared: %s)", who, name, strings.Join(slices.Sorted(maps.Keys(declared)), ", ")))
			continue
		}
		check("quantities."+name, qs[name], false)
	}
	return out
}

// num formats a figure for messages: no trailing zeros.
func num(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
}

// scenario is one scenario's per-task values.
type scenario struct {
	cost, hours []float64
	q           map[string][]float64
}

func (m *model) scenario(s int) scenario {
	n := len(m.tasks)
	sc := scenario{cost: make([]float64, n), hours: make([]float64, n), q: map[string][]float64{}}
	for _, q := range m.quantities {
		sc.q[q.Name] = make([]float64, n)
	}
	for i, t := range m.tasks {
		sc.cost[i], sc.hours[i] = t.CostUSD.at(s), t.Hours.at(s)
		for name, e := range t.Quantities {
			if vs, ok := sc.q[name]; ok {
				vs[i] = e.at(s)
			}
		}
	}
	return sc
}

// metrics evaluates every metric for one scenario; cp is the critical path
// length for its durations.
func (m *model) metrics(sc scenario, cp float64) map[string]float64 {
	out := map[string]float64{
		"total_cost":          sum(sc.cost),
		"total_hours":         sum(sc.hours),
		"critical_path_hours": cp,
		"task_count":          float64(len(m.tasks)),
		"wave_count":          float64(len(m.waves)),
		"max_parallel":        float64(maxWave(m.waves)),
	}
	for _, q := range m.quantities {
		if q.Aggregate == "max" {
			out[q.Name] = slices.Max(sc.q[q.Name])
		} else {
			out[q.Name] = sum(sc.q[q.Name])
		}
	}
	return out
}

func sum(vs []float64) float64 {
	t := 0.0
	for _, v := range vs {
		t += v
	}
	return t
}

func maxWave(waves [][]int) int {
	w := 0
	for _, wave := range waves {
		w = max(w, len(wave))
	}
	return w
}

// knownMetrics lists the metric names of a plan.
func knownMetrics(quantities []Quantity) []string {
	out := slices.Clone(builtinMetrics)
	for _, q := range quantities {
		out = append(out, q.Name)
	}
	return out
}

// parseLogic parses every logic constraint's expression and checks that it
// names only known metrics.
func parseLogic(constraints []Constraint, quantities []Quantity) (map[string]*expr.Expr, []string) {
	known := knownMetrics(quantities)
	exprs := map[string]*expr.Expr{}
	var problems []string
	for _, c := range constraints {
		if c.Type != Logic {
			continue
		}
		e, err := expr.Parse(c.Payload.Expr)
		if err != nil {
			problems = append(problems, fmt.Sprintf("constraint %s: %v", c.ID, err))
			continue
		}
		ok := true
		for _, v := range e.Vars() {
			if !slices.Contains(known, v) {
				problems = append(problems, unknownMetric(c.ID, c.Payload.Expr, v, known))
				ok = false
			}
		}
		if ok {
			exprs[c.ID] = e
		}
	}
	return exprs, problems
}

// logicExprs is parseLogic for a plan that must be valid: its problems
// are an InvalidPlanError.
func logicExprs(constraints []Constraint, quantities []Quantity) (map[string]*expr.Expr, error) {
	exprs, problems := parseLogic(constraints, quantities)
	if len(problems) > 0 {
		return nil, &InvalidPlanError{Problems: problems}
	}
	return exprs, nil
}

func unknownMetric(id, src, name string, known []string) string {
	msg := fmt.Sprintf("constraint %s: unknown metric %q in %q", id, name, src)
	for _, suffix := range []string{"_low", "_mid", "_high", "_usd"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(known, base) {
			msg += fmt.Sprintf(" (did you mean %s? the kernel evaluates every metric at low, mid and high estimates itself)", base)
		}
	}
	return msg + "; known metrics: " + strings.Join(known, ", ") + " (docs/solve.md#metrics); declare any other quantity in quantities"
}

// prepare validates a task list and the logic constraints over it: the
// model and the parsed expressions, or an InvalidPlanError.
func prepare(tasks []Task, quantities []Quantity, constraints []Constraint) (*model, map[string]*expr.Expr, error) {
	m, err := newModel(tasks, quantities)
	if err != nil {
		return nil, nil, err
	}
	exprs, err := logicExprs(constraints, quantities)
	if err != nil {
		return nil, nil, err
	}
	return m, exprs, nil
}

// Analyze computes the whole analysis of a task list under the
// constraints: rollups, waterfall, schedule, critical paths, waves,
// verdicts and walls.
func Analyze(tasks []Task, quantities []Quantity, constraints []Constraint) (*Analysis, error) {
	m, exprs, err := prepare(tasks, quantities, constraints)
	if err != nil {
		return nil, err
	}
	return m.analyze(constraints, exprs)
}

func (m *model) analyze(constraints []Constraint, exprs map[string]*expr.Expr) (*Analysis, error) {
	a := &Analysis{Metrics: map[string]Estimate{}}
	var scs [3]scenario
	var scheds [3]dag.Schedule
	var vals [3]map[string]float64
	for s := range 3 {
		scs[s] = m.scenario(s)
		scheds[s] = m.g.Schedule(scs[s].hours)
		vals[s] = m.metrics(scs[s], scheds[s].Length)
		for name, v := range vals[s] {
			e := a.Metrics[name]
			e.set(s, v)
			a.Metrics[name] = e
		}
	}
	mid := scheds[1]

	costLimit, timeLimit := limits(constraints, exprs)
	a.Cost = Rollup{Low: vals[0]["total_cost"], Mid: vals[1]["total_cost"], High: vals[2]["total_cost"], Limit: costLimit}
	var variance float64
	for _, t := range m.tasks {
		a.Cost.PERTMean += t.CostUSD.PERTMean()
		variance += t.CostUSD.PERTSigma() * t.CostUSD.PERTSigma()
	}
	a.Cost.PERTSigma = math.Sqrt(variance)
	a.Cost.PWithinLimit = withinProbability(a.Cost.PERTMean, a.Cost.PERTSigma, costLimit)

	paths, count := m.g.CriticalPaths(mid, 100)
	a.CriticalPathCount = finite(count)
	a.Time = Rollup{Low: scheds[0].Length, Mid: mid.Length, High: scheds[2].Length, Limit: timeLimit}
	for k, p := range paths {
		ids := make([]string, len(p))
		meanP, varP := 0.0, 0.0
		for j, v := range p {
			ids[j] = m.tasks[v].ID
			meanP += m.tasks[v].Hours.PERTMean()
			varP += m.tasks[v].Hours.PERTSigma() * m.tasks[v].Hours.PERTSigma()
		}
		a.CriticalPaths = append(a.CriticalPaths, ids)
		if k == 0 || meanP > a.Time.PERTMean {
			a.Time.PERTMean, a.Time.PERTSigma = meanP, math.Sqrt(varP)
		}
	}
	a.Time.PWithinLimit = withinProbability(a.Time.PERTMean, a.Time.PERTSigma, timeLimit)

	wave := make([]int, len(m.tasks))
	for k, w := range m.waves {
		ids := make([]string, len(w))
		for j, v := range w {
			ids[j] = m.tasks[v].ID
			wave[v] = k
		}
		a.Waves = append(a.Waves, ids)
	}
	for i, t := range m.tasks {
		a.Schedule = append(a.Schedule, ScheduleRow{TaskID: t.ID, Hours: t.Hours.Mid, ES: mid.ES[i], EF: mid.EF[i], LS: mid.LS[i], LF: mid.LF[i],
			TotalFloat: mid.TotalFloat[i], FreeFloat: mid.FreeFloat[i], Critical: mid.Critical[i], Wave: wave[i]})
	}
	a.Budgets = m.budgets(constraints, exprs)
	a.Waterfall = m.waterfall(mid, scs[1], costLimit, a.Budgets)

	a.SigmaV = 1
	for _, c := range constraints {
		v, err := m.verdict(c, exprs[c.ID], vals)
		if err != nil {
			return nil, err
		}
		a.Verdicts = append(a.Verdicts, v)
		a.SigmaV = math.Min(a.SigmaV, v.Sigma)
		if v.Verdict == UNSAT {
			w, err := m.wall(c.ID, exprs[c.ID], vals[1], scs[1], mid)
			if err != nil {
				return nil, err
			}
			a.Walls = append(a.Walls, w)
		}
	}
	return a, nil
}

// limits finds the tightest plain caps on total cost and critical path
// hours among the logic constraints (e.g. total_cost <= 500).
func limits(constraints []Constraint, exprs map[string]*expr.Expr) (cost, time *float64) {
	for _, c := range constraints {
		e := exprs[c.ID]
		if e == nil {
			continue
		}
		if l, ok := e.UpperLimit("total_cost"); ok && (cost == nil || l < *cost) {
			cost = &l
		}
		if l, ok := e.UpperLimit("critical_path_hours"); ok && (time == nil || l < *time) {
			time = &l
		}
	}
	return cost, time
}

// withinProbability is P(X ≤ limit) for X normal with the given mean and σ.
func withinProbability(mean, sigma float64, limit *float64) *float64 {
	if limit == nil {
		return nil
	}
	var p float64
	switch {
	case sigma > 0:
		p = 0.5 * (1 + math.Erf((*limit-mean)/(sigma*math.Sqrt2)))
	case mean <= *limit:
		p = 1
	}
	return &p
}

// executionOrder sorts tasks by earliest start, then topological position.
func (m *model) executionOrder(s dag.Schedule) []int {
	pos := make([]int, len(m.tasks))
	for k, v := range m.g.Order {
		pos[v] = k
	}
	order := slices.Clone(m.g.Order)
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(s.ES[a], s.ES[b]); c != 0 {
			return c
		}
		return cmp.Compare(pos[a], pos[b])
	})
	return order
}

// budgets lists the budgeted quantities besides total cost: total_hours
// and declared sum quantities with a plain cap (the tightest one).
func (m *model) budgets(constraints []Constraint, exprs map[string]*expr.Expr) []Budget {
	metrics := []string{"total_hours"}
	for _, q := range m.quantities {
		if q.Aggregate == "sum" {
			metrics = append(metrics, q.Name)
		}
	}
	out := []Budget{}
	for _, name := range metrics {
		var limit *float64
		for _, c := range constraints {
			if e := exprs[c.ID]; e != nil {
				if l, ok := e.UpperLimit(name); ok && (limit == nil || l < *limit) {
					limit = &l
				}
			}
		}
		if limit != nil {
			out = append(out, Budget{Metric: name, Limit: *limit})
		}
	}
	return out
}

func (m *model) waterfall(s dag.Schedule, mid scenario, budget *float64, others []Budget) []WaterfallRow {
	var rows []WaterfallRow
	cum := 0.0
	cums := make([]float64, len(others))
	for _, v := range m.executionOrder(s) {
		cum += m.tasks[v].CostUSD.Mid
		row := WaterfallRow{TaskID: m.tasks[v].ID, CostMid: m.tasks[v].CostUSD.Mid, Cumulative: cum}
		if budget != nil {
			r := *budget - cum
			row.Remaining = &r
		}
		for k, b := range others {
			amount := mid.hours[v]
			if b.Metric != "total_hours" {
				amount = mid.q[b.Metric][v]
			}
			cums[k] += amount
			row.Budgets = append(row.Budgets, BudgetStep{Metric: b.Metric, Amount: amount, Cumulative: cums[k], Remaining: b.Limit - cums[k]})
		}
		rows = append(rows, row)
	}
	return rows
}

// verdict applies the definitions: SAT when the constraint holds at mid
// and at high estimates, TIGHT when it holds at mid only, UNSAT when it
// fails at mid. Semantic constraints are JUDGED: σ_i is the model's.
func (m *model) verdict(c Constraint, e *expr.Expr, vals [3]map[string]float64) (Verdict, error) {
	v := Verdict{ConstraintID: c.ID, Type: c.Type, Sigma: c.Sigma}
	if c.Type != Logic {
		v.Verdict = JUDGED
		v.Detail = fmt.Sprintf("σ = %.2f judged by the model", c.Sigma)
		if c.Sigma < store.TauLocal {
			v.Detail += fmt.Sprintf(", below τ_local %.2f", store.TauLocal)
		}
		return v, nil
	}
	if e == nil {
		return v, fmt.Errorf("constraint %s: logic constraint without a parsed expression", c.ID)
	}
	v.Expr, v.Sigma = e.String(), 1
	var err error
	if v.HoldsMid, err = e.Eval(vals[1]); err != nil {
		return v, fmt.Errorf("constraint %s: %w", c.ID, err)
	}
	if v.HoldsHigh, err = e.Eval(vals[2]); err != nil {
		return v, fmt.Errorf("constraint %s: %w", c.ID, err)
	}
	// Slack evaluates the same expression on the same values that Eval
	// just accepted, so it cannot fail here.
	v.SlackMid, _ = e.Slack(vals[1])
	v.SlackHigh, _ = e.Slack(vals[2])
	for _, slack := range []float64{v.SlackMid, v.SlackHigh} {
		if math.IsNaN(slack) || math.IsInf(slack, 0) {
			return v, fmt.Errorf("constraint %s: %s does not stay finite on the plan's figures (slack %v); write it in units whose figures stay within float64", c.ID, e, slack)
		}
	}
	switch {
	case v.HoldsMid && v.HoldsHigh:
		v.Verdict = SAT
	case v.HoldsMid:
		v.Verdict = TIGHT
	default:
		v.Verdict = UNSAT
	}
	var parts []string
	for _, name := range e.Vars() {
		parts = append(parts, fmt.Sprintf("%s mid %s, high %s", name, num(vals[1][name]), num(vals[2][name])))
	}
	v.Detail = strings.Join(parts, "; ")
	return v, nil
}

// contributions gives each task's share of a metric at mid: its own value
// for sums, its duration when critical for critical_path_hours, its value
// when it attains the maximum for max quantities, 1 for task_count.
func (m *model) contributions(metric string, sc scenario, s dag.Schedule) []float64 {
	n := len(m.tasks)
	out := make([]float64, n)
	switch metric {
	case "total_cost":
		copy(out, sc.cost)
	case "total_hours":
		copy(out, sc.hours)
	case "critical_path_hours":
		for i := range n {
			if s.Critical[i] {
				out[i] = sc.hours[i]
			}
		}
	case "task_count":
		for i := range out {
			out[i] = 1
		}
	default:
		vs, ok := sc.q[metric]
		if !ok {
			return out
		}
		agg := "sum"
		for _, q := range m.quantities {
			if q.Name == metric {
				agg = q.Aggregate
			}
		}
		if agg == "max" {
			top := slices.Max(vs)
			for i, v := range vs {
				if v == top && v > 0 {
					out[i] = v
				}
			}
		} else {
			copy(out, vs)
		}
	}
	return out
}

// wall ranks the tasks and task clusters (by type) pushing an UNSAT
// constraint over its limit. A metric's weight is how much one more unit
// of it lowers the constraint's slack; a task's contribution is the sum
// over metrics of weight × its share of the metric. The wall is the
// smallest prefix of the ranking whose contributions cover the overshoot.
func (m *model) wall(id string, e *expr.Expr, vals map[string]float64, sc scenario, s dag.Schedule) (Wall, error) {
	base, weights, err := slackWeights(e, vals)
	if err != nil {
		return Wall{}, err
	}
	w := Wall{ConstraintID: id, Overshoot: -base}
	amount := make([]float64, len(m.tasks))
	for _, name := range slices.Sorted(maps.Keys(weights)) {
		for i, c := range m.contributions(name, sc, s) {
			amount[i] += weights[name] * c
		}
	}
	total := sum(amount)
	clusters := map[string]float64{}
	var typeOrder []string
	for i, t := range m.tasks {
		if amount[i] <= 0 {
			continue
		}
		w.Tasks = append(w.Tasks, Contribution{ID: t.ID, Amount: amount[i], Share: amount[i] / total})
		if _, ok := clusters[t.Type]; !ok {
			typeOrder = append(typeOrder, t.Type)
		}
		clusters[t.Type] += amount[i]
	}
	byAmount := func(a, b Contribution) int { return cmp.Compare(b.Amount, a.Amount) }
	slices.SortStableFunc(w.Tasks, byAmount)
	for _, typ := range typeOrder {
		w.Clusters = append(w.Clusters, Contribution{ID: typ, Amount: clusters[typ], Share: clusters[typ] / total})
	}
	slices.SortStableFunc(w.Clusters, byAmount)
	covered := 0.0
	for _, c := range w.Tasks {
		w.Wall = append(w.Wall, c.ID)
		covered += c.Amount
		if covered >= w.Overshoot-1e-9*math.Max(1, math.Abs(w.Overshoot)) {
			break
		}
	}
	return w, nil
}

// slackWeights returns a constraint's slack at vals and, for each metric
// whose growth lowers it, how much one more unit lowers it (a finite
// difference, snapped by roundWeight).
func slackWeights(e *expr.Expr, vals map[string]float64) (float64, map[string]float64, error) {
	base, err := e.Slack(vals)
	if err != nil {
		return 0, nil, err
	}
	weights := map[string]float64{}
	for _, name := range e.Vars() {
		h := math.Max(1e-6, 1e-6*math.Abs(vals[name]))
		bumped := maps.Clone(vals)
		bumped[name] += h
		slack, err := e.Slack(bumped)
		if err != nil {
			return 0, nil, err
		}
		if weight := (base - slack) / h; weight > 1e-9 {
			weights[name] = roundWeight(weight)
		}
	}
	return base, weights, nil
}

// roundWeight snaps a finite-difference weight to 9 significant digits, so
// a linear constraint's weight is exact (1, 12, 0.5).
func roundWeight(w float64) float64 {
	scale := math.Pow(10, 8-math.Floor(math.Log10(w)))
	return math.Round(w*scale) / scale
}

// errInvalid reports whether err is an InvalidPlanError, returning its problems.
func errInvalid(err error) ([]string, bool) {
	var ip *InvalidPlanError
	if errors.As(err, &ip) {
		return ip.Problems, true
	}
	return nil, false
}
