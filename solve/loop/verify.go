package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// checkCommand is the shell command of a logic constraint's payload ("" = none).
func checkCommand(c ConstraintView) (string, error) {
	var p struct {
		Check string `json:"check"`
	}
	if err := json.Unmarshal(c.Payload, &p); err != nil {
		return "", fmt.Errorf("constraint %s: payload: %w", c.ID, err)
	}
	return p.Check, nil
}

// runCheck is codex-tools-0 running a logic constraint's command.
func (s *stepCtx) runCheck(ctx context.Context, command string, output *ArtifactView) (workspace.Result, error) {
	var res workspace.Result
	o, err := s.call(ctx, CodexToolsID, &Call{Op: OpRunCheck, Output: output, Params: map[string]any{CommandParam: command}})
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(o.Answer, &res); err != nil {
		return res, Permanent("invalid_format", fmt.Errorf("%s answered %s with no command result: %w", CodexToolsID, OpRunCheck, err))
	}
	return res, nil
}

// ── Step 6: verify ──
func (s *stepCtx) verify(ctx context.Context) (stepResult, error) {
	n := s.n
	last, err := s.st.Attempt(ctx, n.LastAttempt)
	if err != nil {
		return stepResult{}, err
	}
	resolver, output := last.Resolver, last.Output
	if last.Verdict.Valid {
		// Already verified (a permanent resolver error, or a node waiting
		// on BUILD/HIRE coming back): decide again from the record.
		var v Verification
		if err := json.Unmarshal([]byte(last.Verification.String), &v); err != nil {
			return stepResult{}, fmt.Errorf("attempt %s: verification: %w", last.ID, err)
		}
		if v.Verdict == store.SAT {
			return stepResult{}, fmt.Errorf("attempt %s is SAT but the node is still verifying; kernel.db is inconsistent", n.LastAttempt)
		}
		return s.unsat(ctx, nil, v)
	}
	cs, err := constraintViews(ctx, &s.st.Conn, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	outs, err := artifactViews(ctx, &s.st.Conn, []string{output})
	if err != nil {
		return stepResult{}, err
	}
	out := &outs[0]
	var ans ResolveAnswer
	if err := json.Unmarshal([]byte(out.Content), &ans); err != nil {
		return stepResult{}, fmt.Errorf("output %s: %w", output, err)
	}
	// Logic checks with a command run in the workspace (codex-tools-0, σ
	// = 1.0 on pass) when the output carries files or came from a tool
	// that acted on the workspace; a decomposition's text output defers
	// them to the global consistency check (Step 12).
	acted := len(ans.Files) > 0 || (resolver != ClaudeCodeID && resolver != CandidateID)
	var checks []ConstraintCheck
	var deferred []string
	for _, c := range cs {
		command, err := checkCommand(c)
		if err != nil {
			return stepResult{}, err
		}
		switch {
		case c.Type == store.Logic && command != "" && acted:
			ca, err := s.runCheck(ctx, command, out)
			if err != nil {
				return s.failed(ctx, err, OpRunCheck)
			}
			sigma := 0.0
			if ca.Passed {
				sigma = 1
			}
			checks = append(checks, ConstraintCheck{ConstraintID: c.ID, Ref: c.Ref, Passed: ca.Passed, SigmaI: sigma,
				Detail: map[string]any{"command": command, "exit_code": ca.ExitCode, "output": tail(ca.Output)}})
		case c.Type == store.Logic && command != "":
			deferred = append(deferred, c.ID)
		case c.Type == store.Logic && (c.Domain == "cost" || c.Domain == "schedule"):
			ok := s.budget.own.RemainingCost() >= 0 && s.budget.own.RemainingTime() >= 0
			checks = append(checks, ConstraintCheck{ConstraintID: c.ID, Ref: c.Ref, Passed: ok, SigmaI: 1,
				Detail: fmt.Sprintf("ledger: spent $%.4f of $%.4f, %.0fs of %.0fs", s.budget.own.Spent, s.budget.own.Allocated, s.budget.own.TimeSpent, s.budget.own.TimeAllocated)})
		}
	}
	build, err := s.isBuild(ctx)
	if err != nil {
		return stepResult{}, err
	}
	if ans.Tool != nil && build {
		// A built tool is registered only after its own tests pass, run
		// from its materialized files, outside the workspace.
		checks = append(checks, s.toolSelfTest(ctx, output, ans.Tool))
	}
	judge, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpVerify, Constraints: cs, Inputs: nil, Output: out, Checks: checks, Attempt: n.AttemptCount})
	if err != nil {
		return s.failed(ctx, err, OpVerify)
	}
	var va VerifyAnswer
	if err := json.Unmarshal(judge.Answer, &va); err != nil {
		return stepResult{}, fmt.Errorf("%s answer: %w", OpVerify, err)
	}
	v := Verification{Verdict: store.SAT, SigmaV: 1, IsLeaf: va.IsLeaf, LeafKind: va.LeafKind, LeafReason: va.LeafReason, Feedback: va.Feedback, FailureMode: va.FailureMode}
	for _, j := range va.Checks {
		i := slices.IndexFunc(cs, func(c ConstraintView) bool { return c.Ref == j.Ref })
		if i < 0 || checked(checks, cs[i].ID) {
			continue // the kernel's own checks decide logic constraints
		}
		if cs[i].Type == store.Logic && slices.Contains(deferred, cs[i].ID) {
			continue
		}
		var suggestion any
		if j.RepairSuggestion != "" {
			suggestion = j.RepairSuggestion
		}
		checks = append(checks, ConstraintCheck{ConstraintID: cs[i].ID, Ref: j.Ref, Passed: j.Passed && j.Sigma >= n.TauLocal, SigmaI: j.Sigma, Detail: j.Detail, RepairSuggestion: suggestion})
	}
	for _, c := range checks {
		v.SigmaV = math.Min(v.SigmaV, c.SigmaI)
		if !c.Passed {
			v.Verdict = store.UNSAT
		}
	}
	if v.Verdict == store.UNSAT && v.FailureMode == "" {
		v.FailureMode = "constraint_violated"
	}
	if v.Checks = checks; v.Checks == nil {
		v.Checks = []ConstraintCheck{}
	}
	v.TraceSummary = fmt.Sprintf("%d check(s), %d deferred to the consistency check; sigma_v=%.2f", len(checks), len(deferred), v.SigmaV)
	if v.Verdict == store.SAT {
		return s.sat(ctx, resolver, output, v, ans)
	}
	return s.unsat(ctx, &resolver, v)
}

// checked reports whether checks already decide the constraint.
func checked(checks []ConstraintCheck, id string) bool {
	return slices.ContainsFunc(checks, func(c ConstraintCheck) bool { return c.ConstraintID == id })
}

// isBuild: the node is a BUILD subgoal.
func (s *stepCtx) isBuild(ctx context.Context) (bool, error) {
	a, err := s.st.LatestArtifact(ctx, s.n.ID, "build_goal")
	return a != nil, err
}

// toolSelfTest materializes the tool in a temp directory and runs its
// test command there (σ = 1.0 on pass).
func (s *stepCtx) toolSelfTest(ctx context.Context, artifact string, t *ToolSpec) ConstraintCheck {
	c := ConstraintCheck{ConstraintID: "kernel:tool_self_test", Ref: "tool", SigmaI: 1}
	dir, err := os.MkdirTemp("", "solve-tool-")
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	// A temp directory left behind is harmless; the check's verdict is what matters.
	defer func() { _ = os.RemoveAll(dir) }()
	if _, err := MaterializeTool(ctx, &s.st.Conn, artifact, dir); err != nil {
		c.Detail = err.Error()
		return c
	}
	if t.Command == "" || t.TestCommand == "" || len(t.Capabilities) == 0 {
		c.Detail = "the tool needs a command, a test_command and at least one capability"
		return c
	}
	res := workspace.Run(ctx, dir, t.TestCommand, []string{"SOLVE_TOOL_DIR=" + dir})
	c.Passed = res.Passed
	if !res.Passed {
		c.SigmaI = 0
	}
	c.Detail = map[string]any{"test_command": t.TestCommand, "exit_code": res.ExitCode, "output": tail(res.Output)}
	return c
}

// MaterializeTool writes a built tool's files (a resolve answer artifact)
// into dir and returns dir.
func MaterializeTool(ctx context.Context, c *store.Conn, artifactID, dir string) (string, error) {
	_, data, err := c.Artifact(ctx, artifactID)
	if err != nil {
		return "", err
	}
	var ans ResolveAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return "", fmt.Errorf("tool artifact %s is not a files answer: %w", artifactID, err)
	}
	if err := workspace.Write(dir, ans.Files); err != nil {
		return "", fmt.Errorf("tool artifact %s: %w", artifactID, err)
	}
	return dir, nil
}

// sigmaPath is σ_path = σ_parent_path × σ_v.
// A build subgoal starts its own chain: it is judged as a goal of its
// own, not by the attempts that failed on the node that needs the tool.
func (s *stepCtx) sigmaPath(ctx context.Context, sigma float64) (float64, error) {
	if s.n.Parent == "" {
		return sigma, nil
	}
	build, err := s.isBuild(ctx)
	if err != nil || build {
		return sigma, err
	}
	p, err := s.st.NodeSigmas(ctx, s.n.Parent)
	if err != nil {
		return 0, err
	}
	if !p.SigmaPath.Valid {
		return sigma, nil
	}
	return p.SigmaPath.Float64 * sigma, nil
}

// recordVerification writes the verification on the attempt and node,
// the KG outcome edges and the resolver's usage stats.
func (s *stepCtx) recordVerification(ctx context.Context, tx *store.Tx, resolver string, v Verification, path float64) error {
	n := s.n
	mode := ""
	if v.FailureMode != "" {
		mode = "failure:" + slug(v.FailureMode)
	}
	if err := tx.SetAttemptVerdict(ctx, n.LastAttempt, v, v.Verdict, v.SigmaV, mode); err != nil {
		return err
	}
	resolved := []string{}
	if v.Verdict == store.SAT {
		for _, c := range v.Checks {
			if c.Passed && slices.Contains(n.Selected, c.ConstraintID) {
				resolved = append(resolved, c.ConstraintID)
			}
		}
	}
	if err := tx.SetVerification(ctx, n.ID, v, v.SigmaV, path, resolved); err != nil {
		return err
	}
	last, err := tx.Attempt(ctx, n.LastAttempt)
	if err != nil {
		return err
	}
	cs, err := tx.Constraints(ctx, n.Selected)
	if err != nil {
		return err
	}
	props := map[string]any{"sigma_v": v.SigmaV, "cost": last.Cost, "time_seconds": last.Seconds, "input_constraint_signature": kg.ConstraintSignature(cs),
		"input_modality": n.Modality, "input_size_class": "small"}
	rel := "succeeded_on"
	if v.Verdict != store.SAT {
		rel = "failed_on"
	}
	if err := tx.EnsureKGNode(ctx, "resolver:"+resolver, "resolver", resolver, nil); err != nil {
		return err
	}
	if err := tx.AddEdge(ctx, "resolver:"+resolver, rel, kg.PatternID(n.Summary), props); err != nil {
		return err
	}
	if mode != "" {
		if err := tx.EnsureKGNode(ctx, mode, "failure_mode", strings.TrimPrefix(mode, "failure:"), nil); err != nil {
			return err
		}
		if err := tx.AddEdge(ctx, "attempt:"+n.LastAttempt, "failed_because", mode, nil); err != nil {
			return err
		}
	}
	return tx.RecordResolverUse(ctx, resolver, v.Verdict == store.SAT, last.Cost)
}

// slug is a failure mode as a KG id suffix: lower-case words joined by _.
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
func (s *stepCtx) sat(ctx context.Context, resolver, output string, v Verification, ans ResolveAnswer) (stepResult, error) {
	n := s.n
	path, err := s.sigmaPath(ctx, v.SigmaV)
	if err != nil {
		return stepResult{}, err
	}
	if !v.IsLeaf && path < n.TauGlobal {
		return s.gate(ctx, resolver, v, path)
	}
	to := store.StatusDecomposing
	if v.IsLeaf {
		to = store.StatusResolved
	}
	isBuild, err := s.isBuild(ctx)
	if err != nil {
		return stepResult{}, err
	}
	build := v.IsLeaf && ans.Tool != nil && isBuild
	err = s.commit(ctx, func(tx *store.Tx) error {
		if err := s.recordVerification(ctx, tx, resolver, v, path); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusVerifying, to); err != nil {
			return err
		}
		if !v.IsLeaf {
			return s.flow(ctx, tx, "VERIFY → SAT (sigma_v=%.2f, sigma_path=%.2f), not a leaf: decompose", v.SigmaV, path)
		}
		kind := v.LeafKind
		if kind == "" {
			kind = "atomic"
		}
		if err := tx.MarkResolved(ctx, n.ID, kind, v.LeafReason); err != nil {
			return err
		}
		if err := tx.SetArtifactSigma(ctx, output, v.SigmaV); err != nil {
			return err
		}
		if err := tx.EnsureKGNode(ctx, "artifact:"+output, "artifact", clip.Line(n.Summary, 80), map[string]any{"node_id": n.ID}); err != nil {
			return err
		}
		if err := tx.AddEdge(ctx, "resolver:"+resolver, "produced", "artifact:"+output, nil); err != nil {
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
func (s *stepCtx) registerTool(ctx context.Context, tx *store.Tx, builder, artifact string, t *ToolSpec) error {
	count, err := tx.CountResolvers(ctx, "system")
	if err != nil {
		return err
	}
	id := fmt.Sprintf("tool-%s-%d", slug(t.Capabilities[0]), count+1)
	entry := store.Resolver{ID: id, Label: t.Label, Description: t.Description, Type: "digital", Capabilities: t.Capabilities, CostPerInvocation: 0.001,
		LatencyEstimate: 10, BuiltBy: "system", BuiltForNode: s.n.Parent, Metadata: map[string]any{"command": t.Command, "test_command": t.TestCommand, "tool_artifact_id": artifact}}
	if err := register(ctx, &tx.Conn, entry); err != nil {
		return err
	}
	if err := tx.AddEdge(ctx, "resolver:"+id, "built_by", "resolver:"+builder, nil); err != nil {
		return err
	}
	if err := tx.AddEdge(ctx, "resolver:"+id, "composed_of", "resolver:"+CodexToolsID, map[string]any{"order": 1, "role": "subprocess executor"}); err != nil {
		return err
	}
	// The resolver that exhausted T_max on the parent is replaced by the
	// new tool for this capability.
	parent, err := tx.Node(ctx, s.n.Parent)
	if err != nil {
		return err
	}
	if parent.ResolverID != "" {
		if err := tx.AddEdge(ctx, "resolver:"+parent.ResolverID, "replaced_by", "resolver:"+id, map[string]any{"capability": t.Capabilities[0]}); err != nil {
			return err
		}
	}
	return s.flow(ctx, tx, "BUILD: registered %s (%s) providing %s after its tests passed", id, t.Command, strings.Join(t.Capabilities, ", "))
}

// unsat handles UNSAT (Step 9): retry with feedback, or BUILD/HIRE.
func (s *stepCtx) unsat(ctx context.Context, resolver *string, v Verification) (stepResult, error) {
	n := s.n
	stagnant, err := s.stagnating(ctx, v.SigmaV)
	if err != nil {
		return stepResult{}, err
	}
	path, err := s.sigmaPath(ctx, v.SigmaV)
	if err != nil {
		return stepResult{}, err
	}
	if n.AttemptCount < n.MaxAttempts && !stagnant {
		err := s.commit(ctx, func(tx *store.Tx) error {
			if resolver != nil {
				if err := s.recordVerification(ctx, tx, *resolver, v, path); err != nil {
					return err
				}
			}
			if err := s.move(ctx, tx, store.StatusVerifying, store.StatusResolving); err != nil {
				return err
			}
			return s.flow(ctx, tx, "VERIFY → UNSAT (sigma_v=%.2f): RETRY %d/%d with feedback", v.SigmaV, n.AttemptCount+1, n.MaxAttempts)
		})
		return stepResult{status: store.StatusResolving}, err
	}
	if resolver != nil {
		// Record the verdict first: BUILD/HIRE below is its own commit.
		if err := s.commit(ctx, func(tx *store.Tx) error {
			if err := s.recordVerification(ctx, tx, *resolver, v, path); err != nil {
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

// stagnating: σ improved by less than StagnationEpsilon over each of the
// last two attempts (the current verdict and the two verified before it).
func (s *stepCtx) stagnating(ctx context.Context, current float64) (bool, error) {
	atts, err := s.st.Attempts(ctx, s.n.ID)
	if err != nil {
		return false, err
	}
	var prev []float64 // newest first
	for i := len(atts) - 1; i >= 0 && len(prev) < 2; i-- {
		if a := atts[i]; a.ID != s.n.LastAttempt && a.Verdict.Valid {
			prev = append(prev, a.SigmaV.Float64)
		}
	}
	if len(prev) < 2 {
		return false, nil
	}
	return current-prev[0] < StagnationEpsilon && prev[0]-prev[1] < StagnationEpsilon, nil
}

var errNoCapability = errors.New("detect_gap gave no capability_tag")
