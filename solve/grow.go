package solve

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"strings"
)

// ── Step 8: decompose ──
func (s *stepCtx) decompose(ctx context.Context) (stepResult, error) {
	n := s.n
	cs, err := constraintViews(ctx, s.e.k.db, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	outs, err := s.artifacts(ctx, []string{n.Output})
	if err != nil {
		return stepResult{}, err
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpDecompose, Constraints: cs, Output: &outs[0], History: s.history(ctx)})
	if err != nil {
		return s.failed(ctx, err, OpDecompose)
	}
	var a decomposeAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil {
		return stepResult{}, err
	}
	if problems := checkChildren(a.Children); len(problems) > 0 {
		return s.failed(ctx, permanent("invalid_decomposition", errors.New(strings.Join(problems, "; "))), OpDecompose)
	}
	// ALLOCATE: 20% of the parent's remainder is kept as reserve, the rest
	// shared by the children's relative complexity weights.
	remCost, remTime := s.budget.own.RemainingCost(), s.budget.own.RemainingTime()
	total := 0.0
	for _, c := range a.Children {
		total += c.Weight
	}
	inherited := union(n.Inherited, n.Resolved)
	var children []*snode
	err = s.commit(ctx, func(tx *sql.Tx) error {
		ids := map[string]string{}
		for _, c := range a.Children {
			id := newID()
			ids[c.Ref] = id
			if _, err := tx.ExecContext(ctx, `INSERT INTO nodes (id, parent_id, root_id, goal_description, goal_summary, goal_modality, status,
				constraints_inherited_ids, input_artifact_ids, tau_local, tau_global, max_attempts, created_at)
				VALUES (?, ?, ?, ?, ?, 'text', 'pending', ?, ?, ?, ?, ?, ?)`,
				id, n.ID, n.Root, c.Goal, trim(c.Summary, 120), jsonText(inherited), jsonText([]string{n.Output}), n.TauLocal, n.TauGlobal, s.e.cfg.TMax, now()); err != nil {
				return err
			}
			w := c.Weight / total
			cost, secs := (remCost*(1-ReserveShare))*w, (remTime*(1-ReserveShare))*w
			if err := writeLedger(ctx, tx, ledgerEntry{Node: n.ID, Event: "spend", Amount: cost, Time: secs, Description: "allocated to child " + id}); err != nil {
				return err
			}
			if err := writeLedger(ctx, tx, ledgerEntry{Node: id, Event: "allocate", Amount: cost, Time: secs, Description: fmt.Sprintf("weight %.3f of parent's 80%%", w)}); err != nil {
				return err
			}
			children = append(children, &snode{id: id, parent: n.ID, status: StatusPending})
		}
		for i, c := range a.Children {
			for _, d := range c.DependsOn {
				if _, err := tx.ExecContext(ctx, "INSERT INTO node_dependencies (node_id, depends_on) VALUES (?, ?)", ids[c.Ref], ids[d]); err != nil {
					return err
				}
				children[i].deps = append(children[i].deps, ids[d])
			}
		}
		if err := logRow(ctx, tx, 2, n.ID, "decomposition", map[string]any{"decision": "decomposition", "children": a.Children, "rationale": a.Rationale,
			"reserve_cost": remCost * ReserveShare, "reserve_time": remTime * ReserveShare}); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusDecomposing, StatusPending); err != nil {
			return err
		}
		return s.flow(ctx, tx, "DECOMPOSE → %d children (reserve $%.4f kept)", len(a.Children), remCost*ReserveShare)
	})
	return stepResult{status: StatusPending, children: children}, err
}

// checkChildren: refs unique, dependencies known, no cycle, weights > 0.
func checkChildren(cs []childAnswer) []string {
	var problems []string
	if len(cs) == 0 {
		problems = append(problems, "no children: a node that is not a leaf needs at least one subgoal")
	}
	refs := map[string][]string{}
	for _, c := range cs {
		if _, dup := refs[c.Ref]; dup || c.Ref == "" {
			problems = append(problems, fmt.Sprintf("child ref %q is empty or used twice", c.Ref))
		}
		refs[c.Ref] = c.DependsOn
		if !(c.Weight > 0) {
			problems = append(problems, fmt.Sprintf("child %s has weight %v; give a positive relative complexity", c.Ref, c.Weight))
		}
	}
	for _, c := range cs {
		for _, d := range c.DependsOn {
			if _, ok := refs[d]; !ok {
				problems = append(problems, fmt.Sprintf("child %s depends on %q, which is not a sibling", c.Ref, d))
			}
		}
	}
	state := map[string]int{}
	var visit func(string) bool
	visit = func(r string) bool {
		if state[r] == 1 {
			return true
		}
		if state[r] == 2 {
			return false
		}
		state[r] = 1
		for _, d := range refs[r] {
			if _, ok := refs[d]; ok && visit(d) {
				return true
			}
		}
		state[r] = 2
		return false
	}
	for _, c := range cs {
		if visit(c.Ref) {
			problems = append(problems, fmt.Sprintf("the dependencies have a cycle through %s", c.Ref))
			break
		}
	}
	return problems
}

// gate is confidence gating (B7): σ_path < τ_global blocks decomposition;
// the weakest ancestor is reopened and its subtree invalidated.
func (s *stepCtx) gate(ctx context.Context, resolver string, v Verification, path float64) (stepResult, error) {
	n := s.n
	// Path root → v with σ_v (v's own σ is the new one).
	type pv struct {
		id    string
		sigma float64
	}
	chain := []pv{{n.ID, v.SigmaV}}
	for p := n.Parent; p != ""; {
		var sigma sql.NullFloat64
		var parent string
		if err := s.e.k.db.QueryRowContext(ctx, "SELECT sigma_v, COALESCE(parent_id, '') FROM nodes WHERE id = ?", p).Scan(&sigma, &parent); err != nil {
			return stepResult{}, err
		}
		if sigma.Valid {
			chain = append(chain, pv{p, sigma.Float64})
		}
		p = parent
	}
	weakest := chain[0] // chain runs deepest first: ties keep the deepest
	for _, c := range chain[1:] {
		if c.sigma < weakest.sigma {
			weakest = c
		}
	}
	err := s.commit(ctx, func(tx *sql.Tx) error {
		if err := s.recordVerification(ctx, tx, resolver, v, path); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE resolution_attempts SET failure_mode = 'failure:low_confidence' WHERE id = ?", n.LastAttempt); err != nil {
			return err
		}
		if err := ensureKG(ctx, tx, "failure:low_confidence", "failure_mode", "low_confidence", nil); err != nil {
			return err
		}
		if err := addEdge(ctx, tx, "attempt:"+n.LastAttempt, "failed_because", "failure:low_confidence", nil); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusVerifying, StatusGated); err != nil {
			return err
		}
		if err := s.flow(ctx, tx, "GATED: sigma_path %.2f < tau_global %.2f; backtrack to weakest ancestor %s (sigma_v %.2f)", path, n.TauGlobal, short(weakest.id), weakest.sigma); err != nil {
			return err
		}
		if weakest.id == n.ID {
			if err := s.move(ctx, tx, StatusGated, StatusPending); err != nil {
				return err
			}
			s.n.Status = StatusPending
		} else {
			// The weakest ancestor's attempt is the weak link: its retry's
			// feedback quotes the gating.
			if _, err := tx.ExecContext(ctx, `UPDATE resolution_attempts SET failure_mode = 'failure:low_confidence'
				WHERE id = (SELECT last_attempt_id FROM nodes WHERE id = ?)`, weakest.id); err != nil {
				return err
			}
			if err := invalidateSubtree(ctx, tx, weakest.id); err != nil {
				return err
			}
		}
		return reopen(ctx, tx, s, weakest.id, StatusSelectingResolve)
	})
	return stepResult{reload: true}, err
}

// invalidateSubtree marks u's descendants invalidated (history kept):
// outputs cleared, status pending (gated ones via gated → pending),
// dependencies deleted.
func invalidateSubtree(ctx context.Context, tx *sql.Tx, u string) error {
	rows, err := tx.QueryContext(ctx, `WITH RECURSIVE d(id) AS (SELECT id FROM nodes WHERE parent_id = ? AND invalidated_at IS NULL
		UNION ALL SELECT n.id FROM nodes n JOIN d ON n.parent_id = d.id WHERE n.invalidated_at IS NULL) SELECT id FROM d`, u)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET status = 'pending', invalidated_at = ?, output_artifact_id = NULL, verification = NULL,
			constraints_resolved_ids = '[]', sigma_v = NULL, sigma_path = NULL WHERE id = ?`, now(), id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM node_dependencies WHERE node_id = ? OR depends_on = ?", id, id); err != nil {
			return err
		}
		if err := logRow(ctx, tx, 1, id, fmt.Sprintf("Node %s: INVALIDATED (ancestor %s reopened); history kept", short(id), short(u)), nil); err != nil {
			return err
		}
	}
	return nil
}

// reopen walks a pending node through the pass-through transitions to
// `to` (selecting_resolver after gating, selecting_constraints after a
// coupling conflict), clearing its plan and output.
func reopen(ctx context.Context, tx *sql.Tx, s *stepCtx, id, to string) error {
	var status string
	if err := tx.QueryRowContext(ctx, "SELECT status FROM nodes WHERE id = ?", id).Scan(&status); err != nil {
		return err
	}
	chain := []string{StatusPending, StatusIdentifying, StatusSelectingCons, StatusSelectingResolve}
	for i := 0; i < len(chain)-1 && chain[i] != to; i++ {
		if chain[i] != status {
			continue
		}
		if err := transition(ctx, tx, id, chain[i], chain[i+1]); err != nil {
			return err
		}
		status = chain[i+1]
	}
	clear := "execution_plan_artifact_id = NULL, output_artifact_id = NULL, verification = NULL, constraints_resolved_ids = '[]', sigma_v = NULL, sigma_path = NULL"
	if to == StatusSelectingCons {
		clear += ", constraints_selected_ids = '[]'"
	}
	if _, err := tx.ExecContext(ctx, "UPDATE nodes SET "+clear+" WHERE id = ?", id); err != nil {
		return err
	}
	return logRow(ctx, tx, 1, id, fmt.Sprintf("Node %s: REOPENED to %s", short(id), to), nil)
}

// hireGap is a capability gap as HIRE records it.
type hireGap struct {
	Tag, Type, BudgetClass, Rationale string
	Constraints                       []string
}

// ── Step 10: BUILD (lookup-before-build first) ──
func (s *stepCtx) buildOrHire(ctx context.Context) (stepResult, error) {
	n := s.n
	gap, err := s.gap(ctx)
	if err != nil {
		return s.failed(ctx, err, OpGap)
	}
	// Lookup-before-build (B4): a resolver that provides the capability and
	// was not tried on this node is used directly.
	found, err := s.e.k.LookupBeforeBuild(ctx, s.e.k.db, gap.CapabilityTag)
	if err != nil {
		return stepResult{}, err
	}
	for _, r := range found {
		var tried int
		_ = s.e.k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM resolution_attempts WHERE node_id = ? AND resolver_id = ?", n.ID, r).Scan(&tried)
		if tried == 0 {
			err := s.commit(ctx, func(tx *sql.Tx) error {
				if err := s.move(ctx, tx, StatusVerifying, StatusSelectingResolve); err != nil {
					return err
				}
				return s.flow(ctx, tx, "LOOKUP-BEFORE-BUILD: %s provides %s; skip BUILD", r, gap.CapabilityTag)
			})
			if err != nil {
				return stepResult{}, err
			}
			s.n.Status = StatusSelectingResolve
			return s.plan(ctx, routeAnswer{ResolverID: r, Capability: gap.CapabilityTag, Rationale: "lookup-before-build"}, true)
		}
	}
	if gap.ResolverType != "digital" {
		return s.hire(ctx, hireGap{Tag: gap.CapabilityTag, Type: gap.ResolverType, Constraints: gap.BuildConstraints, BudgetClass: "capability", Rationale: gap.Rationale}, "not_buildable")
	}
	if s.built(ctx, gap.CapabilityTag) {
		return s.hire(ctx, hireGap{Tag: gap.CapabilityTag, Type: gap.ResolverType, Constraints: gap.BuildConstraints, BudgetClass: "capability", Rationale: "a built tool did not resolve the node: " + gap.Rationale}, "build_failed")
	}
	// The build's cost: a subtree of one leaf, about six LLM operations.
	c, secs := s.estimateOps(ctx, 6)
	if !s.budget.preCheck(c, secs) {
		return s.hire(ctx, hireGap{Tag: gap.CapabilityTag, Type: gap.ResolverType, Constraints: gap.BuildConstraints, BudgetClass: "over_budget",
			Rationale: fmt.Sprintf("BUILD estimated $%.4f / %.0fs exceeds the remaining budget", c, secs)}, "over_budget")
	}
	var child *snode
	err = s.commit(ctx, func(tx *sql.Tx) error {
		id := newID()
		var core []string
		for _, bc := range gap.BuildConstraints {
			cid, err := insertConstraint(ctx, tx, newConstraint{Type: Semantic, Domain: "tooling", Title: bc, Rubric: bc}, "derived", ClaudeCodeID, nil)
			if err != nil {
				return err
			}
			core = append(core, cid)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO nodes (id, parent_id, root_id, goal_description, goal_summary, goal_modality, status,
			constraints_core_ids, constraints_inherited_ids, input_artifact_ids, tau_local, tau_global, max_attempts, created_at)
			VALUES (?, ?, ?, ?, ?, 'text', 'pending', ?, ?, '[]', ?, ?, ?, ?)`, id, n.ID, n.Root,
			"Build resolver with capability: "+gap.CapabilityTag+"\n"+gap.Rationale, "Build resolver: "+gap.CapabilityTag,
			jsonText(nonNil(core)), jsonText(nonNil(n.Inherited)), n.TauLocal, n.TauGlobal, s.e.cfg.TMax, now()); err != nil {
			return err
		}
		gapID, err := s.e.k.putArtifact(ctx, tx, artifactIn{Node: id, Type: "build_goal", Format: "json", Content: []byte(jsonText(gap)), ResolverID: ClaudeCodeID})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE nodes SET input_artifact_ids = ? WHERE id = ?", jsonText([]string{gapID}), id); err != nil {
			return err
		}
		half, halfT := s.budget.own.RemainingCost()*0.5, s.budget.own.RemainingTime()*0.5
		if err := writeLedger(ctx, tx, ledgerEntry{Node: n.ID, Event: "spend", Amount: half, Time: halfT, Description: "allocated to build subgoal " + id}); err != nil {
			return err
		}
		if err := writeLedger(ctx, tx, ledgerEntry{Node: id, Event: "allocate", Amount: half, Time: halfT, Description: "half the node's remainder for BUILD"}); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO node_dependencies (node_id, depends_on) VALUES (?, ?)", n.ID, id); err != nil {
			return err
		}
		if err := s.move(ctx, tx, StatusVerifying, StatusPending); err != nil {
			return err
		}
		child = &snode{id: id, parent: n.ID, status: StatusPending, build: true}
		return s.flow(ctx, tx, "BUILD: no resolver provides %s; build subgoal %s created", gap.CapabilityTag, short(id))
	})
	if child == nil {
		return stepResult{}, err
	}
	return stepResult{status: StatusPending, children: []*snode{child}}, err
}

// built: a build subgoal for this capability already ran under the node.
func (s *stepCtx) built(ctx context.Context, tag string) bool {
	var count int
	_ = s.e.k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM nodes WHERE parent_id = ? AND goal_summary = ?", s.n.ID, "Build resolver: "+tag).Scan(&count)
	return count > 0
}

func (s *stepCtx) estimateOps(ctx context.Context, ops int) (float64, float64) {
	r, err := s.e.resolver(ctx, ClaudeCodeID)
	if err != nil {
		return 0, 0
	}
	c, secs := r.Estimate(ctx, &Call{Op: OpResolve, Goal: s.n.Goal, Summary: s.n.Summary, Model: s.e.cfg.Model})
	return c * float64(ops), secs * float64(ops)
}

// gap is the node's capability gap for its current attempt count: the
// recorded one, or detect_gap asked now (recorded on the node).
func (s *stepCtx) gap(ctx context.Context) (*gapAnswer, error) {
	n := s.n
	var id string
	err := s.e.k.db.QueryRowContext(ctx, "SELECT id FROM artifacts WHERE node_id = ? AND type = 'capability_gap' AND CAST(metadata->>'attempt_count' AS INTEGER) = ? ORDER BY rowid DESC LIMIT 1", n.ID, n.AttemptCount).Scan(&id)
	if err == nil {
		_, data, err := s.e.k.artifact(ctx, s.e.k.db, id)
		if err != nil {
			return nil, err
		}
		var g gapAnswer
		return &g, json.Unmarshal(data, &g)
	}
	cs, err := constraintViews(ctx, s.e.k.db, n.Selected, "c")
	if err != nil {
		return nil, err
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpGap, Constraints: cs, Feedback: s.attemptHistory(ctx), History: s.history(ctx)})
	if err != nil {
		return nil, err
	}
	var g gapAnswer
	if err := json.Unmarshal(out.Answer, &g); err != nil {
		return nil, err
	}
	if g.CapabilityTag == "" {
		return nil, permanent("invalid_format", errors.New("detect_gap gave no capability_tag"))
	}
	// The gap is recorded with the step's spend, before anything acts on it.
	// (This artifact's node is the gap's node; build subgoals carry their own copy.)
	err = s.commit(ctx, func(tx *sql.Tx) error {
		_, err := s.e.k.putArtifact(ctx, tx, artifactIn{Node: n.ID, Type: "capability_gap", Format: "json", Content: []byte(jsonText(g)),
			ResolverID: ClaudeCodeID, Metadata: map[string]any{"attempt_count": n.AttemptCount, "gap_of_node": true}})
		if err != nil {
			return err
		}
		return s.flow(ctx, tx, "GAP: needs %s (%s)", g.CapabilityTag, g.ResolverType)
	})
	return &g, err
}

// attemptHistory summarizes the node's attempts for gap detection and HIRE.
func (s *stepCtx) attemptHistory(ctx context.Context) []string {
	rows, err := s.e.k.db.QueryContext(ctx, "SELECT attempt_index, resolver_id, COALESCE(verdict, ''), COALESCE(sigma_v, 0), COALESCE(failure_mode, '') FROM resolution_attempts WHERE node_id = ? ORDER BY attempt_index", s.n.ID)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var i int
		var r, v, f string
		var sigma float64
		if rows.Scan(&i, &r, &v, &sigma, &f) == nil {
			out = append(out, fmt.Sprintf("attempt %d: %s → %s (sigma_v=%.2f) %s", i, r, v, sigma, f))
		}
	}
	return out
}
