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
