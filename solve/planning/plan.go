package planning

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/planning/smt"
)

// SchemaVersion names the plan file format (docs/solve-plan-format.md).
const SchemaVersion = "solve-plan/v2"

// Kernel constants (spec §0 and the issue).
const (
	SurveyConfidence = 0.3 // tasks with confidence below this are surveyed
	ResolverID       = "claude-code-0"
	KernelResolverID = "kernel"
	OriginalApproach = "original" // the approach id meaning "keep the task as planned"
)

// Constraint types.
const (
	Logic    = "logic"
	Semantic = "semantic"
)

// Verdicts.
const (
	SAT    = "SAT"
	TIGHT  = "TIGHT"
	UNSAT  = "UNSAT"
	JUDGED = "JUDGED" // semantic constraints: σ_i is the model's judgment, no arithmetic verdict
)

// Repair statuses.
const (
	RepairNotNeeded  = "not_needed"
	RepairRepaired   = "repaired"
	RepairInfeasible = "infeasible"
	// RepairUndecided: the search reached its limit before it found
	// the best repair or proved that none exists.
	RepairUndecided = "undecided"
)

// Plan is the whole output of `solve plan`, and the input of `solve check`.
type Plan struct {
	Schema        string             `json:"schema"`
	RootID        string             `json:"root_id"`
	Goal          string             `json:"goal"`
	Inputs        Inputs             `json:"inputs"`
	Constraints   []Constraint       `json:"constraints"`
	Stated        []StatedConstraint `json:"stated_constraints"`
	NotStated     []NotConstraint    `json:"not_constraints"`
	Quantities    []Quantity         `json:"quantities"`
	OpenQuestions []string           `json:"open_questions"`
	Tasks         []Task             `json:"tasks"`
	Claims        []Claim            `json:"claims"`
	Analysis      *Analysis          `json:"analysis"`
	Surveys       []Survey           `json:"surveys"`
	SurveyRounds  []SurveyRound      `json:"survey_rounds"`
	Repair        Repair             `json:"repair"`
	SMT           *smt.Report        `json:"smt,omitempty"`
	Usage         Usage              `json:"usage"`
	Run           RunInfo            `json:"run"`
}

// Inputs are what the user gave besides the goal.
type Inputs struct {
	Constraints []string `json:"constraints"`
	BudgetUSD   *float64 `json:"budget_usd,omitempty"`
	TimeHours   *float64 `json:"time_hours,omitempty"`
}

// Constraint is the spec's constraint shape plus what planning adds.
type Constraint struct {
	ID                 string     `json:"id"`
	Type               string     `json:"type"`
	Domain             string     `json:"domain"`
	Title              string     `json:"title"`
	Explicit           bool       `json:"explicit"`
	Quote              string     `json:"quote,omitempty"`
	Payload            Payload    `json:"payload"`
	Provenance         Provenance `json:"provenance"`
	Sigma              float64    `json:"sigma"`
	RemovalConsequence string     `json:"removal_consequence"`
	OpenQuestions      []string   `json:"open_questions"`
	DBID               string     `json:"db_id,omitempty"`
}

// Payload is a logic constraint's expression or a semantic one's rubric.
type Payload struct {
	Expr   string `json:"expr,omitempty"`
	Rubric string `json:"rubric,omitempty"`
}

// Provenance is the spec's {source, resolver_id, derived_from_constraint_ids}.
type Provenance struct {
	Source      string   `json:"source"`
	ResolverID  string   `json:"resolver_id,omitempty"`
	DerivedFrom []string `json:"derived_from_constraint_ids,omitempty"`
}

// Quantity is a plan metric beyond the built-in ones, estimated per task
// (latency, hosting cost per month, memory) and aggregated over tasks.
type Quantity struct {
	Name        string `json:"name"`
	Unit        string `json:"unit"`
	Aggregate   string `json:"aggregate" jsonschema:"enum=sum,enum=max"`
	Description string `json:"description"`
}

// Estimate is a three-point estimate.
type Estimate struct {
	Low  float64 `json:"low"`
	Mid  float64 `json:"mid"`
	High float64 `json:"high"`
}

// PERTMean is (low + 4·mid + high) / 6.
func (e Estimate) PERTMean() float64 { return (e.Low + 4*e.Mid + e.High) / 6 }

// PERTSigma is (high − low) / 6.
func (e Estimate) PERTSigma() float64 { return (e.High - e.Low) / 6 }

// at returns the estimate's value in a scenario (0 low, 1 mid, 2 high).
func (e Estimate) at(s int) float64 {
	switch s {
	case 0:
		return e.Low
	case 1:
		return e.Mid
	}
	return e.High
}

func (e *Estimate) set(s int, v float64) {
	switch s {
	case 0:
		e.Low = v
	case 1:
		e.Mid = v
	default:
		e.High = v
	}
}

// Scenarios of an estimate, in order.
var scenarioNames = [3]string{"low", "mid", "high"}

// Task is one node of the plan DAG.
type Task struct {
	ID          string              `json:"id"`
	Title       string              `json:"title"`
	Type        string              `json:"type"`
	Description string              `json:"description"`
	DependsOn   []string            `json:"depends_on"`
	CostUSD     Estimate            `json:"cost_usd"`
	Hours       Estimate            `json:"hours"`
	Confidence  float64             `json:"confidence"`
	Method      string              `json:"method"`
	Quantities  map[string]Estimate `json:"quantities,omitempty"`
	Rationale   string              `json:"rationale,omitempty"`
	NodeID      string              `json:"node_id,omitempty"`
}

// Task methods.
const (
	KnownMethod      = "known_method"
	JudgmentRequired = "judgment_required"
)

// Claim is a figure the model stated about its own tasks, next to the
// kernel's figure. The kernel's is the one used.
type Claim struct {
	Name     string  `json:"name"`
	Stated   float64 `json:"stated"`
	Computed float64 `json:"computed"`
	Agrees   bool    `json:"agrees"`
}

// Survey is the approach survey of one task, over every round that asked
// about it.
type Survey struct {
	TaskID        string     `json:"task_id"`
	Round         int        `json:"round"` // the round that first surveyed the task
	Triggers      []string   `json:"triggers"`
	Approaches    []Approach `json:"approaches"`
	NothingBetter string     `json:"nothing_better,omitempty"` // the model's reason why no approach can improve what a trigger asks
}

// SurveyRound is one round of the survey (docs/solve.md "Survey rounds").
type SurveyRound struct {
	Round    int      `json:"round"`
	Kind     string   `json:"kind"` // triggered, widen, retry
	Tasks    []string `json:"tasks"`
	Feedback string   `json:"feedback,omitempty"` // retry: the violation fed back
	Outcome  string   `json:"outcome"`            // answered, or why the round has no answer
}

// Survey round outcomes besides a rejection or a stop, which are told in words.
const RoundAnswered = "answered"

// Approach is one alternative way to do a surveyed task.
type Approach struct {
	ID                string              `json:"id"`
	Title             string              `json:"title"`
	Description       string              `json:"description"`
	CostUSD           Estimate            `json:"cost_usd"`
	Hours             Estimate            `json:"hours"`
	Confidence        float64             `json:"confidence"`
	KnownMethodShare  float64             `json:"known_method_share"`
	JudgmentRequired  []string            `json:"judgment_required"`
	Quantities        map[string]Estimate `json:"quantities,omitempty"`
	ConstraintEffects []Effect            `json:"constraint_effects,omitempty"`
	Round             int                 `json:"round" jsonschema:"-"` // the survey round that proposed it (set by the kernel, not part of the model's answer)
}

// Effect is the model's judged σ for a semantic constraint if an approach
// is chosen.
type Effect struct {
	ConstraintID string  `json:"constraint_id"`
	Sigma        float64 `json:"sigma"`
	Reason       string  `json:"reason"`
}

// Repair is the kernel's choice of approaches, or why there is none.
type Repair struct {
	Status    string      `json:"status"`
	Required  []string    `json:"required"`
	Choices   []Choice    `json:"choices,omitempty"`
	Excluded  []Exclusion `json:"excluded,omitempty"`
	UnsatCore []string    `json:"unsat_core,omitempty"`
	Explored  int         `json:"explored"`
	Space     float64     `json:"space"`
	Revised   *Analysis   `json:"revised,omitempty"`
	Note      string      `json:"note"`
}

// Choice is the approach chosen for one surveyed task. A swap (any
// approach but "original") names the logic constraints that fail when the
// task is kept as planned, the other choices unchanged, and says why this
// approach.
type Choice struct {
	TaskID     string   `json:"task_id"`
	ApproachID string   `json:"approach_id"`
	NeededFor  []string `json:"needed_for,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// Exclusion is an approach no repair may use, and why.
type Exclusion struct {
	TaskID       string  `json:"task_id"`
	ApproachID   string  `json:"approach_id"`
	ConstraintID string  `json:"constraint_id"`
	Sigma        float64 `json:"sigma"`
	Floor        float64 `json:"floor"`
}

// Usage is what planning cost in LLM calls.
type Usage struct {
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Unpriced     bool    `json:"unpriced,omitempty"`
	// Scripted: the calls were scripted (llm.Client.Scripted), so CostUSD
	// is what the model would charge for them, and nothing was charged.
	Scripted bool `json:"scripted,omitempty"`
}

// cost is how the plan's outputs show what planning cost: the dollars,
// whether some calls were unpriced and, with note, what scripted money is
// (once per output: the live lines leave it to the scripted provider's
// notice).
func (p *Plan) cost(note bool) string {
	u := p.Usage
	cost := fmt.Sprintf("$%.4f", u.CostUSD)
	if u.Unpriced {
		cost += " (some calls unpriced)"
	}
	if note && u.Scripted {
		cost += " (" + llm.ScriptedNote(p.Run.Model) + ")"
	}
	return cost
}

// RunInfo describes the planning run.
type RunInfo struct {
	Model          string  `json:"model"`
	StartedAt      string  `json:"started_at"`
	WallSeconds    float64 `json:"wall_seconds"`
	MaxWallSeconds float64 `json:"max_wall_seconds"`
	DB             string  `json:"db,omitempty"`
}

// Read loads a plan file and checks its schema version.
func Read(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("plan %s is not valid plan JSON: %w", path, err)
	}
	if p.Schema != SchemaVersion {
		return nil, fmt.Errorf("plan %s has schema %q; this solve reads %q (docs/solve-plan-format.md)", path, p.Schema, SchemaVersion)
	}
	return &p, nil
}

// finite clamps ±Inf so a figure can be written as JSON.
func finite(v float64) float64 {
	if math.IsInf(v, 1) {
		return math.MaxFloat64
	}
	if math.IsInf(v, -1) {
		return -math.MaxFloat64
	}
	return v
}
