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

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// stepCtx is one node step: the node as read, and what the step's paid
// calls on it cost (each call's spend is settled in the ledger as it
// returns; the step's other effects are committed together).
type stepCtx struct {
	e                    *engine
	st                   *store.Store
	n                    *store.Node
	spentCost, spentTime float64
}

// step runs the node's next action (spec §2 next_action, §5).
func (e *engine) step(ctx context.Context, id string) stepResult {
	n, err := e.st.Node(ctx, id)
	if err != nil {
		return stepResult{node: id, err: err}
	}
	s := &stepCtx{e: e, st: e.st, n: n}
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
	if err != nil && ctx.Err() == nil {
		// A node invalidated while its step ran (an ancestor was reopened
		// by another worker): what the step did is void, the spend of its
		// calls is in the ledger, and the scheduler reloads the tree.
		if now, lerr := e.st.Node(ctx, id); lerr == nil && now.Invalidated && !n.Invalidated {
			return stepResult{node: id, reload: true}
		}
	}
	if err != nil {
		r.err = fmt.Errorf("node %s (%s) in %s: %w", store.Short(id), n.Summary, n.Status, err)
	}
	return r
}

// commit writes the step's effects in one transaction.
func (s *stepCtx) commit(ctx context.Context, fn func(tx *store.Tx) error) error {
	err := s.st.Write(ctx, func(tx *store.Tx) error {
		// Fenced: a process that lost the run's lease commits nothing.
		if err := tx.HoldsLease(ctx, s.e.root, s.e.owner); err != nil {
			return err
		}
		return fn(tx)
	})
	if err != nil {
		return err
	}
	s.e.crashPoint()
	return nil
}

// move is a checked transition; a refused one is logged (outside the
// transaction, so the record survives its rollback) and returned. Any
// other error (a serialization failure, which Store.Write runs again) is
// returned alone: no transition was refused.
func (s *stepCtx) move(ctx context.Context, tx *store.Tx, from, to string) error {
	err := tx.Transition(ctx, s.n.ID, from, to)
	if _, refused := errors.AsType[*store.RefusedTransition](err); refused {
		if lerr := s.st.Log(ctx, 1, s.n.ID, fmt.Sprintf("Node %s: REJECTED transition %s → %s", store.Short(s.n.ID), from, to), map[string]any{"error": err.Error()}); lerr != nil {
			return errors.Join(err, lerr)
		}
	}
	return err
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
	if errors.Is(err, errDenied) || errors.Is(err, errOutOfTime) {
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
	var a IdentifyAnswer
	var problems []string
	for ask := 1; ; ask++ {
		c := &Call{Op: OpIdentify, Constraints: core, Inherited: inherited, History: s.history(ctx), Depth: depth}
		if ask > 1 {
			c.Attempt, c.Feedback = ask, problems
		}
		out, err := s.call(ctx, ClaudeCodeID, c)
		if err != nil {
			return s.failed(ctx, err, OpIdentify)
		}
		if err := json.Unmarshal(out.Answer, &a); err != nil {
			return stepResult{}, fmt.Errorf("%s answer: %w", OpIdentify, err)
		}
		problems = exprProblems(a.Constraints)
		if len(problems) == 0 || ask > 1 {
			break
		}
		// An expression that can never be evaluated would fail every
		// verification, whatever the resolver does: asked again once.
		msg := fmt.Sprintf("Node %s: IDENTIFY proposed an expression the kernel cannot evaluate (%s); asking again", store.Short(n.ID), strings.Join(problems, "; "))
		s.e.progress("%s", msg)
		if err := s.st.Log(ctx, 1, n.ID, msg, nil); err != nil {
			return stepResult{}, err
		}
	}
	// Still not an expression: the verifier judges the condition as written.
	for i, c := range a.Constraints {
		if c.Type == store.Logic && c.Check == "" && c.Expr != "" && exprProblem(c.Expr) != "" {
			a.Constraints[i].Type, a.Constraints[i].Expr = store.Semantic, ""
			a.Constraints[i].Rubric = strings.TrimSpace(c.Rubric + " (as written: " + c.Expr + ")")
		}
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

// exprProblems lists the proposed logic constraints whose expression can
// never be evaluated, each with the parser's reason.
func exprProblems(cs []NewConstraint) []string {
	var out []string
	for i, c := range cs {
		if c.Type == store.Logic && c.Check == "" && c.Expr != "" {
			if p := exprProblem(c.Expr); p != "" {
				out = append(out, fmt.Sprintf("constraint %d (%s): %s; write a condition over %s in plain numbers", i+1, c.Title, p, metricDescription))
			}
		}
	}
	return out
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
	var ignored []string                      // refs that name no eligible constraint: noise, said so
	for _, ref := range a.Selected {
		i := slices.IndexFunc(eligible, func(c ConstraintView) bool { return c.Ref == ref })
		if i < 0 {
			ignored = append(ignored, ref)
			continue
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
			"selected": selected, "ignored": ignored, "rationale": a.Rationale}); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusSelectingCons, store.StatusSelectingResolve); err != nil {
			return err
		}
		if len(ignored) > 0 {
			return s.flow(ctx, tx, "SELECT_CONSTRAINTS → %d of %d (ignored %s: not eligible constraints, c1..c%d)", len(selected), len(eligible), strings.Join(ignored, ", "), len(eligible))
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
	var a RouteAnswer
	var problem string
	for ask := 1; ; ask++ {
		c := &Call{Op: OpRoute, Constraints: cs, Candidates: cands, History: s.history(ctx), Params: map[string]any{"required_capabilities": caps}}
		if ask > 1 {
			c.Attempt, c.Feedback = ask, []string{problem}
		}
		out, err = s.call(ctx, ClaudeCodeID, c)
		if err != nil {
			return s.failed(ctx, err, OpRoute)
		}
		a = RouteAnswer{}
		if err := json.Unmarshal(out.Answer, &a); err != nil {
			return stepResult{}, fmt.Errorf("%s answer: %w", OpRoute, err)
		}
		if a.Gap != nil || slices.ContainsFunc(cands, func(c ResolverView) bool { return c.ID == a.ResolverID }) {
			break
		}
		// A registered tool is usable whenever its capability matches,
		// whether or not the capability match put it among the candidates.
		if ok, err := s.usable(ctx, a.ResolverID, a.Capability, caps); err != nil {
			return stepResult{}, err
		} else if ok {
			break
		}
		problem = fmt.Sprintf("resolver %q is not among the candidates and no registered resolver of that id provides %q; pick a candidate, or answer a gap", a.ResolverID, a.Capability)
		if ask > decomposeReasks {
			return s.failed(ctx, Permanent("invalid_format", errors.New(problem)), OpRoute)
		}
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
	return s.plan(ctx, a, false)
}

// usable: a registered resolver provides the capability the router names
// (or, when it names none, one the node requires).
func (s *stepCtx) usable(ctx context.Context, id, capability string, required []string) (bool, error) {
	if id == "" || id == SelfModelID {
		return false, nil
	}
	entries, err := s.st.Resolvers(ctx, id)
	if err != nil || len(entries) != 1 {
		return false, err
	}
	if capability != "" {
		return slices.Contains(entries[0].Capabilities, capability), nil
	}
	return slices.ContainsFunc(required, func(c string) bool { return slices.Contains(entries[0].Capabilities, c) }), nil
}

// plan persists the tool plan and moves selecting_resolver → resolving.
func (s *stepCtx) plan(ctx context.Context, a RouteAnswer, fresh bool) (stepResult, error) {
	n := s.n
	params := a.Params
	if params == nil {
		params = map[string]any{}
	}
	plan := map[string]any{"steps": []map[string]any{{"resolver_id": a.ResolverID, "capability": a.Capability,
		"inputs": map[string]any{"input_artifact_ids": plainjson.List(n.Inputs)}, "params": params}}, "policy": map[string]any{"parallel": false}}
	err := s.commit(ctx, func(tx *store.Tx) error {
		content, err := store.JSONText(plan)
		if err != nil {
			return fmt.Errorf("the tool plan: %w", err)
		}
		id, err := tx.PutArtifact(ctx, store.NewArtifact{Node: n.ID, Type: "tool_plan", Format: "json", Content: []byte(content),
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
	Steps []planStep `json:"steps"`
}

// planStep is one step of a tool plan.
type planStep struct {
	ResolverID string         `json:"resolver_id"`
	Params     map[string]any `json:"params"`
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
	history, err := s.attemptViews(ctx)
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
	// A resolver that acts on the workspace (codex-tools-0, a built or
	// hired tool) works in the attempt's own copy; what it changed there
	// becomes the attempt's files.
	var att *attemptDir
	if s.e.cfg.Workspace != "" && slices.ContainsFunc(plan.Steps, func(st planStep) bool { return st.ResolverID != ClaudeCodeID }) {
		if att, err = s.e.attemptWorkspace(n.ID, nil); err != nil {
			return stepResult{}, err
		}
		defer att.remove()
	}
	c := &Call{Op: OpResolve, Constraints: cs, Inputs: inputs, Feedback: feedback, Attempts: history, Attempt: index}
	out, failure := s.runPlan(ctx, plan.Steps, c, att)
	var ans ResolveAnswer
	if failure == nil {
		if err := json.Unmarshal(out.Answer, &ans); err != nil {
			failure = Permanent("invalid_format", fmt.Errorf("%s answered %s with no resolve answer: %w", final, OpResolve, err))
		}
	}
	var base map[string]string
	if failure == nil {
		if base, failure, err = s.attemptFiles(att, &ans, out); err != nil {
			return stepResult{}, err
		}
	}
	if failure != nil {
		return s.resolveFailed(ctx, index, final, feedback, failure)
	}
	return s.resolved(ctx, index, final, feedback, ans, out, base)
}

// runPlan calls the plan's resolvers in order, each step's answer the
// next step's only input, until one fails; c is the call every step
// shares (its history is read again before each step).
func (s *stepCtx) runPlan(ctx context.Context, steps []planStep, c *Call, att *attemptDir) (*Output, error) {
	inputs := c.Inputs
	var out *Output
	var failure error
	for _, st := range steps {
		sc := &Call{Op: c.Op, Constraints: c.Constraints, Inputs: inputs, Feedback: c.Feedback, Attempts: c.Attempts, History: s.history(ctx), Params: st.Params, Attempt: c.Attempt}
		if att != nil {
			sc.Workspace = att.dir
		}
		out, failure = s.call(ctx, st.ResolverID, sc)
		if failure != nil {
			break
		}
		inputs = []ArtifactView{{Type: "output", Format: "json", Content: string(out.Answer)}}
	}
	return out, failure
}

// attemptFiles adds to the answer the files the resolver changed in the
// attempt's copy, and returns what the workspace held, for each file the
// attempt writes, when the attempt was made: its merge requires that it
// still does. failure is the answer's fault (an UNSAT attempt); err stops
// the run.
func (s *stepCtx) attemptFiles(att *attemptDir, ans *ResolveAnswer, out *Output) (base map[string]string, failure, err error) {
	base = map[string]string{}
	if att != nil {
		changed, b, err := att.changed()
		if err != nil {
			return nil, nil, err
		}
		ans.Files, base = mergeFiles(ans.Files, changed), b
		if out.Answer, err = json.Marshal(*ans); err != nil {
			return nil, nil, err
		}
	}
	if s.e.cfg.Workspace != "" {
		for _, f := range ans.Files {
			if _, ok := base[f.Path]; !ok {
				h, err := workspace.Hash(s.e.cfg.Workspace, f.Path)
				if err != nil {
					// A path the workspace refuses (no name, or through a
					// link out of it) is the answer's fault: an UNSAT attempt.
					return base, Permanent("invalid_files", err), nil
				}
				base[f.Path] = h
			}
		}
	}
	return base, nil, nil
}

// resolveFailed records a permanent resolver error as an UNSAT attempt
// with its failure mode (it is verified at once); any other error goes
// to HIRE or stops the run (failed).
func (s *stepCtx) resolveFailed(ctx context.Context, index int, final string, feedback []string, failure error) (stepResult, error) {
	re, perm := isPermanent(failure)
	if !perm {
		return s.failed(ctx, failure, OpResolve)
	}
	v := Verification{Verdict: store.UNSAT, SigmaV: 0, Checks: []ConstraintCheck{}, TraceSummary: failure.Error(), Feedback: failure.Error(), FailureMode: re.Mode}
	err := s.commit(ctx, func(tx *store.Tx) error {
		aid, err := s.attempt(ctx, tx, index, final, "", feedback)
		if err != nil {
			return err
		}
		if err := tx.SetAttemptVerdict(ctx, aid, v, store.UNSAT, 0); err != nil {
			return err
		}
		if err := kg.Failed(ctx, &tx.Conn, aid, slug(re.Mode)); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusResolving, store.StatusVerifying); err != nil {
			return err
		}
		return s.flow(ctx, tx, "RESOLVE %d/%d using %s → error (%s)", index, s.n.MaxAttempts, final, re.Mode)
	})
	return stepResult{status: store.StatusVerifying}, err
}

// resolved stores the answer as the attempt's output artifact, with the
// workspace hashes its merge is checked against, and moves to verify.
func (s *stepCtx) resolved(ctx context.Context, index int, final string, feedback []string, ans ResolveAnswer, out *Output, base map[string]string) (stepResult, error) {
	n := s.n
	typ := "doc"
	if len(ans.Files) > 0 {
		typ = "code"
	}
	err := s.commit(ctx, func(tx *store.Tx) error {
		meta := map[string]any{"summary": ans.Summary}
		if len(base) > 0 {
			meta["base_sha256"] = base
		}
		art, err := tx.PutArtifact(ctx, store.NewArtifact{Node: n.ID, Type: typ, Format: "json", Content: out.Answer, ResolverID: final,
			ConstraintIDs: n.Selected, InputIDs: n.Inputs, Metadata: meta})
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
	content, err := store.JSONText(ResolveAnswer{Summary: clip.Line(text, 80), Text: text})
	if err != nil {
		return stepResult{}, err
	}
	err = s.commit(ctx, func(tx *store.Tx) error {
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
	a.Cost, a.Seconds = s.spentCost, s.spentTime
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
	if last.Verification == "" {
		return nil, nil
	}
	var ver Verification
	if err := json.Unmarshal([]byte(last.Verification), &ver); err != nil {
		return nil, fmt.Errorf("attempt %s: verification: %w", last.ID, err)
	}
	var out []string
	if last.FailureMode == kg.FailureID(lowConfidence) {
		out = append(out, fmt.Sprintf("confidence gating: the last output was verified with sigma_v=%.2f, but the path confidence fell below tau_global=%.2f; give an answer you can verify with more confidence", store.Value(last.SigmaV), s.n.TauGlobal))
	}
	for _, c := range ver.Checks {
		if !c.Passed {
			out = append(out, fmt.Sprintf("%s failed (sigma %.2f): %s", c.Ref, c.SigmaI, checkText(c)))
		}
	}
	if ver.Feedback != "" {
		out = append(out, ver.Feedback)
	}
	return out, nil
}

// attemptViews is the node's whole attempt history (Step 9): each earlier
// attempt with its resolver, verdict, violation trace and output.
func (s *stepCtx) attemptViews(ctx context.Context) ([]AttemptView, error) {
	atts, err := s.st.Attempts(ctx, s.n.ID)
	if err != nil {
		return nil, err
	}
	var out []AttemptView
	for _, a := range atts {
		av := AttemptView{Index: a.Index, Resolver: a.Resolver, Verdict: a.Verdict, SigmaV: store.Value(a.SigmaV), FailureMode: a.FailureMode}
		if a.Verification != "" {
			var v Verification
			if err := json.Unmarshal([]byte(a.Verification), &v); err != nil {
				return nil, fmt.Errorf("attempt %s: verification: %w", a.ID, err)
			}
			for _, c := range v.Checks {
				if !c.Passed {
					av.Violations = append(av.Violations, fmt.Sprintf("%s failed (sigma %.2f): %s", c.Ref, c.SigmaI, checkText(c)))
				}
			}
			if v.Feedback != "" {
				av.Violations = append(av.Violations, v.Feedback)
			}
		}
		if a.Output != "" {
			_, data, err := s.st.Artifact(ctx, a.Output)
			if err != nil {
				return nil, err
			}
			av.Output = outputText(data)
		}
		out = append(out, av)
	}
	return out, nil
}

// outputText is an attempt's output as a retry reads it: its summary, text
// and files (each clipped), not JSON.
func outputText(data []byte) string {
	var ans ResolveAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return clip.Text(string(data), 4000)
	}
	var b strings.Builder
	if ans.Summary != "" {
		b.WriteString(ans.Summary + "\n")
	}
	if ans.Text != "" {
		b.WriteString(clip.Text(ans.Text, 2000) + "\n")
	}
	for _, f := range ans.Files {
		switch {
		case f.Deleted:
			fmt.Fprintf(&b, "--- %s (deleted)\n", f.Path)
		case f.Encoding != "":
			fmt.Fprintf(&b, "--- %s (%s, %d bytes)\n", f.Path, f.Encoding, len(f.Content))
		default:
			fmt.Fprintf(&b, "--- %s\n%s\n", f.Path, clip.Text(f.Content, 3000))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// mergeFiles is the answer's files with the changes read from the
// attempt's directory (which win: they are what is on disk).
func mergeFiles(answer, changed []workspace.File) []workspace.File {
	out := append([]workspace.File{}, changed...)
	for _, f := range answer {
		if !slices.ContainsFunc(changed, func(c workspace.File) bool { return c.Path == f.Path }) {
			out = append(out, f)
		}
	}
	return out
}

// fingerprint is sha256(canonical_json({capability_tag, build_constraints, budget_class})).
func fingerprint(tag string, constraints []string, class string) string {
	// Strings only: JSON holds them all, so the marshal cannot fail.
	data, _ := json.Marshal(map[string]any{"budget_class": class, "build_constraints": plainjson.List(constraints), "capability_tag": tag})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
