package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/solve/record"
)

// SettleOpenOf settles at the amount they hold the open reservations of
// root that pick chooses: with `solve worker`, those a dead attempt left
// (the caller knows which calls no live process owns: a step's next
// attempt, or a coordinator resuming, leaving the nodes workers hold
// alone). It returns the reservations settled.
func (s *Store) SettleOpenOf(ctx context.Context, root string, pick func(OpenReservation) bool) ([]OpenReservation, error) {
	open, err := s.OpenReservations(ctx, root)
	if err != nil {
		return nil, err
	}
	var chosen []OpenReservation
	for _, o := range open {
		if pick(o) {
			chosen = append(chosen, o)
		}
	}
	return chosen, s.settleAtReservation(ctx, chosen)
}

// ArtifactsOf lists a node's artifacts of one type, oldest first (the
// run's stored workspace: its base and the merges of verified leaves).
func (c *Conn) ArtifactsOf(ctx context.Context, node, typ string) ([]record.Artifact, error) {
	return sqldb.List(ctx, c.query, "list the "+typ+" artifacts of "+node, func(r *sql.Rows) (record.Artifact, error) { return scanArtifact(r) },
		"SELECT "+artifactCols+" FROM artifacts a WHERE a.node_id = ? AND a.type = ? ORDER BY a.{seq}", node, typ)
}

// LeaseOwner is the owner of root's run lease that has not expired ("" when
// none): with `solve worker`, the coordinator whose run a worker's step
// belongs to, so the step's writes are fenced by that lease.
func (c *Conn) LeaseOwner(ctx context.Context, root string) (string, error) {
	var owner string
	err := c.row(ctx, `SELECT owner FROM run_leases WHERE root_id = ? AND expires_at > ?`, root, time.Now().UnixMilli()).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("run %s: read its lease: %w", root, err)
	}
	return owner, nil
}

// CallSpend is what node's paid calls have cost so far (the ledger's
// spends settled for a resolver, as TreeBudget counts them): with `solve
// worker`, what a step reports, so that the coordinator's live view counts
// what the step spent (its calls settled, and any a dead attempt left,
// settled at their reservations) without reading the whole ledger.
func (c *Conn) CallSpend(ctx context.Context, node string) (float64, error) {
	var usd float64
	if err := c.row(ctx, `SELECT COALESCE(SUM(amount), 0) FROM budget_ledger
		WHERE node_id = ? AND event_type = 'spend' AND resolver_id IS NOT NULL`, node).Scan(&usd); err != nil {
		return 0, fmt.Errorf("node %s: what its calls cost: %w", node, err)
	}
	return usd, nil
}

// CallSpends is CallSpend for every node of root that has spent anything,
// in one read.
func (c *Conn) CallSpends(ctx context.Context, root string) (map[string]float64, error) {
	type spend struct {
		node string
		usd  float64
	}
	rows, err := sqldb.List(ctx, c.query, "what the calls of "+root+" cost, by node", func(r *sql.Rows) (spend, error) {
		var s spend
		return s, r.Scan(&s.node, &s.usd)
	}, `SELECT l.node_id, SUM(l.amount) FROM budget_ledger l JOIN nodes n ON n.id = l.node_id
		WHERE n.root_id = ? AND l.event_type = 'spend' AND l.resolver_id IS NOT NULL GROUP BY l.node_id`, root)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(rows))
	for _, s := range rows {
		out[s.node] = s.usd
	}
	return out, nil
}
