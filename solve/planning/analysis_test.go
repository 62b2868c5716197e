package planning

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

func est(l, m, h float64) Estimate { return Estimate{Low: l, Mid: m, High: h} }

// fixture: a(3h) → b(5h), c(4h) → d(4h). Mid cost 460 against a cap of 400;
// critical path 12h mid, 17h high against 14h.
func fixture() *Plan {
	return &Plan{
		Schema:    SchemaVersion,
		Goal:      "Ship the thing within 14h for <$400.",
		Stated:    []StatedConstraint{{Quote: "within 14h", CoveredBy: []string{"c2"}}, {Quote: "for <$400", CoveredBy: []string{"c1"}}},
		NotStated: []NotConstraint{},
		Constraints: []Constraint{
			{ID: "c1", Type: Logic, Domain: "cost", Title: "cost cap", Explicit: true, Quote: "<$400", Payload: Payload{Expr: "total_cost <= 400"}, Sigma: 1, RemovalConsequence: "overspend", Provenance: Provenance{Source: "human", ResolverID: ResolverID}},
			{ID: "c2", Type: Logic, Domain: "schedule", Title: "time cap", Explicit: true, Quote: "within 14h", Payload: Payload{Expr: "critical_path_hours <= 14"}, Sigma: 1, RemovalConsequence: "late", Provenance: Provenance{Source: "human", ResolverID: ResolverID}},
			{ID: "c3", Type: Semantic, Domain: "quality", Title: "quality", Payload: Payload{Rubric: "works"}, Sigma: 0.5, RemovalConsequence: "junk", Provenance: Provenance{Source: "resolver", ResolverID: ResolverID}},
		},
		Tasks: []Task{
			{ID: "a", Type: "research", CostUSD: est(10, 20, 30), Hours: est(2, 3, 4), Confidence: 0.8, Method: KnownMethod},
			{ID: "b", Type: "build", DependsOn: []string{"a"}, CostUSD: est(50, 100, 150), Hours: est(4, 5, 8), Confidence: 0.6, Method: JudgmentRequired},
			{ID: "c", Type: "build", DependsOn: []string{"a"}, CostUSD: est(20, 40, 60), Hours: est(2, 4, 6), Confidence: 0.25, Method: JudgmentRequired},
			{ID: "d", Type: "evaluation", DependsOn: []string{"b", "c"}, CostUSD: est(200, 300, 400), Hours: est(3, 4, 5), Confidence: 0.6, Method: KnownMethod},
		},
		Claims:       []Claim{{Name: "total_cost_mid", Stated: 450, Computed: 460}, {Name: "critical_path_hours_mid", Stated: 12, Computed: 12, Agrees: true}},
		SurveyRounds: []SurveyRound{{Round: 1, Kind: RoundTriggered, Tasks: []string{"c", "d"}, Outcome: RoundAnswered}},
		Surveys: []Survey{
			{TaskID: "c", Round: 1, Triggers: []string{"confidence 0.25 < 0.3"}, Approaches: []Approach{
				{ID: "y1", Title: "cheap", CostUSD: est(10, 20, 30), Hours: est(2, 3, 4), Confidence: 0.5, ConstraintEffects: []Effect{{ConstraintID: "c3", Sigma: 0.3}}, Round: 1},
				{ID: "y2", Title: "solid", CostUSD: est(30, 45, 60), Hours: est(2, 3, 4), Confidence: 0.7, Round: 1},
			}},
			{TaskID: "d", Round: 1, Triggers: []string{"wall of UNSAT c1"}, Approaches: []Approach{
				{ID: "x1", Title: "fewer samples", CostUSD: est(100, 150, 200), Hours: est(3, 4, 5), Confidence: 0.6, Round: 1},
				{ID: "x2", Title: "cheap but slow", CostUSD: est(50, 80, 100), Hours: est(6, 8, 10), Confidence: 0.6, Round: 1},
			}},
		},
	}
}

func analyse(t *testing.T, p *Plan) *Analysis {
	t.Helper()
	a, err := Analyze(p.Tasks, p.Quantities, p.Constraints)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func verdictOf(a *Analysis, id string) Verdict {
	for _, v := range a.Verdicts {
		if v.ConstraintID == id {
			return v
		}
	}
	return Verdict{}
}

func TestRollupSumsEstimatesAndPERT(t *testing.T) {
	a := analyse(t, fixture())
	if a.Cost.Low != 280 || a.Cost.Mid != 460 || a.Cost.High != 640 {
		t.Fatalf("cost = %+v", a.Cost)
	}
	// PERT means: 20, 100, 40, 300 → 460; σ = sqrt((20/6)²+(100/6)²+(40/6)²+(200/6)²)
	wantSigma := math.Sqrt(20*20+100*100+40*40+200*200) / 6
	if math.Abs(a.Cost.PERTMean-460) > 1e-9 || math.Abs(a.Cost.PERTSigma-wantSigma) > 1e-9 {
		t.Fatalf("PERT = %v ± %v, want 460 ± %v", a.Cost.PERTMean, a.Cost.PERTSigma, wantSigma)
	}
	if a.Cost.Limit == nil || *a.Cost.Limit != 400 || a.Cost.PWithinLimit == nil || *a.Cost.PWithinLimit > 0.5 {
		t.Fatalf("limit %v, P %v", a.Cost.Limit, a.Cost.PWithinLimit)
	}
	if a.Time.Low != 9 || a.Time.Mid != 12 || a.Time.High != 17 {
		t.Fatalf("time = %+v", a.Time)
	}
}

func TestWaterfallRunsInExecutionOrderAndCountsDown(t *testing.T) {
	a := analyse(t, fixture())
	var ids []string
	var cum, rem []float64
	for _, r := range a.Waterfall {
		ids = append(ids, r.TaskID)
		cum = append(cum, r.Cumulative)
		rem = append(rem, *r.Remaining)
	}
	if strings.Join(ids, ",") != "a,b,c,d" || !slices.Equal(cum, []float64{20, 120, 160, 460}) || !slices.Equal(rem, []float64{380, 280, 240, -60}) {
		t.Fatalf("waterfall ids %v cum %v rem %v", ids, cum, rem)
	}
}

func TestVerdictDefinitions(t *testing.T) {
	p := fixture()
	p.Constraints = append(p.Constraints, Constraint{ID: "c4", Type: Logic, Payload: Payload{Expr: "total_cost <= 700"}, Sigma: 1})
	a := analyse(t, p)
	for id, want := range map[string]string{"c1": UNSAT, "c2": TIGHT, "c3": JUDGED, "c4": SAT} {
		if got := verdictOf(a, id).Verdict; got != want {
			t.Errorf("%s = %s, want %s", id, got, want)
		}
	}
	if v := verdictOf(a, "c1"); v.SlackMid != -60 || !strings.Contains(v.Detail, "total_cost mid 460, high 640") {
		t.Errorf("c1 = %+v", v)
	}
	if a.SigmaV != 0.5 {
		t.Errorf("σ_v = %v, want min σ_i = 0.5", a.SigmaV)
	}
}

func TestWallRanksContributorsAndCoversTheOvershoot(t *testing.T) {
	a := analyse(t, fixture())
	if len(a.Walls) != 1 {
		t.Fatalf("walls = %+v", a.Walls)
	}
	w := a.Walls[0]
	var order []string
	for _, c := range w.Tasks {
		order = append(order, c.ID)
	}
	if w.Overshoot != 60 || strings.Join(order, ",") != "d,b,c,a" || strings.Join(w.Wall, ",") != "d" {
		t.Fatalf("wall = %+v", w)
	}
	if w.Clusters[0].ID != "evaluation" || w.Clusters[1].ID != "build" || w.Clusters[1].Amount != 140 {
		t.Fatalf("clusters = %+v", w.Clusters)
	}
}

func TestWallOnCriticalPathCountsOnlyCriticalTasks(t *testing.T) {
	p := fixture()
	p.Constraints[1].Payload.Expr = "critical_path_hours <= 10"
	a := analyse(t, p)
	var w *Wall
	for i := range a.Walls {
		if a.Walls[i].ConstraintID == "c2" {
			w = &a.Walls[i]
		}
	}
	if w == nil {
		t.Fatal("no wall for c2")
	}
	var ids []string
	for _, c := range w.Tasks {
		ids = append(ids, c.ID)
	}
	// c has float (4h beside b's 5h) and so does not hold up the finish.
	if strings.Join(ids, ",") != "b,d,a" || strings.Join(w.Wall, ",") != "b" {
		t.Fatalf("wall = %+v", w)
	}
}

func TestWallWeighsMetricsByTheirCoefficient(t *testing.T) {
	p := fixture()
	p.Quantities = []Quantity{{Name: "hosting_usd_month", Unit: "USD/month", Aggregate: "sum"}}
	p.Tasks[3].Quantities = map[string]Estimate{"hosting_usd_month": est(10, 20, 30)}
	p.Constraints[0].Payload.Expr = "total_cost + 12 * hosting_usd_month <= 600"
	a := analyse(t, p)
	w := a.Walls[0]
	if w.Tasks[0].ID != "d" || w.Tasks[0].Amount != 300+12*20 || w.Overshoot != 460+240-600 {
		t.Fatalf("wall = %+v", w)
	}
}

func TestSurveyTriggersAreLowConfidenceAndWallTasks(t *testing.T) {
	tr := surveyTriggers(fixture().Tasks, analyse(t, fixture()))
	if len(tr) != 2 || len(tr["c"]) != 1 || !strings.Contains(tr["c"][0], "confidence 0.25") || tr["d"][0] != "wall of UNSAT c1" {
		t.Fatalf("triggers = %v", tr)
	}
}

func TestAnalyzeRejectsInvalidTasksWithEveryProblem(t *testing.T) {
	p := fixture()
	p.Tasks[1].CostUSD.Low = -5
	p.Tasks[2].Hours = est(0, 0, 1)
	p.Tasks[0].DependsOn = []string{"d"}
	_, err := Analyze(p.Tasks, p.Quantities, p.Constraints)
	problems, ok := errInvalid(err)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	joined := strings.Join(problems, "\n")
	for _, want := range []string{"cycle: a → b → d → a", "b cost_usd.low is -5: estimates cannot be negative", "c hours.low is 0: every task takes time"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %q in:\n%s", want, joined)
		}
	}
}

func TestUnknownMetricInAConstraintIsAClearError(t *testing.T) {
	p := fixture()
	p.Constraints[0].Payload.Expr = "total_cost_mid <= 400"
	_, err := Analyze(p.Tasks, p.Quantities, p.Constraints)
	if err == nil || !strings.Contains(err.Error(), `unknown metric "total_cost_mid"`) || !strings.Contains(err.Error(), "did you mean total_cost?") {
		t.Fatalf("err = %v", err)
	}
}

func TestQuantitiesAggregateBySumOrMax(t *testing.T) {
	p := fixture()
	p.Quantities = []Quantity{{Name: "p99_latency_ms", Aggregate: "max"}, {Name: "hosting_usd_month", Aggregate: "sum"}}
	p.Tasks[2].Quantities = map[string]Estimate{"p99_latency_ms": est(100, 200, 300), "hosting_usd_month": est(5, 10, 15)}
	p.Tasks[3].Quantities = map[string]Estimate{"p99_latency_ms": est(150, 250, 280), "hosting_usd_month": est(1, 2, 3)}
	a := analyse(t, p)
	if got := a.Metrics["p99_latency_ms"]; got != est(150, 250, 300) {
		t.Errorf("latency = %+v", got)
	}
	if got := a.Metrics["hosting_usd_month"]; got != est(6, 12, 18) {
		t.Errorf("hosting = %+v", got)
	}
}

func TestRepairPicksTheCheapestFeasibleCombination(t *testing.T) {
	p := fixture()
	a := analyse(t, p)
	r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	// d/x2 is cheapest but makes the critical path 16h > 14h; c/y1 would drop c3 below its floor.
	if r.Status != RepairRepaired || len(r.Choices) != 2 || r.Choices[0].TaskID != "c" || r.Choices[0].ApproachID != OriginalApproach ||
		r.Choices[1].TaskID != "d" || r.Choices[1].ApproachID != "x1" || !slices.Equal(r.Choices[1].NeededFor, []string{"c1"}) {
		t.Fatalf("repair = %+v", r)
	}
	if why := r.Choices[1].Reason; !strings.Contains(why, "c1 (total_cost <= 400 fails: total_cost 460)") {
		t.Errorf("reason %q", why)
	}
	if r.Revised.Cost.Mid != 310 || verdictOf(r.Revised, "c1").Verdict != TIGHT || verdictOf(r.Revised, "c2").Verdict != TIGHT {
		t.Fatalf("revised cost %v, c1 %s, c2 %s", r.Revised.Cost.Mid, verdictOf(r.Revised, "c1").Verdict, verdictOf(r.Revised, "c2").Verdict)
	}
	if len(r.Excluded) != 1 || r.Excluded[0].ApproachID != "y1" || r.Excluded[0].Floor != 0.5 {
		t.Fatalf("excluded = %+v", r.Excluded)
	}
	if r.Space != 9 {
		t.Fatalf("space = %v", r.Space)
	}
}

func TestRepairNamesAMinimalConflictingSet(t *testing.T) {
	p := fixture()
	p.Constraints[0].Payload.Expr = "total_cost <= 250" // only d/x2 gets there…
	p.Constraints[1].Payload.Expr = "critical_path_hours <= 12"
	p.Tasks[1].Hours = est(4, 5, 6) // … and d/x2 makes the path 16h
	a := analyse(t, p)
	r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RepairInfeasible || strings.Join(r.UnsatCore, ",") != "c1,c2" || r.Revised != nil {
		t.Fatalf("repair = %+v", r)
	}
	// c3's floor is not part of the conflict: y1 alone would not help.
	p.Constraints[1].Payload.Expr = "critical_path_hours <= 9" // unreachable on its own
	a = analyse(t, p)
	r, _ = repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if strings.Join(r.UnsatCore, ",") != "c2" {
		t.Fatalf("core = %v, want c2 alone", r.UnsatCore)
	}
}

func TestRepairNotNeededWithoutUNSAT(t *testing.T) {
	p := fixture()
	p.Constraints[0].Payload.Expr = "total_cost <= 1000"
	a := analyse(t, p)
	r, err := repairPlan(context.Background(), p.Tasks, p.Quantities, p.Constraints, p.Surveys, a, 0)
	if err != nil || r.Status != RepairNotNeeded {
		t.Fatalf("repair = %+v, %v", r, err)
	}
}

// A budget on a declared quantity (parts ≤ $80) gets its own cumulative
// and remaining columns in the waterfall, like the cost budget; a
// quantity without a cap, or aggregated by max, gets none.
func TestWaterfallTracksEveryBudgetedQuantity(t *testing.T) {
	p := fixture()
	p.Quantities = []Quantity{{Name: "parts_usd", Aggregate: "sum"}, {Name: "latency_ms", Aggregate: "max"}, {Name: "hosting_usd_month", Aggregate: "sum"}}
	p.Tasks[1].Quantities = map[string]Estimate{"parts_usd": est(30, 40, 50), "latency_ms": est(1, 2, 3), "hosting_usd_month": est(1, 2, 3)}
	p.Tasks[3].Quantities = map[string]Estimate{"parts_usd": est(50, 75, 90)}
	p.Constraints = append(p.Constraints,
		Constraint{ID: "c4", Type: Logic, Payload: Payload{Expr: "parts_usd <= 80"}, Sigma: 1},
		Constraint{ID: "c5", Type: Logic, Payload: Payload{Expr: "latency_ms <= 80"}, Sigma: 1},
		Constraint{ID: "c6", Type: Logic, Payload: Payload{Expr: "parts_usd < 100"}, Sigma: 1})
	a := analyse(t, p)
	if len(a.Budgets) != 1 || a.Budgets[0] != (Budget{Metric: "parts_usd", Limit: 80}) {
		t.Fatalf("budgets %+v", a.Budgets)
	}
	var cum, rem []float64
	for _, r := range a.Waterfall {
		cum = append(cum, r.Budgets[0].Cumulative)
		rem = append(rem, r.Budgets[0].Remaining)
	}
	if !slices.Equal(cum, []float64{0, 40, 40, 115}) || !slices.Equal(rem, []float64{80, 40, 40, -35}) {
		t.Fatalf("parts cumulative %v, remaining %v", cum, rem)
	}
	if md := Report(&Plan{Goal: "g", Analysis: a, Repair: Repair{Status: RepairNotNeeded}}, "x.svg"); !strings.Contains(md, "parts_usd | cumulative | remaining (of 80) |") || !strings.Contains(md, "| 75 | 115 | -35 |") {
		t.Errorf("the report's waterfall lacks the parts budget:\n%s", md)
	}
}
