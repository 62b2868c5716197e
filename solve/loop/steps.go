package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/store"
)

// stepCtx is one node step: the node as read, its budget session, and
// the tier-3 rows of the resolver calls made, all committed together.
type stepCtx struct {
	e      *engine
	st     *store.Store
	n      *store.Node
	budget *budgetSession
	io     []map[string]any
}

// step runs the node's next action (spec §2 next_action, §5).
func (e *engine) step(ctx context.Context, id string) stepResult {
	n, err := e.st.Node(ctx, id)
	if err != nil {
		return stepResult{node: id, err: err}
	}
	b, err := newBudget(ctx, e.st, id, n.Parent)
	if err != nil {
		return stepResult{node: id, err: err}
	}
	s := &stepCtx{e: e, st: e.st, n: n, budget: b}
	var r stepResult
	switch n.Status {
	case store.StatusPending, store.StatusIdentifying:
		r, err = s.identify(ctx)
	case store.StatusSelectingCons:
		r, err = s.selectConstraints(ctx)
	case store.StatusSelectingResolve:
		r, err = s.route(ctx)
	case store.StatusResolving:
		r, err = s.resolve(ctx)
	case store.StatusVerifying:
		r, err = s.verify(ctx)
	case store.StatusDecomposing:
		r, err = s.decompose(ctx)
	default:
		r = stepResult{status: n.Status}
	}
	r.node = id
	if err != nil {
		r.err = fmt.Errorf("node %s (%s) in %s: %w", store.Short(id), n.Summary, n.Status, err)
	}
	return r
}

var errDenied = errors.New("budget pre_check DENIED")

// retries is how many times a retryable resolver error is tried in all.
const retries = 3

// call is the budget wrapper of every resolver call (B1/B2): estimate,
// pre_check, run (retryable errors retried), record.
func (s *stepCtx) call(ctx context.Context, resolverID string, c *Call) (*Output, error) {
	r, err := s.e.resolver(ctx, resolverID)
	if err != nil {
		return nil, err
	}
	c.Goal, c.Summary, c.Workspace, c.Model, c.Node = s.n.Goal, s.n.Summary, s.e.cfg.Workspace, s.e.cfg.Model, s.n.ID
	cost, secs := r.Estimate(ctx, c)
	if !s.budget.preCheck(cost, secs) {
		return nil, fmt.Errorf("%w: %s %s estimated $%.4f / %.0fs, remaining $%.4f / %.0fs", errDenied, resolverID, c.Op, cost, secs,
			s.budget.own.RemainingCost(), s.budget.own.RemainingTime())
	}
	var out *Output
	for try := 1; ; try++ {
		out, err = r.Resolve(ctx, c)
		if err == nil {
			break
		}
		var re *ResolverError
		if errors.As(err, &re) && (re.Cost > 0 || re.Seconds > 0) {
			s.budget.record(resolverID, c.Op, re.Cost, re.Seconds)
		}
		if _, perm := isPermanent(err); perm || try == retries || ctx.Err() != nil {
			s.logIO(resolverID, c.Op, nil, err)
			return nil, err
		}
		time.Sleep(retryWait * time.Duration(try))
	}
	s.e.crashPoint()
	s.budget.record(resolverID, c.Op, out.Cost, out.Seconds)
	s.logIO(resolverID, c.Op, out, nil)
	return out, nil
}

func (s *stepCtx) logIO(resolver, op string, out *Output, err error) {
	d := map[string]any{"resolver": resolver, "op": op, "raw_io_policy": "redacted_by_default"}
	if out != nil {
		d["cost"], d["time_seconds"], d["llm_calls"] = out.Cost, out.Seconds, out.LLMCalls
	}
	if err != nil {
		d["error"] = err.Error()
	}
	s.io = append(s.io, d)
}

// commit writes the step's effects and the ledger entries and tier-3 rows
// not yet committed, in one transaction.
func (s *stepCtx) commit(ctx context.Context, fn func(tx *store.Tx) error) error {
	err := s.st.Write(ctx, func(tx *store.Tx) error {
		if err := s.budget.commit(ctx, tx); err != nil {
			return err
		}
		for _, d := range s.io {
			if err := tx.Log(ctx, 3, s.n.ID, fmt.Sprintf("%s %s", d["resolver"], d["op"]), d); err != nil {
				return err
			}
		}
		return fn(tx)
	})
	if err != nil {
		return err
	}
	// Committed: a later commit of the same step must not write these
	// spends and call rows again.
	s.budget.entries, s.io = nil, nil
	s.e.crashPoint()
	return nil
}

// move is a checked transition; a refused one is logged (outside the
// transaction, so the record survives its rollback) and returned.
func (s *stepCtx) move(ctx context.Context, tx *store.Tx, from, to string) error {
	if err := tx.Transition(ctx, s.n.ID, from, to); err != nil {
		if lerr := s.st.Log(ctx, 1, s.n.ID, fmt.Sprintf("Node %s: REJECTED transition %s → %s", store.Short(s.n.ID), from, to), map[string]any{"error": err.Error()}); lerr != nil {
			return errors.Join(err, lerr)
		}
		return err
	}
	return nil
}

func (s *stepCtx) flow(ctx context.Context, tx *store.Tx, format string, args ...any) error {
	msg := fmt.Sprintf("Node %s: ", store.Short(s.n.ID)) + fmt.Sprintf(format, args...)
	s.e.progress("%s", msg)
	return tx.Log(ctx, 1, s.n.ID, msg, nil)
}

// history is the KG context block for the node's goal pattern ("" when
// the graph knows nothing, or cannot be read: the prompt goes without).
func (s *stepCtx) history(ctx context.Context) string {
	c, err := kg.Query(ctx, &s.st.Conn, kg.PatternID(s.n.Summary))
	if err != nil {
		return ""
	}
	return c.Render(s.n.Summary)
}

// failed routes a step to HIRE (over budget or a resolver that cannot do
// the work); other errors stop the run (resumable).
func (s *stepCtx) failed(ctx context.Context, err error, op string) (stepResult, error) {
	if errors.Is(err, errDenied) {
		return s.hire(ctx, hireGap{Tag: "budget", Type: "digital", BudgetClass: "over_budget",
			Constraints: []string{op, s.n.Summary}, Rationale: err.Error()}, "over_budget")
	}
	if re, ok := isPermanent(err); ok {
		return s.hire(ctx, hireGap{Tag: "resolver:" + op, Type: "digital", BudgetClass: "resolver_error",
			Constraints: []string{op, re.Mode}, Rationale: err.Error()}, "resolver_error")
	}
	return stepResult{}, err
}

// ── Step 2: identify constraints ──
func (s *stepCtx) identify(ctx context.Context) (stepResult, error) {
	n := s.n
	if len(n.Eligible) > 0 {
		// Re-entry (after BUILD, HIRE or a reopen): the constraints were
		// identified; the kernel passes through to the next open step.
		to := store.StatusSelectingCons
		if len(n.Selected) > 0 {
			to = store.StatusSelectingResolve
		}
		err := s.commit(ctx, func(tx *store.Tx) error {
			if err := s.passTo(ctx, tx, to); err != nil {
				return err
			}
			return s.flow(ctx, tx, "constraints already identified (%d eligible, %d selected): on to %s", len(n.Eligible), len(n.Selected), to)
		})
		return stepResult{status: to}, err
	}
	inherited, err := constraintViews(ctx, &s.st.Conn, n.Inherited, "i")
	if err != nil {
		return stepResult{}, err
	}
	core, err := constraintViews(ctx, &s.st.Conn, n.Core, "c")
	if err != nil {
		return stepResult{}, err
	}
	depth, err := s.st.Depth(ctx, n.ID)
	if err != nil {
		return stepResult{}, err
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpIdentify, Constraints: core, Inherited: inherited, History: s.history(ctx), Depth: depth})
	if err != nil {
		return s.failed(ctx, err, OpIdentify)
	}
	var a IdentifyAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return stepResult{}, fmt.Errorf("%s answer: %w", OpIdentify, err)
	}
	err = s.commit(ctx, func(tx *store.Tx) error {
		eligible := append([]string{}, n.Core...)
		for _, c := range a.Constraints {
			id, err := insertConstraint(ctx, &tx.Conn, c, "resolver", ClaudeCodeID, nil)
			if err != nil {
				return err
			}
			eligible = append(eligible, id)
		}
		if len(eligible) == 0 {
			// constraint_exhausted: nothing beyond the inherited set.
			id, err := insertConstraint(ctx, &tx.Conn, NewConstraint{Type: store.Semantic, Domain: "goal", Title: "The output achieves the goal as stated", Rubric: n.Goal}, "derived", "kernel", nil)
			if err != nil {
				return err
			}
			eligible = append(eligible, id)
		}
		if err := tx.SetEligible(ctx, n.ID, eligible); err != nil {
			return err
		}
		if err := kg.RecordPattern(ctx, &tx.Conn, n.Summary, s.e.root, a.RequiredCapabilities, s.e.patterns); err != nil {
			return err
		}
		if err := s.passTo(ctx, tx, store.StatusSelectingCons); err != nil {
			return err
		}
		return s.flow(ctx, tx, "IDENTIFY_CONSTRAINTS using %s → %d eligible, needs %s", ClaudeCodeID, len(eligible), strings.Join(a.RequiredCapabilities, ", "))
	})
	return stepResult{status: store.StatusSelectingCons}, err
}

// passChain is the pass-through a returning node walks.
var passChain = []string{store.StatusPending, store.StatusIdentifying, store.StatusSelectingCons, store.StatusSelectingResolve}

// passTo walks pending → identifying → selecting_constraints →
// selecting_resolver as far as to, each a checked transition.
func (s *stepCtx) passTo(ctx context.Context, tx *store.Tx, to string) error {
	from := slices.Index(passChain, s.n.Status)
	end := slices.Index(passChain, to)
	for i := from; i < end; i++ {
		if err := s.move(ctx, tx, passChain[i], passChain[i+1]); err != nil {
			return err
		}
	}
	s.n.Status = to
	return nil
}

// ── Step 3: select constraints (parsimony) ──
func (s *stepCtx) selectConstraints(ctx context.Context) (stepResult, error) {
	n := s.n
	eligible, err := constraintViews(ctx, &s.st.Conn, n.Eligible, "c")
	if err != nil {
		return stepResult{}, err
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpSelect, Constraints: eligible, History: s.history(ctx)})
	if err != nil {
		return s.failed(ctx, err, OpSelect)
	}
	var a SelectAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return stepResult{}, fmt.Errorf("%s answer: %w", OpSelect, err)
	}
	selected := append([]string{}, n.Core...) // the irreducible core is always selected
	for _, ref := range a.Selected {
		i := slices.IndexFunc(eligible, func(c ConstraintView) bool { return c.Ref == ref })
		if i < 0 {
			return s.failed(ctx, Permanent("invalid_format", fmt.Errorf("selected %q is not an eligible constraint (c1..c%d)", ref, len(eligible))), OpSelect)
		}
		selected = union(selected, []string{eligible[i].ID})
	}
	if len(selected) == 0 {
		selected = append(selected, n.Eligible[0])
	}
	err = s.commit(ctx, func(tx *store.Tx) error {
		if err := tx.SetSelected(ctx, n.ID, selected); err != nil {
			return err
		}
		if err := tx.Log(ctx, 2, n.ID, "constraint selection", map[string]any{"decision": "constraint_selection", "eligible": len(eligible),
			"selected": selected, "rationale": a.Rationale}); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusSelectingCons, store.StatusSelectingResolve); err != nil {
			return err
		}
		return s.flow(ctx, tx, "SELECT_CONSTRAINTS → %d of %d", len(selected), len(eligible))
	})
	return stepResult{status: store.StatusSelectingResolve}, err
}

// ── Step 4: select resolver (tool plan) ──
func (s *stepCtx) route(ctx context.Context) (stepResult, error) {
	n := s.n
	// A resolver delivered by BUILD or HIRE for this node is used directly
	// (lookup-before-build found it).
	id, why, err := s.delivered(ctx)
	if err != nil {
		return stepResult{}, err
	}
	if id != "" {
		return s.plan(ctx, RouteAnswer{ResolverID: id, Rationale: why}, true)
	}
	caps, err := kg.RequiredCapabilities(ctx, &s.st.Conn, n.Summary)
	if err != nil {
		return stepResult{}, err
	}
	out, err := s.call(ctx, SelfModelID, &Call{Op: OpSelfModel, Params: map[string]any{"capabilities": caps}})
	if err != nil {
		return s.failed(ctx, err, OpSelfModel)
	}
	var cands []ResolverView
	if err := json.Unmarshal(out.Answer, &cands); err != nil {
		return stepResult{}, fmt.Errorf("%s answer: %w", OpSelfModel, err)
	}
	cs, err := constraintViews(ctx, &s.st.Conn, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	out, err = s.call(ctx, ClaudeCodeID, &Call{Op: OpRoute, Constraints: cs, Candidates: cands, History: s.history(ctx), Params: map[string]any{"required_capabilities": caps}})
	if err != nil {
		return s.failed(ctx, err, OpRoute)
	}
	var a RouteAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return stepResult{}, fmt.Errorf("%s answer: %w", OpRoute, err)
	}
	if a.Gap != nil {
		// No candidate can do the work: lookup-before-build, then HIRE
		// (a BUILD from selecting_resolver has no valid transition).
		found, err := kg.LookupBeforeBuild(ctx, &s.st.Conn, a.Gap.CapabilityTag)
		if err != nil {
			return stepResult{}, err
		}
		if len(found) > 0 {
			s.e.progress("Node %s: LOOKUP-BEFORE-BUILD: %s provides %s; skip BUILD", store.Short(n.ID), found[0], a.Gap.CapabilityTag)
			return s.plan(ctx, RouteAnswer{ResolverID: found[0], Capability: a.Gap.CapabilityTag, Rationale: "lookup-before-build: " + found[0] + " provides " + a.Gap.CapabilityTag}, false)
		}
		return s.hire(ctx, hireGap{Tag: a.Gap.CapabilityTag, Type: a.Gap.ResolverType, Constraints: a.Gap.BuildConstraints, BudgetClass: "capability", Rationale: a.Gap.Rationale}, "capability_gap")
	}
	if !slices.ContainsFunc(cands, func(c ResolverView) bool { return c.ID == a.ResolverID }) {
		return s.failed(ctx, Permanent("invalid_format", fmt.Errorf("resolver %q is not among the candidates", a.ResolverID)), OpRoute)
	}
	return s.plan(ctx, a, false)
}

// plan persists the tool plan and moves selecting_resolver → resolving.
func (s *stepCtx) plan(ctx context.Context, a RouteAnswer, fresh bool) (stepResult, error) {
	n := s.n
	params := a.Params
	if params == nil {
		params = map[string]any{}
	}
	plan := map[string]any{"steps": []map[string]any{{"resolver_id": a.ResolverID, "capability": a.Capability,
		"inputs": map[string]any{"input_artifact_ids": nonNil(n.Inputs)}, "params": params}}, "policy": map[string]any{"parallel": false}}
	err := s.commit(ctx, func(tx *store.Tx) error {
		id, err := tx.PutArtifact(ctx, store.NewArtifact{Node: n.ID, Type: "tool_plan", Format: "json", Content: []byte(store.JSONText(plan)),
			ResolverID: ClaudeCodeID, ConstraintIDs: n.Selected, InputIDs: n.Inputs})
		if err != nil {
			return err
		}
		maxA := n.MaxAttempts
		if fresh {
			maxA = n.AttemptCount + s.e.cfg.TMax // a new resolver gets its own T_max attempts
		}
		if err := tx.SetPlan(ctx, n.ID, id, a.ResolverID, maxA); err != nil {
			return err
		}
		if err := tx.Log(ctx, 2, n.ID, "resolver selection", map[string]any{"decision": "resolver_selection", "chosen": a.ResolverID, "rationale": a.Rationale}); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusSelectingResolve, store.StatusResolving); err != nil {
			return err
		}
		return s.flow(ctx, tx, "SELECT_RESOLVER → %s", a.ResolverID)
	})
	return stepResult{status: store.StatusResolving}, err
}

// delivered is a resolver built or hired for this node and not yet tried.
func (s *stepCtx) delivered(ctx context.Context) (string, string, error) {
	id, err := s.st.DeliveredResolver(ctx, s.n.ID)
	if err != nil || id != "" {
		return id, "delivered by HIRE", err
	}
	id, err = s.st.BuiltResolver(ctx, s.n.ID)
	if err != nil || id != "" {
		return id, "built by BUILD for this node", err
	}
	return "", "", nil
}

// toolPlan is the part of a tool_plan artifact the loop reads.
type toolPlan struct {
	Steps []struct {
		ResolverID string         `json:"resolver_id"`
		Params     map[string]any `json:"params"`
	} `json:"steps"`
}

// ── Step 5: resolve ──
func (s *stepCtx) resolve(ctx context.Context) (stepResult, error) {
	n := s.n
	_, data, err := s.st.Artifact(ctx, n.Plan)
	if err != nil {
		return stepResult{}, err
	}
	var plan toolPlan
	if err := json.Unmarshal(data, &plan); err != nil || len(plan.Steps) == 0 {
		return stepResult{}, fmt.Errorf("tool plan %s has no steps: %v", n.Plan, err)
	}
	cs, err := constraintViews(ctx, &s.st.Conn, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	inputs, err := artifactViews(ctx, &s.st.Conn, n.Inputs)
	if err != nil {
		return stepResult{}, err
	}
	feedback, err := s.feedback(ctx)
	if err != nil {
		return stepResult{}, err
	}
	index := n.AttemptCount + 1
	if id, text, err := s.untriedSuggestion(ctx); err != nil {
		return stepResult{}, err
	} else if id != "" {
		return s.candidate(ctx, index, id, text, feedback)
	}
	final := plan.Steps[len(plan.Steps)-1].ResolverID
	var out *Output
	var failure error
	for _, st := range plan.Steps {
		out, failure = s.call(ctx, st.ResolverID, &Call{Op: OpResolve, Constraints: cs, Inputs: inputs, Feedback: feedback, History: s.history(ctx), Params: st.Params, Attempt: index})
		if failure != nil {
			break
		}
		inputs = []ArtifactView{{Type: "output", Format: "json", Content: string(out.Answer)}}
	}
	var ans ResolveAnswer
	if failure == nil {
		if err := json.Unmarshal(out.Answer, &ans); err != nil {
			failure = Permanent("invalid_format", fmt.Errorf("%s answered %s with no resolve answer: %w", final, OpResolve, err))
		}
	}
	if failure != nil {
		re, perm := isPermanent(failure)
		if !perm {
			return s.failed(ctx, failure, OpResolve)
		}
		// A permanent error is an UNSAT attempt with its failure mode.
		v := Verification{Verdict: store.UNSAT, SigmaV: 0, Checks: []ConstraintCheck{}, TraceSummary: failure.Error(), Feedback: failure.Error(), FailureMode: re.Mode}
		err = s.commit(ctx, func(tx *store.Tx) error {
			aid, err := s.attempt(ctx, tx, index, final, "", feedback)
			if err != nil {
				return err
			}
			if err := tx.SetAttemptVerdict(ctx, aid, v, store.UNSAT, 0, "failure:"+re.Mode); err != nil {
				return err
			}
			if err := s.move(ctx, tx, store.StatusResolving, store.StatusVerifying); err != nil {
				return err
			}
			return s.flow(ctx, tx, "RESOLVE %d/%d using %s → error (%s)", index, n.MaxAttempts, final, re.Mode)
		})
		return stepResult{status: store.StatusVerifying}, err
	}
	typ := "doc"
	if len(ans.Files) > 0 {
		typ = "code"
	}
	err = s.commit(ctx, func(tx *store.Tx) error {
		art, err := tx.PutArtifact(ctx, store.NewArtifact{Node: n.ID, Type: typ, Format: "json", Content: out.Answer, ResolverID: final,
			ConstraintIDs: n.Selected, InputIDs: n.Inputs, Metadata: map[string]any{"summary": ans.Summary}})
		if err != nil {
			return err
		}
		if _, err := s.attempt(ctx, tx, index, final, art, feedback); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusResolving, store.StatusVerifying); err != nil {
			return err
		}
		return s.flow(ctx, tx, "RESOLVE %d/%d using %s → %s", index, n.MaxAttempts, final, clip.Line(ans.Summary, 80))
	})
	return stepResult{status: store.StatusVerifying}, err
}

// untriedSuggestion is a --suggest input of the node not yet scored as an
// attempt of its own.
func (s *stepCtx) untriedSuggestion(ctx context.Context) (string, string, error) {
	for _, id := range s.n.Inputs {
		a, data, err := s.st.Artifact(ctx, id)
		if err != nil {
			return "", "", err
		}
		if a.Type != "suggestion" {
			continue
		}
		tried, err := s.st.SuggestionTried(ctx, s.n.ID, id)
		if err != nil {
			return "", "", err
		}
		if !tried {
			return id, string(data), nil
		}
	}
	return "", "", nil
}

// candidate records a human suggestion as an attempt whose output is the
// suggestion itself, a plain doc artifact: verify scores it against the
// constraints like any other output (nothing tells the verifier who wrote
// it), and an UNSAT verdict feeds the next attempt like any other.
func (s *stepCtx) candidate(ctx context.Context, index int, suggestion, text string, feedback []string) (stepResult, error) {
	n := s.n
	content := store.JSONText(ResolveAnswer{Summary: clip.Line(text, 80), Text: text})
	err := s.commit(ctx, func(tx *store.Tx) error {
		art, err := tx.PutArtifact(ctx, store.NewArtifact{Node: n.ID, Type: "doc", Format: "json", Content: []byte(content), ResolverID: CandidateID,
			ConstraintIDs: n.Selected, InputIDs: []string{suggestion}, Metadata: map[string]any{"summary": clip.Line(text, 80), "candidate_of": suggestion}})
		if err != nil {
			return err
		}
		if _, err := s.attempt(ctx, tx, index, CandidateID, art, feedback); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusResolving, store.StatusVerifying); err != nil {
			return err
		}
		return s.flow(ctx, tx, "RESOLVE %d/%d: candidate input scored as an attempt → %s", index, n.MaxAttempts, clip.Line(text, 80))
	})
	return stepResult{status: store.StatusVerifying}, err
}

// attempt inserts the resolution_attempts row with its KG edges; the
// store keeps the node's attempt_count / last_attempt_id / output in step.
func (s *stepCtx) attempt(ctx context.Context, tx *store.Tx, index int, resolver, output string, feedback []string) (string, error) {
	n := s.n
	a := store.NewAttempt{Node: n.ID, Index: index, Resolver: resolver, Plan: n.Plan, Inputs: n.Inputs, Output: output}
	if len(feedback) > 0 {
		a.Feedback = map[string]any{"violations": feedback}
	}
	a.Cost, a.Seconds = s.budget.spent()
	id, _, err := tx.AddAttempt(ctx, a)
	if err != nil {
		return "", err
	}
	gp := kg.PatternID(n.Summary)
	if err := tx.EnsureKGNode(ctx, gp, "goal_pattern", n.Summary, map[string]any{"root_id": s.e.root}); err != nil {
		return "", err
	}
	if err := tx.EnsureKGNode(ctx, "attempt:"+id, "resolution_attempt", fmt.Sprintf("%s attempt %d", clip.Line(n.Summary, 60), index), nil); err != nil {
		return "", err
	}
	if err := tx.AddEdge(ctx, "attempt:"+id, "tried_for", gp, nil); err != nil {
		return "", err
	}
	for _, c := range n.Selected {
		if err := tx.EnsureKGNode(ctx, "constraint:"+c, "constraint", c, nil); err != nil {
			return "", err
		}
		if err := tx.AddEdge(ctx, "attempt:"+id, "used_constraint", "constraint:"+c, nil); err != nil {
			return "", err
		}
	}
	return id, nil
}

// feedback is the violation trace of the last attempt, plus the failure
// modes the KG knows for this goal type (Step 9).
func (s *stepCtx) feedback(ctx context.Context) ([]string, error) {
	if s.n.LastAttempt == "" {
		return nil, nil
	}
	last, err := s.st.Attempt(ctx, s.n.LastAttempt)
	if err != nil {
		return nil, err
	}
	if !last.Verification.Valid {
		return nil, nil
	}
	var ver Verification
	if err := json.Unmarshal([]byte(last.Verification.String), &ver); err != nil {
		return nil, fmt.Errorf("attempt %s: verification: %w", last.ID, err)
	}
	var out []string
	if last.FailureMode == "failure:low_confidence" {
		out = append(out, fmt.Sprintf("confidence gating: the last output was verified with sigma_v=%.2f, but the path confidence fell below tau_global=%.2f; give an answer you can verify with more confidence", last.SigmaV.Float64, s.n.TauGlobal))
	}
	for _, c := range ver.Checks {
		if !c.Passed {
			out = append(out, fmt.Sprintf("%s failed (sigma %.2f): %v", c.Ref, c.SigmaI, c.Detail))
		}
	}
	if ver.Feedback != "" {
		out = append(out, ver.Feedback)
	}
	return out, nil
}

// fingerprint is sha256(canonical_json({capability_tag, build_constraints, budget_class})).
func fingerprint(tag string, constraints []string, class string) string {
	sum := sha256.Sum256([]byte(store.JSONText(map[string]any{"budget_class": class, "build_constraints": nonNil(constraints), "capability_tag": tag})))
	return hex.EncodeToString(sum[:])
}
