package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/solve/dag"
	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/store"
)

// decomposeReasks is how many times a decomposition the kernel rejects
// (a cycle, a dangling dependency) is asked again, with every violation
// quoted, before the node goes to HIRE.
const decomposeReasks = 2

// ── Step 8: decompose ──
func (s *stepCtx) decompose(ctx context.Context) (stepResult, error) {
	n := s.n
	cs, err := constraintViews(ctx, &s.st.Conn, n.Selected, "c")
	if err != nil {
		return stepResult{}, err
	}
	outs, err := artifactViews(ctx, &s.st.Conn, []string{n.Output})
	if err != nil {
		return stepResult{}, err
	}
	var a DecomposeAnswer
	var problems []string
	for ask := 1; ; ask++ {
		c := &Call{Op: OpDecompose, Constraints: cs, Output: &outs[0], History: s.history(ctx)}
		if ask > 1 {
			// Asked again with the violations quoted, cycles first, as
			// solve plan does; "attempt N" marks the re-ask.
			c.Attempt, c.Feedback = ask, problems
		}
		out, err := s.call(ctx, ClaudeCodeID, c)
		if err != nil {
			return s.failed(ctx, err, OpDecompose)
		}
		if err := json.Unmarshal(out.Answer, &a); err != nil {
			return stepResult{}, fmt.Errorf("%s answer: %w", OpDecompose, err)
		}
		if problems = checkChildren(a.Children); len(problems) == 0 {
			break
		}
		if ask > decomposeReasks {
			return s.failed(ctx, Permanent("invalid_decomposition", fmt.Errorf("after %d re-asks: %s", decomposeReasks, strings.Join(problems, "; "))), OpDecompose)
		}
		msg := fmt.Sprintf("Node %s: DECOMPOSE answer rejected (%s); asking again", store.Short(n.ID), strings.Join(problems, "; "))
		s.e.progress("%s", msg)
		if err := s.st.Log(ctx, 1, n.ID, msg, nil); err != nil {
			return stepResult{}, err
		}
	}
	// ALLOCATE: 20% of the parent's remainder is kept as reserve, the rest
	// shared by the children's relative complexity weights. The remainder
	// is read in the transaction that moves it.
	total := 0.0
	for _, c := range a.Children {
		total += c.Weight
	}
	inherited := union(n.Inherited, n.Resolved)
	var children []*snode
	var reserveCost float64
	err = s.commit(ctx, func(tx *store.Tx) error {
		remCost, remTime, err := tx.Remaining(ctx, n.ID)
		if err != nil {
			return err
		}
		remCost, remTime = math.Max(remCost, 0), math.Max(remTime, 0)
		reserveCost = remCost * ReserveShare
		ids := map[string]string{}
		children = nil
		for _, c := range a.Children {
			id, err := tx.InsertNode(ctx, store.NewNode{Parent: n.ID, Root: n.Root, Goal: c.Goal, Summary: clip.Line(c.Summary, 119), Inherited: inherited,
				Inputs: []string{n.Output}, TauLocal: n.TauLocal, TauGlobal: n.TauGlobal, MaxAttempts: s.e.cfg.TMax})
			if err != nil {
				return err
			}
			ids[c.Ref] = id
			w := c.Weight / total
			cost, secs := (remCost*(1-ReserveShare))*w, (remTime*(1-ReserveShare))*w
			if err := tx.Delegate(ctx, n.ID, id, cost, secs, "allocated to child "+id, fmt.Sprintf("weight %.3f of parent's 80%%", w)); err != nil {
				return err
			}
			children = append(children, &snode{id: id, parent: n.ID, status: store.StatusPending})
		}
		for i, c := range a.Children {
			for _, d := range c.DependsOn {
				if err := tx.AddDependency(ctx, ids[c.Ref], ids[d]); err != nil {
					return err
				}
				children[i].deps = append(children[i].deps, ids[d])
			}
		}
		if err := tx.Log(ctx, 2, n.ID, "decomposition", map[string]any{"decision": "decomposition", "children": a.Children, "rationale": a.Rationale,
			"reserve_cost": reserveCost, "reserve_time": remTime * ReserveShare}); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusDecomposing, store.StatusPending); err != nil {
			return err
		}
		return s.flow(ctx, tx, "DECOMPOSE → %d children (reserve $%.4f kept)", len(a.Children), reserveCost)
	})
	return stepResult{status: store.StatusPending, children: children}, err
}

// checkChildren: refs unique and known, no cycle (each quoted with its
// path, first), weights > 0.
func checkChildren(cs []Child) []string {
	if len(cs) == 0 {
		return []string{"no children: a node that is not a leaf needs at least one subgoal"}
	}
	ids := make([]string, len(cs))
	deps := make([][]string, len(cs))
	for i, c := range cs {
		ids[i], deps[i] = c.Ref, c.DependsOn
	}
	var cycles, other []string
	if _, vs := dag.Build(ids, deps); len(vs) > 0 {
		for _, v := range vs {
			switch v.Kind {
			case dag.KindCycle:
				cycles = append(cycles, "cycle: "+strings.Join(v.Path, " → ")+" (a subgoal cannot wait, even indirectly, for itself; remove one of these dependencies)")
			case dag.KindExits, dag.KindNoEntry:
				// Siblings may end in several places; no entry means a cycle, quoted above.
			default:
				other = append(other, v.Message)
			}
		}
	}
	for _, c := range cs {
		if !(c.Weight > 0) {
			other = append(other, fmt.Sprintf("child %s has weight %v; give a positive relative complexity", c.Ref, c.Weight))
		}
	}
	return append(cycles, other...)
}

// lowConfidence is the failure mode of a gated attempt, and of the
// weakest ancestor's attempt that gating reopens.
const lowConfidence = "low_confidence"

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
		sg, err := s.st.NodeSigmas(ctx, p)
		if err != nil {
			return stepResult{}, err
		}
		if sg.SigmaV != nil {
			chain = append(chain, pv{p, *sg.SigmaV})
		}
		p = sg.Parent
	}
	weakest := chain[0] // chain runs deepest first: ties keep the deepest
	for _, c := range chain[1:] {
		if c.sigma < weakest.sigma {
			weakest = c
		}
	}
	err := s.commit(ctx, func(tx *store.Tx) error {
		if err := s.recordVerification(ctx, tx, resolver, v, path); err != nil {
			return err
		}
		if err := kg.Failed(ctx, &tx.Conn, n.LastAttempt, lowConfidence); err != nil {
			return err
		}
		if err := s.move(ctx, tx, store.StatusVerifying, store.StatusGated); err != nil {
			return err
		}
		p, t := Apart(path, n.TauGlobal)
		if err := s.flow(ctx, tx, "GATED: sigma_path %s < tau_global %s; backtrack to weakest ancestor %s (sigma_v %.2f)", p, t, store.Short(weakest.id), weakest.sigma); err != nil {
			return err
		}
		if err := tx.Log(ctx, 2, n.ID, "gated", map[string]any{"decision": "gated", "sigma_path": path, "tau_global": n.TauGlobal, "weakest_ancestor": weakest.id,
			"weakest_sigma_v": weakest.sigma}); err != nil {
			return err
		}
		if weakest.id == n.ID {
			if err := s.move(ctx, tx, store.StatusGated, store.StatusPending); err != nil {
				return err
			}
			s.n.Status = store.StatusPending
		} else {
			// The weakest ancestor's attempt is the weak link: its retry's
			// feedback quotes the gating.
			w, err := tx.Node(ctx, weakest.id)
			if err != nil {
				return err
			}
			if w.LastAttempt != "" {
				if err := kg.Failed(ctx, &tx.Conn, w.LastAttempt, lowConfidence); err != nil {
					return err
				}
			}
			if err := invalidateSubtree(ctx, tx, weakest.id); err != nil {
				return err
			}
		}
		return reopen(ctx, tx, weakest.id, store.StatusSelectingResolve)
	})
	return stepResult{reload: true}, err
}

// invalidateSubtree marks u's descendants invalidated (history kept) and
// logs each.
func invalidateSubtree(ctx context.Context, tx *store.Tx, u string) error {
	ids, err := tx.InvalidateSubtree(ctx, u)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.Log(ctx, 1, id, fmt.Sprintf("Node %s: INVALIDATED (ancestor %s reopened); history kept", store.Short(id), store.Short(u)), nil); err != nil {
			return err
		}
	}
	return nil
}

// reopen walks a pending node through the pass-through transitions to
// `to` (selecting_resolver after gating, selecting_constraints after a
// coupling conflict), clearing its plan and output.
func reopen(ctx context.Context, tx *store.Tx, id, to string) error {
	node, err := tx.Node(ctx, id)
	if err != nil {
		return err
	}
	status := node.Status
	for i := 0; i < len(passChain)-1 && passChain[i] != to; i++ {
		if passChain[i] != status {
			continue
		}
		if err := tx.Transition(ctx, id, passChain[i], passChain[i+1]); err != nil {
			return err
		}
		status = passChain[i+1]
	}
	if err := tx.ClearResult(ctx, id, to == store.StatusSelectingCons); err != nil {
		return err
	}
	if err := tx.Log(ctx, 2, id, "reopened", map[string]any{"decision": "reopen", "to": to}); err != nil {
		return err
	}
	return tx.Log(ctx, 1, id, fmt.Sprintf("Node %s: REOPENED to %s", store.Short(id), to), nil)
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
	if r, ok, err := s.lookupBeforeBuild(ctx, gap); err != nil || ok {
		return r, err
	}
	if gap.ResolverType != "digital" {
		return s.hire(ctx, hireGap{Tag: gap.CapabilityTag, Type: gap.ResolverType, Constraints: gap.BuildConstraints, BudgetClass: "capability", Rationale: gap.Rationale}, "not_buildable")
	}
	built, err := s.st.CountChildren(ctx, n.ID, "Build resolver: "+gap.CapabilityTag)
	if err != nil {
		return stepResult{}, err
	}
	if built > 0 {
		// A build subgoal for this capability already ran under the node.
		return s.hire(ctx, hireGap{Tag: gap.CapabilityTag, Type: gap.ResolverType, Constraints: gap.BuildConstraints, BudgetClass: "capability", Rationale: "a built tool did not resolve the node: " + gap.Rationale}, "build_failed")
	}
	// The build's cost: a subtree of one leaf, about six LLM operations.
	c, secs := s.estimateOps(ctx, 6)
	if ok, err := s.st.Cover(ctx, n.ID, n.Parent, c, secs); err != nil {
		return stepResult{}, err
	} else if !ok {
		return s.hire(ctx, hireGap{Tag: gap.CapabilityTag, Type: gap.ResolverType, Constraints: gap.BuildConstraints, BudgetClass: "over_budget",
			Rationale: fmt.Sprintf("BUILD estimated $%.4f / %.0fs exceeds the remaining budget", c, secs)}, "over_budget")
	}
	var child *snode
	err = s.commit(ctx, func(tx *store.Tx) error {
		var err error
		child, err = s.buildSubgoal(ctx, tx, gap)
		return err
	})
	if err != nil {
		return stepResult{}, err
	}
	return stepResult{status: store.StatusPending, children: []*snode{child}}, nil
}

// lookupBeforeBuild (B4): a resolver that provides the capability and was
// not tried on this node is used directly, before anything is built; ok
// is false when there is none.
func (s *stepCtx) lookupBeforeBuild(ctx context.Context, gap *GapAnswer) (stepResult, bool, error) {
	found, err := kg.LookupBeforeBuild(ctx, &s.st.Conn, gap.CapabilityTag)
	if err != nil {
		return stepResult{}, true, err
	}
	atts, err := s.st.Attempts(ctx, s.n.ID)
	if err != nil {
		return stepResult{}, true, err
	}
	for _, r := range found {
		tried := false
		for _, a := range atts {
			tried = tried || a.Resolver == r
		}
		if tried {
			continue
		}
		err := s.commit(ctx, func(tx *store.Tx) error {
			if err := s.move(ctx, tx, store.StatusVerifying, store.StatusSelectingResolve); err != nil {
				return err
			}
			return s.flow(ctx, tx, "LOOKUP-BEFORE-BUILD: %s provides %s; skip BUILD", r, gap.CapabilityTag)
		})
		if err != nil {
			return stepResult{}, true, err
		}
		s.n.Status = store.StatusSelectingResolve
		res, err := s.plan(ctx, RouteAnswer{ResolverID: r, Capability: gap.CapabilityTag, Rationale: "lookup-before-build"}, true)
		return res, true, err
	}
	return stepResult{}, false, nil
}

// buildSubgoal creates, in the step's transaction, the BUILD subgoal for
// the gap: its constraints, its build goal as input, half the node's
// remainder, and the node's dependency on it while the node waits.
func (s *stepCtx) buildSubgoal(ctx context.Context, tx *store.Tx, gap *GapAnswer) (*snode, error) {
	n := s.n
	var core []string
	for _, bc := range gap.BuildConstraints {
		cid, err := insertConstraint(ctx, &tx.Conn, NewConstraint{Type: store.Semantic, Domain: "tooling", Title: bc, Rubric: bc}, "derived", ClaudeCodeID, nil)
		if err != nil {
			return nil, err
		}
		core = append(core, cid)
	}
	id, err := tx.InsertNode(ctx, store.NewNode{Parent: n.ID, Root: n.Root, Goal: "Build resolver with capability: " + gap.CapabilityTag + "\n" + gap.Rationale,
		Summary: "Build resolver: " + gap.CapabilityTag, Core: core, Inherited: n.Inherited, TauLocal: n.TauLocal, TauGlobal: n.TauGlobal, MaxAttempts: s.e.cfg.TMax})
	if err != nil {
		return nil, err
	}
	content, err := store.JSONText(gap)
	if err != nil {
		return nil, fmt.Errorf("the build goal: %w", err)
	}
	gapID, err := tx.PutArtifact(ctx, store.NewArtifact{Node: id, Type: "build_goal", Format: "json", Content: []byte(content), ResolverID: ClaudeCodeID})
	if err != nil {
		return nil, err
	}
	if err := tx.SetInputs(ctx, id, []string{gapID}); err != nil {
		return nil, err
	}
	remCost, remTime, err := tx.Remaining(ctx, n.ID)
	if err != nil {
		return nil, err
	}
	half, halfT := math.Max(remCost, 0)*0.5, math.Max(remTime, 0)*0.5
	if err := tx.Delegate(ctx, n.ID, id, half, halfT, "allocated to build subgoal "+id, "half the node's remainder for BUILD"); err != nil {
		return nil, err
	}
	if err := tx.AddDependency(ctx, n.ID, id); err != nil {
		return nil, err
	}
	if err := s.move(ctx, tx, store.StatusVerifying, store.StatusPending); err != nil {
		return nil, err
	}
	if err := s.flow(ctx, tx, "BUILD: no resolver provides %s; build subgoal %s created", gap.CapabilityTag, store.Short(id)); err != nil {
		return nil, err
	}
	return &snode{id: id, parent: n.ID, status: store.StatusPending, build: true}, nil
}

// estimateOps is claude-code-0's estimate for ops resolve operations on
// the node (0 when it cannot be asked).
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
func (s *stepCtx) gap(ctx context.Context) (*GapAnswer, error) {
	n := s.n
	id, err := s.st.CapabilityGap(ctx, n.ID, n.AttemptCount)
	if err != nil {
		return nil, err
	}
	if id != "" {
		_, data, err := s.st.Artifact(ctx, id)
		if err != nil {
			return nil, err
		}
		var g GapAnswer
		if err := json.Unmarshal(data, &g); err != nil {
			return nil, fmt.Errorf("capability gap %s: %w", id, err)
		}
		return &g, nil
	}
	cs, err := constraintViews(ctx, &s.st.Conn, n.Selected, "c")
	if err != nil {
		return nil, err
	}
	history, err := s.attemptHistory(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.call(ctx, ClaudeCodeID, &Call{Op: OpGap, Constraints: cs, Feedback: history, History: s.history(ctx)})
	if err != nil {
		return nil, err
	}
	var g GapAnswer
	if err := json.Unmarshal(out.Answer, &g); err != nil {
		return nil, fmt.Errorf("%s answer: %w", OpGap, err)
	}
	if g.CapabilityTag == "" {
		return nil, Permanent("invalid_format", errNoCapability)
	}
	// The gap is recorded with the step's spend, before anything acts on it.
	// (This artifact's node is the gap's node; build subgoals carry their own copy.)
	err = s.commit(ctx, func(tx *store.Tx) error {
		content, err := store.JSONText(g)
		if err != nil {
			return fmt.Errorf("the capability gap: %w", err)
		}
		if _, err := tx.PutArtifact(ctx, store.NewArtifact{Node: n.ID, Type: "capability_gap", Format: "json", Content: []byte(content),
			ResolverID: ClaudeCodeID, Metadata: map[string]any{"attempt_count": n.AttemptCount, "gap_of_node": true}}); err != nil {
			return err
		}
		return s.flow(ctx, tx, "GAP: needs %s (%s)", g.CapabilityTag, g.ResolverType)
	})
	return &g, err
}

// attemptHistory summarizes the node's attempts for gap detection and HIRE.
func (s *stepCtx) attemptHistory(ctx context.Context) ([]string, error) {
	atts, err := s.st.Attempts(ctx, s.n.ID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range atts {
		out = append(out, fmt.Sprintf("attempt %d: %s → %s (sigma_v=%.2f) %s", a.Index, a.Resolver, a.Verdict, store.Value(a.SigmaV), a.FailureMode))
	}
	return out, nil
}

// Apart formats two figures with two decimals, or with as many more as it
// takes (up to six) for a comparison between them to read true: never
// "0.50 < 0.50".
func Apart(a, b float64) (string, string) {
	for d := 2; d <= 6; d++ {
		x, y := fmt.Sprintf("%.*f", d, a), fmt.Sprintf("%.*f", d, b)
		if x != y || a == b {
			return x, y
		}
	}
	return fmt.Sprintf("%g", a), fmt.Sprintf("%g", b)
}
