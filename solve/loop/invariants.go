package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/llmkernels/kernels/solve/kg"
	"github.com/llmkernels/kernels/solve/store"
)

// CheckInvariants checks the spec §2 invariants on a run's tree and the
// shared tables; it returns every violation found (none is nil).
func CheckInvariants(ctx context.Context, st *store.Store, root string) ([]string, error) {
	nodes, err := st.TreeNodes(ctx, root)
	if err != nil {
		return nil, err
	}
	sched, err := st.Tree(ctx, root)
	if err != nil {
		return nil, err
	}
	c := &invariantCheck{ctx: ctx, st: st, byID: map[string]*store.Node{}, build: map[string]bool{}}
	for _, n := range nodes {
		c.byID[n.ID] = n
	}
	for _, t := range sched {
		c.build[t.ID] = t.Build
	}
	for _, n := range nodes {
		if err := c.node(n); err != nil {
			return nil, err
		}
	}
	if err := c.shared(root); err != nil {
		return nil, err
	}
	return c.bad, nil
}

// invariantCheck carries what every step of CheckInvariants needs: the
// tree indexed by id (parents are looked up), which nodes are BUILD
// subgoals (they start their own σ chain) and the violations so far, in
// the order they were found.
type invariantCheck struct {
	ctx   context.Context
	st    *store.Store
	byID  map[string]*store.Node
	build map[string]bool
	bad   []string
}

func (c *invariantCheck) add(format string, args ...any) {
	c.bad = append(c.bad, fmt.Sprintf(format, args...))
}

// planSteps reads a tool plan artifact's resolver ids, in order: both a
// node's plan and each attempt's plan are checked against them.
func (c *invariantCheck) planSteps(id string) ([]string, error) {
	_, data, err := c.st.Artifact(c.ctx, id)
	if err != nil {
		return nil, err
	}
	var p toolPlan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("tool plan %s: %w", id, err)
	}
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.ResolverID)
	}
	return ids, nil
}

// node checks one node's row against the tables it caches: its status
// and constraint ids, its attempts, its plan, its σ values, its verdict,
// its budget, then each of its attempts.
func (c *invariantCheck) node(n *store.Node) error {
	if err := c.nodeFields(n); err != nil {
		return err
	}
	atts, err := c.st.Attempts(c.ctx, n.ID)
	if err != nil {
		return err
	}
	c.nodeAttempts(n, atts)
	c.nodeSigma(n, atts)
	if n.Status == store.StatusResolved {
		var v Verification
		if err := json.Unmarshal([]byte(n.Verification), &v); err != nil || v.Verdict != store.SAT || n.Output == "" {
			c.add("node %s: resolved without a SAT verification and an output", n.ID)
		}
	}
	if err := c.nodeBudget(n); err != nil {
		return err
	}
	for _, a := range atts {
		if err := c.attempt(a); err != nil {
			return err
		}
	}
	return nil
}

// nodeFields checks what a node row states on its own: a known status,
// constraint ids that exist, and resolved constraints among the selected.
func (c *invariantCheck) nodeFields(n *store.Node) error {
	if !slices.Contains(store.Statuses, n.Status) {
		c.add("node %s: unknown status %q", n.ID, n.Status)
	}
	for _, set := range [][]string{n.Core, n.Eligible, n.Selected, n.Inherited, n.Resolved} {
		for _, id := range set {
			ok, err := c.st.ConstraintExists(c.ctx, id)
			if err != nil {
				return err
			}
			if !ok {
				c.add("node %s: constraint id %s has no constraints row", n.ID, id)
			}
		}
	}
	for _, id := range n.Resolved {
		if !slices.Contains(n.Selected, id) {
			c.add("node %s: resolved constraint %s is not selected", n.ID, id)
		}
	}
	return nil
}

// nodeAttempts checks the node's cached attempt count, last attempt and
// execution plan against its resolution attempts and plan artifact.
func (c *invariantCheck) nodeAttempts(n *store.Node, atts []store.Attempt) {
	last := ""
	if len(atts) > 0 {
		last = atts[len(atts)-1].ID
	}
	if len(atts) != n.AttemptCount {
		c.add("node %s: attempt_count %d but %d resolution_attempts", n.ID, n.AttemptCount, len(atts))
	}
	if last != n.LastAttempt {
		c.add("node %s: last_attempt_id %q is not the highest attempt_index (%q)", n.ID, n.LastAttempt, last)
	}
	if n.Plan != "" {
		a, err := c.st.ArtifactInfo(c.ctx, n.Plan)
		if err != nil || a.Type != "tool_plan" || a.Format != "json" {
			c.add("node %s: execution_plan_artifact_id %s is not a json tool_plan artifact", n.ID, n.Plan)
		} else if steps, err := c.planSteps(n.Plan); err != nil {
			c.add("node %s: %v", n.ID, err)
		} else if len(steps) == 1 && n.ResolverID != steps[0] {
			c.add("node %s: resolver_id %q is not its one-step plan's %q", n.ID, n.ResolverID, steps[0])
		}
	}
}

// nodeSigma checks σ_v against the last verified attempt and σ_path
// against the parent's path times σ_v.
func (c *invariantCheck) nodeSigma(n *store.Node, atts []store.Attempt) {
	if n.Verification != "" && n.LastAttempt != "" && n.SigmaV != nil {
		var sv *float64 // the last verified attempt's σ_v
		for i := len(atts) - 1; i >= 0 && sv == nil; i-- {
			if atts[i].Verdict != "" {
				sv = atts[i].SigmaV
			}
		}
		if sv == nil || math.Abs(*sv-*n.SigmaV) > 1e-9 {
			c.add("node %s: sigma_v %v is not its last verified attempt's %v", n.ID, *n.SigmaV, store.Value(sv))
		}
	}
	if n.SigmaPath != nil && n.SigmaV != nil && !n.Invalidated {
		// A BUILD subgoal starts its own chain (it is judged as a goal
		// of its own, not by the attempts that failed above it).
		want := *n.SigmaV
		if p := c.byID[n.Parent]; p != nil && !c.build[n.ID] {
			if p.SigmaPath != nil {
				want *= *p.SigmaPath
			}
		}
		if math.Abs(want-*n.SigmaPath) > 1e-9 {
			c.add("node %s: sigma_path %v, but parent path × sigma_v = %v", n.ID, *n.SigmaPath, want)
		}
	}
}

// nodeBudget checks the node's cached budget and reservations against
// the ledger, which is the truth.
func (c *invariantCheck) nodeBudget(n *store.Node) error {
	b, err := c.st.Balance(c.ctx, n.ID)
	if err != nil {
		return err
	}
	if math.Abs(n.BudgetAllocated-b.Allocated) > 1e-6 || math.Abs(n.BudgetSpent-b.Spent) > 1e-6 || math.Abs(n.TimeAllocated-b.TimeAllocated) > 1e-3 || math.Abs(n.TimeSpent-b.TimeSpent) > 1e-3 {
		c.add("node %s: budget cache (%v, %v, %v, %v) differs from the ledger (%v, %v, %v, %v)", n.ID, n.BudgetAllocated, n.BudgetSpent, n.TimeAllocated, n.TimeSpent,
			b.Allocated, b.Spent, b.TimeAllocated, b.TimeSpent)
	}
	if math.Abs(n.BudgetReserved-b.Reserved) > 1e-6 || math.Abs(n.TimeReserved-b.TimeReserved) > 1e-3 {
		c.add("node %s: reserved cache ($%v, %vs) differs from its open reservations ($%v, %vs)", n.ID, n.BudgetReserved, n.TimeReserved, b.Reserved, b.TimeReserved)
	}
	return nil
}

// attempt checks one resolution attempt: its failure mode is in the
// knowledge graph and its resolver is its plan's final step.
func (c *invariantCheck) attempt(a store.Attempt) error {
	if a.FailureMode != "" {
		ok, err := kg.FailureRecorded(c.ctx, &c.st.Conn, a.ID, a.FailureMode)
		if err != nil {
			return err
		}
		if !ok {
			c.add("attempt %s: failure mode %s without its failed_because edge in the knowledge graph", a.ID, a.FailureMode)
		}
	}
	if a.Resolver == CandidateID {
		return nil // a --suggest candidate scored as it stands: no resolver of the plan ran
	}
	if a.Plan == "" {
		c.add("attempt %s has no plan_artifact_id", a.ID)
		return nil
	}
	steps, err := c.planSteps(a.Plan)
	if err != nil {
		c.add("attempt %s: %v", a.ID, err)
		return nil
	}
	if len(steps) == 0 || steps[len(steps)-1] != a.Resolver {
		c.add("attempt %s: resolver_id %s is not its plan's final step", a.ID, a.Resolver)
	}
	return nil
}

// shared checks what lies beyond single nodes: dependencies, artifact
// content and the knowledge graph's edges.
func (c *invariantCheck) shared(root string) error {
	// Dependencies between live siblings, acyclic (they were checked at
	// creation; here: both ends exist and share a parent or are a build).
	deps, err := c.st.Dependencies(c.ctx, root)
	if err != nil {
		return err
	}
	for _, d := range deps {
		na, nb := c.byID[d.Node], c.byID[d.DependsOn]
		if na == nil || nb == nil || (na.Parent != nb.Parent && nb.Parent != d.Node) {
			c.add("dependency %s → %s is neither between siblings nor on a build subgoal", d.Node, d.DependsOn)
		}
	}
	// Every artifact's content is in the store under its hash.
	arts, err := c.st.Artifacts(c.ctx, root)
	if err != nil {
		return err
	}
	for _, a := range arts {
		ok, err := c.st.BlobExists(c.ctx, a.SHA256)
		if err != nil {
			return err
		}
		if !ok {
			c.add("artifact %s: content %s missing", a.ID, a.SHA256)
		}
	}
	dangling, err := c.st.DanglingEdges(c.ctx)
	if err != nil {
		return err
	}
	if dangling > 0 {
		c.add("%d kg_edges point at missing kg_nodes", dangling)
	}
	return nil
}
