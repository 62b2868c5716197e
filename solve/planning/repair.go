package planning

import (
	"cmp"
	"context"
	"fmt"
	"github.com/llmkernels/kernels/solve/store"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/solve/expr"
)

// The repair search. Each surveyed task gets one option: keep it as
// planned ("original") or one of its surveyed approaches. A combination is
// feasible when every logic constraint holds at mid estimates (SAT or
// TIGHT) and no chosen approach is judged to push a semantic constraint
// below its floor, min(τ_local, the constraint's own σ). Among feasible
// combinations the search returns the best by this order (docs/solve.md
// "Repair"): fewest swaps, then least confidence given up, then least
// total mid cost, then the first in search order. It is exact: branch and
// bound over the options, pruning with the objective's lower bound and,
// for constraints that only get worse as metrics grow, with the optimistic
// completion (every undecided task at its smallest figures).
//
// An option carries a value for every declared quantity: the approach's
// own estimate where it gives one, else the task's, else 0 (the task does
// not determine the quantity). A value one option sets is never left
// behind for another (issue 16: an approach's quantity leaked into the
// task's other options and made feasible plans look infeasible).

type option struct {
	id       string
	cost     float64
	hours    float64
	q        map[string]float64 // every declared quantity
	loss     int64              // confidence given up against the task as planned, in millionths
	conf     float64
	effects  map[string]float64
	original bool
}

type slot struct {
	task     int
	options  []option
	minCost  float64
	minHours float64
	minQ     map[string]float64
}

type requirement struct {
	id       string
	e        *expr.Expr // logic
	antitone bool
	floor    float64 // semantic: the least σ an approach may leave
	// A plain cap on a summed metric ("total_cost <= 500"): how many
	// swaps it still needs bounds the search (swapsNeeded).
	capMetric string
	capLimit  float64
}

// objective orders feasible combinations: fewer swaps, then less
// confidence given up, then less total mid cost.
type objective struct {
	swaps int
	loss  int64
	cost  float64
}

// better reports whether o is strictly better than b; costs within a
// relative 1e-9 count as equal.
func (o objective) better(b objective) bool {
	if o.swaps != b.swaps {
		return o.swaps < b.swaps
	}
	if o.loss != b.loss {
		return o.loss < b.loss
	}
	return o.cost < b.cost-1e-9*math.Max(1, math.Abs(b.cost))
}

// confidenceLoss is the confidence an option gives up against the task as
// planned, in millionths: an integer, so that the search, solve check and
// z3 compare it exactly.
func confidenceLoss(planned, option float64) int64 {
	return max(0, int64(math.Round(planned*1e6))-int64(math.Round(option*1e6)))
}

// DefaultSearchLimit bounds the nodes of one run of the repair search
// (the repair, and each test of the unsat core) when Request.SearchLimit
// and CheckOptions.SearchLimit are not given: about 5–20 s on the
// project's 2-core VM, and more than any plan small enough for solve
// check to enumerate can need. A limit in nodes rather than seconds makes
// the outcome the same on every machine, so solve check can recompute it
// (with the same limit). The search is exact but exponential in the worst
// case (caps on cost and time that trade against each other among 30 or
// more surveyed tasks): past the limit the repair is undecided, and the
// plan is still written.
const DefaultSearchLimit = 20_000_000

// searchLimit is limit, or DefaultSearchLimit when it is not positive.
func searchLimit(limit int) int {
	if limit <= 0 {
		return DefaultSearchLimit
	}
	return limit
}

type search struct {
	m      *model
	slots  []slot
	reqs   []requirement
	sc     scenario // mid values, surveyed tasks overwritten as the search goes
	vals   map[string]float64
	ef     []float64
	needCP bool

	active    []bool
	scratch   []float64
	firstOnly bool // stop at the first feasible combination (feasibility questions)
	limit     int  // nodes one run may visit
	cut       bool // the last run reached limit
	runStart  int  // explored when the last run began
	choice    []int
	best      []int
	bestObj   objective
	explored  int
	ctx       context.Context
	err       error
}

// newSearch prepares the search over the surveys' approaches.
func newSearch(ctx context.Context, m *model, constraints []Constraint, exprs map[string]*expr.Expr, surveys []Survey, limit int) (*search, error) {
	s := &search{m: m, sc: m.scenario(1), vals: map[string]float64{}, ef: make([]float64, len(m.tasks)), ctx: ctx, limit: searchLimit(limit)}
	index := map[string]int{}
	for i, t := range m.tasks {
		index[t.ID] = i
	}
	mentioned := map[string]bool{}
	for _, sv := range surveys {
		i, ok := index[sv.TaskID]
		if !ok {
			return nil, fmt.Errorf("survey for %q: no such task", sv.TaskID)
		}
		t := m.tasks[i]
		sl := slot{task: i, options: []option{m.optionOf(OriginalApproach, t, t.CostUSD, t.Hours, t.Confidence, nil, nil, true)}}
		for _, ap := range sv.Approaches {
			effects := map[string]float64{}
			for _, ef := range ap.ConstraintEffects {
				// The least σ where one is judged twice (refused in a
				// survey answer, but a plan file may hold it), as
				// reviseSigmas and the check read it.
				if cur, ok := effects[ef.ConstraintID]; !ok || ef.Sigma < cur {
					effects[ef.ConstraintID] = ef.Sigma
				}
				mentioned[ef.ConstraintID] = true
			}
			sl.options = append(sl.options, m.optionOf(ap.ID, t, ap.CostUSD, ap.Hours, ap.Confidence, ap.Quantities, effects, false))
		}
		// Keep as planned first, then by confidence given up, then cost:
		// good combinations are found early and bound the rest.
		slices.SortStableFunc(sl.options, func(a, b option) int {
			if a.original != b.original {
				return map[bool]int{true: -1, false: 1}[a.original]
			}
			return cmp.Or(cmp.Compare(a.loss, b.loss), cmp.Compare(a.cost, b.cost))
		})
		sl.minCost, sl.minHours, sl.minQ = math.Inf(1), math.Inf(1), map[string]float64{}
		for _, o := range sl.options {
			sl.minCost = math.Min(sl.minCost, o.cost)
			sl.minHours = math.Min(sl.minHours, o.hours)
			for name, v := range o.q {
				if cur, ok := sl.minQ[name]; !ok || v < cur {
					sl.minQ[name] = v
				}
			}
		}
		s.slots = append(s.slots, sl)
	}
	spread := func(sl slot) float64 {
		hi := sl.minCost
		for _, o := range sl.options {
			hi = math.Max(hi, o.cost)
		}
		return hi - sl.minCost
	}
	slices.SortStableFunc(s.slots, func(a, b slot) int { return cmp.Compare(spread(b), spread(a)) })
	for _, c := range constraints {
		switch {
		case c.Type == Logic:
			e := exprs[c.ID]
			r := requirement{id: c.ID, e: e, antitone: e.Antitone()}
			for _, metric := range e.Vars() {
				if limit, ok := e.UpperLimit(metric); ok && m.summed(metric) {
					r.capMetric, r.capLimit = metric, limit
				}
			}
			s.reqs = append(s.reqs, r)
			s.needCP = s.needCP || slices.Contains(e.Vars(), "critical_path_hours")
		case mentioned[c.ID]:
			s.reqs = append(s.reqs, requirement{id: c.ID, floor: math.Min(store.TauLocal, c.Sigma)})
		}
	}
	return s, nil
}

// summed reports whether a metric is a sum over the tasks' values.
func (m *model) summed(metric string) bool {
	if metric == "total_cost" || metric == "total_hours" {
		return true
	}
	return slices.ContainsFunc(m.quantities, func(q Quantity) bool { return q.Name == metric && q.Aggregate != "max" })
}

// value is an option's figure for a summed metric.
func (o option) value(metric string) float64 {
	switch metric {
	case "total_cost":
		return o.cost
	case "total_hours":
		return o.hours
	}
	return o.q[metric]
}

// swapsNeeded is a lower bound on the swaps slots k… still need, and on
// the confidence they give up: for each active cap on a summed metric,
// s.vals holds the metric with every undecided slot at its smallest
// figure, so the slots kept as planned may add at most the cap's slack;
// keeping the smallest additions first keeps the most, and every other
// slot that adds something must swap (and give up at least its least
// loss among its approaches). The largest bounds over the caps are
// returned; more than len(s.slots) swaps means no completion is feasible. Without it, a cap that needs many swaps made the search
// visit every subset of the slots it could keep (30 surveyed tasks ran
// past --max-wall).
func (s *search) swapsNeeded(k int) (int, int64) {
	bestN, bestLoss := 0, int64(0)
	for i, r := range s.reqs {
		if !s.active[i] || r.capMetric == "" {
			continue
		}
		v := s.vals[r.capMetric]
		slack := r.capLimit - v + 2e-9*math.Max(1, math.Max(math.Abs(r.capLimit), math.Abs(v)))
		adds := s.scratch[:0]
		var losses []int64
		for _, sl := range s.slots[k:] {
			lo, orig := math.Inf(1), 0.0
			least := int64(math.MaxInt64)
			for _, o := range sl.options {
				lo = math.Min(lo, o.value(r.capMetric))
				if o.original {
					orig = o.value(r.capMetric)
				} else if s.allowed(o) {
					least = min(least, o.loss)
				}
			}
			switch d := orig - lo; {
			case d <= 0:
			case least == math.MaxInt64: // no allowed approach: it stays as planned
				slack -= d
			default:
				adds = append(adds, d)
				losses = append(losses, least)
			}
		}
		if slack < 0 {
			return len(s.slots) + 1, 0 // infeasible from here
		}
		s.scratch = adds
		slices.Sort(adds)
		kept, sum := 0, 0.0
		for _, d := range adds {
			if sum+d > slack {
				break
			}
			sum += d
			kept++
		}
		n := len(adds) - kept
		slices.Sort(losses)
		var loss int64
		for _, l := range losses[:n] {
			loss += l
		}
		// The combination must meet every cap's bound at once.
		bestN, bestLoss = max(bestN, n), max(bestLoss, loss)
	}
	return bestN, bestLoss
}

// optionOf is one option of a surveyed task at mid estimates, with a value
// for every declared quantity (the option's, else the task's, else 0).
func (m *model) optionOf(id string, t Task, cost, hours Estimate, conf float64, q map[string]Estimate, effects map[string]float64, original bool) option {
	o := option{id: id, cost: cost.Mid, hours: hours.Mid, q: map[string]float64{}, conf: conf, loss: confidenceLoss(t.Confidence, conf), effects: effects, original: original}
	for _, d := range m.quantities {
		v := 0.0
		if e, ok := t.Quantities[d.Name]; ok {
			v = e.Mid
		}
		if e, ok := q[d.Name]; ok {
			v = e.Mid
		}
		o.q[d.Name] = v
	}
	return o
}

// space is the number of combinations.
func (s *search) space() float64 {
	n := 1.0
	for _, sl := range s.slots {
		n *= float64(len(sl.options))
	}
	return n
}

func (s *search) set(sl slot, o option) {
	s.sc.cost[sl.task], s.sc.hours[sl.task] = o.cost, o.hours
	for name, v := range o.q {
		s.sc.q[name][sl.task] = v
	}
}

func (s *search) setMin(sl slot) {
	s.sc.cost[sl.task], s.sc.hours[sl.task] = sl.minCost, sl.minHours
	for name, v := range sl.minQ {
		s.sc.q[name][sl.task] = v
	}
}

// holds evaluates the active logic requirements on the current values;
// antitoneOnly restricts to those that may prune a partial combination.
func (s *search) holds(antitoneOnly bool) bool {
	s.evaluate()
	for k, r := range s.reqs {
		if !s.active[k] || r.e == nil || (antitoneOnly && !r.antitone) {
			continue
		}
		ok, err := r.e.Eval(s.vals)
		if err != nil {
			s.err = fmt.Errorf("constraint %s: %w", r.id, err)
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// evaluate computes every metric of the current values into s.vals.
func (s *search) evaluate() {
	cp := 0.0
	if s.needCP {
		cp = s.m.g.Longest(s.sc.hours, s.ef)
	}
	s.m.metricsInto(s.vals, s.sc, cp)
}

// allowed reports whether an option keeps every active semantic floor.
func (s *search) allowed(o option) bool {
	for k, r := range s.reqs {
		if !s.active[k] || r.e != nil {
			continue
		}
		if sigma, ok := o.effects[r.id]; ok && sigma < r.floor {
			return false
		}
	}
	return true
}

// run finds the best feasible combination under the active requirements
// (any feasible one when firstOnly); ok is false when none exists.
func (s *search) run(active []bool, firstOnly bool) (ok bool, err error) {
	s.active, s.firstOnly, s.cut, s.runStart = active, firstOnly, false, s.explored
	s.choice = make([]int, len(s.slots))
	s.best = nil
	surveyed := map[int]bool{}
	for _, sl := range s.slots {
		surveyed[sl.task] = true
		s.setMin(sl)
	}
	base := 0.0
	for i, t := range s.m.tasks {
		if !surveyed[i] {
			base += t.CostUSD.Mid
		}
	}
	rest := make([]float64, len(s.slots)+1)
	for k := len(s.slots) - 1; k >= 0; k-- {
		rest[k] = rest[k+1] + s.slots[k].minCost
	}
	s.dfs(0, objective{cost: base}, rest)
	if s.err != nil {
		return false, s.err
	}
	return s.best != nil, nil
}

func (s *search) dfs(k int, so objective, rest []float64) {
	if s.err != nil || s.cut || (s.firstOnly && s.best != nil) {
		return
	}
	s.explored++
	if s.explored-s.runStart >= s.limit {
		s.cut = true
		return
	}
	if s.explored%1024 == 0 && s.ctx.Err() != nil {
		s.err = fmt.Errorf("repair search stopped after %d combinations: %w", s.explored, s.ctx.Err())
		return
	}
	if lb := (objective{so.swaps, so.loss, so.cost + rest[k]}); s.best != nil && !lb.better(s.bestObj) {
		return
	}
	if k == len(s.slots) {
		if s.holds(false) {
			s.best, s.bestObj = slices.Clone(s.choice), so
		}
		return
	}
	if !s.holds(true) {
		return
	}
	if s.best != nil {
		n, loss := s.swapsNeeded(k)
		if n > len(s.slots) {
			return
		}
		if lb := (objective{so.swaps + n, so.loss + loss, so.cost + rest[k]}); !lb.better(s.bestObj) {
			return
		}
	}
	sl := s.slots[k]
	for j, o := range sl.options {
		if !s.allowed(o) {
			continue
		}
		s.choice[k] = j
		s.set(sl, o)
		next := objective{so.swaps, so.loss + o.loss, so.cost + o.cost}
		if !o.original {
			next.swaps++
		}
		s.dfs(k+1, next, rest)
		s.setMin(sl)
		if s.err != nil || s.cut {
			return
		}
	}
}

// metricsInto is metrics without allocating: it overwrites dst.
func (m *model) metricsInto(dst map[string]float64, sc scenario, cp float64) {
	dst["total_cost"] = sum(sc.cost)
	dst["total_hours"] = sum(sc.hours)
	dst["critical_path_hours"] = cp
	dst["task_count"] = float64(len(m.tasks))
	dst["wave_count"] = float64(len(m.waves))
	dst["max_parallel"] = float64(maxWave(m.waves))
	for _, q := range m.quantities {
		if q.Aggregate == "max" {
			dst[q.Name] = slices.Max(sc.q[q.Name])
		} else {
			dst[q.Name] = sum(sc.q[q.Name])
		}
	}
}

// choices returns the best combination as task → approach, in task order,
// each swap with the constraints that need it and why this approach.
func (s *search) choices() []Choice {
	var out []Choice
	for k, j := range s.best {
		out = append(out, s.describe(k, j))
	}
	slices.SortFunc(out, func(a, b Choice) int { return cmp.Compare(s.taskPos(a.TaskID), s.taskPos(b.TaskID)) })
	return out
}

// describe describes slot k's option j in the best combination. For a swap
// it names the constraints that fail when the task is kept as planned
// (the other choices unchanged): with fewest swaps first there is always
// one, or the swap would not be in the best combination.
func (s *search) describe(k, j int) Choice {
	sl := s.slots[k]
	o := sl.options[j]
	t := s.m.tasks[sl.task]
	c := Choice{TaskID: t.ID, ApproachID: o.id}
	if o.original {
		return c
	}
	for kk, jj := range s.best {
		s.set(s.slots[kk], s.slots[kk].options[jj])
	}
	orig := sl.options[slices.IndexFunc(sl.options, func(o option) bool { return o.original })]
	s.set(sl, orig)
	s.evaluate()
	var why []string
	for _, r := range s.reqs {
		if r.e == nil {
			continue
		}
		if ok, err := r.e.Eval(s.vals); err == nil && !ok {
			c.NeededFor = append(c.NeededFor, r.id)
			var figs []string
			for _, name := range r.e.Vars() {
				figs = append(figs, fmt.Sprintf("%s %s", name, num(s.vals[name])))
			}
			why = append(why, fmt.Sprintf("%s (%s fails: %s)", r.id, r.e, strings.Join(figs, ", ")))
		}
	}
	var also []string
	for jj, alt := range sl.options {
		if jj == j || alt.original || !s.allowed(alt) {
			continue
		}
		s.set(sl, alt)
		if s.holds(false) {
			also = append(also, fmt.Sprintf("%s ($%s, confidence %.2f)", alt.id, num(alt.cost), alt.conf))
		}
	}
	s.set(sl, o)
	c.Reason = fmt.Sprintf("needed for %s with %s kept as planned; %s keeps confidence %.2f (planned %.2f) at $%s mid (planned $%s)",
		orDash(strings.Join(why, ", ")), t.ID, o.id, o.conf, t.Confidence, num(o.cost), num(t.CostUSD.Mid))
	if len(also) > 0 {
		c.Reason += "; also feasible in its place, but worse by swaps, confidence or cost: " + strings.Join(also, ", ")
	}
	return c
}

func (s *search) taskPos(id string) int {
	return slices.IndexFunc(s.m.tasks, func(t Task) bool { return t.ID == id })
}

// exclusions lists approaches that break a semantic floor.
func (s *search) exclusions() []Exclusion {
	var out []Exclusion
	for _, sl := range s.slots {
		for _, o := range sl.options {
			for _, r := range s.reqs {
				if sigma, ok := o.effects[r.id]; ok && r.e == nil && sigma < r.floor {
					out = append(out, Exclusion{TaskID: s.m.tasks[sl.task].ID, ApproachID: o.id, ConstraintID: r.id, Sigma: sigma, Floor: r.floor})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Exclusion) int { return cmp.Compare(s.taskPos(a.TaskID), s.taskPos(b.TaskID)) })
	return out
}

// unsatCore shrinks the requirement set to a minimal infeasible subset by
// deletion: a requirement stays only if the others alone are feasible.
func (s *search) unsatCore() ([]string, error) {
	active := make([]bool, len(s.reqs))
	for k := range active {
		active[k] = true
	}
	for k := range s.reqs {
		active[k] = false
		ok, err := s.run(slices.Clone(active), true)
		if err != nil {
			return nil, err
		}
		if ok || s.cut {
			// Needed: without it the rest is feasible (or not proved
			// infeasible within the limit: the core stays infeasible,
			// perhaps not minimal).
			active[k] = true
		}
	}
	var core []string
	for k, r := range s.reqs {
		if active[k] {
			core = append(core, r.id)
		}
	}
	return core, nil
}

func (s *search) requiredIDs() []string {
	var out []string
	for _, r := range s.reqs {
		out = append(out, r.id)
	}
	return out
}

// repairPlan runs the repair for an analysed plan.
func repairPlan(ctx context.Context, tasks []Task, quantities []Quantity, constraints []Constraint, surveys []Survey, a *Analysis, limit int) (Repair, error) {
	var unsat []string
	for _, v := range a.Verdicts {
		if v.Verdict == UNSAT {
			unsat = append(unsat, v.ConstraintID)
		}
	}
	if len(unsat) == 0 {
		return Repair{Status: RepairNotNeeded, Note: "no logic constraint is UNSAT; the plan is kept as it is"}, nil
	}
	m, exprs, err := prepare(tasks, quantities, constraints)
	if err != nil {
		return Repair{}, err
	}
	s, err := newSearch(ctx, m, constraints, exprs, surveys, limit)
	if err != nil {
		return Repair{}, err
	}
	all := make([]bool, len(s.reqs))
	for k := range all {
		all[k] = true
	}
	ok, err := s.run(all, false)
	if err != nil {
		return Repair{}, err
	}
	r := Repair{Required: s.requiredIDs(), Excluded: s.exclusions(), Space: s.space()}
	if s.cut {
		r.Status, r.Explored = RepairUndecided, s.explored
		r.Note = fmt.Sprintf("the search reached its limit of %s nodes over %s combinations before it found the best repair or proved that none exists", num(float64(s.limit)), num(r.Space))
		if ok {
			var best []string
			for _, c := range s.choices() {
				if c.ApproachID != OriginalApproach {
					best = append(best, c.TaskID+"→"+c.ApproachID)
				}
			}
			r.Note += fmt.Sprintf("; the best it met keeps every required constraint (%s: %s), but a better one may exist", strings.Join(best, ", "), s.bestObj)
		}
		r.Note += "; surveying fewer tasks keeps the search small"
		return r, nil
	}
	if ok {
		r.Status, r.Choices = RepairRepaired, s.choices()
		r.Explored = s.explored
		if r.Revised, err = Analyze(applyChoices(tasks, surveys, r.Choices), quantities, reviseSigmas(constraints, surveys, r.Choices)); err != nil {
			return Repair{}, fmt.Errorf("revised plan: %w", err)
		}
		r.Note = fmt.Sprintf("UNSAT %s flipped with %d swap(s), giving up %s of confidence in all; revised mid cost $%.2f (was $%.2f); best of %s combinations by fewest swaps, then confidence kept, then cost",
			strings.Join(unsat, ", "), s.bestObj.swaps, num(float64(s.bestObj.loss)/1e6), r.Revised.Cost.Mid, a.Cost.Mid, num(r.Space))
		return r, nil
	}
	r.Status = RepairInfeasible
	if r.UnsatCore, err = s.unsatCore(); err != nil {
		return Repair{}, err
	}
	r.Explored = s.explored
	r.Note = fmt.Sprintf("no combination of the surveyed approaches (%s combinations) keeps every required constraint; these constraints conflict: %s",
		num(r.Space), strings.Join(r.UnsatCore, ", "))
	return r, nil
}

// optimistic evaluates every metric at mid with each surveyed task at the
// smallest cost, hours and quantities any of its options has (each
// independently): no combination does better on any constraint that only
// gets worse as metrics grow.
func optimistic(tasks []Task, quantities []Quantity, surveys []Survey) (map[string]float64, error) {
	m, err := newModel(tasks, quantities)
	if err != nil {
		return nil, err
	}
	s, err := newSearch(context.Background(), m, nil, nil, surveys, 0)
	if err != nil {
		return nil, err
	}
	for _, sl := range s.slots {
		s.setMin(sl)
	}
	s.needCP = true
	s.evaluate()
	return maps.Clone(s.vals), nil
}

// reviseSigmas returns the constraints with each semantic σ updated by the
// chosen approaches' judged effects: the least σ any chosen approach
// judges for it (a chain is as strong as its weakest link), or the σ as
// extracted when no chosen approach judges it.
func reviseSigmas(constraints []Constraint, surveys []Survey, choices []Choice) []Constraint {
	out := slices.Clone(constraints)
	judged := map[string]float64{}
	for _, ch := range choices {
		ap, ok := findApproach(surveys, ch)
		if !ok {
			continue
		}
		for _, ef := range ap.ConstraintEffects {
			if cur, seen := judged[ef.ConstraintID]; !seen || ef.Sigma < cur {
				judged[ef.ConstraintID] = ef.Sigma
			}
		}
	}
	for i, c := range out {
		if sigma, ok := judged[c.ID]; ok && c.Type == Semantic {
			out[i].Sigma = sigma
		}
	}
	return out
}

// applyChoices returns the tasks with each chosen approach's estimates in
// place of the task's own: cost, hours, confidence, method, and the
// quantities the approach names (the others stay the task's).
func applyChoices(tasks []Task, surveys []Survey, choices []Choice) []Task {
	out := slices.Clone(tasks)
	for _, ch := range choices {
		if ch.ApproachID == OriginalApproach {
			continue
		}
		ap, ok := findApproach(surveys, ch)
		if !ok {
			continue
		}
		for i := range out {
			if out[i].ID != ch.TaskID {
				continue
			}
			t := out[i]
			t.CostUSD, t.Hours, t.Confidence = ap.CostUSD, ap.Hours, ap.Confidence
			if ap.KnownMethodShare >= 0.5 {
				t.Method = KnownMethod
			} else {
				t.Method = JudgmentRequired
			}
			if len(ap.Quantities) > 0 {
				t.Quantities = maps.Clone(t.Quantities)
				if t.Quantities == nil {
					t.Quantities = map[string]Estimate{}
				}
				maps.Copy(t.Quantities, ap.Quantities)
			}
			t.Title = fmt.Sprintf("%s [%s, in place of: %s]", ap.Title, ap.ID, t.Title)
			out[i] = t
		}
	}
	return out
}

func findApproach(surveys []Survey, ch Choice) (Approach, bool) {
	for _, sv := range surveys {
		if sv.TaskID != ch.TaskID {
			continue
		}
		for _, ap := range sv.Approaches {
			if ap.ID == ch.ApproachID {
				return ap, true
			}
		}
	}
	return Approach{}, false
}
