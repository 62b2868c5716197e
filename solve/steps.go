package solve

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// stepCtx is one node step: the node as read, its budget session, and
// the tier-3 rows of the resolver calls made, all committed together.
type stepCtx struct {
	e      *engine
	n      *nodeRow
	budget *budgetSession
	io     []map[string]any
}

// step runs the node's next action (spec §2 next_action, §5).
func (e *engine) step(ctx context.Context, id string) stepResult {
	n, err := loadNode(ctx, e.k.db, id)
	if err != nil {
		return stepResult{node: id, err: err}
	}
	b, err := e.k.newBudget(ctx, id, n.Parent)
	if err != nil {
		return stepResult{node: id, err: err}
	}
	s := &stepCtx{e: e, n: n, budget: b}
	var r stepResult
	switch n.Status {
	case StatusPending, StatusIdentifying:
		r, err = s.identify(ctx)
	case StatusSelectingCons:
		r, err = s.selectConstraints(ctx)
	case StatusSelectingResolve:
		r, err = s.route(ctx)
	case StatusResolving:
		r, err = s.resolve(ctx)
	case StatusVerifying:
		r, err = s.verify(ctx)
	case StatusDecomposing:
		r, err = s.decompose(ctx)
	default:
		r = stepResult{status: n.Status}
	}
	r.node = id
	if err != nil {
		r.err = fmt.Errorf("node %s (%s) in %s: %w", short(id), n.Summary, n.Status, err)
	}
	return r
}

var errDenied = errors.New("budget pre_check DENIED")

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
		if _, perm := isPermanent(err); perm || try == 3 || ctx.Err() != nil {
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
func (s *stepCtx) commit(ctx context.Context, fn func(tx *sql.Tx) error) error {
	err := s.e.k.write(ctx, func(tx *sql.Tx) error {
		if err := s.budget.commit(ctx, tx); err != nil {
			return err
		}
		for _, d := range s.io {
			if err := logRow(ctx, tx, 3, s.n.ID, fmt.Sprintf("%s %s", d["resolver"], d["op"]), d); err != nil {
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

// move is a checked transition; a refused one is logged and returned.
func (s *stepCtx) move(ctx context.Context, tx *sql.Tx, from, to string) error {
	if err := transition(ctx, tx, s.n.ID, from, to); err != nil {
		_ = logRow(ctx, s.e.k.db, 1, s.n.ID, fmt.Sprintf("Node %s: REJECTED transition %s → %s", short(s.n.ID), from, to), map[string]any{"error": err.Error()})
		return err
	}
	return nil
}

func (s *stepCtx) flow(ctx context.Context, tx *sql.Tx, format string, args ...any) error {
	msg := fmt.Sprintf("Node %s: ", short(s.n.ID)) + fmt.Sprintf(format, args...)
	s.e.progress("%s", msg)
	return logRow(ctx, tx, 1, s.n.ID, msg, nil)
}

// history is the KG context block for the node's goal pattern.
func (s *stepCtx) history(ctx context.Context) string {
	c, err := s.e.k.QueryKG(ctx, goalPatternID(s.n.Summary))
	if err != nil {
		return ""
	}
	return c.Render(s.n.Summary)
}

func (s *stepCtx) depth(ctx context.Context) int {
	d := 0
	for p := s.n.Parent; p != ""; d++ {
		if err := s.e.k.db.QueryRowContext(ctx, "SELECT COALESCE(parent_id, '') FROM nodes WHERE id = ?", p).Scan(&p); err != nil {
			break
		}
	}
	return d
}

// denied routes a step to HIRE (over budget or a resolver that cannot do
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
		to := StatusSelectingCons
		if len(n.Selected) > 0 {
			to = StatusSelectingResolve
		}
		err := s.commit(ctx, func(tx *sql.Tx) error {
			if err := s.passTo(ctx, tx, to); err != nil {
				return err
			}
			return s.flow(ctx, tx, "constraints already identified (%d eligible, %d selected): on to %s", len(n.Eligible), len(n.Selected), to)
		})
		return stepResult{status: to}, err
	}
	inherited, err := constraintViews(ctx, s.e.k.db, n.Inherited, "i")
	if err != nil {
		return stepResult{}, err
	}
	core, err := constraintViews(ctx, s.e.k.db, n.Core, "c")
	if err != nil {
		return stepResult{}, err
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpIdentify, Constraints: core, Inherited: inherited, History: s.history(ctx), Depth: s.depth(ctx)})
	if err != nil {
		return s.failed(ctx, err, OpIdentify)
	}
	var a identifyAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return stepResult{}, err
	}
	err = s.commit(ctx, func(tx *sql.Tx) error {
		eligible := append([]string{}, n.Core...)
		for _, c := range a.Constraints {
			id, err := insertConstraint(ctx, tx, c, "resolver", ClaudeCodeID, nil)
			if err != nil {
				return err
			}
			eligible = append(eligible, id)
		}
		if len(eligible) == 0 {
			// constraint_exhausted: nothing beyond the inherited set.
			id, err := insertConstraint(ctx, tx, newConstraint{Type: Semantic, Domain: "goal", Title: "The output achieves the goal as stated", Rubric: n.Goal}, "derived", "kernel", nil)
			if err != nil {
				return err
			}
			eligible = append(eligible, id)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE nodes SET constraints_eligible_ids = ? WHERE id = ?", jsonText(eligible), n.ID); err != nil {
			return err
		}
		if err := s.recordPattern(ctx, tx, a.RequiredCapabilities); err != nil {
			return err
		}
		if err := s.passTo(ctx, tx, StatusSelectingCons); err != nil {
			return err
		}
		return s.flow(ctx, tx, "IDENTIFY_CONSTRAINTS using %s → %d eligible, needs %s", ClaudeCodeID, len(eligible), strings.Join(a.RequiredCapabilities, ", "))
	})
	return stepResult{status: StatusSelectingCons}, err
}

// passTo walks pending → identifying → selecting_constraints →
// selecting_resolver as far as to, each a checked transition.
func (s *stepCtx) passTo(ctx context.Context, tx *sql.Tx, to string) error {
	chain := []string{StatusPending, StatusIdentifying, StatusSelectingCons, StatusSelectingResolve}
	from := slices.Index(chain, s.n.Status)
	end := slices.Index(chain, to)
	for i := from; i < end; i++ {
		if err := s.move(ctx, tx, chain[i], chain[i+1]); err != nil {
			return err
		}
	}
	s.n.Status = to
	return nil
}

// recordPattern writes the goal pattern, requires and similar_to edges.
func (s *stepCtx) recordPattern(ctx context.Context, tx *sql.Tx, caps []string) error {
	gp := goalPatternID(s.n.Summary)
	if err := ensureKG(ctx, tx, gp, "goal_pattern", s.n.Summary, map[string]any{"root_id": s.e.root}); err != nil {
		return err
	}
	for _, c := range caps {
		if err := ensureKG(ctx, tx, "capability:"+c, "capability", c, nil); err != nil {
			return err
		}
		if err := refreshEdge(ctx, tx, gp, "requires", "capability:"+c, nil); err != nil {
			return err
		}
	}
	for _, p := range s.e.patterns {
		if p.ID == gp {
			continue
		}
		if sc := similarity(s.n.Summary, p.Label); sc >= similarThreshold {
			if err := refreshEdge(ctx, tx, gp, "similar_to", p.ID, map[string]any{"score": math.Round(sc*1000) / 1000}); err != nil {
				return err
			}
		}
	}
	return nil
}

// ── Step 3: select constraints (parsimony) ──
func (s *stepCtx) selectConstraints(ctx context.Context) (stepResult, error) {
	n := s.n
	eligible, err := constraintViews(ctx, s.e.k.db, n.Eligible, "c")
	if err != nil {
		return stepResult{}, err
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpSelect, Constraints: eligible, History: s.history(ctx)})
	if err != nil {
		return s.failed(ctx, err, OpSelect)
	}
	var a selectAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return stepResult{}, err
	}
	selected := append([]string{}, n.Core...) // the irreducible core is always selected
	for _, ref := range a.Selected {
		i := slices.IndexFunc(eligible, func(c ConstraintView) bool { return c.Ref == ref })
		if i < 0 {
			return s.failed(ctx, permanent("invalid_format", fmt.Errorf("selected %q is not an eligible constraint (c1..c%d)", ref, len(eligible))), OpSelect)
		}
		selected = union(selected, []string{eligible[i].id})
	}
	if len(selected) == 0 {
		selected = append(selected, n.Eligible[0])
	}
	err = s.commit(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE nodes SET constraints_selected_ids = ? WHERE id = ?", jsonText(selected), n.ID); err != nil {
			return err
		}
		if err := logRow(ctx, tx, 2, n.ID, "constraint selection", map[string]any{"decision": "constraint_selection", "eligible": len(eligible),
			"selected": selected, "rationale": a.Rationale}); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusSelectingCons, StatusSelectingResolve); err != nil {
			return err
		}
		return s.flow(ctx, tx, "SELECT_CONSTRAINTS → %d of %d", len(selected), len(eligible))
	})
	return stepResult{status: StatusSelectingResolve}, err
}

// requiredCaps are the capabilities the goal pattern requires (KG).
func (s *stepCtx) requiredCaps(ctx context.Context) []string {
	rows, err := s.e.k.db.QueryContext(ctx, "SELECT k.label FROM kg_edges e JOIN kg_nodes k ON k.id = e.target_id WHERE e.source_id = ? AND e.relation = 'requires' ORDER BY k.label", goalPatternID(s.n.Summary))
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if rows.Scan(&c) == nil {
			out = append(out, c)
		}
	}
	return out
}

// ── Step 4: select resolver (tool plan) ──
func (s *stepCtx) route(ctx context.Context) (stepResult, error) {
	n := s.n
	// A resolver delivered by BUILD or HIRE for this node is used directly
	// (lookup-before-build found it).
	if id, why := s.delivered(ctx); id != "" {
		return s.plan(ctx, routeAnswer{ResolverID: id, Rationale: why}, true)
	}
	caps := s.requiredCaps(ctx)
	out, err := s.call(ctx, SelfModelID, &Call{Op: OpSelfModel, Params: map[string]any{"capabilities": caps}})
	if err != nil {
		return s.failed(ctx, err, OpSelfModel)
	}
	var cands []ResolverView
	if err := json.Unmarshal(out.Answer, &cands); err != nil {
		return stepResult{}, err
	}
	cs, err := constraintViews(ctx, s.e.k.db, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	out, err = s.call(ctx, ClaudeCodeID, &Call{Op: OpRoute, Constraints: cs, Candidates: cands, History: s.history(ctx), Params: map[string]any{"required_capabilities": caps}})
	if err != nil {
		return s.failed(ctx, err, OpRoute)
	}
	var a routeAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return stepResult{}, err
	}
	if a.Gap != nil {
		// No candidate can do the work: lookup-before-build, then HIRE
		// (a BUILD from selecting_resolver has no valid transition).
		found, err := s.e.k.LookupBeforeBuild(ctx, s.e.k.db, a.Gap.CapabilityTag)
		if err != nil {
			return stepResult{}, err
		}
		if len(found) > 0 {
			s.e.progress("Node %s: LOOKUP-BEFORE-BUILD: %s provides %s; skip BUILD", short(n.ID), found[0], a.Gap.CapabilityTag)
			return s.plan(ctx, routeAnswer{ResolverID: found[0], Capability: a.Gap.CapabilityTag, Rationale: "lookup-before-build: " + found[0] + " provides " + a.Gap.CapabilityTag}, false)
		}
		return s.hire(ctx, hireGap{Tag: a.Gap.CapabilityTag, Type: a.Gap.ResolverType, Constraints: a.Gap.BuildConstraints, BudgetClass: "capability", Rationale: a.Gap.Rationale}, "capability_gap")
	}
	if !slices.ContainsFunc(cands, func(c ResolverView) bool { return c.ID == a.ResolverID }) {
		return s.failed(ctx, permanent("invalid_format", fmt.Errorf("resolver %q is not among the candidates", a.ResolverID)), OpRoute)
	}
	return s.plan(ctx, a, false)
}

// plan persists the tool plan and moves selecting_resolver → resolving.
func (s *stepCtx) plan(ctx context.Context, a routeAnswer, fresh bool) (stepResult, error) {
	n := s.n
	plan := map[string]any{"steps": []map[string]any{{"resolver_id": a.ResolverID, "capability": a.Capability,
		"inputs": map[string]any{"input_artifact_ids": nonNil(n.Inputs)}, "params": orEmpty(a.Params)}}, "policy": map[string]any{"parallel": false}}
	err := s.commit(ctx, func(tx *sql.Tx) error {
		id, err := s.e.k.putArtifact(ctx, tx, artifactIn{Node: n.ID, Type: "tool_plan", Format: "json", Content: []byte(jsonText(plan)),
			ResolverID: ClaudeCodeID, ConstraintIDs: n.Selected, InputIDs: n.Inputs})
		if err != nil {
			return err
		}
		maxA := n.MaxAttempts
		if fresh {
			maxA = n.AttemptCount + s.e.cfg.TMax // a new resolver gets its own T_max attempts
		}
		if _, err := tx.ExecContext(ctx, "UPDATE nodes SET execution_plan_artifact_id = ?, resolver_id = ?, max_attempts = ? WHERE id = ?", id, a.ResolverID, maxA, n.ID); err != nil {
			return err
		}
		if err := logRow(ctx, tx, 2, n.ID, "resolver selection", map[string]any{"decision": "resolver_selection", "chosen": a.ResolverID, "rationale": a.Rationale}); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusSelectingResolve, StatusResolving); err != nil {
			return err
		}
		return s.flow(ctx, tx, "SELECT_RESOLVER → %s", a.ResolverID)
	})
	return stepResult{status: StatusResolving}, err
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// delivered is a resolver built or hired for this node and not yet tried.
func (s *stepCtx) delivered(ctx context.Context) (string, string) {
	var id string
	err := s.e.k.db.QueryRowContext(ctx, `SELECT resolver_id FROM capability_requests WHERE detail->>'node_id' = ? AND status = 'delivered' AND resolver_id IS NOT NULL
		AND resolver_id NOT IN (SELECT resolver_id FROM resolution_attempts WHERE node_id = ?) ORDER BY rowid DESC LIMIT 1`, s.n.ID, s.n.ID).Scan(&id)
	if err == nil {
		return id, "delivered by HIRE"
	}
	err = s.e.k.db.QueryRowContext(ctx, `SELECT id FROM resolvers WHERE built_by = 'system' AND built_for_node_id = ?
		AND id NOT IN (SELECT resolver_id FROM resolution_attempts WHERE node_id = ?) ORDER BY rowid DESC LIMIT 1`, s.n.ID, s.n.ID).Scan(&id)
	if err == nil {
		return id, "built by BUILD for this node"
	}
	return "", ""
}

// ── Step 5: resolve ──
func (s *stepCtx) resolve(ctx context.Context) (stepResult, error) {
	n := s.n
	_, data, err := s.e.k.artifact(ctx, s.e.k.db, n.Plan)
	if err != nil {
		return stepResult{}, err
	}
	var plan struct {
		Steps []struct {
			ResolverID string         `json:"resolver_id"`
			Params     map[string]any `json:"params"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(data, &plan); err != nil || len(plan.Steps) == 0 {
		return stepResult{}, fmt.Errorf("tool plan %s has no steps: %v", n.Plan, err)
	}
	cs, err := constraintViews(ctx, s.e.k.db, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	inputs, err := s.artifacts(ctx, n.Inputs)
	if err != nil {
		return stepResult{}, err
	}
	feedback := s.feedback(ctx)
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
	if failure != nil {
		re, perm := isPermanent(failure)
		if !perm {
			return s.failed(ctx, failure, OpResolve)
		}
		// A permanent error is an UNSAT attempt with its failure mode.
		v := Verification{Verdict: UNSAT, SigmaV: 0, Checks: []ConstraintCheck{}, TraceSummary: failure.Error(), Feedback: failure.Error(), FailureMode: re.Mode}
		err = s.commit(ctx, func(tx *sql.Tx) error {
			aid, err := s.attempt(ctx, tx, index, final, "", feedback)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE resolution_attempts SET verification = ?, verdict = 'UNSAT', sigma_v = 0, failure_mode = ? WHERE id = ?",
				jsonText(v), "failure:"+re.Mode, aid); err != nil {
				return err
			}
			if err := s.move(ctx, tx, StatusResolving, StatusVerifying); err != nil {
				return err
			}
			return s.flow(ctx, tx, "RESOLVE %d/%d using %s → error (%s)", index, n.MaxAttempts, final, re.Mode)
		})
		return stepResult{status: StatusVerifying}, err
	}
	var ans resolveAnswer
	_ = json.Unmarshal(out.Answer, &ans)
	typ := "doc"
	if len(ans.Files) > 0 {
		typ = "code"
	}
	err = s.commit(ctx, func(tx *sql.Tx) error {
		art, err := s.e.k.putArtifact(ctx, tx, artifactIn{Node: n.ID, Type: typ, Format: "json", Content: out.Answer, ResolverID: final,
			ConstraintIDs: n.Selected, InputIDs: n.Inputs, Metadata: map[string]any{"summary": ans.Summary}})
		if err != nil {
			return err
		}
		if _, err := s.attempt(ctx, tx, index, final, art, feedback); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusResolving, StatusVerifying); err != nil {
			return err
		}
		return s.flow(ctx, tx, "RESOLVE %d/%d using %s → %s", index, n.MaxAttempts, final, trim(ans.Summary, 80))
	})
	return stepResult{status: StatusVerifying}, err
}

// untriedSuggestion is a --suggest input of the node not yet scored as an
// attempt of its own.
func (s *stepCtx) untriedSuggestion(ctx context.Context) (string, string, error) {
	for _, id := range s.n.Inputs {
		a, data, err := s.e.k.artifact(ctx, s.e.k.db, id)
		if err != nil {
			return "", "", err
		}
		if a.Type != "suggestion" {
			continue
		}
		var tried int
		if err := s.e.k.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM resolution_attempts r JOIN artifacts a ON a.id = r.output_artifact_id
			WHERE r.node_id = ? AND a.metadata->>'candidate_of' = ?`, s.n.ID, id).Scan(&tried); err != nil {
			return "", "", err
		}
		if tried == 0 {
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
	content := jsonText(resolveAnswer{Summary: trim(text, 80), Text: text})
	err := s.commit(ctx, func(tx *sql.Tx) error {
		art, err := s.e.k.putArtifact(ctx, tx, artifactIn{Node: n.ID, Type: "doc", Format: "json", Content: []byte(content), ResolverID: CandidateID,
			ConstraintIDs: n.Selected, InputIDs: []string{suggestion}, Metadata: map[string]any{"summary": trim(text, 80), "candidate_of": suggestion}})
		if err != nil {
			return err
		}
		if _, err := s.attempt(ctx, tx, index, CandidateID, art, feedback); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusResolving, StatusVerifying); err != nil {
			return err
		}
		return s.flow(ctx, tx, "RESOLVE %d/%d: candidate input scored as an attempt → %s", index, n.MaxAttempts, trim(text, 80))
	})
	return stepResult{status: StatusVerifying}, err
}

// attempt inserts the resolution_attempts row with its KG edges and
// keeps the node's attempt_count / last_attempt_id / output in step.
func (s *stepCtx) attempt(ctx context.Context, tx *sql.Tx, index int, resolver, output string, feedback []string) (string, error) {
	n := s.n
	id := newID()
	var fb any
	if len(feedback) > 0 {
		fb = jsonText(map[string]any{"violations": feedback})
	}
	cost, secs := 0.0, 0.0
	for _, e := range s.budget.entries {
		if e.Event == "spend" && e.Node == n.ID && e.Resolver != "" {
			cost += e.Amount
			secs += e.Time
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO resolution_attempts (id, node_id, attempt_index, resolver_id, plan_artifact_id, input_artifact_ids,
		output_artifact_id, feedback, cost, time_seconds, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, n.ID, index, resolver, n.Plan, jsonText(nonNil(n.Inputs)), nullStr(output), fb, cost, secs, now()); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE nodes SET attempt_count = ?, last_attempt_id = ?, output_artifact_id = ? WHERE id = ?", index, id, nullStr(output), n.ID); err != nil {
		return "", err
	}
	gp := goalPatternID(n.Summary)
	if err := ensureKG(ctx, tx, gp, "goal_pattern", n.Summary, map[string]any{"root_id": s.e.root}); err != nil {
		return "", err
	}
	if err := ensureKG(ctx, tx, "attempt:"+id, "resolution_attempt", fmt.Sprintf("%s attempt %d", trim(n.Summary, 60), index), nil); err != nil {
		return "", err
	}
	if err := addEdge(ctx, tx, "attempt:"+id, "tried_for", gp, nil); err != nil {
		return "", err
	}
	for _, c := range n.Selected {
		if err := ensureKG(ctx, tx, "constraint:"+c, "constraint", c, nil); err != nil {
			return "", err
		}
		if err := addEdge(ctx, tx, "attempt:"+id, "used_constraint", "constraint:"+c, nil); err != nil {
			return "", err
		}
	}
	return id, nil
}

// feedback is the violation trace of the last attempt, plus the failure
// modes the KG knows for this goal type (Step 9).
func (s *stepCtx) feedback(ctx context.Context) []string {
	if s.n.LastAttempt == "" {
		return nil
	}
	var v sql.NullString
	var sigma sql.NullFloat64
	var mode sql.NullString
	if err := s.e.k.db.QueryRowContext(ctx, "SELECT verification, sigma_v, failure_mode FROM resolution_attempts WHERE id = ?", s.n.LastAttempt).Scan(&v, &sigma, &mode); err != nil || !v.Valid {
		return nil
	}
	var ver Verification
	_ = json.Unmarshal([]byte(v.String), &ver)
	var out []string
	if mode.String == "failure:low_confidence" {
		out = append(out, fmt.Sprintf("confidence gating: the last output was verified with sigma_v=%.2f, but the path confidence fell below tau_global=%.2f; give an answer you can verify with more confidence", sigma.Float64, s.n.TauGlobal))
	}
	for _, c := range ver.Checks {
		if !c.Passed {
			out = append(out, fmt.Sprintf("%s failed (sigma %.2f): %v", c.Ref, c.SigmaI, c.Detail))
		}
	}
	if ver.Feedback != "" {
		out = append(out, ver.Feedback)
	}
	return out
}

func (s *stepCtx) artifacts(ctx context.Context, ids []string) ([]ArtifactView, error) {
	var out []ArtifactView
	for _, id := range ids {
		a, data, err := s.e.k.artifact(ctx, s.e.k.db, id)
		if err != nil {
			return nil, err
		}
		typ := a.Type
		if typ == "suggestion" {
			typ = "candidate idea (unprivileged: score it against the constraints like any other)"
		}
		out = append(out, ArtifactView{Type: typ, Format: a.Format, Content: string(data), id: id})
	}
	return out, nil
}

func trim(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// fingerprint is sha256(canonical_json({capability_tag, build_constraints, budget_class})).
func fingerprint(tag string, constraints []string, class string) string {
	sum := sha256.Sum256([]byte(jsonText(map[string]any{"budget_class": class, "build_constraints": nonNil(constraints), "capability_tag": tag})))
	return hex.EncodeToString(sum[:])
}
