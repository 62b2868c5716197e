package planning

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The approach survey runs in rounds (docs/solve.md "Survey rounds"):
//
//  1. triggered: every task with confidence < SurveyConfidence or in the
//     wall of an UNSAT constraint;
//  2. widen: when no repair exists, the next contributors to each logic
//     constraint of the unsat core that are not surveyed yet;
//  3. and later, retry: the surveyed contributors to the core again, with
//     the violation fed back (spec step 9).
//
// Rounds after the first run only while the survey call budget and the
// wall-clock cap allow. Each trigger names what its approaches must
// improve: confidence for a low-confidence task, the task's weighted share
// of the constraint for a wall (cost: cheaper; schedule: faster; a
// quantity: less of it). A task where nothing better is possible may say
// so (nothing_better) instead.

// Survey round kinds.
const (
	RoundTriggered = "triggered"
	RoundWiden     = "widen"
	RoundRetry     = "retry"
)

// maxWiden and maxRetry cap the tasks a later round asks about.
const (
	maxWiden = 5
	maxRetry = 8
)

// Trigger kinds.
const (
	triggerConfidence = "confidence"
	triggerWall       = "wall"
)

// trigger is one reason to survey a task and what its approaches must
// improve: confidence, or the task's share of a constraint.
type trigger struct {
	kind       string // triggerConfidence, or triggerWall for walls, widen and retry
	constraint string
	text       string
}

// roundPlan is what one survey round asks about.
type roundPlan struct {
	round    int
	kind     string
	tasks    []string // in plan order
	triggers map[string][]trigger
	feedback string // retry: the violation fed back
}

func (rp roundPlan) texts(id string) []string {
	var out []string
	for _, tr := range rp.triggers[id] {
		out = append(out, tr.text)
	}
	return out
}

// firstRound lists the tasks with confidence below SurveyConfidence or in
// the wall of an UNSAT constraint.
func firstRound(tasks []Task, a *Analysis) roundPlan {
	rp := roundPlan{round: 1, kind: RoundTriggered, triggers: map[string][]trigger{}}
	for _, t := range tasks {
		if t.Confidence < SurveyConfidence {
			rp.triggers[t.ID] = append(rp.triggers[t.ID], trigger{kind: triggerConfidence, text: fmt.Sprintf("confidence %.2f < %.1f", t.Confidence, SurveyConfidence)})
		}
	}
	for _, w := range a.Walls {
		for _, id := range w.Wall {
			rp.triggers[id] = append(rp.triggers[id], trigger{kind: triggerWall, constraint: w.ConstraintID, text: "wall of UNSAT " + w.ConstraintID})
		}
	}
	rp.tasks = inPlanOrder(tasks, rp.triggers)
	return rp
}

func inPlanOrder(tasks []Task, triggers map[string][]trigger) []string {
	var out []string
	for _, t := range tasks {
		if len(triggers[t.ID]) > 0 {
			out = append(out, t.ID)
		}
	}
	return out
}

// surveyTriggers is the first round's triggers as text, by task.
func surveyTriggers(tasks []Task, a *Analysis) map[string][]string {
	rp := firstRound(tasks, a)
	out := map[string][]string{}
	for _, id := range rp.tasks {
		out[id] = rp.texts(id)
	}
	return out
}

// nextRound plans round `round` (≥ 2) after a repair over the earlier
// rounds' approaches found nothing: round 2 widens to the next
// contributors of the unsat core's logic constraints; when there are none
// left, and in every later round, the surveyed contributors are asked
// again with the violation. An empty plan means there is nothing to ask.
func nextRound(tasks []Task, quantities []Quantity, constraints []Constraint, surveys []Survey, rep Repair, round int) (roundPlan, error) {
	rank, err := rankings(tasks, quantities, constraints, rep.UnsatCore)
	if err != nil {
		return roundPlan{}, err
	}
	surveyed := map[string]bool{}
	for _, sv := range surveys {
		surveyed[sv.TaskID] = true
	}
	core := strings.Join(rep.UnsatCore, ", ")
	if round == 2 {
		rp := roundPlan{round: round, kind: RoundWiden, triggers: map[string][]trigger{}}
		n := 0
		for _, id := range rep.UnsatCore {
			w, ok := rank[id]
			if !ok {
				continue
			}
			covered, took := 0.0, 0
			for _, c := range w.Tasks {
				if n >= maxWiden || (took > 0 && covered >= w.Overshoot-1e-9*math.Max(1, math.Abs(w.Overshoot))) {
					break
				}
				if surveyed[c.ID] {
					continue
				}
				if len(rp.triggers[c.ID]) == 0 {
					n++
				}
				rp.triggers[c.ID] = append(rp.triggers[c.ID], trigger{kind: triggerWall, constraint: id,
					text: fmt.Sprintf("round 2: next contributor to %s (no repair from round 1; unsat core %s)", id, core)})
				covered += c.Amount
				took++
			}
		}
		rp.tasks = inPlanOrder(tasks, rp.triggers)
		if len(rp.tasks) > 0 {
			return rp, nil
		}
	}
	rp := roundPlan{round: round, kind: RoundRetry, triggers: map[string][]trigger{}}
	n := 0
	for _, id := range rep.UnsatCore {
		w, ok := rank[id]
		if !ok {
			continue
		}
		for _, c := range w.Tasks {
			if !surveyed[c.ID] || (n >= maxRetry && len(rp.triggers[c.ID]) == 0) {
				continue
			}
			if len(rp.triggers[c.ID]) == 0 {
				n++
			}
			rp.triggers[c.ID] = append(rp.triggers[c.ID], trigger{kind: triggerWall, constraint: id,
				text: fmt.Sprintf("round %d: retry for %s with the violation fed back (no repair from rounds 1–%d; unsat core %s)", round, id, round-1, core)})
		}
	}
	rp.tasks = inPlanOrder(tasks, rp.triggers)
	rp.feedback, err = violation(tasks, quantities, constraints, surveys, rep)
	return rp, err
}

// rankings ranks every task by its contribution to each of the given
// logic constraints, as walls do (for any verdict, not only UNSAT).
func rankings(tasks []Task, quantities []Quantity, constraints []Constraint, ids []string) (map[string]Wall, error) {
	m, exprs, err := prepare(tasks, quantities, constraints)
	if err != nil {
		return nil, err
	}
	sc := m.scenario(1)
	s := m.g.Schedule(sc.hours)
	vals := m.metrics(sc, s.Length)
	out := map[string]Wall{}
	for _, id := range ids {
		if e := exprs[id]; e != nil {
			w, err := m.wall(id, e, vals, sc, s)
			if err != nil {
				return nil, err
			}
			out[id] = w
		}
	}
	return out, nil
}

// violation says, for the model, why no combination works: each logic
// constraint of the core with its figures when every surveyed task takes
// its smallest figures (a bound no combination beats).
func violation(tasks []Task, quantities []Quantity, constraints []Constraint, surveys []Survey, rep Repair) (string, error) {
	vals, err := optimistic(tasks, quantities, surveys)
	if err != nil {
		return "", err
	}
	exprs, _ := parseLogic(constraints, quantities)
	n := 0
	for _, sv := range surveys {
		n += len(sv.Approaches)
	}
	var parts []string
	for _, id := range rep.UnsatCore {
		e := exprs[id]
		if e == nil {
			parts = append(parts, id+" (semantic): approaches judged below its floor are excluded")
			continue
		}
		var figs []string
		for _, name := range e.Vars() {
			figs = append(figs, fmt.Sprintf("%s %s", name, num(vals[name])))
		}
		if ok, _ := e.Eval(vals); ok {
			parts = append(parts, fmt.Sprintf("%s (%s) can hold on its own (%s with every surveyed task at its smallest figures), but not together with the rest", id, e, strings.Join(figs, ", ")))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%s) fails even with every surveyed task at its smallest figures (%s)", id, e, strings.Join(figs, ", ")))
		}
	}
	return fmt.Sprintf("no combination of the %d approaches surveyed so far keeps %s together: %s. Propose approaches that go further on these constraints.",
		n, strings.Join(rep.UnsatCore, ", "), strings.Join(parts, "; ")), nil
}

// surveysBefore keeps the approaches of rounds before `round`.
func surveysBefore(surveys []Survey, round int) []Survey {
	var out []Survey
	for _, sv := range surveys {
		if sv.Round >= round {
			continue
		}
		sv.Approaches = slices.DeleteFunc(slices.Clone(sv.Approaches), func(a Approach) bool { return a.Round >= round })
		out = append(out, sv)
	}
	return out
}

// improvement is what a trigger asks of a task's approaches.
type improvement struct {
	trigger
	weights map[string]float64 // wall: metric → how much a unit lowers the slack
	expr    string
}

// improvements resolves each trigger's dimension against the plan's mid
// figures.
func improvements(trs []trigger, constraints []Constraint, quantities []Quantity, a *Analysis) ([]improvement, error) {
	exprs, err := logicExprs(constraints, quantities)
	if err != nil {
		return nil, err
	}
	vals := map[string]float64{}
	for name, e := range a.Metrics {
		vals[name] = e.Mid
	}
	var out []improvement
	for _, tr := range trs {
		im := improvement{trigger: tr}
		if tr.kind == triggerWall {
			e := exprs[tr.constraint]
			if e == nil {
				return nil, fmt.Errorf("trigger %q: %s is not a logic constraint", tr.text, tr.constraint)
			}
			_, w, err := slackWeights(e, vals)
			if err != nil {
				return nil, err
			}
			im.weights, im.expr = w, e.String()
		}
		out = append(out, im)
	}
	return out, nil
}

// share is a task's or an approach's weighted share of a wall's
// constraint, from its own figures (hours count for critical_path_hours:
// a surveyed wall task is critical). Metrics no approach changes
// (task_count, wave_count, max_parallel) count 0.
func (im improvement) share(cost, hours Estimate, q map[string]Estimate, taskQ map[string]Estimate) float64 {
	total := 0.0
	for name, w := range im.weights {
		var v float64
		switch name {
		case "total_cost":
			v = cost.Mid
		case "total_hours", "critical_path_hours":
			v = hours.Mid
		default:
			if e, ok := q[name]; ok {
				v = e.Mid
			} else if e, ok := taskQ[name]; ok {
				v = e.Mid
			}
		}
		total += w * v
	}
	return total
}

// better reports whether an approach improves on the task as planned in
// the trigger's dimension.
func (im improvement) better(t Task, ap Approach) bool {
	if im.kind == triggerConfidence {
		return ap.Confidence > t.Confidence
	}
	mine, theirs := im.share(t.CostUSD, t.Hours, t.Quantities, nil), im.share(ap.CostUSD, ap.Hours, ap.Quantities, t.Quantities)
	return theirs < mine-1e-9*math.Max(1, math.Abs(mine))
}

// want says in words what the trigger asks for.
func (im improvement) want(t Task) string {
	if im.kind == triggerConfidence {
		return fmt.Sprintf("a confidence above %.2f (its trigger: %s)", t.Confidence, im.text)
	}
	names := slices.Sorted(maps.Keys(im.weights))
	if len(names) == 1 {
		switch n := names[0]; n {
		case "total_cost":
			return fmt.Sprintf("a mid cost_usd below %s (its trigger: %s, %s)", money(t.CostUSD.Mid), im.text, im.expr)
		case "total_hours", "critical_path_hours":
			return fmt.Sprintf("fewer mid hours than %s (its trigger: %s, %s)", num(t.Hours.Mid), im.text, im.expr)
		default:
			return fmt.Sprintf("a mid %s below %s (its trigger: %s, %s)", n, num(t.Quantities[n].Mid), im.text, im.expr)
		}
	}
	return fmt.Sprintf("a smaller weighted share of %s (%s; weights %s; as planned %s; its trigger: %s)", im.constraint, im.expr, weightText(im.weights), num(im.share(t.CostUSD, t.Hours, t.Quantities, nil)), im.text)
}

func weightText(w map[string]float64) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(w)) {
		out = append(out, fmt.Sprintf("%s × %s", num(w[name]), name))
	}
	return strings.Join(out, " + ")
}

// surveyCheck is the kernel's validation of one round's survey answer
// against the plan: which tasks, distinct approaches with fresh ids,
// plausible estimates, effects only on semantic constraints, and for each
// trigger an approach better in its dimension (or a reason why nothing
// can be). existing holds the approaches of earlier rounds by task.
type surveyCheck struct {
	tasks       map[string]Task
	semantic    map[string]bool
	declared    map[string]bool
	rp          roundPlan
	want        map[string][]improvement
	existing    map[string][]Approach
	constraints []Constraint
}

func newSurveyCheck(p *Plan, rp roundPlan, existing []Survey) (*surveyCheck, error) {
	sc := &surveyCheck{tasks: map[string]Task{}, semantic: map[string]bool{}, declared: map[string]bool{}, rp: rp,
		want: map[string][]improvement{}, existing: map[string][]Approach{}, constraints: p.Constraints}
	for _, t := range p.Tasks {
		sc.tasks[t.ID] = t
	}
	for _, c := range p.Constraints {
		if c.Type == Semantic {
			sc.semantic[c.ID] = true
		}
	}
	for _, q := range p.Quantities {
		sc.declared[q.Name] = true
	}
	for _, id := range rp.tasks {
		ims, err := improvements(rp.triggers[id], p.Constraints, p.Quantities, p.Analysis)
		if err != nil {
			return nil, err
		}
		sc.want[id] = ims
	}
	for _, sv := range existing {
		sc.existing[sv.TaskID] = sv.Approaches
	}
	return sc, nil
}

// itemProblems are one task's survey problems, by kind: ids and
// distinctness (check 4.2), the trigger's dimension (4.3), estimates and
// effects (4.4).
type itemProblems struct {
	distinct, better, plausible []string
}

func (ip itemProblems) all() []string {
	return append(append(slices.Clone(ip.distinct), ip.better...), ip.plausible...)
}

// item checks the approaches a round gave for one task.
func (sc *surveyCheck) item(taskID string, approaches []Approach, nothingBetter string) itemProblems {
	var ip itemProblems
	t := sc.tasks[taskID]
	ids, distinct := map[string]bool{}, map[string]bool{}
	for _, ap := range sc.existing[taskID] {
		ids[ap.ID] = true
		distinct[approachKey(ap)] = true
	}
	fresh := 0
	for _, ap := range approaches {
		who := taskID + "/" + ap.ID
		switch {
		case ap.ID == OriginalApproach || strings.TrimSpace(ap.ID) == "":
			ip.distinct = append(ip.distinct, fmt.Sprintf("%s: approach id %q is empty or reserved", taskID, ap.ID))
		case ids[ap.ID]:
			ip.distinct = append(ip.distinct, fmt.Sprintf("%s: approach id %q is used already (ids so far: %s); give each approach a new id", taskID, ap.ID, strings.Join(slices.Sorted(maps.Keys(ids)), ", ")))
		}
		ids[ap.ID] = true
		if key := approachKey(ap); distinct[key] {
			ip.distinct = append(ip.distinct, fmt.Sprintf("%s repeats an approach already given", who))
		} else {
			distinct[key] = true
			fresh++
		}
		ip.plausible = append(ip.plausible, workProblems(who, ap.CostUSD, ap.Hours, ap.Confidence, ap.Quantities, sc.declared)...)
		if ap.KnownMethodShare < 0 || ap.KnownMethodShare > 1 || math.IsNaN(ap.KnownMethodShare) {
			ip.plausible = append(ip.plausible, fmt.Sprintf("%s known_method_share is %s; it must be within 0..1", who, num(ap.KnownMethodShare)))
		}
		judged := map[string]bool{}
		for _, ef := range ap.ConstraintEffects {
			if judged[ef.ConstraintID] {
				ip.plausible = append(ip.plausible, fmt.Sprintf("%s judges %s twice; give one σ per constraint", who, ef.ConstraintID))
			}
			judged[ef.ConstraintID] = true
			if !sc.semantic[ef.ConstraintID] {
				ip.plausible = append(ip.plausible, fmt.Sprintf("%s has an effect on %q, which is not a semantic constraint (semantic: %s); logic constraints are decided by the kernel from the estimates", who, ef.ConstraintID, strings.Join(slices.Sorted(maps.Keys(sc.semantic)), ", ")))
			}
			if ef.Sigma < 0 || ef.Sigma > 1 || math.IsNaN(ef.Sigma) {
				ip.plausible = append(ip.plausible, fmt.Sprintf("%s gives σ %s for %s; σ must be within 0..1", who, num(ef.Sigma), ef.ConstraintID))
			}
		}
	}
	need := 2
	if len(sc.existing[taskID]) > 0 {
		need = 1 // a later round adds to the approaches already surveyed
	}
	if fresh < need {
		ip.distinct = append(ip.distinct, fmt.Sprintf("%s has %d new distinct approach(es); give at least %d", taskID, fresh, need))
	}
	if strings.TrimSpace(nothingBetter) != "" {
		return ip
	}
	for _, im := range sc.want[taskID] {
		if !slices.ContainsFunc(approaches, func(ap Approach) bool { return im.better(t, ap) }) {
			ip.better = append(ip.better, fmt.Sprintf("%s: no approach has %s; add one that does, or, if none can exist, say why in nothing_better", taskID, im.want(t)))
		}
	}
	return ip
}

func approachKey(ap Approach) string {
	return fmt.Sprintf("%s|%v|%v", normalize(ap.Title), ap.CostUSD, ap.Hours)
}

// answer checks a whole round's answer: exactly the round's tasks, once
// each.
func (sc *surveyCheck) answer(a surveyAnswer) []string {
	var problems []string
	seen := map[string]bool{}
	for _, s := range a.Surveys {
		_, known := sc.tasks[s.TaskID]
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("survey for %q: no such task", s.TaskID))
			continue
		case len(sc.rp.triggers[s.TaskID]) == 0:
			problems = append(problems, fmt.Sprintf("survey for %s was not asked for; survey only %s", s.TaskID, strings.Join(sc.rp.tasks, ", ")))
			continue
		case seen[s.TaskID]:
			problems = append(problems, fmt.Sprintf("%s is surveyed twice; give one survey per task", s.TaskID))
			continue
		}
		seen[s.TaskID] = true
		problems = append(problems, sc.item(s.TaskID, toApproaches(s.Approaches, sc.rp.round), s.NothingBetter).all()...)
	}
	for _, id := range sc.rp.tasks {
		if !seen[id] {
			problems = append(problems, fmt.Sprintf("%s was not surveyed (%s)", id, strings.Join(sc.rp.texts(id), "; ")))
		}
	}
	return problems
}

// toApproaches marks a round's answer with its round.
func toApproaches(as []Approach, round int) []Approach {
	out := slices.Clone(as)
	for i := range out {
		out[i].Round = round
		if out[i].JudgmentRequired == nil {
			out[i].JudgmentRequired = []string{}
		}
	}
	return out
}

// addRound merges a round's answer into the surveys: new tasks get a
// survey, surveyed ones more approaches and triggers.
func addRound(surveys []Survey, tasks []Task, rp roundPlan, a surveyAnswer) []Survey {
	out := slices.Clone(surveys)
	for _, id := range rp.tasks {
		for _, s := range a.Surveys {
			if s.TaskID != id {
				continue
			}
			k := slices.IndexFunc(out, func(sv Survey) bool { return sv.TaskID == id })
			if k < 0 {
				out = append(out, Survey{TaskID: id, Round: rp.round})
				k = len(out) - 1
			}
			sv := &out[k]
			sv.Triggers = append(slices.Clone(sv.Triggers), rp.texts(id)...)
			sv.Approaches = append(slices.Clone(sv.Approaches), toApproaches(s.Approaches, rp.round)...)
			if strings.TrimSpace(s.NothingBetter) != "" {
				sv.NothingBetter = s.NothingBetter
			}
		}
	}
	pos := map[string]int{}
	for i, t := range tasks {
		pos[t.ID] = i
	}
	slices.SortStableFunc(out, func(a, b Survey) int { return cmp.Compare(pos[a.TaskID], pos[b.TaskID]) })
	return out
}
