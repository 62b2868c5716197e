package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// jobQueueLock is the advisory lock key under which River's migrations
// run: processes starting at once (a run and its workers) would otherwise
// create the same tables together and collide.
const jobQueueLock = 0x534f4c56 // "SOLV"

// MigrateJobQueue creates or updates the tables of the job queue (River,
// used by solve run --remote and solve worker) in the PostgreSQL database
// of pool: River's own migrations (each in its own transaction: one adds
// an enum value, which a later statement of the same transaction may not
// use), while this process holds an advisory lock, so processes starting
// together take turns; a no-op when they are current. Never on SQLite.
func MigrateJobQueue(ctx context.Context, pool *pgxpool.Pool) (err error) {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("the job queue's migrations: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate the job queue's tables: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", jobQueueLock); err != nil {
		return fmt.Errorf("migrate the job queue's tables: lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", jobQueueLock); uerr != nil {
			// The lock goes with the session: drop the connection.
			err = errors.Join(err, conn.Conn().Close(context.WithoutCancel(ctx)))
		}
	}()
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate the job queue's tables (River): %w", err)
	}
	return nil
}

// stepLock is the class of the advisory locks that order a node's step
// being enqueued and its job being completed (StepDue, LockStep): the
// two-key form of pg_advisory_xact_lock, whose keys never meet the
// one-key locks above.
const stepLock = 0x53544550 // "STEP"

// LockStep takes, until tx ends, the lock of node's steps. The worker
// takes it in the transaction that completes a step's job; StepDue takes
// it before it reads the node.
func LockStep(ctx context.Context, tx pgx.Tx, node string) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", stepLock, node); err != nil {
		return fmt.Errorf("node %s: lock its steps: %w", node, err)
	}
	return nil
}

// StepDue reports, in tx (the job queue's transaction that is about to
// enqueue the step), whether node is still due to step from status: in
// that status, live, and not waiting on an open capability request. It
// takes the node's step lock first, so that a job of the step completing
// right now (its worker holds the lock while it completes it) either has
// completed, and its step's commit, made before, is seen here (the node
// moved on: no new job), or completes after tx, and River finds the
// unfinished job when tx enqueues instead of adding another. A
// coordinator that read the tree while a job of the step was finishing
// (solve resume --remote after a stopped coordinator) would otherwise
// enqueue the step a second time.
func StepDue(ctx context.Context, tx pgx.Tx, node, status string) (bool, error) {
	if err := LockStep(ctx, tx, node); err != nil {
		return false, err
	}
	var due bool
	err := tx.QueryRow(ctx, `SELECT n.status = $2 AND n.invalidated_at IS NULL AND NOT `+waitingOnRequest+`
		FROM nodes n WHERE n.id = $1`, node, status).Scan(&due)
	if err != nil {
		return false, fmt.Errorf("node %s: is its %s step due: %w", node, status, err)
	}
	return due, nil
}
