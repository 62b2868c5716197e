package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

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
// of pool: River's own migrations, in one transaction under an advisory
// lock, a no-op when they are current. Never used on SQLite.
func MigrateJobQueue(ctx context.Context, pool *pgxpool.Pool) (err error) {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("the job queue's migrations: %w", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate the job queue's tables: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback(context.WithoutCancel(ctx)))
		}
	}()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", jobQueueLock); err != nil {
		return fmt.Errorf("migrate the job queue's tables: lock: %w", err)
	}
	if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate the job queue's tables (River): %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate the job queue's tables: commit: %w", err)
	}
	return nil
}


