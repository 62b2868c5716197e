// Package store keeps a hermitcrab instance in one SQLite file: its blocks
// (name → JSON text with a version and an updated time), conversations, the
// shell sources recompile produced, and settings.
//
// Writes are SQLite transactions begun IMMEDIATE, so concurrent writers queue
// on the file lock (up to the busy timeout) instead of failing. Every block
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
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // driver "sqlite"
)

// DefaultMaxBlockBytes is the block size limit when Options leaves it 0.
const DefaultMaxBlockBytes = 64 << 10

// schemaVersion is the layout this code writes; a file with a higher version
// was written by a newer hermitcrab and is refused rather than misread.
const schemaVersion = 1

// busyTimeout is how long a writer waits for another writer's transaction.
const busyTimeout = 10 * time.Second

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
	db       *sql.DB
	maxBytes int
	// writeMu queues this process's writers in Go. SQLite's busy handler
	// makes waiting writers sleep and poll, which under many concurrent
	// writes costs far more than the writes; other processes still wait
	// through busy_timeout.
	writeMu sync.Mutex
}

const schema = `
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (
	name    TEXT PRIMARY KEY,
	data    TEXT NOT NULL,
	version INTEGER NOT NULL,
	updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
	id       TEXT PRIMARY KEY,
	messages TEXT NOT NULL,
	updated  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shells (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	source  TEXT NOT NULL,
	status  TEXT NOT NULL,
	error   TEXT NOT NULL,
	created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);`

// Open opens the store file at path, creating it (and its directory) and the
// schema when they do not exist.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store path is empty: give the SQLite file to open, e.g. DATA_DIR/hermitcrab.db")
	}
	if opts.MaxBlockBytes < 0 {
		return nil, fmt.Errorf("MaxBlockBytes %d: want 0 (the default, %d) or a positive number of bytes", opts.MaxBlockBytes, DefaultMaxBlockBytes)
	}
	if opts.MaxBlockBytes == 0 {
		opts.MaxBlockBytes = DefaultMaxBlockBytes
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store path %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store %s: cannot create its directory: %w", abs, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	s := &Store{db: db, maxBytes: opts.MaxBlockBytes}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	return s, nil
}

// migrate creates the schema and records its version, or refuses a file
// written by a newer schema.
func (s *Store) migrate(ctx context.Context) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
		var v int
		err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, schemaVersion)
			return err
		case err != nil:
			return err
		case v > schemaVersion:
			return fmt.Errorf("schema version %d is newer than this hermitcrab understands (%d): use a newer hermitcrab, or another data dir", v, schemaVersion)
		}
		return nil
	})
}

// Close closes the store file.
func (s *Store) Close() error { return s.db.Close() }

// write runs fn in one IMMEDIATE transaction: it waits for other writers,
// and either all of fn's changes are kept or none.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

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

// SetSetting stores value under key, replacing any earlier value.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	if key == "" {
		return errors.New("setting key is empty: give a name such as \"model\"")
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

func now() string { return time.Now().UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q is not in the store's format: %w", s, err)
	}
	return t, nil
}
