package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/solve/record"
)

// UpsertResolver registers a resolver, or updates the label, description,
// capabilities and metadata of one registered before.
func (c *Conn) UpsertResolver(ctx context.Context, r record.Resolver) error {
	meta := r.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	if _, err := c.exec(ctx, `INSERT INTO resolvers (id, label, description, type, capabilities, cost_per_invocation, cost_per_token,
		latency_estimate, built_by, built_for_node_id, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET label = excluded.label, description = excluded.description, capabilities = excluded.capabilities,
		metadata = excluded.metadata`,
		r.ID, r.Label, r.Description, r.Type, asJSON(plainjson.List(r.Capabilities)), r.CostPerInvocation, r.CostPerToken, r.LatencyEstimate,
		r.BuiltBy, nullStr(r.BuiltForNode), asJSON(meta), now()); err != nil {
		return fmt.Errorf("register resolver %s: %w", r.ID, err)
	}
	return nil
}

// Resolvers lists the registry in registration order; with id, only that
// resolver (none when it is not registered).
func (c *Conn) Resolvers(ctx context.Context, id string) ([]record.Resolver, error) {
	return sqldb.List(ctx, c.query, "list resolvers", func(r *sql.Rows) (record.Resolver, error) {
		var v record.Resolver
		var caps, meta string
		if err := r.Scan(&v.ID, &v.Label, &v.Description, &v.Type, &caps, &v.CostPerInvocation, &v.CostPerToken, &v.LatencyEstimate,
			&v.UsageCount, &v.SuccessCount, &v.FailureCount, &v.AvgCost, &v.BuiltBy, &v.BuiltForNode, &meta); err != nil {
			return v, err
		}
		if err := json.Unmarshal([]byte(caps), &v.Capabilities); err != nil {
			return v, fmt.Errorf("resolver %s: capabilities %q: %w", v.ID, caps, err)
		}
		if err := json.Unmarshal([]byte(meta), &v.Metadata); err != nil {
			return v, fmt.Errorf("resolver %s: metadata %q: %w", v.ID, meta, err)
		}
		return v, nil
	}, `SELECT id, label, COALESCE(description, ''), type, capabilities, COALESCE(cost_per_invocation, 0),
		COALESCE(cost_per_token, 0), COALESCE(latency_estimate, 0), usage_count, success_count, failure_count, avg_cost,
		COALESCE(built_by, ''), COALESCE(built_for_node_id, ''), metadata FROM resolvers WHERE ? = '' OR id = ? ORDER BY {seq}`, id, id)
}

// CountResolvers counts the resolvers built by boot, system or human.
func (c *Conn) CountResolvers(ctx context.Context, builtBy string) (int, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM resolvers WHERE built_by = ?", builtBy).Scan(&n); err != nil {
		return 0, fmt.Errorf("count resolvers built by %s: %w", builtBy, err)
	}
	return n, nil
}

// RecordResolverUse updates a resolver's usage stats with one verified attempt.
func (c *Conn) RecordResolverUse(ctx context.Context, id string, succeeded bool, cost float64) error {
	ok := 0
	if succeeded {
		ok = 1
	}
	if _, err := c.exec(ctx, `UPDATE resolvers SET usage_count = usage_count + 1, success_count = success_count + ?, failure_count = failure_count + 1 - ?,
		avg_cost = (avg_cost * usage_count + ?) / (usage_count + 1) WHERE id = ?`, ok, ok, cost, id); err != nil {
		return fmt.Errorf("resolver %s: record use: %w", id, err)
	}
	return nil
}

// Capability request statuses.
const (
	Requested = "requested"
	Delivered = "delivered"
	Declined  = "declined"
)

// AddRequest inserts a requested capability request, asked for node, and
// returns its id; node waits on it. When the run has asked for the same
// tag and fingerprint meanwhile (another node met the same gap at the
// same moment, after both looked for a prior request), node waits on that
// one and its id is returned.
func (c *Conn) AddRequest(ctx context.Context, root, node, tag, fingerprint string, detail map[string]any) (string, error) {
	if _, err := c.exec(ctx, `INSERT INTO capability_requests (id, root_id, capability_tag, request_fingerprint, status, detail, created_at)
		VALUES (?, ?, ?, ?, 'requested', ?, ?) ON CONFLICT (root_id, capability_tag, request_fingerprint) DO NOTHING`,
		NewID(), root, tag, fingerprint, asJSON(detail), now()); err != nil {
		return "", fmt.Errorf("insert capability request %s: %w", tag, err)
	}
	var id string
	if err := c.row(ctx, `SELECT id FROM capability_requests WHERE root_id = ? AND capability_tag = ? AND request_fingerprint = ?`, root, tag, fingerprint).Scan(&id); err != nil {
		return "", fmt.Errorf("capability request %s: %w", tag, err)
	}
	return id, c.WaitOn(ctx, id, node)
}

// WaitOn records that node waits on the capability request id (once: a
// node already waiting on it is left as it is).
func (c *Conn) WaitOn(ctx context.Context, id, node string) error {
	if _, err := c.exec(ctx, `INSERT INTO capability_request_nodes (request_id, node_id, created_at) VALUES (?, ?, ?)
		ON CONFLICT (request_id, node_id) DO NOTHING`, id, node, now()); err != nil {
		return fmt.Errorf("node %s: wait on capability request %s: %w", node, id, err)
	}
	return nil
}

// RequestNodes lists the nodes waiting on capability request id, in the
// order they met it: those still live and not ended (a node invalidated
// by an ancestor's reopen, or ended, waits no more).
func (c *Conn) RequestNodes(ctx context.Context, id string) ([]string, error) {
	return sqldb.List(ctx, c.query, "list the nodes waiting on capability request "+id, sqldb.Column[string],
		`SELECT w.node_id FROM capability_request_nodes w JOIN nodes n ON n.id = w.node_id
		WHERE w.request_id = ? AND n.invalidated_at IS NULL AND n.status NOT IN ('resolved', 'infeasible', 'failed', 'gated') ORDER BY w.{seq}`, id)
}

// PriorRequest finds the request with this tag and fingerprint asked in
// the run, or declined in any run (a declined one first); status "" when
// there is none.
func (c *Conn) PriorRequest(ctx context.Context, root, tag, fingerprint string) (id, status string, err error) {
	err = c.row(ctx, `SELECT id, status FROM capability_requests WHERE capability_tag = ? AND request_fingerprint = ? AND (root_id = ? OR status = 'declined')
		ORDER BY status = 'declined' DESC LIMIT 1`, tag, fingerprint, root).Scan(&id, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("look up capability request %s: %w", tag, err)
	}
	return id, status, nil
}

// Requests lists capability requests in the order they were asked, each
// with the nodes waiting on it: the open ones, or all with all.
func (c *Conn) Requests(ctx context.Context, all bool) ([]record.CapabilityRequest, error) {
	reqs, err := sqldb.List(ctx, c.query, "list capability requests", func(r *sql.Rows) (record.CapabilityRequest, error) {
		var q record.CapabilityRequest
		var d string
		if err := r.Scan(&q.ID, &q.RootID, &q.Capability, &q.Fingerprint, &q.Status, &q.ResolverID, &d); err != nil {
			return q, err
		}
		if err := json.Unmarshal([]byte(d), &q.Detail); err != nil {
			return q, fmt.Errorf("capability request %s: detail %q: %w", q.ID, d, err)
		}
		return q, nil
	}, `SELECT id, root_id, capability_tag, request_fingerprint, status, COALESCE(resolver_id, ''), COALESCE(detail, '{}')
		FROM capability_requests WHERE ? OR status = 'requested' ORDER BY {seq}`, all)
	if err != nil {
		return nil, err
	}
	for i := range reqs {
		if reqs[i].Nodes, err = c.RequestNodes(ctx, reqs[i].ID); err != nil {
			return nil, err
		}
	}
	return reqs, nil
}

// RequestStatus reads a capability request's status.
func (c *Conn) RequestStatus(ctx context.Context, id string) (string, error) {
	var status string
	if err := c.row(ctx, "SELECT status FROM capability_requests WHERE id = ?", id).Scan(&status); err != nil {
		return "", fmt.Errorf("read capability request %s: %w", id, err)
	}
	return status, nil
}

// AnswerRequest records a human's answer: the status, the resolver it
// delivered ("" = none) and the detail with the answer. A request
// answered already (by another process meanwhile) is an error, so that a
// transaction answering it twice rolls back.
func (c *Conn) AnswerRequest(ctx context.Context, id, status, resolver string, detail map[string]any) error {
	res, err := c.exec(ctx, "UPDATE capability_requests SET status = ?, resolver_id = COALESCE(?, resolver_id), detail = ? WHERE id = ? AND status = 'requested'",
		status, nullStr(resolver), asJSON(detail), id)
	if err != nil {
		return fmt.Errorf("answer capability request %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("answer capability request %s: %w", id, err)
	} else if n != 1 {
		return fmt.Errorf("answer capability request %s: it was answered meanwhile; nothing written", Short(id))
	}
	return nil
}

// OpenRequestCount counts a run's requests that wait for a human.
func (c *Conn) OpenRequestCount(ctx context.Context, root string) (int, error) {
	var n int
	if err := c.row(ctx, "SELECT COUNT(*) FROM capability_requests WHERE root_id = ? AND status = 'requested'", root).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the open requests of %s: %w", root, err)
	}
	return n, nil
}
