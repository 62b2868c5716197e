package solve

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// nodeRow is a nodes row as the dispatcher reads it.
type nodeRow struct {
	ID, Parent, Root, Goal, Summary, Modality, Status     string
	Core, Eligible, Selected, Inherited, Resolved, Inputs []string
	ResolverID, Plan, Output, LastAttempt                 string
	Verification                                          string
	SigmaV, SigmaPath                                     sql.NullFloat64
	TauLocal, TauGlobal                                   float64
	AttemptCount, MaxAttempts                             int
	Invalidated                                           bool
	LeafKind                                              string
}

const nodeCols = `id, COALESCE(parent_id, ''), root_id, goal_description, goal_summary, goal_modality, status,
	constraints_core_ids, constraints_eligible_ids, constraints_selected_ids, constraints_inherited_ids, constraints_resolved_ids,
	input_artifact_ids, COALESCE(resolver_id, ''), COALESCE(execution_plan_artifact_id, ''), COALESCE(output_artifact_id, ''),
	COALESCE(last_attempt_id, ''), COALESCE(verification, ''), sigma_v, sigma_path, tau_local, tau_global, attempt_count, max_attempts,
	invalidated_at IS NOT NULL, COALESCE(leaf_kind, '')`

func scanNode(row interface{ Scan(...any) error }) (*nodeRow, error) {
	var n nodeRow
	var core, elig, sel, inh, res, in string
	if err := row.Scan(&n.ID, &n.Parent, &n.Root, &n.Goal, &n.Summary, &n.Modality, &n.Status, &core, &elig, &sel, &inh, &res, &in,
		&n.ResolverID, &n.Plan, &n.Output, &n.LastAttempt, &n.Verification, &n.SigmaV, &n.SigmaPath, &n.TauLocal, &n.TauGlobal,
		&n.AttemptCount, &n.MaxAttempts, &n.Invalidated, &n.LeafKind); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		s   string
		dst *[]string
	}{{core, &n.Core}, {elig, &n.Eligible}, {sel, &n.Selected}, {inh, &n.Inherited}, {res, &n.Resolved}, {in, &n.Inputs}} {
		if err := json.Unmarshal([]byte(p.s), p.dst); err != nil {
			return nil, fmt.Errorf("node %s: constraint id list %q is not a JSON array: %w", n.ID, p.s, err)
		}
	}
	return &n, nil
}

func loadNode(ctx context.Context, q querier, id string) (*nodeRow, error) {
	n, err := scanNode(q.QueryRowContext(ctx, "SELECT "+nodeCols+" FROM nodes WHERE id = ?", id))
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", id, err)
	}
	return n, nil
}

func loadNodes(ctx context.Context, q querier, where string, args ...any) ([]*nodeRow, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+nodeCols+" FROM nodes WHERE "+where+" ORDER BY rowid", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*nodeRow
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// constraintViews loads constraints by id, named c1, c2, … in order.
func constraintViews(ctx context.Context, q querier, ids []string, prefix string) ([]ConstraintView, error) {
	out := make([]ConstraintView, 0, len(ids))
	for i, id := range ids {
		c := ConstraintView{Ref: fmt.Sprintf("%s%d", prefix, i+1), id: id}
		var domain sql.NullString
		var payload string
		if err := q.QueryRowContext(ctx, "SELECT type, domain, title, payload FROM constraints WHERE id = ?", id).Scan(&c.Type, &domain, &c.Title, &payload); err != nil {
			return nil, fmt.Errorf("constraint %s: %w", id, err)
		}
		c.Domain, c.Payload = domain.String, json.RawMessage(payload)
		out = append(out, c)
	}
	return out, nil
}

// insertConstraint stores a constraint and returns its id.
func insertConstraint(ctx context.Context, q execer, c newConstraint, source, resolver string, derived []string) (string, error) {
	id := newID()
	payload := map[string]any{}
	if c.Check != "" {
		payload["check"] = c.Check
	}
	if c.Rubric != "" {
		payload["rubric"] = c.Rubric
	}
	prov := map[string]any{"source": source, "resolver_id": resolver, "derived_from_constraint_ids": nonNil(derived)}
	_, err := q.ExecContext(ctx, "INSERT INTO constraints (id, type, domain, title, payload, provenance, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		id, c.Type, c.Domain, c.Title, jsonText(payload), jsonText(prov), now())
	return id, err
}

func union(a, b []string) []string {
	out := append([]string{}, a...)
	for _, x := range b {
		found := false
		for _, y := range out {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}
