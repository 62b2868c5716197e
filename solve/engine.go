package solve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/llmkernels/kernels/llm"
)

// Node statuses the SOLVE loop adds to planning's (spec §2).
const (
	StatusGated      = "gated"
	StatusResolved   = "resolved"
	StatusInfeasible = "infeasible"
)

// Operations: what a resolver is asked to do. The claude-code-0 adapter
// has one prompt template per operation (prompts/op_<operation>.md).
const (
	OpIdentify    = "identify_constraints"
	OpSelect      = "select_constraints"
	OpRoute       = "select_resolver"
	OpResolve     = "resolve"
	OpVerify      = "verify"
	OpDecompose   = "decompose"
	OpGap         = "detect_gap"
	OpConsistency = "check_consistency"
	OpAssemble    = "assemble"
	OpSynthesize  = "synthesize_goal"
	OpSelfModel   = "self_model"
	OpCheck       = "run_check" // codex-tools-0: run a logic constraint's command
)

// Boot resolvers (spec §4).
const (
	SelfModelID  = "self-model-0"
	ClaudeCodeID = "claude-code-0"
	CodexToolsID = "codex-tools-0"
	// CandidateID is the resolver id of an attempt whose output is a
	// candidate input (--suggest) scored as it stands: no resolver ran.
	CandidateID = "candidate-input"
)

// Defaults (spec §0, §2).
const (
	DefaultTMax       = 5
	ReserveShare      = 0.20 // kept by a parent when it allocates to children
	StagnationEpsilon = 0.05 // Δσ below this over two consecutive attempts is stagnation
)

// RunRequest is what `solve run` asks for.
type RunRequest struct {
	Goal        string
	Constraints []string      // human-seeded irreducible core (--constraint)
	Suggest     []string      // human ideas, unprivileged candidate artifacts (--suggest)
	BudgetUSD   float64       // root budget (--budget)
	Time        time.Duration // root wall-time budget (--time)
	Workspace   string        // directory where software goals run for real
	Workers     int           // parallel dispatch workers (default 1)
	TMax        int           // attempts before BUILD (default 5)
	Interactive bool          // ask the human on In/Progress at Step 1 and Step 11
	Model       string
}

// Options are how this process runs (not stored with the run).
type Options struct {
	Client    *llm.Client         // claude-code-0's LLM
	Resolvers map[string]Resolver // replace or add resolver implementations (tests, benchmarks)
	Progress  io.Writer           // live view lines; nil = none
	In        io.Reader           // the terminal for --interactive
	Workers   int                 // overrides the stored worker count when > 0 (resume)
	// CrashAfter, when > 0, makes the process kill itself with SIGKILL at
	// the CrashAfter-th crash point (after a resolver call returns and after
	// each commit). Fault injection for the crash tests: env SOLVE_CRASH_AFTER.
	CrashAfter int
}

// Result is where a run stands when the dispatch loop stops.
type Result struct {
	RootID       string  `json:"root_id"`
	Outcome      string  `json:"outcome"` // achieved | waiting_for_human | infeasible
	SigmaSystem  float64 `json:"sigma_system"`
	ArtifactID   string  `json:"artifact_id,omitempty"`
	Summary      string  `json:"summary,omitempty"`
	LLMCalls     int     `json:"llm_calls"`
	SpentUSD     float64 `json:"spent_usd"`
	AllocatedUSD float64 `json:"allocated_usd"`
	OpenRequests int     `json:"open_requests"`
	Nodes        int     `json:"nodes"`
}

// Outcomes.
const (
	OutcomeAchieved   = "achieved"
	OutcomeWaiting    = "waiting_for_human"
	OutcomeInfeasible = "infeasible"
)

// Resolver is the execution contract every tool keeps (spec §2B).
type Resolver interface {
	// Estimate is estimate_cost_time: USD and seconds for the task.
	Estimate(ctx context.Context, t *Call) (cost, seconds float64)
	// Resolve does the task. Errors are *ResolverError (retryable or
	// permanent); any other error is treated as retryable.
	Resolve(ctx context.Context, t *Call) (*Output, error)
}

// Call is one resolver call: an operation on a node, with what it needs.
// Constraints are named c1, c2, … in prompts (never database ids, so a
// prompt is the same whichever run or process sends it).
type Call struct {
	Op          string            `json:"op"`
	Goal        string            `json:"goal"`
	Summary     string            `json:"summary"`
	Depth       int               `json:"depth"`
	Constraints []ConstraintView  `json:"constraints,omitempty"`
	Inherited   []ConstraintView  `json:"inherited,omitempty"`
	Inputs      []ArtifactView    `json:"inputs,omitempty"`
	Output      *ArtifactView     `json:"output,omitempty"`
	Feedback    []string          `json:"feedback,omitempty"`
	History     string            `json:"history,omitempty"`
	Candidates  []ResolverView    `json:"candidates,omitempty"`
	Checks      []ConstraintCheck `json:"checks,omitempty"` // verify: the logic checks already run
	Leaves      []LeafView        `json:"leaves,omitempty"`
	Params      map[string]any    `json:"params,omitempty"`
	Attempt     int               `json:"attempt,omitempty"`
	Workspace   string            `json:"-"`
	Model       string            `json:"-"`
	Node        string            `json:"-"`
}

// ConstraintView is a constraint as a resolver sees it.
type ConstraintView struct {
	Ref     string          `json:"ref"`
	Type    string          `json:"type"`
	Domain  string          `json:"domain"`
	Title   string          `json:"title"`
	Payload json.RawMessage `json:"payload"`
	id      string
}

// ArtifactView is an artifact's content as a resolver sees it.
type ArtifactView struct {
	Type    string `json:"type"`
	Format  string `json:"format"`
	Content string `json:"content"`
	id      string
}

// ResolverView is a registry entry as the router sees it.
type ResolverView struct {
	ID           string   `json:"id"`
	Label        string   `json:"label"`
	Description  string   `json:"description"`
	Type         string   `json:"type"`
	Capabilities []string `json:"capabilities"`
	Successes    int      `json:"successes"`
	Failures     int      `json:"failures"`
}

// LeafView is a resolved leaf at consistency check and assembly.
type LeafView struct {
	Ref     string  `json:"ref"`
	Summary string  `json:"summary"`
	Output  string  `json:"output"`
	Sigma   float64 `json:"sigma_path"`
	id      string
}

// Output is what a resolver returns: an operation's JSON answer and its
// metered cost.
type Output struct {
	Answer   json.RawMessage `json:"answer"`
	Cost     float64         `json:"cost"`
	Seconds  float64         `json:"seconds"`
	LLMCalls int             `json:"llm_calls"`
	Meta     map[string]any  `json:"meta,omitempty"`
}

// ResolverError classifies a failed resolver call (spec §2B).
type ResolverError struct {
	Permanent bool   // capability mismatch, invalid format: an UNSAT attempt
	Mode      string // failure slug
	Err       error
	Cost      float64
	Seconds   float64
}

func (e *ResolverError) Error() string {
	kind := "retryable"
	if e.Permanent {
		kind = "permanent"
	}
	return fmt.Sprintf("%s resolver error (%s): %v", kind, e.Mode, e.Err)
}

func (e *ResolverError) Unwrap() error { return e.Err }

func permanent(mode string, err error) error {
	return &ResolverError{Permanent: true, Mode: mode, Err: err}
}

func isPermanent(err error) (*ResolverError, bool) {
	var re *ResolverError
	if errors.As(err, &re) && re.Permanent {
		return re, true
	}
	return nil, false
}

// ConstraintCheck is one constraint's verdict in a Verification (spec §0).
type ConstraintCheck struct {
	ConstraintID     string  `json:"constraint_id"`
	Ref              string  `json:"ref"`
	Passed           bool    `json:"passed"`
	SigmaI           float64 `json:"sigma_i"`
	Detail           any     `json:"detail"`
	RepairSuggestion any     `json:"repair_suggestion,omitempty"`
}

// Verification is the spec's Verification shape.
type Verification struct {
	Verdict      string            `json:"verdict"`
	SigmaV       float64           `json:"sigma_v"`
	Checks       []ConstraintCheck `json:"checks"`
	TraceSummary string            `json:"trace_summary"`
	IsLeaf       bool              `json:"is_leaf"`
	LeafKind     string            `json:"leaf_kind,omitempty"`
	LeafReason   string            `json:"leaf_reason,omitempty"`
	Feedback     string            `json:"feedback,omitempty"`
	FailureMode  string            `json:"failure_mode,omitempty"`
}

// The operations' answers: the JSON a resolver returns for each.

type newConstraint struct {
	Type   string `json:"type" jsonschema:"enum=logic,enum=semantic"`
	Domain string `json:"domain"`
	Title  string `json:"title"`
	// Check is a logic constraint's shell command, run in the workspace
	// after the output's files are written; exit 0 means satisfied.
	Check  string `json:"check,omitempty"`
	Rubric string `json:"rubric,omitempty"`
}

type identifyAnswer struct {
	Constraints          []newConstraint `json:"constraints"`
	RequiredCapabilities []string        `json:"required_capabilities"`
	Rationale            string          `json:"rationale"`
}

type selectAnswer struct {
	Selected  []string `json:"selected"` // refs c1, c2, …
	Rationale string   `json:"rationale"`
}

type routeAnswer struct {
	ResolverID string         `json:"resolver_id"`
	Capability string         `json:"capability"`
	Params     map[string]any `json:"params,omitempty"`
	Rationale  string         `json:"rationale"`
	// Gap is set instead of a resolver when no candidate can do the work.
	Gap *gapAnswer `json:"gap,omitempty"`
}

type fileOut struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// toolSpec is a built tool: a command the workspace can run.
type toolSpec struct {
	Label        string   `json:"label"`
	Description  string   `json:"description"`
	Capabilities []string `json:"capabilities"`
	Command      string   `json:"command"`      // run in the workspace; $SOLVE_TOOL_DIR is the tool's files
	TestCommand  string   `json:"test_command"` // run in the tool's directory; exit 0 = its tests pass
}

type resolveAnswer struct {
	Summary string    `json:"summary"`
	Text    string    `json:"text,omitempty"`
	Files   []fileOut `json:"files,omitempty"`
	Tool    *toolSpec `json:"tool,omitempty"`
}

type judged struct {
	Ref              string  `json:"ref"`
	Passed           bool    `json:"passed"`
	Sigma            float64 `json:"sigma" jsonschema:"minimum=0,maximum=1"`
	Detail           string  `json:"detail"`
	RepairSuggestion string  `json:"repair_suggestion,omitempty"`
}

type verifyAnswer struct {
	Checks      []judged `json:"checks"`
	IsLeaf      bool     `json:"is_leaf"`
	LeafKind    string   `json:"leaf_kind,omitempty"`
	LeafReason  string   `json:"leaf_reason"`
	Feedback    string   `json:"feedback,omitempty"`
	FailureMode string   `json:"failure_mode,omitempty"`
}

type childAnswer struct {
	Ref       string   `json:"ref"`
	Goal      string   `json:"goal"`
	Summary   string   `json:"summary"`
	Weight    float64  `json:"weight" jsonschema:"exclusiveMinimum=0"`
	DependsOn []string `json:"depends_on"`
}

type decomposeAnswer struct {
	Children  []childAnswer `json:"children"`
	Rationale string        `json:"rationale"`
}

type gapAnswer struct {
	CapabilityTag    string   `json:"capability_tag"`
	ResolverType     string   `json:"resolver_type" jsonschema:"enum=digital,enum=physical,enum=hybrid"`
	BuildConstraints []string `json:"build_constraints"`
	Rationale        string   `json:"rationale"`
}

type conflictAnswer struct {
	Leaves   []string        `json:"leaves"` // refs l1, l2, …
	Coupling []newConstraint `json:"coupling_constraints"`
	Reason   string          `json:"reason"`
}

type consistencyAnswer struct {
	Verdict   string           `json:"verdict" jsonschema:"enum=SAT,enum=UNSAT"`
	Conflicts []conflictAnswer `json:"conflicts"`
}

type assembleAnswer struct {
	Summary string `json:"summary"`
}

type synthesizeAnswer struct {
	Candidates []newConstraint `json:"candidates"`
	Questions  []string        `json:"questions"`
}
