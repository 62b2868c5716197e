package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/solve/store"
)

// maxCouplingRounds bounds Step 12's reopen loop per root.
const maxCouplingRounds = 2

// finalize is Steps 12 and 13 on a done tree: deferred logic checks on the
// assembled workspace, the global consistency check, then assembly with
// σ_system. It reports whether the run is finished (false: a subtree was
// reopened and the loop continues).
func (e *engine) finalize(ctx context.Context) (bool, error) {
	if a, err := e.st.LatestArtifact(ctx, e.root, "assembly"); err != nil || a != nil {
		return a != nil, err
	}
	rootRow, err := e.st.Node(ctx, e.root)
	if err != nil {
		return false, err
	}
	s := &stepCtx{e: e, st: e.st, n: rootRow}
	// Build subgoals made tools (registered resolvers), not parts of the
	// goal's artifact: they are not leaves of the assembly.
	nodes, err := e.st.AssemblyNodes(ctx, e.root)
	if err != nil {
		return false, err
	}
	leaves, leafRows, err := e.assemblyLeaves(ctx, nodes)
	if err != nil {
		return false, err
	}
	checks, runErr, err := s.deferredChecks(ctx, nodes)
	if err != nil {
		return false, err
	}
	if runErr != nil {
		return s.finalDenied(ctx, runErr, OpRunCheck)
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpConsistency, Leaves: leaves, Checks: checks})
	if err != nil {
		return s.finalDenied(ctx, err, OpConsistency)
	}
	var ca ConsistencyAnswer
	if err := json.Unmarshal(out.Answer, &ca); err != nil {
		return false, fmt.Errorf("%s answer: %w", OpConsistency, err)
	}
	failed := false
	for _, c := range checks {
		failed = failed || !c.Passed
	}
	rounds, err := e.st.CountLogs(ctx, e.root, "COUPLING")
	if err != nil {
		return false, err
	}
	if (ca.Verdict == store.UNSAT && len(ca.Conflicts) > 0) && rounds < maxCouplingRounds {
		return false, s.couple(ctx, ca, leaves, nodes)
	}
	if failed || ca.Verdict == store.UNSAT {
		return true, s.notAchieved(ctx, checks, ca, rounds)
	}
	return s.assemble(ctx, leaves, leafRows, checks)
}

// finalDenied makes a denied pre_check here a HIRE on the root like any
// other: the run waits, and finishes on resume once budget is added.
// Other errors stop the run.
func (s *stepCtx) finalDenied(ctx context.Context, err error, op string) (bool, error) {
	if errors.Is(err, errDenied) || errors.Is(err, errOutOfTime) {
		r, err := s.failed(ctx, err, op)
		// Answered on the terminal (--interactive): try again at once.
		return r.waitHire || r.status == store.StatusInfeasible, err
	}
	return false, err
}

// assemblyLeaves is the resolved nodes among nodes, as the leaves the
// consistency check and the assembly read (outputs clipped), and their rows.
func (e *engine) assemblyLeaves(ctx context.Context, nodes []*store.Node) ([]LeafView, []*store.Node, error) {
	var leaves []LeafView
	var leafRows []*store.Node
	for _, n := range nodes {
		if n.Status == store.StatusResolved {
			outs, err := artifactViews(ctx, &e.st.Conn, []string{n.Output})
			if err != nil {
				return nil, nil, err
			}
			leaves = append(leaves, LeafView{Ref: fmt.Sprintf("l%d", len(leaves)+1), Summary: n.Summary, Output: clip.Line(outs[0].Content, 1500), Sigma: store.Value(n.SigmaPath), ID: n.ID})
			leafRows = append(leafRows, n)
		}
	}
	return leaves, leafRows, nil
}

// deferredChecks runs the deferred logic checks on the assembled
// workspace (decomposed nodes' commands, and a leaf's whose output
// carried no files, such as a --suggest text), and evaluates every node's
// limits on spend and time again over what its whole subtree finally
// spent. runErr is a check command that could not run (a denied budget
// goes to HIRE through finalDenied); err stops the run.
func (s *stepCtx) deferredChecks(ctx context.Context, nodes []*store.Node) (checks []ConstraintCheck, runErr, err error) {
	e := s.e
	for _, n := range nodes {
		var v Verification
		if n.Verification != "" {
			if err := json.Unmarshal([]byte(n.Verification), &v); err != nil {
				return nil, nil, fmt.Errorf("node %s: verification: %w", n.ID, err)
			}
		}
		cs, err := constraintViews(ctx, &e.st.Conn, n.Selected, "c")
		if err != nil {
			return nil, nil, err
		}
		var metrics map[string]float64
		for _, c := range cs {
			p, err := payloadOf(c)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case c.Type != store.Logic:
			case p.Check != "" && !checked(v.Checks, c.ID):
				r, err := s.runCheck(ctx, p.Check, e.cfg.Workspace, nil)
				if err != nil {
					return nil, err, nil
				}
				ch := commandCheck(c, p.Check, r)
				ch.Detail.(map[string]any)["node"] = n.Summary
				checks = append(checks, ch)
			case p.Check == "" && p.Expr != "":
				if metrics == nil {
					if metrics, err = ledgerMetrics(ctx, &e.st.Conn, n); err != nil {
						return nil, nil, err
					}
				}
				ch, _ := exprCheck(c, p.Expr, metrics)
				ch.Detail = n.Summary + ": " + ch.Detail.(string)
				checks = append(checks, ch)
			}
		}
	}
	return checks, nil, nil
}

// notAchieved records that the goal is not achieved: the global checks
// failed and no coupling round is left to reopen a subtree.
func (s *stepCtx) notAchieved(ctx context.Context, checks []ConstraintCheck, ca ConsistencyAnswer, rounds int) error {
	return s.commit(ctx, func(tx *store.Tx) error {
		var failed []string
		for _, c := range checks {
			if !c.Passed {
				failed = append(failed, fmt.Sprintf("%s failed: %s", c.Ref, checkText(c)))
			}
		}
		if ca.Verdict == store.UNSAT {
			failed = append(failed, fmt.Sprintf("the consistency check found %d conflict(s)", len(ca.Conflicts)))
		}
		return s.flow(ctx, tx, "GLOBAL CONSISTENCY → UNSAT and no reopen left (%d coupling rounds); the goal is not achieved: %s", rounds, clip.Text(strings.Join(failed, "; "), 3000))
	})
}

// assemble is Step 13: the leaves' outputs assembled into the goal's
// artifact with σ_system, the least σ_path of its leaves.
func (s *stepCtx) assemble(ctx context.Context, leaves []LeafView, leafRows []*store.Node, checks []ConstraintCheck) (bool, error) {
	e, rootRow := s.e, s.n
	sigma := 1.0
	var manifest []map[string]any
	for i, l := range leaves {
		sigma = math.Min(sigma, l.Sigma)
		manifest = append(manifest, map[string]any{"node_id": l.ID, "summary": l.Summary, "artifact_id": leafRows[i].Output, "sigma_path": l.Sigma})
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpAssemble, Leaves: leaves})
	if err != nil {
		return s.finalDenied(ctx, err, OpAssemble)
	}
	var aa AssembleAnswer
	if err := json.Unmarshal(out.Answer, &aa); err != nil {
		return false, fmt.Errorf("%s answer: %w", OpAssemble, err)
	}
	if checks == nil {
		checks = []ConstraintCheck{}
	}
	err = s.commit(ctx, func(tx *store.Tx) error {
		content, err := store.JSONText(map[string]any{"goal": rootRow.Goal, "summary": aa.Summary, "sigma_system": sigma, "leaves": manifest, "checks": checks})
		if err != nil {
			return fmt.Errorf("the assembly: %w", err)
		}
		var inputs []string
		for _, l := range leafRows {
			inputs = append(inputs, l.Output)
		}
		id, err := tx.PutArtifact(ctx, store.NewArtifact{Node: e.root, Type: "assembly", Format: "json", Content: []byte(content), ResolverID: ClaudeCodeID,
			InputIDs: inputs, Sigma: &sigma, Metadata: map[string]any{"sigma_system": sigma, "summary": aa.Summary}})
		if err != nil {
			return err
		}
		if err := tx.EnsureKGNode(ctx, "artifact:"+id, "artifact", "assembly: "+clip.Line(rootRow.Summary, 80), map[string]any{"sigma_system": sigma}); err != nil {
			return err
		}
		if err := tx.AddEdge(ctx, "resolver:"+ClaudeCodeID, "produced", "artifact:"+id, nil); err != nil {
			return err
		}
		return s.flow(ctx, tx, "Goal achieved. sigma_system=%.2f (%d leaves). %s", sigma, len(leaves), aa.Summary)
	})
	return true, err
}

// couple persists coupling constraints and reopens the least common
// ancestor of each conflict (monotonic backtracking, §5).
func (s *stepCtx) couple(ctx context.Context, ca ConsistencyAnswer, leaves []LeafView, nodes []*store.Node) error {
	parent := map[string]string{}
	for _, n := range nodes {
		parent[n.ID] = n.Parent
	}
	found, unknown := locateConflicts(ca.Conflicts, leaves, parent, s.e.root)
	// A node is reopened once, and not when an ancestor of it is (its
	// subtree is invalidated with the ancestor's): the conflicts inside
	// are the ancestor's to solve, with their coupling constraints.
	top := func(u string) string {
		best := u
		for id := parent[u]; id != ""; id = parent[id] {
			if slices.ContainsFunc(found, func(l locatedConflict) bool { return l.u == id }) {
				best = id
			}
		}
		return best
	}
	return s.commit(ctx, func(tx *store.Tx) error {
		if len(found) == 0 {
			// Nothing located: the check is asked again next round.
			return tx.Log(ctx, 1, s.e.root, fmt.Sprintf("Node %s: COUPLING conflict(s) name no leaf (%s); nothing reopened, the consistency check is asked again",
				store.Short(s.e.root), strings.Join(unknown, ", ")), nil)
		}
		reopened := map[string]bool{}
		for _, f := range found {
			if err := s.coupleAt(ctx, tx, f.c, top(f.u), reopened, unknown); err != nil {
				return err
			}
		}
		return nil
	})
}

// locatedConflict is a conflict with u, the least common ancestor of the
// leaves it names.
type locatedConflict struct {
	c Conflict
	u string
}

// locateConflicts locates each conflict by the leaves it names that exist
// (a ref naming no leaf is ignored, and returned in unknown to be said in
// the log: it would make the root the common ancestor, and one stray ref
// would reopen the whole tree).
func locateConflicts(conflicts []Conflict, leaves []LeafView, parent map[string]string, root string) (found []locatedConflict, unknown []string) {
	path := func(id string) []string {
		var p []string
		for ; id != ""; id = parent[id] {
			p = append([]string{id}, p...)
		}
		return p
	}
	leafID := map[string]string{}
	for _, l := range leaves {
		leafID[l.Ref] = l.ID
	}
	for _, c := range conflicts {
		var lca []string
		known := 0
		for _, ref := range c.Leaves {
			id, ok := leafID[ref]
			if !ok {
				unknown = append(unknown, ref)
				continue
			}
			p := path(id)
			if known++; known == 1 {
				lca = p
				continue
			}
			k := 0
			for k < len(lca) && k < len(p) && lca[k] == p[k] {
				k++
			}
			lca = lca[:k]
		}
		if known == 0 {
			continue
		}
		if len(lca) == 0 {
			lca = []string{root}
		}
		found = append(found, locatedConflict{c, lca[len(lca)-1]})
	}
	return found, unknown
}

// coupleAt persists one conflict's coupling constraints as eligible at u,
// reopens u unless this round already did, and logs the decision.
func (s *stepCtx) coupleAt(ctx context.Context, tx *store.Tx, c Conflict, u string, reopened map[string]bool, unknown []string) error {
	var ids []string
	for _, nc := range c.Coupling {
		id, err := insertConstraint(ctx, &tx.Conn, nc, "derived", ClaudeCodeID, nil)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	un, err := tx.Node(ctx, u)
	if err != nil {
		return err
	}
	if err := tx.SetEligible(ctx, u, union(un.Eligible, ids)); err != nil {
		return err
	}
	if !reopened[u] {
		reopened[u] = true
		if err := invalidateSubtree(ctx, tx, u); err != nil {
			return err
		}
		if err := reopen(ctx, tx, u, store.StatusSelectingCons); err != nil {
			return err
		}
	}
	note := ""
	if len(unknown) > 0 {
		note = fmt.Sprintf(" (ignored %s: no such leaf)", strings.Join(unknown, ", "))
	}
	if err := tx.Log(ctx, 1, u, fmt.Sprintf("Node %s: COUPLING conflict (%s): %d coupling constraint(s); reopened at the least common ancestor%s", store.Short(u), c.Reason, len(ids), note), nil); err != nil {
		return err
	}
	var titles []string
	for _, nc := range c.Coupling {
		titles = append(titles, nc.Title)
	}
	return tx.Log(ctx, 2, u, "conflict between leaves", map[string]any{"decision": "coupling_conflict", "reason": c.Reason, "leaves": c.Leaves,
		"coupling_constraints": plainjson.List(titles), "reopened": u})
}

// extractionDialogue is Step 1 with Request.Interactive: candidate
// constraints are proposed, the human confirms or rejects each, and the
// irreducible core must not be empty. The call is budget-checked against
// the root budget and returned so the run records its spend.
func (e *engine) extractionDialogue(ctx context.Context, goal string, core []NewConstraint, budget float64) ([]NewConstraint, *Output, error) {
	if e.term == nil {
		return nil, nil, option.Errorf("interactive", "needs the terminal the human answers on, and none was given")
	}
	r, err := e.resolver(ctx, ClaudeCodeID)
	if err != nil {
		return nil, nil, err
	}
	var given []string
	for _, c := range core {
		given = append(given, c.Title)
	}
	c := &Call{Op: OpSynthesize, Goal: goal, Summary: goal, Model: e.cfg.Model, Feedback: given}
	if cost, _ := r.Estimate(ctx, c); cost > budget {
		return nil, nil, fmt.Errorf("%w: the extraction dialogue is estimated at $%.4f, more than the budget $%.2f", errDenied, cost, budget)
	}
	// The dialogue runs before the root exists, so its call is held to the
	// run's whole wall-time budget (and pre-checked against its money).
	dctx, cancel := context.WithTimeout(ctx, time.Duration(e.cfg.TimeSeconds*float64(time.Second)))
	c.MaxCost = budget // capped like a reserved call, at all the run has
	out, err := r.Resolve(dctx, c)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	var a SynthesizeAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return nil, nil, fmt.Errorf("%s answer: %w", OpSynthesize, err)
	}
	w := e.terminal()
	for _, c := range a.Candidates {
		byExpr := c.Type == store.Logic && c.Check == "" && c.Expr != ""
		if byExpr {
			fmt.Fprintf(w, "Candidate constraint (%s, %s): %s [%s] — keep? [y/N, e to edit the expression] ", c.Type, c.Domain, c.Title, c.Expr)
		} else {
			fmt.Fprintf(w, "Candidate constraint (%s, %s): %s — keep? [y/N] ", c.Type, c.Domain, c.Title)
		}
		line, _, err := e.readLine()
		if err != nil {
			return nil, nil, err
		}
		answer := strings.ToLower(line)
		edit := byExpr && answer == "e"
		if !edit && !strings.HasPrefix(answer, "y") {
			continue
		}
		// Kept: a logic candidate keeps its type and its check or
		// expression, so the kernel decides it deterministically; an
		// expression is stored only once it parses over the metrics.
		if byExpr && (edit || exprProblem(c.Expr) != "") {
			if c, err = e.askExpr(w, c, edit); err != nil {
				return nil, nil, err
			}
		}
		core = append(core, c)
	}
	for _, q := range a.Questions {
		fmt.Fprintf(w, "Open question: %s\n", q)
	}
	if len(core) == 0 {
		return nil, nil, fmt.Errorf("%w: confirm at least one candidate constraint, or give core constraints in words", ErrEmptyCore)
	}
	var kept []string
	for _, c := range core {
		kept = append(kept, fmt.Sprintf("%s (%s)", c.Title, c.Type))
	}
	fmt.Fprintf(w, "Irreducible core: %s\n", strings.Join(kept, "; "))
	return core, out, nil
}

// readLine reads the human's answer, and says whether the input ended
// (the answer is then what was typed before the end, "" when nothing).
func (e *engine) readLine() (string, bool, error) {
	line, err := e.term.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", false, fmt.Errorf("read the answer: %w", err)
	}
	return strings.TrimSpace(line), err != nil, nil
}

// askExpr asks the human for a logic candidate's expression until one
// parses over the metrics (exprProblem), saying why each other one does
// not. Enter, or the end of the input, keeps the candidate as a judged
// (semantic) constraint with its condition as written, as Step 2 does
// with an expression the model could not mend: an expression that cannot
// be evaluated is never stored.
func (e *engine) askExpr(w io.Writer, c NewConstraint, edit bool) (NewConstraint, error) {
	if !edit {
		fmt.Fprintf(w, "  %s cannot be evaluated: %s\n", c.Expr, exprProblem(c.Expr))
	}
	for {
		fmt.Fprintf(w, "  Expression over %s (e.g. cost_usd <= 0.5), or Enter to keep it judged: ", metricDescription)
		src, ended, err := e.readLine()
		if err != nil {
			return c, err
		}
		if src != "" {
			p := exprProblem(src)
			if p == "" {
				c.Expr = src
				return c, nil
			}
			fmt.Fprintf(w, "  %s; try again\n", p)
			if !ended {
				continue
			}
		}
		c.Rubric = strings.TrimSpace(c.Rubric + " " + c.Title + " (as written: " + c.Expr + ")")
		c.Type, c.Expr = store.Semantic, ""
		fmt.Fprintf(w, "  kept as a judged constraint\n")
		return c, nil
	}
}

// terminal is where interactive questions are written.
func (e *engine) terminal() io.Writer {
	if e.opts.Progress == nil {
		return io.Discard
	}
	return e.opts.Progress
}
