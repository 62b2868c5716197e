package solve

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
)

// ResolverEntry is one resolvers row (spec §2B).
type ResolverEntry struct {
	ID                string         `json:"id"`
	Label             string         `json:"label"`
	Description       string         `json:"description"`
	Type              string         `json:"type"`
	Capabilities      []string       `json:"capabilities"`
	CostPerInvocation float64        `json:"cost_per_invocation"`
	CostPerToken      float64        `json:"cost_per_token"`
	LatencyEstimate   float64        `json:"latency_estimate"`
	UsageCount        int            `json:"usage_count"`
	SuccessCount      int            `json:"success_count"`
	FailureCount      int            `json:"failure_count"`
	AvgCost           float64        `json:"avg_cost"`
	BuiltBy           string         `json:"built_by"`
	BuiltForNode      string         `json:"built_for_node_id,omitempty"`
	Metadata          map[string]any `json:"metadata"`
}

// bootResolvers are registered at kernel boot (spec §4 step 2).
var bootResolvers = []ResolverEntry{
	{ID: SelfModelID, Label: "Self Model", Type: "digital", BuiltBy: "boot",
		Description:  "answers from the registry, ledger and node store: what the kernel can do, what it costs, where a run stands",
		Capabilities: []string{"system_state", "capability_enumeration", "architecture_description", "cost_estimation"}},
	{ID: ClaudeCodeID, Label: "Claude Code", Type: "digital", BuiltBy: "boot", CostPerToken: 0.015, LatencyEstimate: 30,
		Description: "headless LLM calls with structured JSON envelopes: constraints, routing, code and text generation, semantic verification, decomposition",
		Capabilities: []string{"decompose", "reason", "generate_code", "verify_semantic", "identify_constraints", "select_constraints",
			"select_resolver", "generate_feedback", "escalate", "gate_confidence", "check_global_consistency", "assemble_artifact",
			"orchestrate", "synthesize_goal", "dispatch", "enforce_invariants"}},
	{ID: CodexToolsID, Label: "Codex Tools", Type: "digital", BuiltBy: "boot", CostPerInvocation: 0.01, LatencyEstimate: 60,
		Description:  "runs commands, file operations and test suites in the workspace as a subprocess with timeouts and output caps",
		Capabilities: []string{"execute_code", "file_ops", "web_search", "package_install", "shell_execution", "test_execution"}},
}

// registerResolver upserts a resolver and refreshes its provides edges.
func registerResolver(ctx context.Context, q interface {
	execer
	querier
}, r ResolverEntry) error {
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	_, err := q.ExecContext(ctx, `INSERT INTO resolvers (id, label, description, type, capabilities, cost_per_invocation, cost_per_token,
		latency_estimate, built_by, built_for_node_id, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET label = excluded.label, description = excluded.description, capabilities = excluded.capabilities,
		metadata = excluded.metadata`,
		r.ID, r.Label, r.Description, r.Type, jsonText(r.Capabilities), r.CostPerInvocation, r.CostPerToken, r.LatencyEstimate,
		r.BuiltBy, nullStr(r.BuiltForNode), jsonText(r.Metadata), now())
	if err != nil {
		return fmt.Errorf("register resolver %s: %w", r.ID, err)
	}
	if err := ensureKG(ctx, q, "resolver:"+r.ID, "resolver", r.Label, map[string]any{"type": r.Type, "built_by": r.BuiltBy}); err != nil {
		return err
	}
	for _, c := range r.Capabilities {
		if err := ensureKG(ctx, q, "capability:"+c, "capability", c, nil); err != nil {
			return err
		}
		if err := refreshEdge(ctx, q, "resolver:"+r.ID, "provides", "capability:"+c, nil); err != nil {
			return err
		}
	}
	return nil
}

func (k *Kernel) boot(ctx context.Context) error {
	var n int
	if err := k.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM resolvers WHERE built_by = 'boot'").Scan(&n); err != nil {
		return err
	}
	if n == len(bootResolvers) {
		return nil
	}
	return k.write(ctx, func(tx *sql.Tx) error {
		for _, r := range bootResolvers {
			if err := registerResolver(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Resolvers lists the registry.
func (k *Kernel) Resolvers(ctx context.Context) ([]ResolverEntry, error) {
	if k.readOnly {
		// Nothing may be written: boot resolvers not registered yet are
		// listed as a run would register them.
		stored, err := k.resolvers(ctx, k.db, "")
		if err != nil {
			return nil, err
		}
		var out []ResolverEntry
		for _, b := range bootResolvers {
			if !slices.ContainsFunc(stored, func(r ResolverEntry) bool { return r.ID == b.ID }) {
				out = append(out, b)
			}
		}
		return append(out, stored...), nil
	}
	if err := k.boot(ctx); err != nil {
		return nil, err
	}
	return k.resolvers(ctx, k.db, "")
}

func (k *Kernel) resolvers(ctx context.Context, q querier, id string) ([]ResolverEntry, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, label, COALESCE(description, ''), type, capabilities, COALESCE(cost_per_invocation, 0),
		COALESCE(cost_per_token, 0), COALESCE(latency_estimate, 0), usage_count, success_count, failure_count, avg_cost,
		COALESCE(built_by, ''), COALESCE(built_for_node_id, ''), metadata FROM resolvers WHERE ? = '' OR id = ? ORDER BY rowid`, id, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ResolverEntry
	for rows.Next() {
		var r ResolverEntry
		var caps, meta string
		if err := rows.Scan(&r.ID, &r.Label, &r.Description, &r.Type, &caps, &r.CostPerInvocation, &r.CostPerToken, &r.LatencyEstimate,
			&r.UsageCount, &r.SuccessCount, &r.FailureCount, &r.AvgCost, &r.BuiltBy, &r.BuiltForNode, &meta); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(caps), &r.Capabilities)
		_ = json.Unmarshal([]byte(meta), &r.Metadata)
		out = append(out, r)
	}
	return out, rows.Err()
}

// candidates is the registry's capability match (string-set overlap),
// boot resolvers always included as the fallback, best record first.
func (k *Kernel) candidates(ctx context.Context, required []string) ([]ResolverView, error) {
	all, err := k.resolvers(ctx, k.db, "")
	if err != nil {
		return nil, err
	}
	var out []ResolverView
	for _, r := range all {
		if r.ID == SelfModelID {
			continue
		}
		match := r.BuiltBy == "boot" && r.Type == "digital"
		for _, c := range required {
			if slices.Contains(r.Capabilities, c) {
				match = true
			}
		}
		if match {
			out = append(out, ResolverView{ID: r.ID, Label: r.Label, Description: r.Description, Type: r.Type, Capabilities: r.Capabilities,
				Successes: r.SuccessCount, Failures: r.FailureCount})
		}
	}
	return out, nil
}

// write runs fn in a write transaction, queued behind this process's
// other writers.
func (k *Kernel) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	tx, err := k.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
