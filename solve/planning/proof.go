package planning

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/llmkernels/kernels/solve/expr"
	"github.com/llmkernels/kernels/solve/store"
)

// The check of a repair claim, independent of the search that made it
// (solve check, group 5). It does not share the search's code: it
// enumerates every combination of the surveyed options, builds each
// revised task list with applyChoices (the same rule that writes the
// revised plan: an approach replaces cost, hours, confidence and the
// quantities it names) and evaluates every metric from those tasks. From
// one pass it knows, for each combination, which required constraints
// hold and its rank (fewest swaps, then least confidence given up, then
// least mid cost), so it can prove a repair optimal, or prove that none
// exists and that an unsat core is infeasible and minimal. It runs when
// the work (combinations × tasks) is within ExhaustiveWork; larger claims
// are proved by z3 (solve check --smt z3) or taken from the kernel's
// search, as the check's detail says.

// ExhaustiveWork bounds the enumeration: combinations × (tasks + edges).
// 2·10⁷ is about a second on the project's 2-core VM.
const ExhaustiveWork = 2e7

// enumeration is what the exhaustive pass found.
type enumeration struct {
	required []string           // requirement ids, as in Repair.Required
	floors   map[string]float64 // semantic requirement → floor
	space    float64
	masks    map[uint64]bool // sets of requirements some combination satisfies
	found    bool            // a combination satisfies every requirement
	best     objective       // the best such combination's rank
	bestAt   []Choice
}

// requirements are the constraints a repair must keep: every logic one,
// and each semantic one some approach judges (its floor is min(τ_local,
// its σ)).
func requirements(constraints []Constraint, surveys []Survey) ([]string, map[string]float64) {
	judged := map[string]bool{}
	for _, sv := range surveys {
		for _, ap := range sv.Approaches {
			for _, ef := range ap.ConstraintEffects {
				judged[ef.ConstraintID] = true
			}
		}
	}
	var ids []string
	floors := map[string]float64{}
	for _, c := range constraints {
		switch {
		case c.Type == Logic:
			ids = append(ids, c.ID)
		case judged[c.ID]:
			ids = append(ids, c.ID)
			floors[c.ID] = math.Min(store.TauLocal, c.Sigma)
		}
	}
	return ids, floors
}

// spaceOf is the number of combinations of the surveys' options.
func spaceOf(surveys []Survey) float64 {
	n := 1.0
	for _, sv := range surveys {
		n *= float64(1 + len(sv.Approaches))
	}
	return n
}

// enumerate tries every combination. ok is false when the work is beyond
// ExhaustiveWork or there are more than 64 requirements.
func enumerate(ctx context.Context, tasks []Task, quantities []Quantity, constraints []Constraint, surveys []Survey) (*enumeration, bool, error) {
	required, floors := requirements(constraints, surveys)
	en := &enumeration{required: required, floors: floors, space: spaceOf(surveys), masks: map[uint64]bool{}}
	m, err := newModel(tasks, quantities)
	if err != nil {
		return nil, false, err
	}
	edges := 0
	for _, t := range tasks {
		edges += len(t.DependsOn)
	}
	if en.space*float64(len(tasks)+edges) > ExhaustiveWork || len(required) > 64 {
		return en, false, nil
	}
	exprs, err := logicExprs(constraints, quantities)
	if err != nil {
		return nil, false, err
	}
	slots, at, err := surveySlots(tasks, surveys)
	if err != nil {
		return nil, false, err
	}
	cur := slices.Clone(tasks)
	idx := make([]int, len(slots))
	es := make([]*expr.Expr, len(required))
	for k, id := range required {
		es[k] = exprs[id]
	}
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		rank := objective{}
		for k, j := range idx {
			o := slots[k][j]
			cur[at[k]] = o.task
			if j > 0 {
				rank.swaps++
				rank.loss += o.loss
			}
		}
		mm := &model{tasks: cur, quantities: quantities, g: m.g, waves: m.waves}
		sc := mm.scenario(1)
		vals := mm.metrics(sc, m.g.Longest(sc.hours, nil))
		rank.cost = vals["total_cost"]
		mask, err := en.holding(es, vals, slots, idx)
		if err != nil {
			return nil, false, err
		}
		en.masks[mask] = true
		if full := uint64(1)<<len(required) - 1; mask == full && (!en.found || rank.better(en.best)) {
			en.found, en.best, en.bestAt = true, rank, nil
			for k, j := range idx {
				en.bestAt = append(en.bestAt, slots[k][j].choice)
			}
		}
		if !nextCombination(idx, slots) {
			return en, true, nil
		}
	}
}

// surveyOption is one of a surveyed task's options (the task as planned
// or one approach), as the task it makes.
type surveyOption struct {
	choice Choice
	task   Task
	loss   int64
	judged map[string]float64 // constraint → the lowest σ the approach was judged
}

// surveySlots lists each surveyed task's options once, before the
// search, so each combination only picks among ready tasks; at[k] is
// the index in tasks of slot k's task.
func surveySlots(tasks []Task, surveys []Survey) (slots [][]surveyOption, at []int, err error) {
	pos := map[string]int{}
	for i, t := range tasks {
		pos[t.ID] = i
	}
	for _, sv := range surveys {
		i, ok := pos[sv.TaskID]
		if !ok {
			return nil, nil, fmt.Errorf("survey for %q: no such task", sv.TaskID)
		}
		opts := []surveyOption{{choice: Choice{TaskID: sv.TaskID, ApproachID: OriginalApproach}, task: tasks[i]}}
		for _, ap := range sv.Approaches {
			ch := Choice{TaskID: sv.TaskID, ApproachID: ap.ID}
			judged := map[string]float64{}
			for _, ef := range ap.ConstraintEffects {
				if cur, ok := judged[ef.ConstraintID]; !ok || ef.Sigma < cur {
					judged[ef.ConstraintID] = ef.Sigma
				}
			}
			opts = append(opts, surveyOption{choice: ch, task: applyChoices(tasks[i:i+1], surveys, []Choice{ch})[0], loss: confidenceLoss(tasks[i].Confidence, ap.Confidence), judged: judged})
		}
		slots = append(slots, opts)
		at = append(at, i)
	}
	return slots, at, nil
}

// holding is the mask of the requirements one combination keeps: a
// logic requirement by its expression over the plan's figures, a
// semantic one by no chosen approach judged below its floor.
func (en *enumeration) holding(es []*expr.Expr, vals map[string]float64, slots [][]surveyOption, idx []int) (uint64, error) {
	var mask uint64
	for k, id := range en.required {
		holds := true
		if e := es[k]; e != nil {
			var err error
			if holds, err = e.Eval(vals); err != nil {
				return 0, fmt.Errorf("constraint %s: %w", id, err)
			}
		} else {
			for kk, j := range idx {
				if sigma, ok := slots[kk][j].judged[id]; ok && sigma < en.floors[id] {
					holds = false
				}
			}
		}
		if holds {
			mask |= 1 << k
		}
	}
	return mask, nil
}

// nextCombination advances idx like an odometer over the slots' options;
// it is false once every combination has been tried.
func nextCombination(idx []int, slots [][]surveyOption) bool {
	for k := range idx {
		idx[k]++
		if idx[k] < len(slots[k]) {
			return true
		}
		idx[k] = 0
	}
	return false
}

// satisfiable reports whether some combination keeps every requirement
// of ids.
func (en *enumeration) satisfiable(ids []string) bool {
	var want uint64
	for _, id := range ids {
		if k := slices.Index(en.required, id); k >= 0 {
			want |= 1 << k
		}
	}
	for mask := range en.masks {
		if mask&want == want {
			return true
		}
	}
	return false
}

// rankOf is a combination's rank (swaps, confidence given up, mid cost),
// recomputed from the raw plan.
func rankOf(tasks []Task, quantities []Quantity, surveys []Survey, choices []Choice) (objective, error) {
	var o objective
	for _, ch := range choices {
		if ch.ApproachID == OriginalApproach {
			continue
		}
		ap, ok := findApproach(surveys, ch)
		if !ok {
			return o, fmt.Errorf("no surveyed approach %s/%s", ch.TaskID, ch.ApproachID)
		}
		o.swaps++
		o.loss += confidenceLoss(taskOf(tasks, ch.TaskID).Confidence, ap.Confidence)
	}
	for _, t := range applyChoices(tasks, surveys, choices) {
		o.cost += t.CostUSD.Mid
	}
	return o, nil
}

func (o objective) String() string {
	return fmt.Sprintf("%d swap(s), confidence given up %s, mid cost %s", o.swaps, num(float64(o.loss)/1e6), money(o.cost))
}
