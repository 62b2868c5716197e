package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/solve/planning"
)

const (
	csvGoal     = "Write a command-line tool that converts CSV files to JSON, within 8h, for <$20 compute."
	airflowGoal = "Migrate the nightly reports from cron scripts to Airflow within 10h, for <$300 compute."
	landingGoal = "Launch a product landing page with signup analytics within 40h, for <$1000."
)

// A $0 task surveyed for its low confidence cannot get anything cheaper:
// its survey must offer better confidence, and the run plans.
func TestZeroCostLowConfidenceTaskIsPlanned(t *testing.T) {
	t.Parallel()
	_, p := planOK(t, csvGoal, "zero_cost_low_confidence.json")
	if len(p.Surveys) != 1 || p.Surveys[0].TaskID != "t1" || p.Repair.Status != planning.RepairNotNeeded {
		t.Fatalf("surveys %+v, repair %s", p.Surveys, p.Repair.Status)
	}
}

// A schedule wall is surveyed for faster approaches, which may cost more;
// the run plans and the repair brings the time constraint back.
func TestScheduleWallIsRepairedByAFasterDearerApproach(t *testing.T) {
	t.Parallel()
	_, p := planOK(t, airflowGoal, "schedule_wall.json")
	if verdict(p.Analysis, "c1") != planning.UNSAT || p.Repair.Status != planning.RepairRepaired || verdict(p.Repair.Revised, "c1") == planning.UNSAT {
		t.Fatalf("c1 %s, repair %+v", verdict(p.Analysis, "c1"), p.Repair)
	}
	if p.Repair.Revised.Cost.Mid <= p.Analysis.Cost.Mid {
		t.Errorf("the faster approach costs more: revised $%v, planned $%v", p.Repair.Revised.Cost.Mid, p.Analysis.Cost.Mid)
	}
}

// No repair exists among the first survey's approaches; the second round
// surveys the next contributors and finds one.
func TestSecondSurveyRoundFindsARepair(t *testing.T) {
	t.Parallel()
	_, p := planOK(t, landingGoal, "second_round.json")
	if p.Repair.Status != planning.RepairRepaired || len(p.Surveys) != 2 {
		t.Fatalf("repair %s (%s), %d surveys", p.Repair.Status, p.Repair.Note, len(p.Surveys))
	}
	got := map[string]string{}
	for _, c := range p.Repair.Choices {
		got[c.TaskID] = c.ApproachID
	}
	if got["t2"] != "a1" || got["t3"] != "a1" || p.Repair.Revised.Cost.Mid != 900 {
		t.Fatalf("choices %v, revised $%v; want t2→a1, t3→a1 (a2 is cheaper but loses confidence), $900", got, p.Repair.Revised.Cost.Mid)
	}
}

// The twelve hand-edits `solve check` used to miss (issue 16), each on a
// kernel-made plan file.
func TestCheckCatchesTheEditsItUsedToMiss(t *testing.T) {
	t.Parallel()
	docsDir, _ := planOK(t, docsGoal, "document_classification.json")
	tradeDir, _ := planOK(t, tradingGoal, "trading_strategy.json")
	read := func(dir string) map[string]any {
		data, err := os.ReadFile(filepath.Join(dir, "plan.json"))
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := func(v any) []any { return v.([]any) }
	obj := func(v any) map[string]any { return v.(map[string]any) }
	byID := func(items any, key, id string) map[string]any {
		for _, it := range list(items) {
			if obj(it)[key] == id {
				return obj(it)
			}
		}
		t.Fatalf("no %s %s", key, id)
		return nil
	}
	without := func(items any, key, id string) []any {
		var out []any
		for _, it := range list(items) {
			if obj(it)[key] != id {
				out = append(out, it)
			}
		}
		return out
	}
	edits := []struct {
		name, dir string
		edit      func(p map[string]any)
	}{
		{"a dropped explicit constraint", tradeDir, func(p map[string]any) {
			// c4 (Alpaca paper trading) removed everywhere it appears.
			p["constraints"] = without(p["constraints"], "id", "c4")
			a := obj(p["analysis"])
			a["verdicts"] = without(a["verdicts"], "constraint_id", "c4")
			if rev, ok := obj(p["repair"])["revised"].(map[string]any); ok {
				rev["verdicts"] = without(rev["verdicts"], "constraint_id", "c4")
			}
		}},
		{"a semantic verdict changed to SAT", docsDir, func(p map[string]any) {
			byID(dig(p, "analysis", "verdicts"), "constraint_id", "c1")["verdict"] = "SAT"
		}},
		{"a semantic σ", docsDir, func(p map[string]any) {
			byID(dig(p, "analysis", "verdicts"), "constraint_id", "c1")["sigma"] = 0.95
		}},
		{"σ_v", docsDir, func(p map[string]any) { obj(p["analysis"])["sigma_v"] = 0.9 }},
		{"the wall list", docsDir, func(p map[string]any) {
			w := obj(list(dig(p, "analysis", "walls"))[0])
			w["wall"] = []any{"t1"}
		}},
		{"the revised verdicts", docsDir, func(p map[string]any) {
			for _, v := range list(dig(p, "repair", "revised", "verdicts")) {
				if obj(v)["verdict"] == "TIGHT" {
					obj(v)["verdict"] = "SAT"
				}
			}
		}},
		{"the revised critical path", docsDir, func(p map[string]any) {
			obj(dig(p, "repair", "revised", "time"))["mid"] = 5.0
		}},
		{"the revised waterfall", docsDir, func(p map[string]any) {
			obj(list(dig(p, "repair", "revised", "waterfall"))[1])["cumulative"] = 1.0
		}},
		{"the waves", docsDir, func(p map[string]any) {
			w := list(dig(p, "analysis", "waves"))
			w[0], w[len(w)-1] = w[len(w)-1], w[0]
		}},
		{"P(within limit)", docsDir, func(p map[string]any) {
			obj(dig(p, "analysis", "cost"))["p_within_limit"] = 0.99
		}},
		{"a declared metric", docsDir, func(p map[string]any) {
			obj(obj(dig(p, "analysis", "metrics"))["hosting_usd_month"])["mid"] = 20.0
		}},
		{"an approach's effect on a logic constraint", docsDir, func(p map[string]any) {
			ap := obj(list(obj(list(p["surveys"])[0])["approaches"])[0])
			ap["constraint_effects"] = append(list(ap["constraint_effects"]), map[string]any{"constraint_id": "c6", "sigma": 0.9, "reason": "cheap"})
		}},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			p := read(e.dir)
			e.edit(p)
			edited, _ := json.Marshal(p)
			if err := os.WriteFile(filepath.Join(e.dir, "edited.json"), edited, 0o644); err != nil {
				t.Fatal(err)
			}
			r := runSolve(t, e.dir, "check", "edited.json")
			if r.code != 1 || !strings.Contains(r.stdout, "FAIL ") {
				t.Fatalf("exit %d, want 1 with a FAIL\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// A later round that the first rounds' approaches cannot repair is asked
// again with the violation fed back (spec step 9); with a call budget of
// 2 it is not asked, and the plan says why.
func TestRetryRoundWithTheViolationFindsARepairWithinTheCallBudget(t *testing.T) {
	t.Parallel()
	_, p := planOK(t, landingGoal, "third_round.json")
	if p.Repair.Status != planning.RepairRepaired || len(p.SurveyRounds) != 3 || p.SurveyRounds[2].Kind != planning.RoundRetry ||
		!strings.Contains(p.SurveyRounds[2].Feedback, "keeps c2 together") {
		t.Fatalf("repair %s, rounds %+v", p.Repair.Status, p.SurveyRounds)
	}
	_, p = planOK(t, landingGoal, "third_round.json", "--survey-calls", "2")
	if p.Repair.Status != planning.RepairInfeasible || len(p.SurveyRounds) != 3 || !strings.Contains(p.SurveyRounds[2].Outcome, "survey call budget (2) is spent") ||
		!strings.Contains(p.Repair.Note, "not asked") {
		t.Fatalf("repair %s (%s), rounds %+v", p.Repair.Status, p.Repair.Note, p.SurveyRounds)
	}
}

// A number beyond float64 is re-asked like any rejected answer; a refusal
// is reported as a refusal.
func TestHugeNumbersAreReAskedAndRefusalsSaidSo(t *testing.T) {
	t.Parallel()
	_, r := plan(t, sweGoal, "adversarial_huge_number.json")
	if r.code != 0 || !strings.Contains(r.stderr, "decompose attempt 1 rejected: the answer fits the schema but cannot be read") || !strings.Contains(r.stderr, "1e400") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	_, r = plan(t, sweGoal, "adversarial_refusal.json")
	if r.code != 1 || !strings.Contains(r.stderr, `stage constraints: the model refused to answer (stop_reason "refusal" on 3 of 3 call(s)); it said: I can't help with planning this.`) {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
}

// A failed run does not leave an earlier run's plan at --out as if it
// were its own: the files are renamed .prev, and stderr says so.
func TestAFailedRunSetsAsideTheEarlierPlanFiles(t *testing.T) {
	t.Parallel()
	dir, _ := planOK(t, sweGoal, "swe_agent.json")
	abs, _ := filepath.Abs(filepath.Join("testdata", "adversarial_dangling.json"))
	r := runSolve(t, dir, "plan", sweGoal, "--provider", "script", "--script", abs, "--out", "plan.json")
	if r.code != 1 || !strings.Contains(r.stderr, "renamed with .prev") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{"plan.json", "plan.md", "plan.mmd", "plan.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s is still there", f)
		}
		if _, err := os.Stat(filepath.Join(dir, f+".prev")); err != nil {
			t.Errorf("%s.prev: %v", f, err)
		}
	}
}

// fakeZ3 puts a z3 on PATH that answers every question with word (a
// wrong or undecided solver), or never answers when word is "hang", for
// the paths a real z3 takes rarely.
func fakeZ3(t *testing.T, word string) []string {
	t.Helper()
	bin := t.TempDir()
	answer := "grep -o '(check-sat' | sed 's/.*/" + word + "/'"
	if word == "hang" {
		answer = "exec sleep 600"
	}
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Z3 version 0.0 (fake)'; exit 0; fi\n" + answer + "\n"
	if err := os.WriteFile(filepath.Join(bin, "z3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
}

// When z3 disagrees, the plan is still written and the run exits 1 saying
// so; when it cannot decide, or does not answer before the time kept for
// it within --max-wall, the plan is written and the run succeeds.
func TestZ3DisagreementOrTimeoutStillWritesThePlan(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs(filepath.Join("testdata", "swe_agent.json"))
	for _, tc := range []struct {
		word, want string
		code       int
	}{{"sat", "z3 disagrees with the kernel on", 1}, {"unknown", "could not decide", 0}, {"hang", "stopped to keep time to write the plan within --max-wall", 0}} {
		dir := t.TempDir()
		cmd := exec.Command(solveBin, "plan", sweGoal, "--provider", "script", "--script", abs, "--out", "plan.json", "--smt", "z3", "--max-wall", "4s")
		cmd.Dir, cmd.Env = dir, fakeZ3(t, tc.word)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		p, rerr := planning.Read(filepath.Join(dir, "plan.json"))
		if code != tc.code || !strings.Contains(string(out), tc.want) || rerr != nil || p.SMT == nil || (tc.word == "unknown") != (p.SMT.Unknown > 0) || (tc.word == "hang") != (p.SMT.Error != "") {
			t.Fatalf("z3 answering %s: exit %d, plan %v\n%s", tc.word, code, rerr, out)
		}
	}
}

// solve check has a time limit of its own: a proof still running when it
// ends (here, at once, and a z3 that never answers) is reported
// UNDECIDED, neither passed nor failed, and the check exits 5 instead of
// waiting; a negative limit is a usage error.
func TestSolveCheckReportsUndecidedWithinItsTimeLimit(t *testing.T) {
	t.Parallel()
	dir, _ := planOK(t, sweGoal, "swe_agent.json")
	r := runSolve(t, dir, "check", "plan.json", "--timeout", "1ns")
	// Only the proof of the best repair is undecided; every other check
	// of the six groups is a recomputation and still passes.
	if r.code != cli.ExitStopped || strings.Contains(r.stdout, "FAIL ") || strings.Count(r.stdout, "UNDECIDED ") != 1 ||
		!strings.Contains(r.stdout, "UNDECIDED 5.5 repair is the best by the documented order: undecided within the time limit: stopped by solve check --timeout 1ns") ||
		!strings.Contains(r.stdout, ", 1 UNDECIDED\n") || !strings.Contains(r.stderr, "1 of ") || !strings.Contains(r.stderr, "undecided within the time limit") {
		t.Errorf("--timeout 1ns: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, id := range []string{"1.1", "2.4", "3.6", "4.6", "5.1", "5.4", "5.8", "6.3"} {
		if !strings.Contains(r.stdout, "PASS "+id+" ") {
			t.Errorf("--timeout 1ns: %s is not decided\n%s", id, r.stdout)
		}
	}
	// A hand-edit the recomputations catch fails out of time too: exit 1.
	edited := filepath.Join(dir, "edited.json")
	data, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["analysis"].(map[string]any)["cost"].(map[string]any)["mid"] = 1.5
	if data, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edited, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if e := runSolve(t, dir, "check", "edited.json", "--timeout", "1ns"); e.code != cli.ExitFailure || !strings.Contains(e.stdout, "FAIL 3.1 ") || !strings.Contains(e.stdout, "UNDECIDED 5.5 ") {
		t.Errorf("an edited plan out of time: exit %d\n%s%s", e.code, e.stdout, e.stderr)
	}
	var rep struct {
		Passed, Failed, Undecided int
	}
	js := runSolve(t, dir, "check", "plan.json", "--timeout", "1ns", "--json")
	if err := json.Unmarshal([]byte(js.stdout), &rep); err != nil || js.code != cli.ExitStopped || rep.Undecided != 1 || rep.Failed != 0 || rep.Passed == 0 {
		t.Errorf("--json: exit %d %+v %v\n%s", js.code, rep, err, js.stdout)
	}
	cmd := exec.Command(solveBin, "check", "plan.json", "--smt", "z3", "--timeout", "2s")
	cmd.Dir, cmd.Env = dir, fakeZ3(t, "hang")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitStopped || !strings.Contains(string(out), "UNDECIDED 5.z z3 proof: undecided within the time limit: stopped by solve check --timeout 2s") {
		t.Errorf("a z3 that never answers: %v\n%s", err, out)
	}
	if u := runSolve(t, dir, "check", "plan.json", "--timeout", "-1s"); u.code != cli.ExitUsage {
		t.Errorf("--timeout -1s: exit %d\n%s", u.code, u.stderr)
	}
}

// solve eval plans the three examples and a goal file with the configured
// (here scripted) provider, checks each plan, and prints the groups, the
// verdicts, calls, tokens, cost and time, and a total; a goal that fails
// is reported and the others still run.
func TestEvalRunsTheExamplesAndGoalFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	abs, _ := filepath.Abs(filepath.Join("testdata", "eval_examples.json"))
	if err := os.WriteFile(filepath.Join(dir, "landing.txt"), []byte(landingGoal+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runSolve(t, dir, "eval", "landing.txt", "--provider", "script", "--script", abs)
	for _, want := range []string{
		"| swe-agent | repaired | 5/5 | 5/5 |", "| c2 TIGHT, c3 UNSAT | c2 TIGHT, c3 TIGHT | 3 |",
		"| trading-strategy | repaired |", "| document-classification | repaired |", "| landing | repaired |",
		"| **total** | 4 of 4 planned, 4 clean |", "Assertions: ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("eval output lacks %q", want)
		}
	}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"swe-agent.json", "trading-strategy.svg", "landing.md"} {
		if _, err := os.Stat(filepath.Join(dir, "eval", f)); err != nil {
			t.Error(err)
		}
	}
	// JSON, with a goal the script cannot answer: reported, exit 1.
	if err := os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"name": "enclosure", "goal": "Design an IP65 weather-station enclosure for <$80 in parts.", "budget_usd": 200}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runSolve(t, dir, "eval", "other.json", "landing.txt", "--examples=false", "--json", "--out-dir", "out", "--provider", "script", "--script", abs)
	var rep planning.EvalReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if r.code != 1 || rep.Total.Goals != 2 || rep.Total.Planned != 1 || rep.Goals[0].Name != "enclosure" || !strings.Contains(rep.Goals[0].Error, "script: no entry answers the request") ||
		rep.Goals[1].Repair != planning.RepairRepaired || len(rep.Goals[1].Groups) != 6 || rep.Goals[1].Calls != 4 || rep.Total.Calls < 4 {
		t.Fatalf("exit %d: %+v\n%s", r.code, rep, r.stderr)
	}
	// A goal file whose name leaves nothing to name the plan (".txt").
	if err := os.WriteFile(filepath.Join(dir, ".txt"), []byte(landingGoal), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"eval", "--examples=false"}, {"eval", "missing.txt"}, {"eval", "landing.txt", "landing.txt"}, {"eval", ".txt"}} {
		if r := runSolve(t, dir, bad...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", bad, r.code, r.stderr)
		}
	}
}

// A later round whose answer stays invalid after its re-asks does not fail
// the run: the plan is written with the repair as it was, and says why the
// rounds stopped.
func TestARejectedLaterRoundKeepsThePlan(t *testing.T) {
	t.Parallel()
	_, p := planOK(t, landingGoal, "adversarial_round_rejected.json")
	if p.Repair.Status != planning.RepairInfeasible || len(p.SurveyRounds) != 2 || p.SurveyRounds[1].Outcome == planning.RoundAnswered ||
		!strings.Contains(p.SurveyRounds[1].Outcome, "t3: no approach has a mid cost_usd below $300.00") || !strings.Contains(p.Repair.Note, "survey round 2 (widen of t3)") {
		t.Fatalf("repair %s (%s), rounds %+v", p.Repair.Status, p.Repair.Note, p.SurveyRounds)
	}
}

// An --out the run could not write is refused before any model call
// (it used to be found only after the whole run was paid for), and
// nothing an earlier run left there is touched.
func TestPlanRefusesAnUnwritableOutBeforeCallingTheModel(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs(filepath.Join("testdata", "swe_agent.json"))
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "plan.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.svg"), []byte("earlier"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ out, want string }{
		{"nodir/plan.json", "nodir"},
		{"plan.json", "plan.md is a directory"},
	} {
		r := runSolve(t, dir, "plan", sweGoal, "--provider", "script", "--script", abs, "--out", tc.out)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "attempt 1") {
			t.Errorf("--out %s: exit %d\n%s", tc.out, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plan.json")); err == nil {
		t.Error("plan.json written beside a stale plan.svg")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "plan.svg")); string(data) != "earlier" {
		t.Error("the earlier plan.svg was touched")
	}
}
