// Package store keeps a hermitcrab instance in one SQLite file: its blocks
// (name → JSON text with a version and an updated time), conversations, the
// shell sources recompile produced, and settings.
//
// Writes are transactions of internal/sqldb: this process's writers queue in
// it, and other processes' on the file lock (up to the busy timeout), instead
// of failing. Every block
// write checks the version the caller read (see Put), the block name
// (ValidName), the size limit (Options.MaxBlockBytes) and that the data is
// valid JSON; nothing else about a block is interpreted here. A refused write
// changes nothing and its error says what was wrong and what to do; a
// version conflict carries the block's current version and content, so the
// writer can redo its edit on what is there now.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/internal/sqlite"
)

// DefaultMaxBlockBytes is the block size limit when Options leaves it 0.
const DefaultMaxBlockBytes = 64 << 10

// timeFormat is fixed width so that stored times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// ErrNotFound is wrapped by every error about a block, conversation or shell
// that does not exist.
var ErrNotFound = errors.New("not found")

// Options tunes a Store.
type Options struct {
	// MaxBlockBytes is the largest block Put and PutMany accept, in bytes of
	// JSON text; 0 means DefaultMaxBlockBytes.
	MaxBlockBytes int `json:"max_block_bytes,omitempty"`
}

// Store is an open store file. It is safe for concurrent use.
type Store struct {
	db       *sqldb.DB // writers queue in the process (sqldb.DB.Write)
	maxBytes int
	memory   bool // OpenMemory: nothing is kept
}

// schema is the store's file: application_id "HCRB". Step 1 holds the
// blocks, conversations, shells and settings; steps 2 to 4 what the wake
// triggers keep (wakes.go).
// Files from before the marker carried a schema_version table at version 1,
// which is step 1's tables; that table is left in them, unused.
var schema = &sqlite.Schema{
	Name: "hermitcrab store",
	ID:   sqlite.HermitcrabID,
	Steps: []string{`
CREATE TABLE blocks (
	name    TEXT PRIMARY KEY,
	data    TEXT NOT NULL,
	version INTEGER NOT NULL,
	updated TEXT NOT NULL
);
CREATE TABLE conversations (
	id       TEXT PRIMARY KEY,
	messages TEXT NOT NULL,
	updated  TEXT NOT NULL
);
CREATE TABLE shells (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	source  TEXT NOT NULL,
	status  TEXT NOT NULL,
	error   TEXT NOT NULL,
	created TEXT NOT NULL
);
CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);`, wakeTables, wakeAnswers, wakeScripted},
	// Read-only commands (blocks list and show, bsp) read only step 1's
	// tables, so they read a file from before step 2 as it is.
	ReadOnlyFrom: 1,
	Legacy: func(ctx context.Context, q sqlite.Querier) (int, bool, error) {
		tables, err := sqlite.Tables(ctx, q)
		if err != nil || !tables["schema_version"] || !tables["blocks"] {
			return 0, false, err
		}
		var v int
		if err := q.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); err != nil || v != 1 {
			return 0, false, nil
		}
		return 1, true, nil
	},
}

// Open opens the store file at path, creating it (and its directory) and the
// schema when they do not exist.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store path is empty: give the SQLite file to open, e.g. DATA_DIR/hermitcrab.db")
	}
	maxBytes, err := opts.maxBytes()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store path %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store %s: cannot create its directory: %w", abs, err)
	}
	db, err := sqlite.Open(context.Background(), abs, schema)
	if err != nil {
		return nil, err
	}
	return &Store{db: sqldb.New(db, sqldb.SQLite, "hermitcrab store "+abs), maxBytes: maxBytes}, nil
}

// OpenReadOnly opens the existing store file at path for reading only: it
// creates nothing, and every write fails. A missing file is an error
// wrapping fs.ErrNotExist.
func OpenReadOnly(path string, opts Options) (*Store, error) {
	maxBytes, err := opts.maxBytes()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.OpenReadOnly(context.Background(), path, schema)
	if err != nil {
		return nil, err
	}
	return &Store{db: sqldb.New(db, sqldb.SQLite, "hermitcrab store "+path), maxBytes: maxBytes}, nil
}

// OpenMemory opens an empty store in memory, gone when closed: what a
// read-only command shows when there is no store file yet.
func OpenMemory(opts Options) (*Store, error) {
	maxBytes, err := opts.maxBytes()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.OpenMemory(context.Background(), schema)
	if err != nil {
		return nil, err
	}
	return &Store{db: sqldb.New(db, sqldb.SQLite, "hermitcrab store in memory"), maxBytes: maxBytes, memory: true}, nil
}

// InMemory reports whether the store was opened by OpenMemory.
func (s *Store) InMemory() bool { return s.memory }

func (o Options) maxBytes() (int, error) {
	switch {
	case o.MaxBlockBytes < 0:
		return 0, fmt.Errorf("MaxBlockBytes %d: want 0 (the default, %d) or a positive number of bytes", o.MaxBlockBytes, DefaultMaxBlockBytes)
	case o.MaxBlockBytes == 0:
		return DefaultMaxBlockBytes, nil
	}
	return o.MaxBlockBytes, nil
}

// Close closes the store file.
func (s *Store) Close() error { return s.db.Close() }

// Setting returns the value stored under key and whether there is one.
func (s *Store) Setting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("setting %q: %w", key, err)
	}
	return v, true, nil
}

// Settings returns every setting, by key.
func (s *Store) Settings(ctx context.Context) (map[string]string, error) {
	pairs, err := sqldb.List(ctx, s.db.QueryContext, "settings", func(r *sql.Rows) ([2]string, error) {
		var kv [2]string
		return kv, r.Scan(&kv[0], &kv[1])
	}, `SELECT key, value FROM settings`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		out[kv[0]] = kv[1]
	}
	return out, nil
}

// SetSetting stores value under key, replacing any earlier value.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	if key == "" {
		return errors.New("setting key is empty: give a name such as \"model\"")
	}
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// DeleteSetting removes the value stored under key; it reports whether
// there was one.
func (s *Store) DeleteSetting(ctx context.Context, key string) (bool, error) {
	var had bool
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE key = ?`, key)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		had = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("setting %q: %w", key, err)
	}
	return had, nil
}

func now() string { return time.Now().UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q is not in the store's format: %w", s, err)
	}
	return t, nil
}
