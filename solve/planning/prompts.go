package planning

import (
	"embed"
	"strings"
	"text/template"
)

// Prompt templates, one system and one user template per stage, and the
// re-ask message. The first line of every system prompt names the stage
// ("SOLVE kernel · stage: decompose"), which scripts match on.
//
//go:embed prompts/*.md
var promptFS embed.FS

var prompts = template.Must(template.New("prompts").
	Funcs(template.FuncMap{"join": strings.Join, "num": num}).
	ParseFS(promptFS, "prompts/*.md"))

// render fills a prompt template.
func render(name string, data any) (string, error) {
	var b strings.Builder
	if err := prompts.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
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
