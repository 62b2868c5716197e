package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/solve/workspace"
)

// The contract between the loop and its resolvers (spec §2B): the loop
// asks a Resolver to do one operation (a Call) and gets the operation's
// JSON answer and its metered cost (an Output). Implementations live in
// solve/resolver/….

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
	OpRunCheck    = "run_check" // codex-tools-0: run a logic constraint's command; the answer is a workspace.Result
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

// CommandParam is the Call.Params key of the shell command codex-tools-0 runs.
const CommandParam = "command"

// Resolver is the execution contract every tool keeps (spec §2B).
type Resolver interface {
	// Estimate is estimate_cost_time: USD and seconds for the task.
	Estimate(ctx context.Context, c *Call) (cost, seconds float64)
	// Resolve does the task. Errors are *ResolverError (retryable or
	// permanent); any other error is treated as retryable.
	Resolve(ctx context.Context, c *Call) (*Output, error)
}

// Ceiling is implemented by a resolver whose call may cost more than its
// estimate (an LLM answer may use all of max_tokens): the most one call
// may cost. The loop reserves the estimate and, when the node's own
// remaining budget allows, up to the ceiling, and hands the amount reserved
// to the call as Call.MaxCost: a resolver that meters its spend keeps the
// call under it (claude-code-0 lowers max_tokens), so no call overdraws.
type Ceiling interface {
	Ceiling(ctx context.Context, c *Call) float64
}

// Call is one resolver call: an operation on a node, with what it needs.
// Constraints are named c1, c2, … in prompts (never database ids, so a
// prompt is the same whichever run or process sends it).
type Call struct {
	Op          string            `json:"op"`
	Goal        string            `json:"goal"`
	RunGoal     string            `json:"run_goal,omitempty"` // the goal the run was started with, the same in every call of a run
	Summary     string            `json:"summary"`
	Depth       int               `json:"depth"`
	Constraints []ConstraintView  `json:"constraints,omitempty"`
	Inherited   []ConstraintView  `json:"inherited,omitempty"`
	Inputs      []ArtifactView    `json:"inputs,omitempty"`
	Output      *ArtifactView     `json:"output,omitempty"`
	Feedback    []string          `json:"feedback,omitempty"`
	Attempts    []AttemptView     `json:"attempts,omitempty"` // resolve: every earlier attempt of the node (Step 9)
	History     string            `json:"history,omitempty"`
	Candidates  []ResolverView    `json:"candidates,omitempty"`
	Checks      []ConstraintCheck `json:"checks,omitempty"` // verify: the logic checks already run
	Leaves      []LeafView        `json:"leaves,omitempty"`
	Params      map[string]any    `json:"params,omitempty"`
	Attempt     int               `json:"attempt,omitempty"`
	// Workspace is where a command runs: an attempt's own copy of the
	// run's workspace, or the workspace itself for Step 12's checks.
	Workspace string   `json:"-"`
	Env       []string `json:"-"` // added to a command's scrubbed environment
	Model     string   `json:"-"`
	Node      string   `json:"-"`
	// MaxCost is the most the call may cost (USD): what the loop reserved
	// for it. Zero: not capped (a call made outside the loop's budget).
	MaxCost float64 `json:"-"`
	// Tools, when set, is what the run's MCP servers offer the call now
	// (claude-code-0's resolve and verify): handlers named NAME__tool,
	// each call of which the loop logs.
	Tools func(context.Context) []llm.ToolHandler `json:"-"`
}

// AttemptView is one earlier attempt of a node as a retry sees it: what
// was tried, what it produced and why it failed.
type AttemptView struct {
	Index       int      `json:"index"`
	Resolver    string   `json:"resolver"`
	Verdict     string   `json:"verdict"`
	SigmaV      float64  `json:"sigma_v"`
	FailureMode string   `json:"failure_mode,omitempty"`
	Violations  []string `json:"violations,omitempty"`
	Output      string   `json:"output,omitempty"` // the attempt's output (clipped)
}

// ConstraintView is a constraint as a resolver sees it.
type ConstraintView struct {
	Ref     string          `json:"ref"`
	Type    string          `json:"type"`
	Domain  string          `json:"domain"`
	Title   string          `json:"title"`
	Payload json.RawMessage `json:"payload"`
	ID      string          `json:"-"` // kernel.db id, never shown to a resolver
}

// ArtifactView is an artifact's content as a resolver sees it.
type ArtifactView struct {
	Type    string `json:"type"`
	Format  string `json:"format"`
	Content string `json:"content"`
	ID      string `json:"-"`
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
	ID      string  `json:"-"`
}

// Output is what a resolver returns: an operation's JSON answer and its
// metered cost.
type Output struct {
	Answer   json.RawMessage `json:"answer"`
	Cost     float64         `json:"cost"`
	Seconds  float64         `json:"seconds"`
	LLMCalls int             `json:"llm_calls"`
	// Usage is the tokens of the calls' LLM requests (cache writes and
	// reads included); zero for a resolver that asks no model.
	Usage llm.Usage      `json:"usage,omitzero"`
	Meta  map[string]any `json:"meta,omitempty"`
}

// ResolverError classifies a failed resolver call (spec §2B).
type ResolverError struct {
	Permanent bool   // capability mismatch, invalid format: an UNSAT attempt
	Mode      string // failure slug
	Err       error
	Cost      float64   // what the failed call cost (USD)
	Usage     llm.Usage // the tokens of its LLM requests
	Seconds   float64
	LLMCalls  int // LLM requests the failed call made
	// NotInFlight: the call was stopped (cancelled, or at its deadline)
	// while none of its requests awaited an answer (llm.ErrNotInFlight):
	// Cost is all it cost, and its reservation is settled at Cost, not at
	// the amount held.
	NotInFlight bool
	// MaybeBilled: the call's last request got an answer that may have
	// come after the model ran (no answer, a timeout, a 5xx, an error in
	// the stream, llm.MayBeBilled): what it cost is unknown, and its
	// reservation is settled at the amount held, marked unknown.
	MaybeBilled bool
}

func (e *ResolverError) Error() string {
	kind := "retryable"
	if e.Permanent {
		kind = "permanent"
	}
	return fmt.Sprintf("%s resolver error (%s): %v", kind, e.Mode, e.Err)
}

func (e *ResolverError) Unwrap() error { return e.Err }

// Permanent is a permanent resolver error with its failure mode.
func Permanent(mode string, err error) error {
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

// The operations' answers: the JSON a resolver returns for each. Their
// JSON Schemas (llm.AskJSON) are what claude-code-0 shows the model;
// fields without omitempty are required.

// NewConstraint is a constraint a resolver proposes.
type NewConstraint struct {
	Type   string `json:"type" jsonschema:"enum=logic,enum=semantic"`
	Domain string `json:"domain"`
	Title  string `json:"title"`
	// Check is a logic constraint's shell command, run in a copy of the
	// workspace with the output's files written; exit 0 means satisfied.
	Check string `json:"check,omitempty"`
	// Expr is a logic constraint's condition over the node's real spend
	// and time (cost_usd, time_seconds, elapsed_seconds, budget_usd,
	// time_budget_seconds), e.g. "cost_usd <= 0.5", evaluated by the
	// kernel from its ledger.
	Expr   string `json:"expr,omitempty"`
	Rubric string `json:"rubric,omitempty"`
}

// IdentifyAnswer answers OpIdentify (Step 2).
type IdentifyAnswer struct {
	Constraints          []NewConstraint `json:"constraints"`
	RequiredCapabilities []string        `json:"required_capabilities"`
	Rationale            string          `json:"rationale"`
}

// SelectAnswer answers OpSelect (Step 3).
type SelectAnswer struct {
	Selected  []string `json:"selected"` // refs c1, c2, …
	Rationale string   `json:"rationale"`
}

// RouteAnswer answers OpRoute (Step 4).
type RouteAnswer struct {
	ResolverID string         `json:"resolver_id"`
	Capability string         `json:"capability"`
	Params     map[string]any `json:"params,omitempty"`
	Rationale  string         `json:"rationale"`
	// Gap is set instead of a resolver when no candidate can do the work.
	Gap *GapAnswer `json:"gap,omitempty"`
}

// ToolSpec is a built tool: a command the workspace can run.
type ToolSpec struct {
	Label        string   `json:"label"`
	Description  string   `json:"description"`
	Capabilities []string `json:"capabilities"`
	Command      string   `json:"command"`      // run in the workspace; $SOLVE_TOOL_DIR is the tool's files
	TestCommand  string   `json:"test_command"` // run in the tool's directory; exit 0 = its tests pass
	// Network is what the tool needs to reach (host:port, or "all"); it
	// runs without network until a person allows it.
	Network []string `json:"network,omitempty"`
}

// ResolveAnswer answers OpResolve (Step 5).
type ResolveAnswer struct {
	Summary string           `json:"summary"`
	Text    string           `json:"text,omitempty"`
	Files   []workspace.File `json:"files,omitempty"`
	Tool    *ToolSpec        `json:"tool,omitempty"`
}

// Judged is the verifier's verdict on one constraint.
type Judged struct {
	Ref              string  `json:"ref"`
	Passed           bool    `json:"passed"`
	Sigma            float64 `json:"sigma" jsonschema:"minimum=0,maximum=1"`
	Detail           string  `json:"detail"`
	RepairSuggestion string  `json:"repair_suggestion,omitempty"`
}

// VerifyAnswer answers OpVerify (Step 6).
type VerifyAnswer struct {
	Checks      []Judged `json:"checks"`
	IsLeaf      bool     `json:"is_leaf"`
	LeafKind    string   `json:"leaf_kind,omitempty"`
	LeafReason  string   `json:"leaf_reason"`
	Feedback    string   `json:"feedback,omitempty"`
	FailureMode string   `json:"failure_mode,omitempty"`
}

// Child is one subgoal of a decomposition.
type Child struct {
	Ref       string   `json:"ref"`
	Goal      string   `json:"goal"`
	Summary   string   `json:"summary"`
	Weight    float64  `json:"weight" jsonschema:"exclusiveMinimum=0"`
	DependsOn []string `json:"depends_on"`
}

// DecomposeAnswer answers OpDecompose (Step 8).
type DecomposeAnswer struct {
	Children  []Child `json:"children"`
	Rationale string  `json:"rationale"`
}

// GapAnswer answers OpGap (Step 10): the capability a node lacks.
type GapAnswer struct {
	CapabilityTag    string   `json:"capability_tag"`
	ResolverType     string   `json:"resolver_type" jsonschema:"enum=digital,enum=physical,enum=hybrid"`
	BuildConstraints []string `json:"build_constraints"`
	Rationale        string   `json:"rationale"`
}

// Conflict is two or more leaves that disagree, and the coupling
// constraints that would reconcile them.
type Conflict struct {
	Leaves   []string        `json:"leaves"` // refs l1, l2, …
	Coupling []NewConstraint `json:"coupling_constraints"`
	Reason   string          `json:"reason"`
}

// ConsistencyAnswer answers OpConsistency (Step 12).
type ConsistencyAnswer struct {
	Verdict   string     `json:"verdict" jsonschema:"enum=SAT,enum=UNSAT"`
	Conflicts []Conflict `json:"conflicts"`
}

// AssembleAnswer answers OpAssemble (Step 13).
type AssembleAnswer struct {
	Summary string `json:"summary"`
}

// SynthesizeAnswer answers OpSynthesize (Step 1 with --interactive).
type SynthesizeAnswer struct {
	Candidates []NewConstraint `json:"candidates"`
	Questions  []string        `json:"questions"`
}
