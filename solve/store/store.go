package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/sqldb"
	"github.com/llmkernels/kernels/internal/sqlite"
)

//go:embed schema.sql
var schemaSQL string

// schema is kernel.db for internal/sqlite: application_id "SOLV",
// user_version counting the steps. Files from before the marker used the
// same user_version numbering (0 or 1 for the five planning tables, 2 for
// all eleven), so they are adopted at that step.
var schema = &sqlite.Schema{
	Name: "solve kernel.db",
	ID:   sqlite.SolveID,
	Steps: []string{
		// 0 → 1: schema.sql, the spec's eleven tables (CREATE ... IF NOT
		// EXISTS: a planning-era file already holds five of them).
		schemaSQL,
		// 1 → 2: nodes gains invalidated_at, set on a subtree superseded by
		// backtracking or a reopened ancestor (its history is kept, it
		// leaves the live tree).
		"ALTER TABLE nodes ADD COLUMN invalidated_at TEXT",
		// 2 → 3: reservations before paid calls (budget.go), transfers that
		// name their counterpart, and the run lease (lease.go). Ledger rows
		// written before name their counterpart only in their description;
		// it is read back from there.
		migrationReservations,
		// 3 → 4: the nodes that wait on a capability request. Two nodes
		// meeting the same gap share one request (one per run and
		// fingerprint), and each waits on it durably, so a reload sees
		// both waiting. The requests asked before name their node in their
		// detail; it is read back from there.
		migrationRequestNodes,
		// 4 → 5: a call's heartbeat (how long it had run when last seen
		// alive), so a call cut off by a kill costs the time it ran, not its
		// whole hold; and the part of a spend whose outcome is unknown (a
		// call cut off with a request in flight, settled at its hold), kept
		// apart from what was billed for certain. The calls settled at their
		// hold after a stop before this step say so in their tier-3 row;
		// they are read back from there.
		migrationUnknownOutcome,
	},
	Legacy: func(ctx context.Context, q sqlite.Querier) (int, bool, error) {
		tables, err := sqlite.Tables(ctx, q)
		if err != nil || !tables["nodes"] || !tables["constraints"] {
			return 0, false, err
		}
		var v int
		if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return 0, false, err
		}
		switch v {
		case 0, 1:
			return 0, true, nil // step 1 adds the tables a planning-era file lacks
		case 2:
			return 2, true, nil
		}
		return 0, false, nil
	},
}

// migrationReservations is schema step 3.
const migrationReservations = `
ALTER TABLE nodes ADD COLUMN budget_reserved REAL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN time_reserved REAL DEFAULT 0;
ALTER TABLE budget_ledger ADD COLUMN counterpart_node_id TEXT;
ALTER TABLE budget_ledger ADD COLUMN reservation_id TEXT;
UPDATE budget_ledger SET counterpart_node_id = substr(description, length('allocated to child ') + 1)
	WHERE event_type = 'spend' AND resolver_id IS NULL AND description LIKE 'allocated to child %';
UPDATE budget_ledger SET counterpart_node_id = substr(description, length('reserve reallocated to child ') + 1)
	WHERE event_type = 'spend' AND resolver_id IS NULL AND description LIKE 'reserve reallocated to child %';
UPDATE budget_ledger SET counterpart_node_id = substr(description, length('allocated to build subgoal ') + 1)
	WHERE event_type = 'spend' AND resolver_id IS NULL AND description LIKE 'allocated to build subgoal %';
UPDATE budget_ledger SET counterpart_node_id = (SELECT parent_id FROM nodes WHERE nodes.id = budget_ledger.node_id)
	WHERE event_type = 'allocate' AND (description LIKE 'weight %' OR description = 'from parent reserve' OR description = 'half the node''s remainder for BUILD');

-- One hold per paid call in flight: taken before the call, settled after.
CREATE TABLE IF NOT EXISTS budget_reservations (
    id              TEXT PRIMARY KEY,
    node_id         TEXT NOT NULL REFERENCES nodes(id),
    root_id         TEXT NOT NULL,
    resolver_id     TEXT NOT NULL,
    operation       TEXT NOT NULL,
    amount          REAL NOT NULL,            -- cost held (USD)
    time_amount     REAL NOT NULL,            -- seconds held
    owner           TEXT NOT NULL,            -- the process that took it
    status          TEXT NOT NULL,            -- open | settled
    settled_amount  REAL,                     -- the spend it became
    settled_time    REAL,
    created_at      TEXT,
    settled_at      TEXT
);
-- Partial indexes: only open reservations are looked up, and settled ones
-- leave the index, so it stays as small as the calls in flight.
CREATE INDEX IF NOT EXISTS idx_reservations_open_root ON budget_reservations(root_id) WHERE status = 'open';
CREATE INDEX IF NOT EXISTS idx_reservations_open_node ON budget_reservations(node_id) WHERE status = 'open';

-- One process at a time runs a root.
CREATE TABLE IF NOT EXISTS run_leases (
    root_id         TEXT PRIMARY KEY,
    owner           TEXT NOT NULL,
    host            TEXT NOT NULL,
    pid             INTEGER NOT NULL,
    acquired_at     INTEGER NOT NULL,         -- unix milliseconds
    expires_at      INTEGER NOT NULL          -- unix milliseconds; renewed while the run goes on
);
`

// migrationRequestNodes is schema step 4.
const migrationRequestNodes = `
CREATE TABLE IF NOT EXISTS capability_request_nodes (
    request_id      TEXT NOT NULL REFERENCES capability_requests(id),
    node_id         TEXT NOT NULL REFERENCES nodes(id),
    created_at      TEXT,
    PRIMARY KEY (request_id, node_id)
);
CREATE INDEX IF NOT EXISTS idx_capreq_nodes_node ON capability_request_nodes(node_id);
INSERT INTO capability_request_nodes (request_id, node_id, created_at)
	SELECT id, detail->>'node_id', created_at FROM capability_requests
	WHERE detail->>'node_id' IS NOT NULL AND detail->>'node_id' IN (SELECT id FROM nodes);
`

// migrationUnknownOutcome is schema step 5.
const migrationUnknownOutcome = `
ALTER TABLE budget_reservations ADD COLUMN alive_seconds REAL DEFAULT 0;
ALTER TABLE budget_ledger ADD COLUMN unknown_amount REAL DEFAULT 0;
UPDATE budget_ledger SET unknown_amount = amount
	WHERE event_type = 'spend' AND reservation_id IN (SELECT CAST(detail->>'reservation_id' AS TEXT) FROM logs
		WHERE tier = 3 AND CAST(detail->>'settled_at_reservation' AS TEXT) IN ('true', '1'));
`

// Store is an open kernel database: kernel.db and its artifact_store/
// directory, or a PostgreSQL database holding both. Its embedded Conn
// runs statements outside any transaction; Write runs a function in one
// write transaction.
type Store struct {
	Conn
	db       *sqldb.DB
	path     string // the SQLite path, or the URL without its password
	readOnly bool
}

// Tx is a write transaction: every Conn method, inside it.
type Tx struct {
	Conn
	tx *sql.Tx
}

// Conn runs the kernel's statements on the database or in a transaction.
type Conn struct {
	tx    *sql.Tx // nil: on the database
	stmts *stmts
	d     *sqldb.Dialect
	blobs blobStore
}

// stmts are the kernel's statements, each prepared once per connection of
// the pool (database/sql keeps a prepared statement per connection, and a
// transaction reuses its connection's): parsing SQL was a third of a
// node step's time.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepared is the statement q (as the dialect sends it), in c's
// transaction when it has one.
func (c *Conn) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	q = c.d.SQL(q)
	c.stmts.mu.Lock()
	st, ok := c.stmts.m[q]
	c.stmts.mu.Unlock()
	if !ok {
		var err error
		if st, err = c.stmts.db.PrepareContext(ctx, q); err != nil {
			return nil, err
		}
		c.stmts.mu.Lock()
		if prev, ok := c.stmts.m[q]; ok {
			// Another goroutine prepared it first; this copy is not needed.
			_ = st.Close()
			st = prev
		} else {
			c.stmts.m[q] = st
		}
		c.stmts.mu.Unlock()
	}
	if c.tx != nil {
		st = c.tx.StmtContext(ctx, st) // closed with the transaction
	}
	return st, nil
}

// close closes every prepared statement.
func (s *stmts) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, st := range s.m {
		errs = append(errs, st.Close())
	}
	s.m = nil
	return errors.Join(errs...)
}

// Open opens (creating if needed) the kernel database and brings its
// tables up to date. db is a postgres:// or postgresql:// URL (PostgreSQL,
// see postgres.go) or a SQLite file path (internal/sqlite); another
// program's file or database is refused unchanged.
func Open(ctx context.Context, db string) (*Store, error) {
	if pgdb.IsURL(db) {
		return openPostgres(ctx, db, false)
	}
	sdb, err := sqlite.Open(ctx, db, schema)
	if err != nil {
		return nil, err
	}
	return newSQLiteStore(sdb, db, false), nil
}

// OpenReadOnly opens the existing kernel database for reading only: it
// never creates or changes a file (SQLite: it works where the directory
// cannot be written) or a table (PostgreSQL: every session is read-only).
// A missing file, or a PostgreSQL database without the kernel's tables,
// is an error wrapping fs.ErrNotExist.
func OpenReadOnly(ctx context.Context, db string) (*Store, error) {
	if pgdb.IsURL(db) {
		return openPostgres(ctx, db, true)
	}
	sdb, err := sqlite.OpenReadOnly(ctx, db, schema)
	if err != nil {
		return nil, err
	}
	return newSQLiteStore(sdb, db, true), nil
}

func newSQLiteStore(db *sql.DB, path string, readOnly bool) *Store {
	return newStore(db, path, readOnly, sqldb.SQLite, &fileBlobs{dir: filepath.Join(filepath.Dir(path), "artifact_store")})
}

func newStore(db *sql.DB, name string, readOnly bool, d *sqldb.Dialect, b blobStore) *Store {
	s := &Store{db: sqldb.New(db, d, "kernel database "+name), path: name, readOnly: readOnly}
	s.Conn = Conn{stmts: &stmts{db: db, m: map[string]*sql.Stmt{}}, d: d, blobs: b}
	return s
}

// Name is a database (a SQLite path or a PostgreSQL URL) as messages and
// logs show it: a URL without its password.
func Name(db string) string {
	if pgdb.IsURL(db) {
		return pgdb.Redact(db)
	}
	return db
}

// ReadOnly reports whether the store was opened by OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Close closes the database.
func (s *Store) Close() error { return errors.Join(s.stmts.close(), s.db.Close()) }

// Path names the database in messages: the kernel.db path the store was
// opened with, or the PostgreSQL URL without its password.
func (s *Store) Path() string { return s.path }

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.d.Name }

// Write runs fn in a write transaction; fn's error rolls everything back.
// On SQLite it is queued behind this process's other writers. On
// PostgreSQL it is SERIALIZABLE and run again (fn too: it must leave
// nothing behind but what it writes through tx) when the server rolls it
// back for a conflict with a concurrent transaction (internal/sqldb).
func (s *Store) Write(ctx context.Context, fn func(tx *Tx) error) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		return fn(&Tx{Conn: Conn{tx: tx, stmts: s.stmts, d: s.d, blobs: s.blobs}, tx: tx})
	})
}

func (c *Conn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := c.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (c *Conn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := c.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// row runs a query for one row; a statement that cannot be prepared
// reports its error from Scan, as a failed query does.
func (c *Conn) row(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := c.prepared(ctx, q)
	if err != nil {
		if c.tx != nil {
			return c.tx.QueryRowContext(ctx, c.d.SQL(q), args...)
		}
		return c.stmts.db.QueryRowContext(ctx, c.d.SQL(q), args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// NewID is a fresh primary id (a UUID, spec §0).
func NewID() string { return uuid.NewString() }

// JSONText is v as the JSON text the store writes. A value JSON cannot
// hold (a NaN or infinite σ or cost, a channel) is an error naming its
// type, never a panic: the write it was for fails and changes nothing.
func JSONText(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("as JSON, %T: %w", v, err)
	}
	return string(data), nil
}

// jsonArg is a statement argument written as JSON text: a value JSON
// cannot hold fails the statement (database/sql returns Value's error).
type jsonArg struct{ v any }

func (a jsonArg) Value() (driver.Value, error) { return JSONText(a.v) }

// asJSON is v as a JSON statement argument.
func asJSON(v any) driver.Valuer { return jsonArg{v} }

// Short is an id's first eight characters, as logs and progress show it.
func Short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func now() string { return time.Now().UTC().Format("2006-01-02 15:04:05.000") }

// Value is a σ read from the database, 0 when it is NULL (nil).
func Value(sigma *float64) float64 {
	if sigma == nil {
		return 0
	}
	return *sigma
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullJSON is v as JSON text, or NULL for nil.
func nullJSON(v any) any {
	if v == nil {
		return nil
	}
	return asJSON(v)
}

// idList decodes a JSON array of ids.
func idList(node, text string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("node %s: id list %q is not a JSON array: %w", node, text, err)
	}
	return out, nil
}
