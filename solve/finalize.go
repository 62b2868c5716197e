package solve

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// maxCouplingRounds bounds Step 12's reopen loop per root.
const maxCouplingRounds = 2

// finalize is Steps 12 and 13 on a done tree: deferred logic checks on the
// assembled workspace, the global consistency check, then assembly with
// σ_system. It reports whether the run is finished (false: a subtree was
// reopened and the loop continues).
func (e *engine) finalize(ctx context.Context) (bool, error) {
	var exists int
	if err := e.k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM artifacts WHERE node_id = ? AND type = 'assembly'", e.root).Scan(&exists); err != nil {
		return false, err
	}
	if exists > 0 {
		return true, nil
	}
	rootRow, err := loadNode(ctx, e.k.db, e.root)
	if err != nil {
		return false, err
	}
	b, err := e.k.newBudget(ctx, e.root, "")
	if err != nil {
		return false, err
	}
	s := &stepCtx{e: e, n: rootRow, budget: b}
	// A denied pre_check here is a HIRE on the root like any other: the
	// run waits, and finishes on resume once budget is added.
	denied := func(err error, op string) (bool, error) {
		if errors.Is(err, errDenied) {
			r, err := s.failed(ctx, err, op)
			// Answered on the terminal (--interactive): try again at once.
			return r.waitHire || r.status == StatusInfeasible, err
		}
		return false, err
	}
	// Build subgoals made tools (registered resolvers), not parts of the
	// goal's artifact: they are not leaves of the assembly.
	nodes, err := loadNodes(ctx, e.k.db, `root_id = ? AND invalidated_at IS NULL AND id NOT IN (WITH RECURSIVE b(id) AS (
		SELECT node_id FROM artifacts WHERE type = 'build_goal' UNION ALL SELECT n.id FROM nodes n JOIN b ON n.parent_id = b.id) SELECT id FROM b)`, e.root)
	if err != nil {
		return false, err
	}
	byParent := map[string]int{}
	for _, n := range nodes {
		byParent[n.Parent]++
	}
	var leaves []LeafView
	var leafRows []*nodeRow
	for _, n := range nodes {
		if n.Status == StatusResolved {
			outs, err := s.artifacts(ctx, []string{n.Output})
			if err != nil {
				return false, err
			}
			leaves = append(leaves, LeafView{Ref: fmt.Sprintf("l%d", len(leaves)+1), Summary: n.Summary, Output: trim(outs[0].Content, 1500), Sigma: n.SigmaPath.Float64, id: n.ID})
			leafRows = append(leafRows, n)
		}
	}
	// Deferred logic checks on the workspace: decomposed nodes' commands,
	// and a leaf's whose output carried no files (a --suggest text).
	var checks []ConstraintCheck
	for _, n := range nodes {
		var v Verification
		_ = json.Unmarshal([]byte(n.Verification), &v)
		cs, err := constraintViews(ctx, e.k.db, n.Selected, "c")
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			var p struct {
				Check string `json:"check"`
			}
			_ = json.Unmarshal(c.Payload, &p)
			if c.Type != Logic || p.Check == "" || isLogicChecked(v.Checks, c.id) {
				continue
			}
			o, err := s.call(ctx, CodexToolsID, &Call{Op: OpCheck, Params: map[string]any{commandInvokeID: p.Check}})
			if err != nil {
				return denied(err, OpCheck)
			}
			var ca checkAnswer
			_ = json.Unmarshal(o.Answer, &ca)
			checks = append(checks, ConstraintCheck{ConstraintID: c.id, Ref: c.Ref, Passed: ca.Passed, SigmaI: 1,
				Detail: map[string]any{"node": n.Summary, "command": p.Check, "exit_code": ca.ExitCode, "output": trimOutput(ca.Output)}})
		}
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpConsistency, Leaves: leaves, Checks: checks})
	if err != nil {
		return denied(err, OpConsistency)
	}
	var ca consistencyAnswer
	if err := json.Unmarshal(out.Answer, &ca); err != nil {
		return false, err
	}
	failed := false
	for _, c := range checks {
		failed = failed || !c.Passed
	}
	var rounds int
	_ = e.k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM logs WHERE node_id IN (SELECT id FROM nodes WHERE root_id = ?) AND summary LIKE '%COUPLING%'", e.root).Scan(&rounds)
	if (ca.Verdict == UNSAT && len(ca.Conflicts) > 0) && rounds < maxCouplingRounds {
		return false, s.couple(ctx, ca, leaves, nodes)
	}
	if failed || ca.Verdict == UNSAT {
		err := s.commit(ctx, func(tx *sql.Tx) error {
			return s.flow(ctx, tx, "GLOBAL CONSISTENCY → UNSAT and no reopen left (%d coupling rounds); the goal is not achieved: %s", rounds, jsonText(checks))
		})
		return true, err
	}
	sigma := 1.0
	var manifest []map[string]any
	for i, l := range leaves {
		sigma = math.Min(sigma, l.Sigma)
		manifest = append(manifest, map[string]any{"node_id": l.id, "summary": l.Summary, "artifact_id": leafRows[i].Output, "sigma_path": l.Sigma})
	}
	out, err = s.call(ctx, ClaudeCodeID, &Call{Op: OpAssemble, Leaves: leaves})
	if err != nil {
		return denied(err, OpAssemble)
	}
	var aa assembleAnswer
	if err := json.Unmarshal(out.Answer, &aa); err != nil {
		return false, err
	}
	err = s.commit(ctx, func(tx *sql.Tx) error {
		content := jsonText(map[string]any{"goal": rootRow.Goal, "summary": aa.Summary, "sigma_system": sigma, "leaves": manifest, "checks": nonNilChecks(checks)})
		var inputs []string
		for _, l := range leafRows {
			inputs = append(inputs, l.Output)
		}
		id, err := e.k.putArtifact(ctx, tx, artifactIn{Node: e.root, Type: "assembly", Format: "json", Content: []byte(content), ResolverID: ClaudeCodeID,
			InputIDs: inputs, Sigma: &sigma, Metadata: map[string]any{"sigma_system": sigma, "summary": aa.Summary}})
		if err != nil {
			return err
		}
		if err := ensureKG(ctx, tx, "artifact:"+id, "artifact", "assembly: "+trim(rootRow.Summary, 80), map[string]any{"sigma_system": sigma}); err != nil {
			return err
		}
		if err := addEdge(ctx, tx, "resolver:"+ClaudeCodeID, "produced", "artifact:"+id, nil); err != nil {
			return err
		}
		return s.flow(ctx, tx, "Goal achieved. sigma_system=%.2f (%d leaves). %s", sigma, len(leaves), aa.Summary)
	})
	return true, err
}

func nonNilChecks(c []ConstraintCheck) []ConstraintCheck {
	if c == nil {
		return []ConstraintCheck{}
	}
	return c
}

// couple persists coupling constraints and reopens the least common
// ancestor of each conflict (monotonic backtracking, §5).
func (s *stepCtx) couple(ctx context.Context, ca consistencyAnswer, leaves []LeafView, nodes []*nodeRow) error {
	parent := map[string]string{}
	for _, n := range nodes {
		parent[n.ID] = n.Parent
	}
	path := func(id string) []string {
		var p []string
		for ; id != ""; id = parent[id] {
			p = append([]string{id}, p...)
		}
		return p
	}
	return s.commit(ctx, func(tx *sql.Tx) error {
		for _, c := range ca.Conflicts {
			var lca []string
			for i, ref := range c.Leaves {
				var id string
				for _, l := range leaves {
					if l.Ref == ref {
						id = l.id
					}
				}
				p := path(id)
				if i == 0 {
					lca = p
					continue
				}
				k := 0
				for k < len(lca) && k < len(p) && lca[k] == p[k] {
					k++
				}
				lca = lca[:k]
			}
			if len(lca) == 0 {
				lca = []string{s.e.root}
			}
			u := lca[len(lca)-1]
			var ids []string
			for _, nc := range c.Coupling {
				id, err := insertConstraint(ctx, tx, nc, "derived", ClaudeCodeID, nil)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			var elig, sel string
			if err := tx.QueryRowContext(ctx, "SELECT constraints_eligible_ids, constraints_selected_ids FROM nodes WHERE id = ?", u).Scan(&elig, &sel); err != nil {
				return err
			}
			var e, se []string
			_ = json.Unmarshal([]byte(elig), &e)
			_ = json.Unmarshal([]byte(sel), &se)
			if _, err := tx.ExecContext(ctx, "UPDATE nodes SET constraints_eligible_ids = ? WHERE id = ?", jsonText(union(e, ids)), u); err != nil {
				return err
			}
			if err := invalidateSubtree(ctx, tx, u); err != nil {
				return err
			}
			if err := reopen(ctx, tx, s, u, StatusSelectingCons); err != nil {
				return err
			}
			if err := logRow(ctx, tx, 1, u, fmt.Sprintf("Node %s: COUPLING conflict (%s): %d coupling constraint(s); reopened at the least common ancestor", short(u), c.Reason, len(ids)), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// extractionDialogue is Step 1 with --interactive: candidate constraints
// are proposed, the human confirms or rejects each, and the irreducible
// core must not be empty. The call is budget-checked against the root
// budget and returned so the run records its spend.
func (e *engine) extractionDialogue(ctx context.Context, goal string, core []string, budget float64) ([]string, *Output, error) {
	if e.term == nil {
		return nil, nil, errors.New("--interactive needs a terminal on stdin")
	}
	r, err := e.resolver(ctx, ClaudeCodeID)
	if err != nil {
		return nil, nil, err
	}
	c := &Call{Op: OpSynthesize, Goal: goal, Summary: goal, Model: e.cfg.Model, Feedback: core}
	if cost, _ := r.Estimate(ctx, c); cost > budget {
		return nil, nil, fmt.Errorf("%w: the extraction dialogue is estimated at $%.4f, more than --budget %.2f", errDenied, cost, budget)
	}
	out, err := r.Resolve(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	var a synthesizeAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return nil, nil, err
	}
	w := e.terminal()
	for _, c := range a.Candidates {
		fmt.Fprintf(w, "Candidate constraint (%s, %s): %s — keep? [y/N] ", c.Type, c.Domain, c.Title)
		line, _ := e.term.ReadString('\n')
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y") {
			core = append(core, c.Title)
		}
	}
	for _, q := range a.Questions {
		fmt.Fprintf(w, "Open question: %s\n", q)
	}
	if len(core) == 0 {
		return nil, nil, fmt.Errorf("the irreducible core is empty: confirm at least one constraint or give --constraint")
	}
	fmt.Fprintf(w, "Irreducible core: %s\n", strings.Join(core, "; "))
	return core, out, nil
}

// terminal is where interactive questions are written.
func (e *engine) terminal() io.Writer {
	if e.opts.Progress == nil {
		return io.Discard
	}
	return e.opts.Progress
}
