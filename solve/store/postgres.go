package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/internal/sqlite"
)

// PostgreSQL keeps the same tables as kernel.db, in the database's
// current schema (the first of its search_path), plus two of its own:
//
//	solve_schema    one row: the marker ('solve kernel') and the number of
//	                schema steps applied (SQLite's application_id and
//	                user_version)
//	artifact_blobs  the artifacts' contents, bytea keyed by sha256 (SQLite
//	                keeps them in artifact_store/)
//
// The tables are derived from the SQLite steps (pgSteps), so the two
// cannot drift: JSON columns become jsonb (->> reads both), REAL becomes
// DOUBLE PRECISION (PostgreSQL's REAL is 4 bytes: money needs 8), INTEGER
// becomes BIGINT (leases hold unix milliseconds), datetime('now') becomes
// the same text from now(), and every table gains a seq identity column,
// which {seq} names (SQLite's rowid).

// pgMarker is solve_schema's application value.
const pgMarker = "solve kernel"

// pgSchemaLock is the advisory lock taken while a database is checked and
// migrated, so processes starting together apply each step once (any
// fixed number: "the solve schema").
const pgSchemaLock = 5348415044

// pgBlobTable is artifact_blobs, created with step 1.
const pgBlobTable = `
CREATE TABLE IF NOT EXISTS artifact_blobs (
    sha256      TEXT PRIMARY KEY,
    content     BYTEA NOT NULL
);`

var (
	pgJSON     = regexp.MustCompile(`\bJSON\b`)
	pgReal     = regexp.MustCompile(`\bREAL\b`)
	pgInteger  = regexp.MustCompile(`\bINTEGER\b`)
	pgNow      = regexp.MustCompile(`\(datetime\('now'\)\)`)
	pgTable    = regexp.MustCompile(`(?m)^(CREATE TABLE IF NOT EXISTS \w+ \()`)
	pgComments = regexp.MustCompile(`(?m)--.*$`)
)

// pgSteps are the schema's steps for PostgreSQL: the SQLite steps
// translated, with artifact_blobs in step 1.
func pgSteps() []string {
	out := make([]string, len(schema.Steps))
	for i, s := range schema.Steps {
		s = pgComments.ReplaceAllString(s, "")
		s = pgJSON.ReplaceAllString(s, "JSONB")
		s = pgReal.ReplaceAllString(s, "DOUBLE PRECISION")
		s = pgInteger.ReplaceAllString(s, "BIGINT")
		s = pgNow.ReplaceAllString(s, "(to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'))")
		s = pgTable.ReplaceAllString(s, "$1\n    seq BIGINT GENERATED ALWAYS AS IDENTITY,")
		if i == 0 {
			s += pgBlobTable
		}
		out[i] = s
	}
	return out
}

// openPostgres opens the kernel's PostgreSQL database at url. Writing, it
// creates or migrates the tables; read-only, every session is read-only
// and the tables must be there at the current step.
func openPostgres(ctx context.Context, url string, readOnly bool) (*Store, error) {
	name := pgdb.Redact(url)
	db, err := pgdb.Open(ctx, url, pgdb.Options{ReadOnly: readOnly})
	if err != nil {
		return nil, fmt.Errorf("open solve kernel: %w", err)
	}
	if readOnly {
		err = pgCheck(ctx, db)
	} else {
		err = pgMigrate(ctx, db)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open solve kernel in PostgreSQL %s: %w", name, err), db.Close())
	}
	return newStore(db, name, readOnly, sqldb.Postgres, tableBlobs{}), nil
}

// pgState is what a database holds: the marker's step (-1: no marker)
// and whether it has any table at all.
type pgState struct {
	version   int
	anyTables bool
}

func pgIdentify(ctx context.Context, q sqlite.Querier) (pgState, error) {
	st := pgState{version: -1}
	var marked bool
	if err := q.QueryRowContext(ctx, `SELECT to_regclass('solve_schema') IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema())`).Scan(&marked, &st.anyTables); err != nil {
		return st, fmt.Errorf("read the database's tables: %w", err)
	}
	if !marked {
		if st.anyTables {
			return st, fmt.Errorf("%w: the database holds other tables and no solve_schema marker; refused, nothing was changed (give solve a database of its own: createdb solve)", sqlite.ErrForeign)
		}
		return st, nil
	}
	var app string
	if err := q.QueryRowContext(ctx, "SELECT application, version FROM solve_schema").Scan(&app, &st.version); err != nil {
		return st, fmt.Errorf("%w: its solve_schema table does not read as solve's (%v); refused, nothing was changed", sqlite.ErrForeign, err)
	}
	if app != pgMarker {
		return st, fmt.Errorf("%w: its solve_schema marker says %q; refused, nothing was changed", sqlite.ErrForeign, app)
	}
	if n := len(schema.Steps); st.version > n || st.version < 0 {
		return st, fmt.Errorf("its schema step %d was written by a newer solve (this one knows %d): upgrade solve", st.version, n)
	}
	return st, nil
}

// pgMigrate creates or updates the tables, under the schema lock, in one
// transaction: a failed step leaves the database as it was.
func pgMigrate(ctx context.Context, db *sql.DB) error {
	return pgdb.Migrate(ctx, db, pgSchemaLock, func(tx *sql.Tx) error {
		st, err := pgIdentify(ctx, tx)
		if err != nil {
			return err
		}
		if st.version < 0 {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE solve_schema (
				only_row    BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
				application TEXT NOT NULL,
				version     INTEGER NOT NULL)`); err != nil {
				return fmt.Errorf("migrate: create solve_schema: %w", err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO solve_schema (application, version) VALUES ($1, 0)", pgMarker); err != nil {
				return fmt.Errorf("migrate: mark the database: %w", err)
			}
			st.version = 0
		}
		steps := pgSteps()
		for i := st.version; i < len(steps); i++ {
			// No arguments: pgx sends the step in the simple protocol, which
			// runs several statements.
			if _, err := tx.ExecContext(ctx, steps[i]); err != nil {
				return fmt.Errorf("migrate: schema step %d: %w", i+1, err)
			}
			if _, err := tx.ExecContext(ctx, "UPDATE solve_schema SET version = $1", i+1); err != nil {
				return fmt.Errorf("migrate: record schema step %d: %w", i+1, err)
			}
		}
		return nil
	})
}

// pgCheck is the read-only opening's check: the kernel's tables at this
// solve's step. It writes nothing.
func pgCheck(ctx context.Context, db *sql.DB) error {
	st, err := pgIdentify(ctx, db)
	if err != nil {
		return err
	}
	switch {
	case st.version < 0:
		return fmt.Errorf("%w: the database holds no solve kernel yet (solve plan or solve run creates it)", fs.ErrNotExist)
	case st.version < len(schema.Steps):
		return fmt.Errorf("it was written by an older solve (schema %d; this one reads %d): run a command that writes once to update it", st.version, len(schema.Steps))
	}
	return nil
}
