package solve

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
)

// ── Step 6: verify ──
func (s *stepCtx) verify(ctx context.Context) (stepResult, error) {
	n := s.n
	var verification sql.NullString
	var verdict sql.NullString
	var resolver, output string
	var sigmaV sql.NullFloat64
	if err := s.e.k.db.QueryRowContext(ctx, "SELECT verification, verdict, resolver_id, COALESCE(output_artifact_id, ''), sigma_v FROM resolution_attempts WHERE id = ?", n.LastAttempt).
		Scan(&verification, &verdict, &resolver, &output, &sigmaV); err != nil {
		return stepResult{}, fmt.Errorf("last attempt %s: %w", n.LastAttempt, err)
	}
	if verdict.Valid {
		// Already verified (a permanent resolver error, or a node waiting
		// on BUILD/HIRE coming back): decide again from the record.
		var v Verification
		_ = json.Unmarshal([]byte(verification.String), &v)
		if v.Verdict == SAT {
			return stepResult{}, fmt.Errorf("attempt %s is SAT but the node is still verifying; kernel.db is inconsistent", n.LastAttempt)
		}
		return s.unsat(ctx, nil, v)
	}
	cs, err := constraintViews(ctx, s.e.k.db, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	outs, err := s.artifacts(ctx, []string{output})
	if err != nil {
		return stepResult{}, err
	}
	out := &outs[0]
	var ans resolveAnswer
	_ = json.Unmarshal([]byte(out.Content), &ans)
	// Logic checks with a command run in the workspace (codex-tools-0, σ
	// = 1.0 on pass) when the output carries files or came from a tool
	// that acted on the workspace; a decomposition's text output defers
	// them to the global consistency check (Step 12).
	acted := len(ans.Files) > 0 || (resolver != ClaudeCodeID && resolver != CandidateID)
	var checks []ConstraintCheck
	var deferred []string
	for _, c := range cs {
		var p struct {
			Check string `json:"check"`
		}
		_ = json.Unmarshal(c.Payload, &p)
		switch {
		case c.Type == Logic && p.Check != "" && acted:
			o, err := s.call(ctx, CodexToolsID, &Call{Op: OpCheck, Output: out, Params: map[string]any{commandInvokeID: p.Check}})
			if err != nil {
				return s.failed(ctx, err, OpCheck)
			}
			var ca checkAnswer
			_ = json.Unmarshal(o.Answer, &ca)
			sigma := 0.0
			if ca.Passed {
				sigma = 1
			}
			checks = append(checks, ConstraintCheck{ConstraintID: c.id, Ref: c.Ref, Passed: ca.Passed, SigmaI: sigma,
				Detail: map[string]any{"command": p.Check, "exit_code": ca.ExitCode, "output": trimOutput(ca.Output)}})
		case c.Type == Logic && p.Check != "":
			deferred = append(deferred, c.id)
		case c.Type == Logic && (c.Domain == "cost" || c.Domain == "schedule"):
			ok := s.budget.own.RemainingCost() >= 0 && s.budget.own.RemainingTime() >= 0
			checks = append(checks, ConstraintCheck{ConstraintID: c.id, Ref: c.Ref, Passed: ok, SigmaI: 1,
				Detail: fmt.Sprintf("ledger: spent $%.4f of $%.4f, %.0fs of %.0fs", s.budget.own.Spent, s.budget.own.Allocated, s.budget.own.TimeSpent, s.budget.own.TimeAllocated)})
		}
	}
	if ans.Tool != nil && s.isBuild(ctx) {
		// A built tool is registered only after its own tests pass, run
		// from its materialized files, outside the workspace.
		checks = append(checks, s.toolSelfTest(ctx, output, ans.Tool))
	}
	judge, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpVerify, Constraints: cs, Inputs: nil, Output: out, Checks: checks, Attempt: n.AttemptCount})
	if err != nil {
		return s.failed(ctx, err, OpVerify)
	}
	var va verifyAnswer
	if err := json.Unmarshal(judge.Answer, &va); err != nil {
		return stepResult{}, err
	}
	v := Verification{Verdict: SAT, SigmaV: 1, IsLeaf: va.IsLeaf, LeafKind: va.LeafKind, LeafReason: va.LeafReason, Feedback: va.Feedback, FailureMode: va.FailureMode}
	for _, j := range va.Checks {
		i := indexRef(cs, j.Ref)
		if i < 0 || isLogicChecked(checks, cs[i].id) {
			continue // the kernel's own checks decide logic constraints
		}
		if cs[i].Type == Logic {
			if containsID(deferred, cs[i].id) {
				continue
			}
		}
		checks = append(checks, ConstraintCheck{ConstraintID: cs[i].id, Ref: j.Ref, Passed: j.Passed && j.Sigma >= n.TauLocal, SigmaI: j.Sigma, Detail: j.Detail, RepairSuggestion: nilIfEmpty(j.RepairSuggestion)})
	}
	for _, c := range checks {
		v.SigmaV = math.Min(v.SigmaV, c.SigmaI)
		if !c.Passed {
			v.Verdict = UNSAT
		}
	}
	if v.Verdict == UNSAT && v.FailureMode == "" {
		v.FailureMode = "constraint_violated"
	}
	if v.Checks = checks; v.Checks == nil {
		v.Checks = []ConstraintCheck{}
	}
	v.TraceSummary = fmt.Sprintf("%d check(s), %d deferred to the consistency check; sigma_v=%.2f", len(checks), len(deferred), v.SigmaV)
	if v.Verdict == SAT {
		return s.sat(ctx, resolver, output, v, ans)
	}
	return s.unsat(ctx, &resolver, v)
}

func trimOutput(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

func indexRef(cs []ConstraintView, ref string) int {
	for i, c := range cs {
		if c.Ref == ref {
			return i
		}
	}
	return -1
}

func isLogicChecked(checks []ConstraintCheck, id string) bool {
	for _, c := range checks {
		if c.ConstraintID == id {
			return true
		}
	}
	return false
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *stepCtx) isBuild(ctx context.Context) bool {
	var n int
	_ = s.e.k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM artifacts WHERE node_id = ? AND type = 'build_goal'", s.n.ID).Scan(&n)
	return n > 0
}

// toolSelfTest materializes the tool in a temp directory and runs its
// test command there (σ = 1.0 on pass).
func (s *stepCtx) toolSelfTest(ctx context.Context, artifact string, t *toolSpec) ConstraintCheck {
	c := ConstraintCheck{ConstraintID: "kernel:tool_self_test", Ref: "tool", SigmaI: 1}
	dir, err := os.MkdirTemp("", "solve-tool-")
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer os.RemoveAll(dir)
	if _, err := s.e.k.materializeTool(ctx, artifact, dir); err != nil {
		c.Detail = err.Error()
		return c
	}
	if t.Command == "" || t.TestCommand == "" || len(t.Capabilities) == 0 {
		c.Detail = "the tool needs a command, a test_command and at least one capability"
		return c
	}
	res := runCommand(ctx, dir, t.TestCommand, []string{"SOLVE_TOOL_DIR=" + dir})
	c.Passed = res.Passed
	if !res.Passed {
		c.SigmaI = 0
	}
	c.Detail = map[string]any{"test_command": t.TestCommand, "exit_code": res.ExitCode, "output": trimOutput(res.Output)}
	return c
}

// sigmaPath is σ_path = σ_parent_path × σ_v.
// A build subgoal starts its own chain: it is judged as a goal of its
// own, not by the attempts that failed on the node that needs the tool.
func (s *stepCtx) sigmaPath(ctx context.Context, sigma float64) float64 {
	if s.n.Parent == "" || s.isBuild(ctx) {
		return sigma
	}
	var p sql.NullFloat64
	_ = s.e.k.db.QueryRowContext(ctx, "SELECT sigma_path FROM nodes WHERE id = ?", s.n.Parent).Scan(&p)
	if !p.Valid {
		return sigma
	}
	return p.Float64 * sigma
}

// recordVerification writes the verification on the attempt and node,
// the KG outcome edges and the resolver's usage stats.
func (s *stepCtx) recordVerification(ctx context.Context, tx *sql.Tx, resolver string, v Verification, path float64) error {
	n := s.n
	var mode any
	if v.FailureMode != "" {
		mode = "failure:" + slug(v.FailureMode)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE resolution_attempts SET verification = ?, verdict = ?, sigma_v = ?, failure_mode = ? WHERE id = ?",
		jsonText(v), v.Verdict, v.SigmaV, mode, n.LastAttempt); err != nil {
		return err
	}
	resolved := []string{}
	if v.Verdict == SAT {
		for _, c := range v.Checks {
			if c.Passed && containsID(n.Selected, c.ConstraintID) {
				resolved = append(resolved, c.ConstraintID)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE nodes SET verification = ?, sigma_v = ?, sigma_path = ?, constraints_resolved_ids = ? WHERE id = ?",
		jsonText(v), v.SigmaV, path, jsonText(resolved), n.ID); err != nil {
		return err
	}
	var cost, secs float64
	_ = tx.QueryRowContext(ctx, "SELECT cost, time_seconds FROM resolution_attempts WHERE id = ?", n.LastAttempt).Scan(&cost, &secs)
	cs, _ := constraintViews(ctx, tx, n.Selected, "c")
	props := map[string]any{"sigma_v": v.SigmaV, "cost": cost, "time_seconds": secs, "input_constraint_signature": constraintSignature(cs),
		"input_modality": n.Modality, "input_size_class": "small"}
	rel, ok := "succeeded_on", 1
	if v.Verdict != SAT {
		rel, ok = "failed_on", 0
	}
	if err := ensureKG(ctx, tx, "resolver:"+resolver, "resolver", resolver, nil); err != nil {
		return err
	}
	if err := addEdge(ctx, tx, "resolver:"+resolver, rel, goalPatternID(n.Summary), props); err != nil {
		return err
	}
	if mode != nil {
		f := mode.(string)
		if err := ensureKG(ctx, tx, f, "failure_mode", strings.TrimPrefix(f, "failure:"), nil); err != nil {
			return err
		}
		if err := addEdge(ctx, tx, "attempt:"+n.LastAttempt, "failed_because", f, nil); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE resolvers SET usage_count = usage_count + 1, success_count = success_count + ?, failure_count = failure_count + 1 - ?,
		avg_cost = (avg_cost * usage_count + ?) / (usage_count + 1) WHERE id = ?`, ok, ok, cost, resolver)
	return err
}

func slug(s string) string {
	s = strings.ToLower(strings.TrimPrefix(s, "failure:"))
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "_")
}

// sat handles SAT: leaf → resolved (Step 7), else gate or decompose.
func (s *stepCtx) sat(ctx context.Context, resolver, output string, v Verification, ans resolveAnswer) (stepResult, error) {
	n := s.n
	path := s.sigmaPath(ctx, v.SigmaV)
	if !v.IsLeaf && path < n.TauGlobal {
		return s.gate(ctx, resolver, v, path)
	}
	to := StatusDecomposing
	if v.IsLeaf {
		to = StatusResolved
	}
	build := v.IsLeaf && ans.Tool != nil && s.isBuild(ctx)
	err := s.commit(ctx, func(tx *sql.Tx) error {
		if err := s.recordVerification(ctx, tx, resolver, v, path); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusVerifying, to); err != nil {
			return err
		}
		if !v.IsLeaf {
			return s.flow(ctx, tx, "VERIFY → SAT (sigma_v=%.2f, sigma_path=%.2f), not a leaf: decompose", v.SigmaV, path)
		}
		kind := v.LeafKind
		if kind == "" {
			kind = "atomic"
		}
		if _, err := tx.ExecContext(ctx, "UPDATE nodes SET leaf_kind = ?, leaf_reason = ?, resolved_at = ? WHERE id = ?", kind, v.LeafReason, now(), n.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE artifacts SET sigma = ? WHERE id = ?", v.SigmaV, output); err != nil {
			return err
		}
		if err := ensureKG(ctx, tx, "artifact:"+output, "artifact", trim(n.Summary, 80), map[string]any{"node_id": n.ID}); err != nil {
			return err
		}
		if err := addEdge(ctx, tx, "resolver:"+resolver, "produced", "artifact:"+output, nil); err != nil {
			return err
		}
		if build {
			if err := s.registerTool(ctx, tx, resolver, output, ans.Tool); err != nil {
				return err
			}
		}
		return s.flow(ctx, tx, "VERIFY → SAT (sigma_v=%.2f, sigma_path=%.2f): leaf %s resolved", v.SigmaV, path, kind)
	})
	return stepResult{status: to}, err
}

// registerTool registers a built tool after its tests passed (Step 10),
// with built_by, replaced_by and composed_of edges.
func (s *stepCtx) registerTool(ctx context.Context, tx *sql.Tx, builder, artifact string, t *toolSpec) error {
	var count int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM resolvers WHERE built_by = 'system'").Scan(&count); err != nil {
		return err
	}
	id := fmt.Sprintf("tool-%s-%d", slug(t.Capabilities[0]), count+1)
	entry := ResolverEntry{ID: id, Label: t.Label, Description: t.Description, Type: "digital", Capabilities: t.Capabilities, CostPerInvocation: 0.001,
		LatencyEstimate: 10, BuiltBy: "system", BuiltForNode: s.n.Parent, Metadata: map[string]any{"command": t.Command, "test_command": t.TestCommand, "tool_artifact_id": artifact}}
	if err := registerResolver(ctx, tx, entry); err != nil {
		return err
	}
	if err := addEdge(ctx, tx, "resolver:"+id, "built_by", "resolver:"+builder, nil); err != nil {
		return err
	}
	if err := addEdge(ctx, tx, "resolver:"+id, "composed_of", "resolver:"+CodexToolsID, map[string]any{"order": 1, "role": "subprocess executor"}); err != nil {
		return err
	}
	// The resolver that exhausted T_max on the parent is replaced by the
	// new tool for this capability.
	var old string
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(resolver_id, '') FROM nodes WHERE id = ?", s.n.Parent).Scan(&old); err == nil && old != "" {
		if err := addEdge(ctx, tx, "resolver:"+old, "replaced_by", "resolver:"+id, map[string]any{"capability": t.Capabilities[0]}); err != nil {
			return err
		}
	}
	return s.flow(ctx, tx, "BUILD: registered %s (%s) providing %s after its tests passed", id, t.Command, strings.Join(t.Capabilities, ", "))
}

// unsat handles UNSAT (Step 9): retry with feedback, or BUILD/HIRE.
func (s *stepCtx) unsat(ctx context.Context, resolver *string, v Verification) (stepResult, error) {
	n := s.n
	stagnant := s.stagnating(ctx, v.SigmaV)
	if n.AttemptCount < n.MaxAttempts && !stagnant {
		err := s.commit(ctx, func(tx *sql.Tx) error {
			if resolver != nil {
				if err := s.recordVerification(ctx, tx, *resolver, v, s.sigmaPath(ctx, v.SigmaV)); err != nil {
					return err
				}
			}
			if err := s.move(ctx, tx, StatusVerifying, StatusResolving); err != nil {
				return err
			}
			return s.flow(ctx, tx, "VERIFY → UNSAT (sigma_v=%.2f): RETRY %d/%d with feedback", v.SigmaV, n.AttemptCount+1, n.MaxAttempts)
		})
		return stepResult{status: StatusResolving}, err
	}
	if resolver != nil {
		// Record the verdict first: BUILD/HIRE below is its own commit.
		if err := s.commit(ctx, func(tx *sql.Tx) error {
			if err := s.recordVerification(ctx, tx, *resolver, v, s.sigmaPath(ctx, v.SigmaV)); err != nil {
				return err
			}
			why := "T_max exhausted"
			if stagnant {
				why = fmt.Sprintf("stagnation (sigma improved less than %.2f over two attempts)", StagnationEpsilon)
			}
			return s.flow(ctx, tx, "VERIFY → UNSAT (sigma_v=%.2f): %s after %d attempts: BUILD", v.SigmaV, why, n.AttemptCount)
		}); err != nil {
			return stepResult{}, err
		}
	}
	return s.buildOrHire(ctx)
}

// stagnating: the last three attempts improved σ by less than ε twice.
func (s *stepCtx) stagnating(ctx context.Context, current float64) bool {
	rows, err := s.e.k.db.QueryContext(ctx, "SELECT COALESCE(sigma_v, 0) FROM resolution_attempts WHERE node_id = ? AND id != ? AND verdict IS NOT NULL ORDER BY attempt_index DESC LIMIT 2", s.n.ID, s.n.LastAttempt)
	if err != nil {
		return false
	}
	defer rows.Close()
	var prev []float64
	for rows.Next() {
		var x float64
		if rows.Scan(&x) == nil {
			prev = append(prev, x)
		}
	}
	if len(prev) < 2 {
		return false
	}
	return current-prev[0] < StagnationEpsilon && prev[0]-prev[1] < StagnationEpsilon
}
