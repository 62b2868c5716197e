package solve_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	_, p := planOK(t, csvGoal, "zero_cost_low_confidence.json")
	if len(p.Surveys) != 1 || p.Surveys[0].TaskID != "t1" || p.Repair.Status != planning.RepairNotNeeded {
		t.Fatalf("surveys %+v, repair %s", p.Surveys, p.Repair.Status)
	}
}

// A schedule wall is surveyed for faster approaches, which may cost more;
// the run plans and the repair brings the time constraint back.
func TestScheduleWallIsRepairedByAFasterDearerApproach(t *testing.T) {
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
