package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
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
func (c *Conn) ArtifactsOf(ctx context.Context, node, typ string) ([]Artifact, error) {
	return list(ctx, c, "list the "+typ+" artifacts of "+node, func(r *sql.Rows) (Artifact, error) { return scanArtifact(r) },
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
