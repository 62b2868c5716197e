package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/sqldb"
	isqlite "github.com/llmkernels/kernels/internal/sqlite"
)

// dialectFor says which engine dsn names: a postgres:// or postgresql://
// URL is PostgreSQL, anything else without "://" a SQLite file path.
func dialectFor(dsn string) (*sqldb.Dialect, error) {
	if pgdb.IsURL(dsn) {
		return sqldb.Postgres, nil
	}
	if dsn == "" {
		return nil, errors.New("beach store: no database given: a SQLite file path or a postgres:// URL")
	}
	if strings.Contains(dsn, "://") {
		return nil, fmt.Errorf("beach store %q: only postgres:// URLs and SQLite file paths are understood", dsn)
	}
	return sqldb.SQLite, nil
}

// open opens the database dsn names in dialect d.
func open(ctx context.Context, d *sqldb.Dialect, dsn string) (*sql.DB, error) {
	if d == sqldb.Postgres {
		return pgdb.Open(ctx, dsn, pgdb.Options{MaxConns: 32})
	}
	abs, err := filepath.Abs(dsn)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, err
	}
	return isqlite.Open(ctx, abs, sqliteSchema)
}

// Redact names a database (a SQLite path or a PostgreSQL URL) without its
// secrets, for messages and logs.
func Redact(dsn string) string {
	d, err := dialectFor(dsn)
	switch {
	case err != nil:
		return "(not a database name)"
	case d == sqldb.Postgres:
		return pgdb.Redact(dsn)
	}
	return dsn
}

// schemaLock is the advisory lock PostgreSQL steps are applied under (any
// fixed number: "the beach schema").
const schemaLock = 7297654183

// SQLite files are opened by internal/sqlite, like every kernel's file:
// application_id "BECH", the steps counted in user_version, WAL, one busy
// timeout, BEGIN IMMEDIATE, and a file that is not a beach refused
// untouched. Beach files written before that (schema 1 or 2 in beach_meta,
// no marker) are recognised by legacy and adopted.
var sqliteSchema = &isqlite.Schema{
	Name:   "hermitcrab beach",
	ID:     isqlite.BeachID,
	Steps:  steps(sqldb.SQLite),
	Legacy: legacy,
}

// legacy recognises a beach file from before the marker: its beach_meta
// table says which step it is at (1, or 2 once it had the horizon table).
func legacy(ctx context.Context, q isqlite.Querier) (int, bool, error) {
	tables, err := isqlite.Tables(ctx, q)
	if err != nil || !tables["beach_meta"] {
		return 0, false, err
	}
	var v int
	if err := q.QueryRowContext(ctx, `SELECT value FROM beach_meta WHERE key = 'schema'`).Scan(&v); err != nil {
		return 0, false, nil
	}
	if v == 2 && !tables["beach_horizon"] || v < 1 {
		return 0, false, nil
	}
	return v, true, nil
}
