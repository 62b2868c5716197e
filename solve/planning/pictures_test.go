package planning

import (
	"regexp"
	"strings"
	"testing"
)

func TestWrapKeepsEveryWordAndCutsOnlyLongOnes(t *testing.T) {
	got := wrap("Migrate the 2 TB PostgreSQL 11 cluster to 16 with logical replication and a five-minute cutover window", 24)
	if strings.Join(got, " ") != "Migrate the 2 TB PostgreSQL 11 cluster to 16 with logical replication and a five-minute cutover window" {
		t.Fatalf("lost words: %q", got)
	}
	for _, l := range got {
		if len([]rune(l)) > 24 {
			t.Errorf("line %q is longer than 24", l)
		}
	}
	if got := wrap("supercalifragilisticexpialidocious", 10); len(got) != 4 || got[0] != "supercalif" {
		t.Errorf("long word: %q", got)
	}
}

// The Gantt chart shows the plan before and after repair side by side,
// each task's finish range from low to high estimates, the time limit,
// every logic verdict with its figures, the cost per task, and full
// titles.
func TestGanttShowsRangesLimitVerdictsCostsAndBothPlans(t *testing.T) {
	p := completed(t)
	p.Tasks[1].Title = "A deliberately long task title that a planner reads whole, without it being cut after thirty-eight characters"
	svg := Gantt(p)
	var lines []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		lines = append(lines, m[1])
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"Before repair: critical path 12h mid (low 9h, high 17h)", "After repair: critical path 12h mid",
		"c1 UNSAT: total_cost &lt;= 400 — total_cost mid 460, high 640", "c2 TIGHT: critical_path_hours &lt;= 14 — critical_path_hours mid 12, high 17",
		"limit 14h", "high 17h", "$300", "$150 (was $300)", "→ x1: fewer samples (for c1)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	// d's finish runs from 9h (low) to 17h (high): a whisker reaches past the 14h limit.
	if !strings.Contains(svg, "finish 9–17h (low–high)") {
		t.Errorf("no low–high finish range for d")
	}
	if !strings.Contains(strings.Join(lines, " "), "b "+p.Tasks[1].Title) || strings.Contains(text, "…") {
		t.Errorf("a title was cut:\n%s", text)
	}
}

// The DAG leaves out dependencies another path implies, keeps critical
// ones, wraps labels and picks the orientation nearer a screen's shape.
func TestMermaidIsReadable(t *testing.T) {
	p := fixture()
	p.Tasks[3].DependsOn = []string{"b", "c", "a"} // a → d is implied by a → b → d
	a := analyse(t, p)
	m := Mermaid(p.Tasks, a)
	if strings.Contains(m, "n0 --> n3") || !strings.Contains(m, "n1 --> n3") || !strings.Contains(m, "flowchart TB") {
		t.Fatalf("mermaid:\n%s", m)
	}
	long := generatePlan(3, 40, 0, 0)
	for i := range long.Tasks {
		long.Tasks[i].Title = "Dev-split iteration: 50 tasks x 3 rounds with failure triage"
	}
	la, err := Analyze(long.Tasks, nil, long.Constraints)
	if err != nil {
		t.Fatal(err)
	}
	lm := Mermaid(long.Tasks, la)
	if !strings.Contains(lm, "flowchart TB") || !strings.Contains(lm, "t1 · Dev-split<br/>iteration: 50 tasks x 3<br/>rounds with failure<br/>triage<br/>#36;45.5 · 2h") {
		t.Fatalf("40 tasks in %d waves:\n%s", len(la.Waves), lm[:400])
	}
}
