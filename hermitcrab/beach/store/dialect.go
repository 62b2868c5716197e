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
	isqlite "github.com/llmkernels/kernels/internal/sqlite"
)

// dialect is everything the two databases do differently.
type dialect struct {
	name string
	open func(ctx context.Context, dsn string) (*sql.DB, error)
	// describe names the database in errors without a password.
	describe func(dsn string) string
	// idColumn is the messages table's auto-increment key.
	idColumn string
	// lockSchema serialises schema creation between servers sharing a
	// database; "" for SQLite, whose steps internal/sqlite applies.
	lockSchema string
	// serialWrites queues writers in the process (SQLite has one writer).
	serialWrites bool
}

func dialectFor(dsn string) (dialect, error) {
	if pgdb.IsURL(dsn) {
		return postgresDialect, nil
	}
	if dsn == "" {
		return dialect{}, errors.New("beach store: no database given: a SQLite file path or a postgres:// URL")
	}
	if strings.Contains(dsn, "://") {
		return dialect{}, fmt.Errorf("beach store %q: only postgres:// URLs and SQLite file paths are understood", dsn)
	}
	return sqliteDialect, nil
}

var postgresDialect = dialect{
	name: "postgres",
	open: func(ctx context.Context, dsn string) (*sql.DB, error) {
		return pgdb.Open(ctx, dsn, pgdb.Options{MaxConns: 32})
	},
	describe:   pgdb.Redact,
	idColumn:   "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	lockSchema: "SELECT pg_advisory_xact_lock(7297654183)", // any fixed number: "the beach schema"
}

// Redact names a database (a SQLite path or a PostgreSQL URL) without its
// secrets, for messages and logs.
func Redact(dsn string) string {
	d, err := dialectFor(dsn)
	if err != nil {
		return "(not a database name)"
	}
	return d.describe(dsn)
}

// SQLite files are opened by internal/sqlite, like every kernel's file:
// application_id "BECH", the steps counted in user_version, WAL, one busy
// timeout, BEGIN IMMEDIATE, and a file that is not a beach refused
// untouched. Beach files written before that (schema 1 or 2 in beach_meta,
// no marker) are recognised by legacy and adopted.
var sqliteDialect = dialect{
	name: "sqlite",
	open: func(ctx context.Context, path string) (*sql.DB, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, err
		}
		return isqlite.Open(ctx, abs, sqliteSchema)
	},
	describe:     func(path string) string { return path },
	idColumn:     "INTEGER PRIMARY KEY AUTOINCREMENT",
	serialWrites: true,
}

// sqliteSchema is the beach's steps for internal/sqlite.
var sqliteSchema = &isqlite.Schema{
	Name:   "hermitcrab beach",
	ID:     isqlite.BeachID,
	Steps:  steps("INTEGER PRIMARY KEY AUTOINCREMENT"),
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
