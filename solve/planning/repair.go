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
// combinations the search returns the one with the least total mid cost
// (then the fewest changes, then the first in search order). It is exact:
// branch and bound over the options, pruning with the cost bound and, for
// constraints that only get worse as metrics grow, with the optimistic
// completion (every undecided task at its smallest figures).

type option struct {
	id       string
	cost     float64
	hours    float64
	q        map[string]float64
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
}

type search struct {
	m      *model
	slots  []slot
	reqs   []requirement
	sc     scenario // mid values, surveyed tasks overwritten as the search goes
	vals   map[string]float64
	ef     []float64
	needCP bool

	active   []bool
	choice   []int
	best     []int
	bestCost float64
	bestN    int
	explored int
	ctx      context.Context
	err      error
}

// newSearch prepares the search over the surveys' approaches.
func newSearch(ctx context.Context, m *model, constraints []Constraint, exprs map[string]*expr.Expr, surveys []Survey) (*search, error) {
	s := &search{m: m, sc: m.scenario(1), vals: map[string]float64{}, ef: make([]float64, len(m.tasks)), ctx: ctx}
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
		sl := slot{task: i, options: []option{optionOf(OriginalApproach, t.CostUSD, t.Hours, t.Quantities, nil, t.Quantities, true)}}
		for _, ap := range sv.Approaches {
			effects := map[string]float64{}
			for _, ef := range ap.ConstraintEffects {
				effects[ef.ConstraintID] = ef.Sigma
				mentioned[ef.ConstraintID] = true
			}
			sl.options = append(sl.options, optionOf(ap.ID, ap.CostUSD, ap.Hours, ap.Quantities, effects, t.Quantities, false))
		}
		slices.SortStableFunc(sl.options, func(a, b option) int { return cmp.Compare(a.cost, b.cost) })
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
	spread := func(sl slot) float64 { return sl.options[len(sl.options)-1].cost - sl.minCost }
	slices.SortStableFunc(s.slots, func(a, b slot) int { return cmp.Compare(spread(b), spread(a)) })
	for _, c := range constraints {
		switch {
		case c.Type == Logic:
			e := exprs[c.ID]
			s.reqs = append(s.reqs, requirement{id: c.ID, e: e, antitone: e.Antitone()})
			s.needCP = s.needCP || slices.Contains(e.Vars(), "critical_path_hours")
		case mentioned[c.ID]:
			s.reqs = append(s.reqs, requirement{id: c.ID, floor: math.Min(store.TauLocal, c.Sigma)})
		}
	}
	return s, nil
}

func optionOf(id string, cost, hours Estimate, q map[string]Estimate, effects map[string]float64, taskQ map[string]Estimate, original bool) option {
	o := option{id: id, cost: cost.Mid, hours: hours.Mid, q: map[string]float64{}, effects: effects, original: original}
	for name, e := range taskQ {
		o.q[name] = e.Mid
	}
	for name, e := range q {
		o.q[name] = e.Mid
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
		if vs, ok := s.sc.q[name]; ok {
			vs[sl.task] = v
		}
	}
}

func (s *search) setMin(sl slot) {
	s.sc.cost[sl.task], s.sc.hours[sl.task] = sl.minCost, sl.minHours
	for name, v := range sl.minQ {
		if vs, ok := s.sc.q[name]; ok {
			vs[sl.task] = v
		}
	}
}

// holds evaluates the active logic requirements on the current values;
// antitoneOnly restricts to those that may prune a partial combination.
func (s *search) holds(antitoneOnly bool) bool {
	cp := 0.0
	if s.needCP {
		cp = s.m.g.Longest(s.sc.hours, s.ef)
	}
	s.m.metricsInto(s.vals, s.sc, cp)
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

// run finds the best feasible combination under the active requirements;
// ok is false when none exists.
func (s *search) run(active []bool) (ok bool, err error) {
	s.active = active
	s.choice = make([]int, len(s.slots))
	s.best, s.bestCost, s.bestN = nil, math.Inf(1), 0
	base := 0.0
	surveyed := map[int]bool{}
	for _, sl := range s.slots {
		surveyed[sl.task] = true
		s.setMin(sl)
	}
	for i, t := range s.m.tasks {
		if !surveyed[i] {
			base += t.CostUSD.Mid
		}
	}
	rest := make([]float64, len(s.slots)+1)
	for k := len(s.slots) - 1; k >= 0; k-- {
		rest[k] = rest[k+1] + s.slots[k].minCost
	}
	s.dfs(0, base, 0, rest)
	if s.err != nil {
		return false, s.err
	}
	return s.best != nil, nil
}

func (s *search) dfs(k int, cost float64, changes int, rest []float64) {
	if s.err != nil {
		return
	}
	s.explored++
	if s.explored%1024 == 0 && s.ctx.Err() != nil {
		s.err = fmt.Errorf("repair search stopped after %d combinations: %w", s.explored, s.ctx.Err())
		return
	}
	eps := 1e-9 * math.Max(1, math.Abs(s.bestCost))
	if lb := cost + rest[k]; lb > s.bestCost+eps || (lb >= s.bestCost-eps && changes >= s.bestN && s.best != nil) {
		return
	}
	if k == len(s.slots) {
		if s.holds(false) {
			s.best, s.bestCost, s.bestN = slices.Clone(s.choice), cost, changes
		}
		return
	}
	if !s.holds(true) {
		return
	}
	sl := s.slots[k]
	for j, o := range sl.options {
		if !s.allowed(o) {
			continue
		}
		s.choice[k] = j
		s.set(sl, o)
		n := changes
		if !o.original {
			n++
		}
		s.dfs(k+1, cost+o.cost, n, rest)
		s.setMin(sl)
		if s.err != nil {
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

// choices returns the best combination as task → approach, in task order.
func (s *search) choices() []Choice {
	var out []Choice
	for k, j := range s.best {
		out = append(out, Choice{TaskID: s.m.tasks[s.slots[k].task].ID, ApproachID: s.slots[k].options[j].id})
	}
	slices.SortFunc(out, func(a, b Choice) int { return cmp.Compare(s.taskPos(a.TaskID), s.taskPos(b.TaskID)) })
	return out
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
		ok, err := s.run(slices.Clone(active))
		if err != nil {
			return nil, err
		}
		if ok {
			active[k] = true // needed: without it the rest is feasible
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
func repairPlan(ctx context.Context, tasks []Task, quantities []Quantity, constraints []Constraint, surveys []Survey, a *Analysis) (Repair, error) {
	var unsat []string
	for _, v := range a.Verdicts {
		if v.Verdict == UNSAT {
			unsat = append(unsat, v.ConstraintID)
		}
	}
	if len(unsat) == 0 {
		return Repair{Status: RepairNotNeeded, Note: "no logic constraint is UNSAT; the plan is kept as it is"}, nil
	}
	m, err := newModel(tasks, quantities)
	if err != nil {
		return Repair{}, err
	}
	exprs, problems := parseLogic(constraints, quantities)
	if len(problems) > 0 {
		return Repair{}, &InvalidPlanError{Problems: problems}
	}
	s, err := newSearch(ctx, m, constraints, exprs, surveys)
	if err != nil {
		return Repair{}, err
	}
	all := make([]bool, len(s.reqs))
	for k := range all {
		all[k] = true
	}
	ok, err := s.run(all)
	if err != nil {
		return Repair{}, err
	}
	r := Repair{Required: s.requiredIDs(), Excluded: s.exclusions(), Space: s.space()}
	if ok {
		r.Status, r.Choices = RepairRepaired, s.choices()
		r.Explored = s.explored
		revised := applyChoices(tasks, surveys, r.Choices)
		if r.Revised, err = Analyze(revised, quantities, constraints); err != nil {
			return Repair{}, fmt.Errorf("revised plan: %w", err)
		}
		r.Note = fmt.Sprintf("UNSAT %s flipped; least total mid cost over %s combinations: $%.2f (was $%.2f)",
			strings.Join(unsat, ", "), num(r.Space), r.Revised.Cost.Mid, a.Cost.Mid)
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

// applyChoices returns the tasks with each chosen approach's estimates in
// place of the task's own.
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
