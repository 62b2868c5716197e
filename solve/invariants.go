package solve

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

var knownStatuses = []string{StatusPending, StatusIdentifying, StatusSelectingCons, StatusSelectingResolve, StatusResolving, StatusVerifying,
	StatusDecomposing, StatusGated, StatusResolved, StatusInfeasible, StatusFailed}

// CheckInvariants checks the spec §2 invariants on a run's tree and the
// shared tables; it returns every violation found (none is nil).
func (k *Kernel) CheckInvariants(ctx context.Context, root string) ([]string, error) {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	nodes, err := loadNodes(ctx, k.db, "root_id = ?", root)
	if err != nil {
		return nil, err
	}
	byID := map[string]*nodeRow{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	exists := func(table, id string) bool {
		var c int
		_ = k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id = ?", id).Scan(&c)
		return c == 1
	}
	for _, n := range nodes {
		if !slices.Contains(knownStatuses, n.Status) {
			add("node %s: unknown status %q", n.ID, n.Status)
		}
		for _, set := range [][]string{n.Core, n.Eligible, n.Selected, n.Inherited, n.Resolved} {
			for _, id := range set {
				if !exists("constraints", id) {
					add("node %s: constraint id %s has no constraints row", n.ID, id)
				}
			}
		}
		for _, id := range n.Resolved {
			if !slices.Contains(n.Selected, id) {
				add("node %s: resolved constraint %s is not selected", n.ID, id)
			}
		}
		var count int
		var last sql.NullString
		_ = k.db.QueryRowContext(ctx, "SELECT COUNT(*), (SELECT id FROM resolution_attempts WHERE node_id = ? ORDER BY attempt_index DESC LIMIT 1) FROM resolution_attempts WHERE node_id = ?", n.ID, n.ID).Scan(&count, &last)
		if count != n.AttemptCount {
			add("node %s: attempt_count %d but %d resolution_attempts", n.ID, n.AttemptCount, count)
		}
		if last.String != n.LastAttempt {
			add("node %s: last_attempt_id %q is not the highest attempt_index (%q)", n.ID, n.LastAttempt, last.String)
		}
		if n.Plan != "" {
			var typ, format string
			if err := k.db.QueryRowContext(ctx, "SELECT type, format FROM artifacts WHERE id = ?", n.Plan).Scan(&typ, &format); err != nil || typ != "tool_plan" || format != "json" {
				add("node %s: execution_plan_artifact_id %s is not a json tool_plan artifact", n.ID, n.Plan)
			} else if _, data, err := k.artifact(ctx, k.db, n.Plan); err == nil {
				var p struct {
					Steps []struct {
						ResolverID string `json:"resolver_id"`
					} `json:"steps"`
				}
				_ = json.Unmarshal(data, &p)
				if len(p.Steps) == 1 && n.ResolverID != p.Steps[0].ResolverID {
					add("node %s: resolver_id %q is not its one-step plan's %q", n.ID, n.ResolverID, p.Steps[0].ResolverID)
				}
			}
		}
		if n.Verification != "" && n.LastAttempt != "" && n.SigmaV.Valid {
			var sv sql.NullFloat64
			_ = k.db.QueryRowContext(ctx, "SELECT sigma_v FROM resolution_attempts WHERE node_id = ? AND verdict IS NOT NULL ORDER BY attempt_index DESC LIMIT 1", n.ID).Scan(&sv)
			if !sv.Valid || math.Abs(sv.Float64-n.SigmaV.Float64) > 1e-9 {
				add("node %s: sigma_v %v is not its last verified attempt's %v", n.ID, n.SigmaV.Float64, sv.Float64)
			}
		}
		if n.SigmaPath.Valid && n.SigmaV.Valid && !n.Invalidated {
			want := n.SigmaV.Float64
			if p := byID[n.Parent]; p != nil {
				if p.SigmaPath.Valid {
					want *= p.SigmaPath.Float64
				}
			}
			if math.Abs(want-n.SigmaPath.Float64) > 1e-9 {
				add("node %s: sigma_path %v, but parent path × sigma_v = %v", n.ID, n.SigmaPath.Float64, want)
			}
		}
		if n.Status == StatusResolved {
			var v Verification
			if err := json.Unmarshal([]byte(n.Verification), &v); err != nil || v.Verdict != SAT || n.Output == "" {
				add("node %s: resolved without a SAT verification and an output", n.ID)
			}
		}
		b, err := balance(ctx, k.db, n.ID)
		if err != nil {
			return nil, err
		}
		var ba, bs, ta, ts float64
		_ = k.db.QueryRowContext(ctx, "SELECT budget_allocated, budget_spent, time_allocated, time_spent FROM nodes WHERE id = ?", n.ID).Scan(&ba, &bs, &ta, &ts)
		if math.Abs(ba-b.Allocated) > 1e-6 || math.Abs(bs-b.Spent) > 1e-6 || math.Abs(ta-b.TimeAllocated) > 1e-3 || math.Abs(ts-b.TimeSpent) > 1e-3 {
			add("node %s: budget cache (%v, %v, %v, %v) differs from the ledger (%v, %v, %v, %v)", n.ID, ba, bs, ta, ts, b.Allocated, b.Spent, b.TimeAllocated, b.TimeSpent)
		}
	}
	rows, err := k.db.QueryContext(ctx, `SELECT a.id, a.resolver_id, COALESCE(a.plan_artifact_id, '') FROM resolution_attempts a JOIN nodes n ON n.id = a.node_id WHERE n.root_id = ?`, root)
	if err != nil {
		return nil, err
	}
	type att struct{ id, resolver, plan string }
	var atts []att
	for rows.Next() {
		var a att
		if err := rows.Scan(&a.id, &a.resolver, &a.plan); err != nil {
			rows.Close()
			return nil, err
		}
		atts = append(atts, a)
	}
	rows.Close()
	for _, a := range atts {
		if a.resolver == CandidateID {
			continue // a --suggest candidate scored as it stands: no resolver of the plan ran
		}
		if a.plan == "" {
			add("attempt %s has no plan_artifact_id", a.id)
			continue
		}
		_, data, err := k.artifact(ctx, k.db, a.plan)
		if err != nil {
			add("attempt %s: %v", a.id, err)
			continue
		}
		var p struct {
			Steps []struct {
				ResolverID string `json:"resolver_id"`
			} `json:"steps"`
		}
		_ = json.Unmarshal(data, &p)
		if len(p.Steps) == 0 || p.Steps[len(p.Steps)-1].ResolverID != a.resolver {
			add("attempt %s: resolver_id %s is not its plan's final step", a.id, a.resolver)
		}
	}
	// Dependencies between live siblings, acyclic (they were checked at
	// creation; here: both ends exist and share a parent or are a build).
	rows, err = k.db.QueryContext(ctx, `SELECT d.node_id, d.depends_on FROM node_dependencies d JOIN nodes n ON n.id = d.node_id WHERE n.root_id = ?`, root)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			rows.Close()
			return nil, err
		}
		na, nb := byID[a], byID[b]
		if na == nil || nb == nil || (na.Parent != nb.Parent && nb.Parent != a) {
			add("dependency %s → %s is neither between siblings nor on a build subgoal", a, b)
		}
	}
	rows.Close()
	// Every artifact's content is in the store under its hash.
	rows, err = k.db.QueryContext(ctx, "SELECT a.id, a.sha256 FROM artifacts a JOIN nodes n ON n.id = a.node_id WHERE n.root_id = ?", root)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, sha string
		if err := rows.Scan(&id, &sha); err != nil {
			rows.Close()
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(k.artifactDir(), sha)); err != nil {
			add("artifact %s: content %s missing", id, sha)
		}
	}
	rows.Close()
	var dangling int
	_ = k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM kg_edges e WHERE NOT EXISTS (SELECT 1 FROM kg_nodes WHERE id = e.source_id) OR NOT EXISTS (SELECT 1 FROM kg_nodes WHERE id = e.target_id)").Scan(&dangling)
	if dangling > 0 {
		add("%d kg_edges point at missing kg_nodes", dangling)
	}
	return bad, nil
}
