package planning

import (
	"embed"
	"fmt"
	"strconv"
	"strings"
)

// Prompts: one system prompt per stage and the re-ask message are text
// files (prompts/*.md); the first line of every system prompt names the
// stage ("SOLVE kernel · stage: decompose"), which scripts match on. The
// user turn of each stage lays out the run's data (goal, constraints,
// tasks) and is written by the functions below: text/template would do
// it too, but a binary that can run a template keeps every exported
// method of every type it links, which made solve's twice its size.
//
//go:embed prompts/*.md
var promptFS embed.FS

// prompt is the text of prompts/NAME.
func prompt(name string) (string, error) {
	data, err := promptFS.ReadFile("prompts/" + name)
	if err != nil {
		return "", fmt.Errorf("no prompt %s: %w", name, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// retryTurn quotes the problems the kernel found in an answer
// (prompts/retry.md, its {count} and {problems} filled).
func retryTurn(problems []string) (string, error) {
	text, err := prompt("retry.md")
	if err != nil {
		return "", err
	}
	return strings.NewReplacer("{count}", strconv.Itoa(len(problems)), "{problems}", "- "+strings.Join(problems, "\n- ")).Replace(text), nil
}

// constraintsTurn is the constraints stage's user turn: the goal, the
// constraints given with --constraint, those the kernel took from flags,
// and the figures the goal states.
func constraintsTurn(goal string, given []string, kernel []Constraint, figures []string) string {
	var b strings.Builder
	b.WriteString("Goal: " + goal)
	if len(given) > 0 {
		b.WriteString("\n\nConstraints the person gave with --constraint (each is explicit):")
		for _, c := range given {
			b.WriteString("\n- " + c)
		}
	}
	if len(kernel) > 0 {
		b.WriteString("\n\nThe kernel recorded these constraints from flags itself; do not repeat them:")
		for _, c := range kernel {
			fmt.Fprintf(&b, "\n- %s: %s (from %s)", c.ID, c.Payload.Expr, c.Quote)
		}
	}
	figs := "none"
	if len(figures) > 0 {
		figs = strings.Join(figures, ", ")
	}
	fmt.Fprintf(&b, "\n\nFigures in the goal (each must fall inside a stated_constraints or a not_constraints quote): %s.", figs)
	return strings.TrimSpace(b.String())
}

// decomposeTurn is the decompose stage's user turn: the goal, the
// constraints and the declared quantities.
func decomposeTurn(goal string, constraints []Constraint, quantities []Quantity) string {
	var b strings.Builder
	b.WriteString("Goal: " + goal + "\n\nConstraints (the kernel evaluates the logic ones on your tasks):")
	for _, c := range constraints {
		fmt.Fprintf(&b, "\n- %s [%s, %s] %s: ", c.ID, c.Type, c.Domain, c.Title)
		if c.Type == Logic {
			b.WriteString(c.Payload.Expr)
		} else {
			fmt.Fprintf(&b, "%s (σ %.2f)", c.Payload.Rubric, c.Sigma)
		}
	}
	if len(quantities) > 0 {
		b.WriteString("\n\nDeclared quantities to estimate on the tasks that determine them:")
		for _, q := range quantities {
			fmt.Fprintf(&b, "\n- %s (%s, aggregate %s): %s", q.Name, q.Unit, q.Aggregate, q.Description)
		}
	}
	return strings.TrimSpace(b.String())
}

// surveyTask is a task a survey round asks about: why, and the approaches
// earlier rounds proposed for it.
type surveyTask struct {
	ID       string
	Why      []string
	Previous []Approach
}

// surveyTurn is a survey round's user turn: the plan as it stands (its
// verdicts, walls, quantities and tasks), the round, and the tasks to
// survey.
func surveyTurn(goal string, a *Analysis, quantities []Quantity, tasks []Task, items []surveyTask, round int, feedback string) string {
	var b strings.Builder
	b.WriteString("Goal: " + goal + "\n\nConstraints and the kernel's verdicts on the plan as it stands (SAT: holds at high estimates; TIGHT: holds at mid, not at high; UNSAT: fails at mid; JUDGED: semantic, σ is the model's):")
	for _, v := range a.Verdicts {
		fmt.Fprintf(&b, "\n- %s %s: ", v.ConstraintID, v.Verdict)
		if v.Expr != "" {
			b.WriteString(v.Expr + " — ")
		}
		b.WriteString(v.Detail)
	}
	for _, w := range a.Walls {
		fmt.Fprintf(&b, "\n\nWall of %s (over the limit by %s): ", w.ConstraintID, num(w.Overshoot))
		for i, c := range w.Tasks {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.ID + " " + num(c.Amount))
		}
	}
	if len(quantities) > 0 {
		b.WriteString("\n\nDeclared quantities: ")
		for i, q := range quantities {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%s, %s)", q.Name, q.Unit, q.Aggregate)
		}
	}
	b.WriteString("\n\nAll tasks (id, type, depends_on, cost_usd low/mid/high, hours low/mid/high, confidence):")
	for _, t := range tasks {
		deps := "none"
		if len(t.DependsOn) > 0 {
			deps = strings.Join(t.DependsOn, ", ")
		}
		fmt.Fprintf(&b, "\n- %s [%s] %s ← %s; $%s/%s/%s; %s/%s/%sh; confidence %.2f", t.ID, t.Type, t.Title, deps,
			num(t.CostUSD.Low), num(t.CostUSD.Mid), num(t.CostUSD.High), num(t.Hours.Low), num(t.Hours.Mid), num(t.Hours.High), t.Confidence)
	}
	if round > 1 {
		fmt.Fprintf(&b, "\n\nSurvey round %d.", round)
		if feedback != "" {
			b.WriteString(" The kernel's exact search found no repair: " + feedback)
		}
	}
	b.WriteString("\n\nSurvey these tasks:")
	for _, it := range items {
		fmt.Fprintf(&b, "\n- %s (%s)", it.ID, strings.Join(it.Why, "; "))
		for _, p := range it.Previous {
			fmt.Fprintf(&b, "\n  already surveyed: %s %s — $%s mid, %sh mid, confidence %.2f", p.ID, p.Title, num(p.CostUSD.Mid), num(p.Hours.Mid), p.Confidence)
		}
	}
	return strings.TrimSpace(b.String())
}

// Stage names, as they appear in prompts, progress lines and logs.
const (
	StageConstraints = "constraints"
	StageDecompose   = "decompose"
	StageAnalysis    = "analysis"
	StageSurvey      = "survey"
	StageRepair      = "repair"
	StageSMT         = "smt"
	StageSave        = "save"
)

// The model's answers, one type per stage. Their JSON Schemas (generated
// by llm.AskJSON) are shown to the model; fields without omitempty are
// required and unknown fields are refused.

type constraintsAnswer struct {
	StatedConstraints []statedAnswer     `json:"stated_constraints"`
	NotConstraints    []NotConstraint    `json:"not_constraints"`
	Constraints       []constraintAnswer `json:"constraints"`
	Quantities        []Quantity         `json:"quantities"`
	OpenQuestions     []string           `json:"open_questions"`
}

type statedAnswer struct {
	Quote string `json:"quote"`
}

type constraintAnswer struct {
	ID                 string   `json:"id"`
	Type               string   `json:"type" jsonschema:"enum=logic,enum=semantic"`
	Domain             string   `json:"domain"`
	Title              string   `json:"title"`
	Explicit           bool     `json:"explicit"`
	Quote              string   `json:"quote"`
	Expr               string   `json:"expr,omitempty"`
	Rubric             string   `json:"rubric,omitempty"`
	Sigma              float64  `json:"sigma" jsonschema:"minimum=0,maximum=1"`
	RemovalConsequence string   `json:"removal_consequence"`
	OpenQuestions      []string `json:"open_questions"`
	DerivedFrom        []string `json:"derived_from,omitempty"`
}

type decompositionAnswer struct {
	Tasks        []taskAnswer `json:"tasks"`
	StatedTotals statedTotals `json:"stated_totals"`
}

type taskAnswer struct {
	ID          string              `json:"id"`
	Title       string              `json:"title"`
	Type        string              `json:"type"`
	Description string              `json:"description"`
	DependsOn   []string            `json:"depends_on"`
	CostUSD     Estimate            `json:"cost_usd"`
	Hours       Estimate            `json:"hours"`
	Confidence  float64             `json:"confidence" jsonschema:"minimum=0,maximum=1"`
	Method      string              `json:"method" jsonschema:"enum=known_method,enum=judgment_required"`
	Quantities  map[string]Estimate `json:"quantities,omitempty"`
	Rationale   string              `json:"rationale"`
}

type statedTotals struct {
	TotalCostMid         float64 `json:"total_cost_mid"`
	CriticalPathHoursMid float64 `json:"critical_path_hours_mid"`
}

type surveyAnswer struct {
	Surveys []surveyItem `json:"surveys"`
}

type surveyItem struct {
	TaskID        string     `json:"task_id"`
	Approaches    []Approach `json:"approaches"` // Round is hidden from the schema: the kernel sets it
	NothingBetter string     `json:"nothing_better,omitempty"`
}
