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
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	nodes, err := st.TreeNodes(ctx, root)
	if err != nil {
		return nil, err
	}
	byID := map[string]*store.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	sched, err := st.Tree(ctx, root)
	if err != nil {
		return nil, err
	}
	build := map[string]bool{}
	for _, t := range sched {
		build[t.ID] = t.Build
	}
	planSteps := func(id string) ([]string, error) {
		_, data, err := st.Artifact(ctx, id)
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
	for _, n := range nodes {
		if !slices.Contains(store.Statuses, n.Status) {
			add("node %s: unknown status %q", n.ID, n.Status)
		}
		for _, set := range [][]string{n.Core, n.Eligible, n.Selected, n.Inherited, n.Resolved} {
			for _, id := range set {
				ok, err := st.ConstraintExists(ctx, id)
				if err != nil {
					return nil, err
				}
				if !ok {
					add("node %s: constraint id %s has no constraints row", n.ID, id)
				}
			}
		}
		for _, id := range n.Resolved {
			if !slices.Contains(n.Selected, id) {
				add("node %s: resolved constraint %s is not selected", n.ID, id)
			}
		}
		atts, err := st.Attempts(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		last := ""
		if len(atts) > 0 {
			last = atts[len(atts)-1].ID
		}
		if len(atts) != n.AttemptCount {
			add("node %s: attempt_count %d but %d resolution_attempts", n.ID, n.AttemptCount, len(atts))
		}
		if last != n.LastAttempt {
			add("node %s: last_attempt_id %q is not the highest attempt_index (%q)", n.ID, n.LastAttempt, last)
		}
		if n.Plan != "" {
			a, err := st.ArtifactInfo(ctx, n.Plan)
			if err != nil || a.Type != "tool_plan" || a.Format != "json" {
				add("node %s: execution_plan_artifact_id %s is not a json tool_plan artifact", n.ID, n.Plan)
			} else if steps, err := planSteps(n.Plan); err != nil {
				add("node %s: %v", n.ID, err)
			} else if len(steps) == 1 && n.ResolverID != steps[0] {
				add("node %s: resolver_id %q is not its one-step plan's %q", n.ID, n.ResolverID, steps[0])
			}
		}
		if n.Verification != "" && n.LastAttempt != "" && n.SigmaV != nil {
			var sv *float64 // the last verified attempt's σ_v
			for i := len(atts) - 1; i >= 0 && sv == nil; i-- {
				if atts[i].Verdict != "" {
					sv = atts[i].SigmaV
				}
			}
			if sv == nil || math.Abs(*sv-*n.SigmaV) > 1e-9 {
				add("node %s: sigma_v %v is not its last verified attempt's %v", n.ID, *n.SigmaV, store.Value(sv))
			}
		}
		if n.SigmaPath != nil && n.SigmaV != nil && !n.Invalidated {
			// A BUILD subgoal starts its own chain (it is judged as a goal
			// of its own, not by the attempts that failed above it).
			want := *n.SigmaV
			if p := byID[n.Parent]; p != nil && !build[n.ID] {
				if p.SigmaPath != nil {
					want *= *p.SigmaPath
				}
			}
			if math.Abs(want-*n.SigmaPath) > 1e-9 {
				add("node %s: sigma_path %v, but parent path × sigma_v = %v", n.ID, *n.SigmaPath, want)
			}
		}
		if n.Status == store.StatusResolved {
			var v Verification
			if err := json.Unmarshal([]byte(n.Verification), &v); err != nil || v.Verdict != store.SAT || n.Output == "" {
				add("node %s: resolved without a SAT verification and an output", n.ID)
			}
		}
		b, err := st.Balance(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		if math.Abs(n.BudgetAllocated-b.Allocated) > 1e-6 || math.Abs(n.BudgetSpent-b.Spent) > 1e-6 || math.Abs(n.TimeAllocated-b.TimeAllocated) > 1e-3 || math.Abs(n.TimeSpent-b.TimeSpent) > 1e-3 {
			add("node %s: budget cache (%v, %v, %v, %v) differs from the ledger (%v, %v, %v, %v)", n.ID, n.BudgetAllocated, n.BudgetSpent, n.TimeAllocated, n.TimeSpent,
				b.Allocated, b.Spent, b.TimeAllocated, b.TimeSpent)
		}
		if math.Abs(n.BudgetReserved-b.Reserved) > 1e-6 || math.Abs(n.TimeReserved-b.TimeReserved) > 1e-3 {
			add("node %s: reserved cache ($%v, %vs) differs from its open reservations ($%v, %vs)", n.ID, n.BudgetReserved, n.TimeReserved, b.Reserved, b.TimeReserved)
		}

		for _, a := range atts {
			if a.FailureMode != "" {
				ok, err := kg.FailureRecorded(ctx, &st.Conn, a.ID, a.FailureMode)
				if err != nil {
					return nil, err
				}
				if !ok {
					add("attempt %s: failure mode %s without its failed_because edge in the knowledge graph", a.ID, a.FailureMode)
				}
			}
			if a.Resolver == CandidateID {
				continue // a --suggest candidate scored as it stands: no resolver of the plan ran
			}
			if a.Plan == "" {
				add("attempt %s has no plan_artifact_id", a.ID)
				continue
			}
			steps, err := planSteps(a.Plan)
			if err != nil {
				add("attempt %s: %v", a.ID, err)
				continue
			}
			if len(steps) == 0 || steps[len(steps)-1] != a.Resolver {
				add("attempt %s: resolver_id %s is not its plan's final step", a.ID, a.Resolver)
			}
		}
	}
	// Dependencies between live siblings, acyclic (they were checked at
	// creation; here: both ends exist and share a parent or are a build).
	deps, err := st.Dependencies(ctx, root)
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		na, nb := byID[d.Node], byID[d.DependsOn]
		if na == nil || nb == nil || (na.Parent != nb.Parent && nb.Parent != d.Node) {
			add("dependency %s → %s is neither between siblings nor on a build subgoal", d.Node, d.DependsOn)
		}
	}
	// Every artifact's content is in the store under its hash.
	arts, err := st.Artifacts(ctx, root)
	if err != nil {
		return nil, err
	}
	for _, a := range arts {
		ok, err := st.BlobExists(ctx, a.SHA256)
		if err != nil {
			return nil, err
		}
		if !ok {
			add("artifact %s: content %s missing", a.ID, a.SHA256)
		}
	}
	dangling, err := st.DanglingEdges(ctx)
	if err != nil {
		return nil, err
	}
	if dangling > 0 {
		add("%d kg_edges point at missing kg_nodes", dangling)
	}
	return bad, nil
}
