package planning

import (
	"context"
	"fmt"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/solve/store"
)

// What planning records in kernel.db: the goal as the root node, one
// resolution attempt per model answer, the constraints, and the final
// plan's tasks as child nodes.

// createRoot inserts the goal's root node.
func createRoot(ctx context.Context, st *store.Store, id, goal string, budgetUSD, timeSeconds float64) error {
	summary := clip.Text(goal, 119) // goal_summary: at most 120 characters
	_, err := st.InsertNode(ctx, store.NewNode{ID: id, Goal: goal, Summary: summary, TauLocal: store.TauLocal, TauGlobal: store.TauGlobal,
		BudgetAllocated: budgetUSD, TimeAllocated: timeSeconds})
	return err
}

// attemptRecord is one resolver run of a planning stage.
type attemptRecord struct {
	Node        string
	Stage       string
	Feedback    []string
	Problems    []string
	FailureMode string
	CostUSD     float64
	Seconds     float64
	Summary     string
}

// verification is the spec's Verification shape, with the planning stage.
type verification struct {
	Stage        string            `json:"stage"`
	Verdict      string            `json:"verdict"`
	SigmaV       float64           `json:"sigma_v"`
	Checks       []constraintCheck `json:"checks"`
	TraceSummary string            `json:"trace_summary"`
}

// constraintCheck is one entry of a verification's checks (spec §0).
type constraintCheck struct {
	ConstraintID string  `json:"constraint_id"`
	Passed       bool    `json:"passed"`
	SigmaI       float64 `json:"sigma_i"`
	Detail       any     `json:"detail"`
}

// recordAttempt appends a resolution_attempts row for the node; the store
// keeps attempt_count and last_attempt_id in step (spec invariants).
func recordAttempt(ctx context.Context, st *store.Store, a attemptRecord) error {
	verdict, sigma := SAT, 1.0
	var checks []constraintCheck
	for _, p := range a.Problems {
		checks = append(checks, constraintCheck{ConstraintID: "kernel:" + a.Stage, Passed: false, SigmaI: 1, Detail: p})
	}
	if len(a.Problems) > 0 || a.FailureMode != "" {
		verdict, sigma = UNSAT, 0
	}
	if checks == nil {
		checks = []constraintCheck{{ConstraintID: "kernel:" + a.Stage, Passed: verdict == SAT, SigmaI: 1, Detail: a.Summary}}
	}
	v := verification{Stage: a.Stage, Verdict: verdict, SigmaV: sigma, Checks: checks, TraceSummary: a.Summary}
	rec := store.NewAttempt{Node: a.Node, Resolver: ResolverID, Verification: v, Verdict: verdict, SigmaV: sigma, Cost: a.CostUSD, Seconds: a.Seconds}
	if len(a.Feedback) > 0 {
		rec.Feedback = map[string]any{"violations": a.Feedback}
	}
	if a.FailureMode != "" {
		rec.FailureMode = "failure:" + a.FailureMode
	}
	return st.Write(ctx, func(tx *store.Tx) error {
		_, _, err := tx.AddAttempt(ctx, rec)
		return err
	})
}

// saveConstraints stores the constraints and sets the root's constraint
// sets: core (explicit, human), eligible and selected (all of them; the
// parsimony step belongs to `solve run`). It fills each constraint's DBID.
func saveConstraints(ctx context.Context, st *store.Store, root string, cs []Constraint) error {
	return st.Write(ctx, func(tx *store.Tx) error {
		var core, all []string
		for i := range cs {
			c := &cs[i]
			payload := map[string]any{"ref": c.ID, "sigma": c.Sigma, "explicit": c.Explicit, "quote": c.Quote,
				"removal_consequence": c.RemovalConsequence, "open_questions": c.OpenQuestions}
			if c.Type == Logic {
				payload["expr"] = c.Payload.Expr
			} else {
				payload["rubric"] = c.Payload.Rubric
			}
			id, err := tx.AddConstraint(ctx, store.NewConstraint{Type: c.Type, Domain: c.Domain, Title: c.Title, Payload: payload, Provenance: c.Provenance})
			if err != nil {
				return err
			}
			c.DBID = id
			all = append(all, id)
			if c.Explicit && c.Provenance.Source == "human" {
				core = append(core, id)
			}
		}
		if err := tx.SetConstraintSets(ctx, root, core, all, all); err != nil {
			return err
		}
		if err := tx.Transition(ctx, root, store.StatusIdentifying, store.StatusSelectingCons); err != nil {
			return err
		}
		if err := tx.Transition(ctx, root, store.StatusSelectingCons, store.StatusSelectingResolve); err != nil {
			return err
		}
		if err := tx.SetResolver(ctx, root, ResolverID); err != nil {
			return err
		}
		return tx.Log(ctx, 2, root, "constraints selected", map[string]any{"decision": "constraint_selection", "selected": all,
			"rationale": "planning mode keeps every extracted constraint; parsimony selection is part of solve run"})
	})
}

// saveDecomposition creates one child node per task of the final plan with
// its dependencies, stores the root's verification and σ, and moves the
// root verifying → decomposing → pending (waiting for its children).
func saveDecomposition(ctx context.Context, st *store.Store, p *Plan, final []Task, a *Analysis) error {
	root := p.RootID
	dbid := map[string]string{}
	for _, c := range p.Constraints {
		dbid[c.ID] = c.DBID
	}
	v := verification{Stage: "plan", Verdict: SAT, SigmaV: a.SigmaV}
	resolved := []string{}
	for _, vd := range a.Verdicts {
		passed := vd.Verdict != UNSAT && (vd.Type == Logic || vd.Sigma >= store.TauLocal)
		if vd.Verdict == UNSAT {
			v.Verdict = UNSAT
		}
		if vd.Verdict == SAT {
			resolved = append(resolved, dbid[vd.ConstraintID])
		}
		v.Checks = append(v.Checks, constraintCheck{ConstraintID: dbid[vd.ConstraintID], Passed: passed, SigmaI: vd.Sigma,
			Detail: map[string]any{"ref": vd.ConstraintID, "verdict": vd.Verdict, "expr": vd.Expr, "detail": vd.Detail}})
	}
	v.TraceSummary = fmt.Sprintf("%d tasks, mid cost $%.2f, critical path %sh; repair %s", len(final), a.Cost.Mid, num(a.Time.Mid), p.Repair.Status)
	return st.Write(ctx, func(tx *store.Tx) error {
		if err := tx.Transition(ctx, root, store.StatusVerifying, store.StatusDecomposing); err != nil {
			return err
		}
		if err := tx.SetVerification(ctx, root, v, a.SigmaV, a.SigmaV, resolved); err != nil {
			return err
		}
		nodeOf := map[string]string{}
		for i, t := range final {
			id, err := tx.InsertNode(ctx, store.NewNode{Parent: root, Root: root, Goal: t.ID + ": " + t.Title + "\n" + t.Description, Summary: t.Title,
				Inherited: resolved, TauLocal: store.TauLocal, TauGlobal: store.TauGlobal, BudgetAllocated: t.CostUSD.Mid, TimeAllocated: t.Hours.Mid * 3600})
			if err != nil {
				return err
			}
			nodeOf[t.ID] = id
			p.Tasks[i].NodeID = id
		}
		for _, t := range final {
			for _, d := range t.DependsOn {
				if err := tx.AddDependency(ctx, nodeOf[t.ID], nodeOf[d]); err != nil {
					return err
				}
			}
		}
		if err := tx.Transition(ctx, root, store.StatusDecomposing, store.StatusPending); err != nil {
			return err
		}
		if err := tx.Log(ctx, 1, root, fmt.Sprintf("Node %s: DECOMPOSED into %d tasks; waiting for children", store.Short(root), len(final)), nil); err != nil {
			return err
		}
		return tx.Log(ctx, 2, root, "plan", map[string]any{"decision": "plan", "plan": p})
	})
}
