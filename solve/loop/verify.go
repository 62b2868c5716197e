package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// ── Step 6: verify ──
func (s *stepCtx) verify(ctx context.Context) (stepResult, error) {
	n := s.n
	last, err := s.st.Attempt(ctx, n.LastAttempt)
	if err != nil {
		return stepResult{}, err
	}
	if last.Verdict != "" {
		return s.reverify(ctx, last)
	}
	in, err := s.verifyInput(ctx, last.Output)
	if err != nil {
		return stepResult{}, err
	}
	// Logic checks with a command run (codex-tools-0, σ = 1.0 on pass)
	// when the output carries files or came from a tool that acted on the
	// workspace, in the attempt's own copy of the workspace; a plan's text
	// output defers them to the global consistency check (Step 12).
	acted := len(in.ans.Files) > 0 || (last.Resolver != ClaudeCodeID && last.Resolver != CandidateID)
	ws := s.e.cfg.Workspace
	dir := ws // none: codex-tools-0 says so, and the node goes to HIRE
	if ws != "" && acted {
		if bad, err := workspace.Conflicts(ws, in.ans.Files, in.base); err != nil {
			return stepResult{}, err
		} else if len(bad) > 0 {
			return s.conflict(ctx, last, &workspace.ConflictError{Paths: bad})
		}
		att, err := s.checkCopy(in)
		if err != nil {
			return stepResult{}, err
		}
		if att != nil {
			defer att.remove()
			dir = att.dir
		}
	}
	metrics, err := ledgerMetrics(ctx, &s.st.Conn, n)
	if err != nil {
		return stepResult{}, err
	}
	r, err := s.kernelChecks(ctx, in.cs, acted, dir, metrics)
	if err != nil {
		return stepResult{}, err
	}
	if r.checkErr != nil {
		return s.failed(ctx, r.checkErr, OpRunCheck)
	}
	checks := r.checks
	if in.ans.Tool != nil && in.build {
		// A built tool is registered only after its own tests pass, run
		// from its materialized files, outside the workspace.
		ch, err := s.toolSelfTest(ctx, last.Output, in.ans.Tool)
		if err != nil {
			return s.failed(ctx, err, OpRunCheck)
		}
		checks = append(checks, ch)
	}
	va, judged, err := s.judge(ctx, in.cs, in.out, checks, r.open, metrics)
	if err != nil {
		return s.failed(ctx, err, OpVerify)
	}
	v := verdictOf(va, append(checks, judged...), len(r.deferred))
	if v.Verdict == store.SAT {
		// Only a verified leaf's files enter the workspace (a built tool's
		// files are the tool's, not the goal's), and only when none changed
		// there since the attempt was made.
		if v.IsLeaf && ws != "" && len(in.ans.Files) > 0 && !(in.build && in.ans.Tool != nil) {
			err := s.mergeLeaf(ctx, in)
			var ce *workspace.ConflictError
			if errors.As(err, &ce) {
				return s.conflict(ctx, last, ce)
			}
			if err != nil {
				return stepResult{}, err
			}
		}
		return s.sat(ctx, last.Resolver, last.Output, v, in.ans)
	}
	if r.final {
		v.FailureMode = "limit_exceeded"
	}
	return s.unsat(ctx, last, true, v)
}

// reverify decides again from the record for an attempt already verified
// (a permanent resolver error, or a node waiting on BUILD/HIRE coming
// back): a resumed run must not judge the same output twice.
func (s *stepCtx) reverify(ctx context.Context, last *store.Attempt) (stepResult, error) {
	var v Verification
	if err := json.Unmarshal([]byte(last.Verification), &v); err != nil {
		return stepResult{}, fmt.Errorf("attempt %s: verification: %w", last.ID, err)
	}
	if v.Verdict == store.SAT {
		return stepResult{}, fmt.Errorf("attempt %s is SAT but the node is still verifying; kernel.db is inconsistent", s.n.LastAttempt)
	}
	return s.unsat(ctx, last, false, v)
}

// verifyOutput is what verification reads of an attempt's output, read
// once so each step below works on the same record.
type verifyOutput struct {
	cs    []ConstraintView // the node's selected constraints
	out   *ArtifactView
	ans   ResolveAnswer
	base  map[string]string // workspace file → sha256 when the attempt was made
	build bool              // the node is a BUILD subgoal
}

// verifyInput reads the node's selected constraints and the output
// artifact with the workspace hashes it was made against.
func (s *stepCtx) verifyInput(ctx context.Context, output string) (*verifyOutput, error) {
	cs, err := constraintViews(ctx, &s.st.Conn, s.n.Selected, "c")
	if err != nil {
		return nil, err
	}
	info, data, err := s.st.Artifact(ctx, output)
	if err != nil {
		return nil, err
	}
	in := &verifyOutput{cs: cs, out: &ArtifactView{Type: info.Type, Format: info.Format, Content: string(data), ID: output}}
	if err := json.Unmarshal(data, &in.ans); err != nil {
		return nil, fmt.Errorf("output %s: %w", output, err)
	}
	var meta struct {
		Base map[string]string `json:"base_sha256"`
	}
	if err := json.Unmarshal(info.Metadata, &meta); err != nil {
		return nil, fmt.Errorf("output %s: metadata: %w", output, err)
	}
	in.base = meta.Base
	if in.build, err = s.isBuild(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// checkCopy makes the attempt's own copy of the workspace, with its
// files written over it, when some constraint has a command to run in
// it; nil when none has (a copy costs a full workspace's files).
func (s *stepCtx) checkCopy(in *verifyOutput) (*attemptDir, error) {
	commands := false
	for _, c := range in.cs {
		p, err := payloadOf(c)
		if err != nil {
			return nil, err
		}
		commands = commands || (c.Type == store.Logic && p.Check != "")
	}
	if !commands {
		return nil, nil
	}
	return s.e.attemptWorkspace(s.n.ID, in.ans.Files)
}

// kernelRun is what the kernel's own checks decided and left open.
type kernelRun struct {
	checks   []ConstraintCheck
	deferred []string // command checks left to the consistency check
	open     []string // refs of constraints the verifier judges
	final    bool     // a ledger expression failed that can never hold again
	checkErr error    // a check command could not run: the step fails
}

// kernelChecks runs what the kernel decides without the model: command
// checks (in dir) when the attempt acted on the workspace, ledger
// expressions over metrics; the rest is left open for the verifier.
func (s *stepCtx) kernelChecks(ctx context.Context, cs []ConstraintView, acted bool, dir string, metrics map[string]float64) (kernelRun, error) {
	var r kernelRun
	for _, c := range cs {
		p, err := payloadOf(c)
		if err != nil {
			return kernelRun{}, err
		}
		switch {
		case c.Type == store.Logic && p.Check != "" && acted:
			res, err := s.runCheck(ctx, p.Check, dir, nil)
			if err != nil {
				r.checkErr = err
				return r, nil
			}
			r.checks = append(r.checks, commandCheck(c, p.Check, res))
		case c.Type == store.Logic && p.Check != "":
			r.deferred = append(r.deferred, c.ID)
		case c.Type == store.Logic && p.Expr != "":
			ch, never := exprCheck(c, p.Expr, metrics)
			r.checks = append(r.checks, ch)
			r.final = r.final || never
		default:
			r.open = append(r.open, c.Ref) // judged by the verifier
		}
	}
	return r, nil
}

// verdictOf combines every check into the attempt's verification: SAT
// only when all passed, σ_v the least σ_i (spec: σ_v = min σ_i).
func verdictOf(va VerifyAnswer, checks []ConstraintCheck, deferred int) Verification {
	v := Verification{Verdict: store.SAT, SigmaV: 1, IsLeaf: va.IsLeaf, LeafKind: va.LeafKind, LeafReason: va.LeafReason, Feedback: va.Feedback, FailureMode: va.FailureMode}
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
	v.TraceSummary = fmt.Sprintf("%d check(s), %d deferred to the consistency check; sigma_v=%.2f", len(checks), deferred, v.SigmaV)
	return v
}

// mergeLeaf writes a verified leaf's files into the workspace (the
// stored one, or the directory under the engine's merge lock so two
// workers never interleave); a *workspace.ConflictError when a file
// changed there since the attempt was made.
func (s *stepCtx) mergeLeaf(ctx context.Context, in *verifyOutput) error {
	if s.e.stored {
		return s.e.storedMerge(ctx, s.n.ID, in.ans.Files, in.base)
	}
	s.e.mergeMu.Lock()
	defer s.e.mergeMu.Unlock()
	return workspace.Merge(s.e.cfg.Workspace, in.ans.Files, in.base)
}

// judge asks the verifier (claude-code-0) for every constraint the
// kernel's checks do not decide (open), and for the leaf classification.
// A constraint it leaves without a verdict is asked again, once, alone;
// still without one it fails (σ 0): no selected constraint passes unjudged.
func (s *stepCtx) judge(ctx context.Context, cs []ConstraintView, out *ArtifactView, checks []ConstraintCheck, open []string, metrics map[string]float64) (VerifyAnswer, []ConstraintCheck, error) {
	var judged []ConstraintCheck
	facts := map[string]any{"ledger": metrics}
	va, err := s.verifyCall(ctx, &Call{Op: OpVerify, Constraints: cs, Output: out, Checks: checks, Attempt: s.n.AttemptCount, Params: facts})
	if err != nil {
		return va, nil, err
	}
	missing := s.take(cs, open, va.Checks, &judged)
	if len(missing) > 0 {
		var again []ConstraintView
		for _, c := range cs {
			if slices.Contains(missing, c.Ref) {
				again = append(again, c)
			}
		}
		fb := []string{fmt.Sprintf("your verification gave no verdict on %s; judge each of them (passed, sigma, detail): a constraint left unjudged fails", strings.Join(missing, ", "))}
		second, err := s.verifyCall(ctx, &Call{Op: OpVerify, Constraints: again, Output: out, Checks: checks, Attempt: s.n.AttemptCount, Feedback: fb, Params: facts})
		if err != nil {
			return va, nil, err
		}
		missing = s.take(again, missing, second.Checks, &judged)
	}
	for _, ref := range missing {
		c := cs[slices.IndexFunc(cs, func(c ConstraintView) bool { return c.Ref == ref })]
		judged = append(judged, ConstraintCheck{ConstraintID: c.ID, Ref: ref, Passed: false, SigmaI: 0,
			Detail: "the verifier gave no verdict on this constraint, asked twice; an unjudged constraint fails"})
	}
	return va, judged, nil
}

// verifyCall is one verify call and its decoded answer.
func (s *stepCtx) verifyCall(ctx context.Context, c *Call) (VerifyAnswer, error) {
	var va VerifyAnswer
	o, err := s.call(ctx, ClaudeCodeID, c)
	if err != nil {
		return va, err
	}
	if err := json.Unmarshal(o.Answer, &va); err != nil {
		return va, fmt.Errorf("%s answer: %w", OpVerify, err)
	}
	return va, nil
}

// take turns the verifier's verdicts on the open refs into checks (when a
// ref is judged twice, a failing verdict over a passing one, then the
// lowest σ; verdicts on anything else are ignored: the kernel's checks are
// final) and returns the open refs left unjudged.
func (s *stepCtx) take(cs []ConstraintView, open []string, answers []Judged, out *[]ConstraintCheck) []string {
	best := map[string]Judged{}
	for _, j := range answers {
		if !slices.Contains(open, j.Ref) {
			continue
		}
		if prev, ok := best[j.Ref]; !ok || (prev.Passed && !j.Passed) || (prev.Passed == j.Passed && j.Sigma < prev.Sigma) {
			best[j.Ref] = j
		}
	}
	var missing []string
	for _, ref := range open {
		j, ok := best[ref]
		if !ok {
			missing = append(missing, ref)
			continue
		}
		c := cs[slices.IndexFunc(cs, func(c ConstraintView) bool { return c.Ref == ref })]
		var suggestion any
		if j.RepairSuggestion != "" {
			suggestion = j.RepairSuggestion
		}
		*out = append(*out, ConstraintCheck{ConstraintID: c.ID, Ref: ref, Passed: j.Passed && j.Sigma >= s.n.TauLocal, SigmaI: j.Sigma, Detail: j.Detail, RepairSuggestion: suggestion})
	}
	return missing
}

// conflict records an attempt whose files could not enter the workspace
// (they changed there since it was made) as UNSAT, so the retry is made
// against the workspace as it now stands; the flow log says so loudly.
func (s *stepCtx) conflict(ctx context.Context, last *store.Attempt, ce *workspace.ConflictError) (stepResult, error) {
	detail := ce.Error()
	for _, p := range ce.Paths {
		cur, err := os.ReadFile(filepath.Join(s.e.cfg.Workspace, filepath.FromSlash(p)))
		if err == nil {
			detail += fmt.Sprintf("\nthe workspace's %s now holds:\n%s", p, clip.Text(string(cur), 1500))
		}
	}
	v := Verification{Verdict: store.UNSAT, SigmaV: 0, FailureMode: "merge_conflict", Feedback: detail, TraceSummary: ce.Error(),
		Checks: []ConstraintCheck{{ConstraintID: "kernel:merge", Ref: "merge", Passed: false, SigmaI: 0, Detail: detail}}}
	s.e.progress("Node %s: MERGE CONFLICT: %s", store.Short(s.n.ID), ce.Error())
	if err := s.st.Log(ctx, 2, s.n.ID, "merge conflict", map[string]any{"decision": "merge_conflict", "paths": ce.Paths, "attempt_id": last.ID}); err != nil {
		return stepResult{}, err
	}
	return s.unsat(ctx, last, true, v)
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
	if p.SigmaPath == nil {
		return sigma, nil
	}
	return *p.SigmaPath * sigma, nil
}

// recordVerification writes the verification on the attempt and node,
// the KG outcome edges and the resolver's usage stats.
func (s *stepCtx) recordVerification(ctx context.Context, tx *store.Tx, resolver string, v Verification, path float64) error {
	n := s.n
	if err := tx.SetAttemptVerdict(ctx, n.LastAttempt, v, v.Verdict, v.SigmaV); err != nil {
		return err
	}
	if mode := slug(v.FailureMode); mode != "" {
		if err := kg.Failed(ctx, &tx.Conn, n.LastAttempt, mode); err != nil {
			return err
		}
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
	entry := record.Resolver{ID: id, Label: t.Label, Description: t.Description, Type: "digital", Capabilities: t.Capabilities, CostPerInvocation: 0.001,
		LatencyEstimate: 10, BuiltBy: "system", BuiltForNode: s.n.Parent, Metadata: map[string]any{"command": t.Command, "test_command": t.TestCommand, "tool_artifact_id": artifact}}
	if len(t.Network) > 0 {
		entry.Metadata[metaNetwork] = t.Network // declared; allowed only by a person
	}
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

// unsat handles UNSAT (Step 9): retry with feedback, or BUILD/HIRE. fresh
// is a verdict just reached (recorded here); otherwise it was recorded
// before and the node comes back to decide again.
func (s *stepCtx) unsat(ctx context.Context, last *store.Attempt, fresh bool, v Verification) (stepResult, error) {
	n := s.n
	path, err := s.sigmaPath(ctx, v.SigmaV)
	if err != nil {
		return stepResult{}, err
	}
	record := func(tx *store.Tx) error {
		if !fresh {
			return nil
		}
		return s.recordVerification(ctx, tx, last.Resolver, v, path)
	}
	if v.FailureMode == "limit_exceeded" {
		// A cost or time limit over the node's spend failed: spend only
		// grows, so no retry can satisfy it. Nothing more is spent on it.
		why := "a limit on the node's own spend and time failed and can never hold again: " + failedText(v)
		err := s.commit(ctx, func(tx *store.Tx) error {
			if err := record(tx); err != nil {
				return err
			}
			if err := tx.EndInfeasible(ctx, n.ID, n.Status); err != nil {
				return err
			}
			return s.flow(ctx, tx, "INFEASIBLE: %s", why)
		})
		return stepResult{status: store.StatusInfeasible}, err
	}
	if tool, err := s.hiredTool(ctx, last.Resolver); err != nil {
		return stepResult{}, err
	} else if tool != nil {
		// A command a human gave does not change with feedback: instead of
		// retrying it, ask again, saying how it failed.
		if err := s.commit(ctx, func(tx *store.Tx) error {
			if err := record(tx); err != nil {
				return err
			}
			return s.flow(ctx, tx, "VERIFY → UNSAT (sigma_v=%.2f): the hired tool %s failed; HIRE again", v.SigmaV, tool.ID)
		}); err != nil {
			return stepResult{}, err
		}
		tag := tool.ID
		if len(tool.Capabilities) > 0 {
			tag = tool.Capabilities[0]
		}
		return s.hire(ctx, hireGap{Tag: tag, Type: tool.Type, BudgetClass: "capability", Constraints: []string{tag, "replaces " + tool.ID + ", which failed"},
			Rationale: fmt.Sprintf("the hired tool %s (%s) failed on attempt %d: %s", tool.ID, hiredWhat(*tool), last.Index, failedText(v))}, "hired_tool_failed")
	}
	stagnant, err := s.stagnating(ctx, v.SigmaV)
	if err != nil {
		return stepResult{}, err
	}
	if n.AttemptCount < n.MaxAttempts && !stagnant {
		err := s.commit(ctx, func(tx *store.Tx) error {
			if err := record(tx); err != nil {
				return err
			}
			if err := s.move(ctx, tx, store.StatusVerifying, store.StatusResolving); err != nil {
				return err
			}
			return s.flow(ctx, tx, "VERIFY → UNSAT (sigma_v=%.2f): RETRY %d/%d with feedback", v.SigmaV, n.AttemptCount+1, n.MaxAttempts)
		})
		return stepResult{status: store.StatusResolving}, err
	}
	if fresh {
		// Record the verdict first: BUILD/HIRE below is its own commit.
		if err := s.commit(ctx, func(tx *store.Tx) error {
			if err := record(tx); err != nil {
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

// hiredTool is the registry entry of a resolver a human provided (nil for
// any other).
func (s *stepCtx) hiredTool(ctx context.Context, id string) (*record.Resolver, error) {
	if id == "" || id == CandidateID {
		return nil, nil
	}
	entries, err := s.st.Resolvers(ctx, id)
	if err != nil || len(entries) != 1 || entries[0].BuiltBy != "human" {
		return nil, err
	}
	return &entries[0], nil
}

// failedText is what failed in a verification, for a person or a prompt.
func failedText(v Verification) string {
	var parts []string
	for _, c := range v.Checks {
		if !c.Passed {
			parts = append(parts, fmt.Sprintf("%s failed (sigma %.2f): %s", c.Ref, c.SigmaI, checkText(c)))
		}
	}
	if v.Feedback != "" && !slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(p, v.Feedback) }) {
		parts = append(parts, v.Feedback)
	}
	if len(parts) == 0 {
		parts = append(parts, v.TraceSummary)
	}
	return clip.Text(strings.Join(parts, "; "), 2000)
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
		if a := atts[i]; a.ID != s.n.LastAttempt && a.Verdict != "" {
			prev = append(prev, store.Value(a.SigmaV))
		}
	}
	if len(prev) < 2 {
		return false, nil
	}
	return current-prev[0] < StagnationEpsilon && prev[0]-prev[1] < StagnationEpsilon, nil
}

var errNoCapability = errors.New("detect_gap gave no capability_tag")
