package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"
)

// dialect is everything the two databases do differently.
type dialect struct {
	name string
	open func(dsn string) (*sql.DB, error)
	// describe names the database in errors without a password.
	describe func(dsn string) string
	// idColumn is the messages table's auto-increment key.
	idColumn string
	// lockSchema serialises schema creation between servers sharing a
	// database ("" when the database does it itself).
	lockSchema string
	// foreign refuses a database that belongs to something else.
	foreign func(ctx context.Context, tx *sql.Tx) error
	// afterMigrate runs once the database is known to be a beach.
	afterMigrate string
	// serialWrites queues writers in the process (SQLite has one writer).
	serialWrites bool
}

func dialectFor(dsn string) (dialect, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return postgres, nil
	}
	if dsn == "" {
		return dialect{}, errors.New("beach store: no database given: a SQLite file path or a postgres:// URL")
	}
	if strings.Contains(dsn, "://") {
		return dialect{}, fmt.Errorf("beach store %q: only postgres:// URLs and SQLite file paths are understood", dsn)
	}
	return sqlite, nil
}

var postgres = dialect{
	name: "postgres",
	open: func(dsn string) (*sql.DB, error) {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(32)
		db.SetMaxIdleConns(32)
		return db, nil
	},
	describe:   redactURL,
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

// secretParams are the URL query parameters libpq and pgx read secrets
// from, besides the password in the URL's user part.
var secretParams = []string{"password", "sslpassword"}

func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a PostgreSQL URL that does not parse)"
	}
	q := u.Query()
	for _, p := range secretParams {
		if q.Has(p) {
			q.Set(p, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}

// The SQLite opener below is deliberately minimal and temporary: the shared
// opener internal/sqlite (application id, numbered migrations, read-only
// opening) replaces it when it lands.
var sqlite = dialect{
	name: "sqlite",
	open: func(path string) (*sql.DB, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, err
		}
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Set("_txlock", "immediate")
		return sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String())
	},
	describe: func(path string) string { return path },
	idColumn: "INTEGER PRIMARY KEY AUTOINCREMENT",
	foreign: func(ctx context.Context, tx *sql.Tx) error {
		var others, ours int
		err := tx.QueryRowContext(ctx, `SELECT
			count(*) FILTER (WHERE name NOT LIKE 'beach\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'),
			count(*) FILTER (WHERE name = 'beach_meta')
			FROM sqlite_master WHERE type = 'table'`).Scan(&others, &ours)
		if err != nil {
			return fmt.Errorf("not a SQLite database: %w", err)
		}
		if others > 0 && ours == 0 {
			return errors.New("this SQLite file holds other tables and no beach: give a new file or an existing beach (nothing was changed)")
		}
		return nil
	},
	// WAL (readers never wait for the writer) is set only after the check
	// above, since switching to it rewrites the file's header.
	afterMigrate: "PRAGMA journal_mode=WAL",
	serialWrites: true,
}
