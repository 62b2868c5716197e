package planning

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/expr"
	"github.com/llmkernels/kernels/solve/store"
)

// An approach that sets a declared quantity its task never estimated must
// not lend that value to the task's other options (issue 16: the kernel
// said "none possible" while a repair existed).
func TestRepairDoesNotLeakAnApproachsQuantityIntoOtherOptions(t *testing.T) {
	p := &Plan{
		Schema:     SchemaVersion,
		Goal:       "Build it for <$100 with parts under $80.",
		Quantities: []Quantity{{Name: "parts_usd", Unit: "USD", Aggregate: "sum"}},
		Constraints: []Constraint{
			{ID: "c1", Type: Logic, Payload: Payload{Expr: "total_cost <= 100"}, Sigma: 1},
			{ID: "c2", Type: Logic, Payload: Payload{Expr: "parts_usd <= 80"}, Sigma: 1},
		},
		Tasks: []Task{
			{ID: "a", Type: "build", CostUSD: est(40, 50, 60), Hours: est(1, 2, 3), Confidence: 0.8, Method: KnownMethod,
				Quantities: map[string]Estimate{"parts_usd": est(50, 60, 70)}},
			{ID: "b", Type: "build", DependsOn: []string{"a"}, CostUSD: est(70, 80, 90), Hours: est(1, 2, 3), Confidence: 0.8, Method: KnownMethod},
		},
		Surveys: []Survey{{TaskID: "b", Round: 1, Approaches: []Approach{
			{ID: "b1", Title: "buy a kit", CostUSD: est(30, 40, 50), Hours: est(1, 2, 3), Confidence: 0.8, Quantities: map[string]Estimate{"parts_usd": est(20, 30, 40)}, Round: 1},
			{ID: "b2", Title: "reuse the old code", CostUSD: est(35, 45, 55), Hours: est(1, 2, 3), Confidence: 0.8, Round: 1},
		}}},
	}
	a := analyse(t, p)
	r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RepairRepaired || len(r.Choices) != 1 || r.Choices[0].ApproachID != "b2" {
		t.Fatalf("repair %s %+v core %v; want b → b2 (total $95, parts $60)", r.Status, r.Choices, r.UnsatCore)
	}
	// The check proves it without the search: a claim of "none possible"
	// on this plan fails it.
	p.Analysis, p.Repair = a, Repair{Status: RepairInfeasible, Required: []string{"c1", "c2"}, UnsatCore: []string{"c2"}, Space: 3, Excluded: []Exclusion{}}
	f := failures(Check(context.Background(), p, CheckOptions{}))
	if !slices.ContainsFunc(f, func(s string) bool {
		return strings.HasPrefix(s, "5.1 ") && strings.Contains(s, "repaired; plan reports infeasible")
	}) ||
		!slices.ContainsFunc(f, func(s string) bool { return strings.HasPrefix(s, "5.2 ") && strings.Contains(s, "b→b2") }) {
		t.Fatalf("the check passes a false infeasibility:\n%s", strings.Join(f, "\n"))
	}
}

// The repair prefers fewest swaps, then confidence kept, then cost; it
// does not swap a task that feasibility does not need, even to save money.
func TestRepairChangesLeastAndKeepsConfidenceBeforeCost(t *testing.T) {
	p := fixture()
	p.Constraints[0].Payload.Expr = "total_cost <= 420" // d alone fixes it; c/y1 would save $20 more
	p.Surveys[0].Approaches[0].ConstraintEffects = nil
	p.Surveys[1].Approaches = append(p.Surveys[1].Approaches,
		Approach{ID: "x3", Title: "cheaper, less sure", CostUSD: est(80, 120, 160), Hours: est(3, 4, 5), Confidence: 0.4, Round: 1})
	a := analyse(t, p)
	r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range r.Choices {
		got[c.TaskID] = c.ApproachID
	}
	// x3 is $30 cheaper than x1 but gives up 0.2 of confidence; c/y1
	// saves $20 but is a second swap.
	if got["c"] != OriginalApproach || got["d"] != "x1" {
		t.Fatalf("choices %v; want c kept, d → x1", got)
	}
	if !strings.Contains(r.Choices[1].Reason, "also feasible in its place") || !strings.Contains(r.Choices[1].Reason, "x3 ($120, confidence 0.40)") {
		t.Errorf("reason %q", r.Choices[1].Reason)
	}
}

// After a repair, a semantic constraint's σ is the least σ the chosen
// approaches judge for it; the revised σ_v follows.
func TestRevisedSigmaFollowsTheChosenApproachesJudgedEffects(t *testing.T) {
	p := fixture()
	p.Surveys[1].Approaches[0].ConstraintEffects = []Effect{{ConstraintID: "c3", Sigma: 0.55, Reason: "fewer samples"}}
	a := analyse(t, p)
	r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if err != nil || r.Status != RepairRepaired {
		t.Fatalf("%+v %v", r, err)
	}
	if v := verdictOf(r.Revised, "c3"); v.Sigma != 0.55 || r.Revised.SigmaV != 0.55 || verdictOf(a, "c3").Sigma != 0.5 {
		t.Fatalf("revised c3 σ %v, σ_v %v; plan c3 σ %v", v.Sigma, r.Revised.SigmaV, verdictOf(a, "c3").Sigma)
	}
}

// randomRepairPlan is a small random plan for the property test: up to 12
// tasks, up to 8 surveyed with 1 to 3 approaches, a sum and a max
// quantity that some tasks estimate and some approaches set (also where
// the task gave none), caps on cost, time and both quantities, and a
// semantic constraint some approaches judge. Figures are multiples of
// 0.5.
func randomRepairPlan(seed uint64) *Plan {
	r := rand.New(rand.NewPCG(seed, 16))
	half := func(lo, hi float64) float64 { return float64(int((lo+r.Float64()*(hi-lo))*2)) / 2 }
	e3 := func(mid float64) Estimate { return Estimate{Low: mid / 2, Mid: mid, High: mid * 1.5} }
	n := 3 + r.IntN(10)
	p := &Plan{Schema: SchemaVersion, Goal: "random",
		Quantities: []Quantity{{Name: "parts_usd", Aggregate: "sum"}, {Name: "latency_ms", Aggregate: "max"}}}
	hasSucc := make([]bool, n)
	var cost, hours, parts, latency float64
	for i := range n {
		t := Task{ID: fmt.Sprintf("t%d", i+1), Type: "build", Confidence: float64(r.IntN(11)) / 10, Method: KnownMethod,
			CostUSD: e3(half(1, 100)), Hours: e3(half(1, 8))}
		if r.IntN(3) == 0 {
			t.Quantities = map[string]Estimate{"parts_usd": e3(half(0, 50))}
			parts += t.Quantities["parts_usd"].Mid
		}
		if r.IntN(3) == 0 {
			if t.Quantities == nil {
				t.Quantities = map[string]Estimate{}
			}
			t.Quantities["latency_ms"] = e3(half(10, 500))
			latency = math.Max(latency, t.Quantities["latency_ms"].Mid)
		}
		for k := 0; i > 0 && k < 1+r.IntN(min(2, i)); k++ {
			d := p.Tasks[r.IntN(i)].ID
			if !slices.Contains(t.DependsOn, d) {
				t.DependsOn = append(t.DependsOn, d)
				hasSucc[slices.IndexFunc(p.Tasks, func(x Task) bool { return x.ID == d })] = true
			}
		}
		if i == n-1 {
			for j := range n - 1 {
				if !hasSucc[j] && !slices.Contains(t.DependsOn, p.Tasks[j].ID) {
					t.DependsOn = append(t.DependsOn, p.Tasks[j].ID)
				}
			}
		}
		cost += t.CostUSD.Mid
		hours += t.Hours.Mid
		p.Tasks = append(p.Tasks, t)
	}
	p.Tasks[0].Quantities = map[string]Estimate{"parts_usd": e3(10), "latency_ms": e3(100)} // every quantity estimated somewhere
	m, err := newModel(p.Tasks, p.Quantities)
	if err != nil {
		panic(err)
	}
	cp := m.g.Longest(m.scenario(1).hours, nil)
	p.Constraints = []Constraint{
		{ID: "c1", Type: Logic, Payload: Payload{Expr: fmt.Sprintf("total_cost <= %v", float64(int(cost*(0.6+r.Float64()*0.5))))}, Sigma: 1},
		{ID: "c2", Type: Logic, Payload: Payload{Expr: fmt.Sprintf("critical_path_hours <= %v", float64(int(cp*(0.8+r.Float64()*0.5))))}, Sigma: 1},
		{ID: "c3", Type: Logic, Payload: Payload{Expr: fmt.Sprintf("parts_usd <= %v", 10+float64(int(parts*(0.5+r.Float64()))))}, Sigma: 1},
		{ID: "c4", Type: Logic, Payload: Payload{Expr: fmt.Sprintf("latency_ms < %v", 100+float64(int(latency*(0.6+r.Float64()*0.6))))}, Sigma: 1},
		{ID: "c5", Type: Semantic, Payload: Payload{Rubric: "good"}, Sigma: float64(3+r.IntN(6)) / 10},
	}
	if r.IntN(3) == 0 { // a floor, which only gets worse as a metric falls: no optimistic pruning
		p.Constraints = append(p.Constraints, Constraint{ID: "c6", Type: Logic, Payload: Payload{Expr: fmt.Sprintf("total_hours >= %v", float64(int(hours*(0.5+r.Float64()*0.4))))}, Sigma: 1})
	}
	for _, i := range r.Perm(n)[:1+r.IntN(min(8, n))] {
		t := p.Tasks[i]
		sv := Survey{TaskID: t.ID, Round: 1}
		for k := range 1 + r.IntN(3) {
			ap := Approach{ID: fmt.Sprintf("a%d", k+1), Title: fmt.Sprintf("approach %d", k+1), CostUSD: e3(half(0.5, t.CostUSD.Mid*1.2)),
				Hours: e3(half(0.5, t.Hours.Mid*1.5)), Confidence: float64(r.IntN(11)) / 10, KnownMethodShare: 0.5, Round: 1}
			if r.IntN(2) == 0 {
				ap.Quantities = map[string]Estimate{"parts_usd": e3(half(0, 40))}
			}
			if r.IntN(3) == 0 {
				ap.Quantities = map[string]Estimate{"latency_ms": e3(half(10, 600))}
			}
			if r.IntN(3) == 0 {
				ap.ConstraintEffects = []Effect{{ConstraintID: "c5", Sigma: float64(r.IntN(11)) / 10}}
			}
			sv.Approaches = append(sv.Approaches, ap)
		}
		p.Surveys = append(p.Surveys, sv)
	}
	return p
}

// naive is the property test's own evaluation of one combination: it
// shares nothing with the search or the check but the expression parser.
type naive struct {
	swaps int
	loss  int64
	cost  float64
	holds map[string]bool
}

func evalNaive(t *testing.T, p *Plan, pick map[string]*Approach) naive {
	t.Helper()
	var out naive
	cost := map[string]float64{}
	hours := map[string]float64{}
	q := map[string]map[string]float64{"parts_usd": {}, "latency_ms": {}}
	for _, tk := range p.Tasks {
		cost[tk.ID], hours[tk.ID] = tk.CostUSD.Mid, tk.Hours.Mid
		for name, e := range tk.Quantities {
			q[name][tk.ID] = e.Mid
		}
		if ap := pick[tk.ID]; ap != nil {
			out.swaps++
			if l := int64(math.Round(tk.Confidence*1e6)) - int64(math.Round(ap.Confidence*1e6)); l > 0 {
				out.loss += l
			}
			cost[tk.ID], hours[tk.ID] = ap.CostUSD.Mid, ap.Hours.Mid
			for name, e := range ap.Quantities {
				q[name][tk.ID] = e.Mid
			}
		}
	}
	finish := map[string]float64{}
	var end func(id string) float64
	end = func(id string) float64 {
		if f, ok := finish[id]; ok {
			return f
		}
		start := 0.0
		for _, tk := range p.Tasks {
			if tk.ID == id {
				for _, d := range tk.DependsOn {
					start = math.Max(start, end(d))
				}
			}
		}
		finish[id] = start + hours[id]
		return finish[id]
	}
	vals := map[string]float64{"task_count": float64(len(p.Tasks))}
	for _, tk := range p.Tasks {
		vals["total_cost"] += cost[tk.ID]
		vals["total_hours"] += hours[tk.ID]
		vals["critical_path_hours"] = math.Max(vals["critical_path_hours"], end(tk.ID))
		vals["parts_usd"] += q["parts_usd"][tk.ID]
		vals["latency_ms"] = math.Max(vals["latency_ms"], q["latency_ms"][tk.ID])
	}
	out.cost = vals["total_cost"]
	out.holds = map[string]bool{}
	for _, c := range p.Constraints {
		if c.Type == Logic {
			e, err := expr.Parse(c.Payload.Expr)
			if err != nil {
				t.Fatal(err)
			}
			out.holds[c.ID], _ = e.Eval(vals)
			continue
		}
		out.holds[c.ID] = true
		for _, ap := range pick {
			for _, ef := range ap.ConstraintEffects {
				if ef.ConstraintID == c.ID && ef.Sigma < math.Min(store.TauLocal, c.Sigma) {
					out.holds[c.ID] = false
				}
			}
		}
	}
	return out
}

// bruteForce evaluates every combination with evalNaive.
func bruteForce(t *testing.T, p *Plan) []struct {
	choices []Choice
	naive
} {
	var all []struct {
		choices []Choice
		naive
	}
	idx := make([]int, len(p.Surveys))
	for {
		pick := map[string]*Approach{}
		var choices []Choice
		for k, sv := range p.Surveys {
			id := OriginalApproach
			if idx[k] > 0 {
				pick[sv.TaskID] = &sv.Approaches[idx[k]-1]
				id = sv.Approaches[idx[k]-1].ID
			}
			choices = append(choices, Choice{TaskID: sv.TaskID, ApproachID: id})
		}
		all = append(all, struct {
			choices []Choice
			naive
		}{choices, evalNaive(t, p, pick)})
		k := 0
		for ; k < len(idx); k++ {
			idx[k]++
			if idx[k] <= len(p.Surveys[k].Approaches) {
				break
			}
			idx[k] = 0
		}
		if k == len(idx) {
			return all
		}
	}
}

// The property (issue 16): on random small plans, the kernel's repair, or
// its "none possible" with an unsat core, equals brute force, and solve
// check passes the plan.
func TestRepairEqualsBruteForceOnRandomSmallPlans(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(300) {
		p := randomRepairPlan(seed)
		a, err := Analyze(p.Tasks, p.Quantities, p.Constraints)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		seen[r.Status]++
		if r.Status == RepairNotNeeded {
			continue
		}
		all := bruteForce(t, p)
		sat := func(ids []string) (bool, []Choice) {
			for _, c := range all {
				ok := true
				for _, id := range ids {
					ok = ok && c.holds[id]
				}
				if ok {
					return true, c.choices
				}
			}
			return false, nil
		}
		var best *naive
		for i := range all {
			c := &all[i]
			feasible := true
			for _, id := range r.Required {
				feasible = feasible && c.holds[id]
			}
			if feasible && (best == nil || c.swaps < best.swaps || (c.swaps == best.swaps && (c.loss < best.loss || (c.loss == best.loss && c.cost < best.cost-1e-9)))) {
				best = &c.naive
			}
		}
		switch {
		case best == nil && r.Status != RepairInfeasible:
			t.Fatalf("seed %d: brute force finds no repair, the kernel says %s %+v", seed, r.Status, r.Choices)
		case best != nil && r.Status != RepairRepaired:
			_, at := sat(r.Required)
			t.Fatalf("seed %d: brute force repairs (%s), the kernel says %s, core %v", seed, choiceText(at), r.Status, r.UnsatCore)
		case best != nil:
			pick := map[string]*Approach{}
			for _, ch := range r.Choices {
				if ap, ok := findApproach(p.Surveys, ch); ok {
					pick[ch.TaskID] = &ap
				}
			}
			got := evalNaive(t, p, pick)
			if got.swaps != best.swaps || got.loss != best.loss || math.Abs(got.cost-best.cost) > 1e-9 {
				t.Fatalf("seed %d: kernel picks %s (%d swaps, loss %d, $%v), brute force best %d swaps, loss %d, $%v", seed, choiceText(r.Choices), got.swaps, got.loss, got.cost, best.swaps, best.loss, best.cost)
			}
			for _, id := range r.Required {
				if !got.holds[id] {
					t.Fatalf("seed %d: the kernel's choice breaks %s", seed, id)
				}
			}
		default:
			if ok, at := sat(r.UnsatCore); ok || len(r.UnsatCore) == 0 {
				t.Fatalf("seed %d: core %v is satisfiable: %s", seed, r.UnsatCore, choiceText(at))
			}
			for _, id := range r.UnsatCore {
				rest := slices.DeleteFunc(slices.Clone(r.UnsatCore), func(x string) bool { return x == id })
				if ok, _ := sat(rest); !ok {
					t.Fatalf("seed %d: core %v is not minimal without %s", seed, r.UnsatCore, id)
				}
			}
		}
		p.Analysis, p.Repair = a, r
		for _, as := range Check(context.Background(), p, CheckOptions{}) {
			if as.Group == 5 && !as.Pass {
				t.Fatalf("seed %d: solve check fails the kernel's repair: %s %s: %s", seed, as.ID, as.Name, as.Detail)
			}
		}
	}
	t.Logf("statuses: %v", seen)
	if seen[RepairRepaired] < 40 || seen[RepairInfeasible] < 40 {
		t.Fatalf("random plans cover %v; want at least 40 each of repaired and infeasible", seen)
	}
}

// The model answers approaches without a round: the kernel sets it, and
// the schema shown to the model does not ask for it.
func TestSurveySchemaLeavesTheRoundToTheKernel(t *testing.T) {
	s, err := llm.SchemaFor[surveyAnswer]()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(s.JSON), `"round"`) || !strings.Contains(string(s.JSON), `"nothing_better"`) {
		t.Fatalf("schema: %s", s.JSON)
	}
}
