// Package store keeps a beach: passports, marks, messages, save points and
// the nonces that stop replays, in SQLite (one file, the default) or in
// PostgreSQL (a beach many servers share). Both run the same SQL and the
// same numbered schema steps, and write through internal/sqldb (queued on
// SQLite, SERIALIZABLE and run again after a conflict on PostgreSQL); what
// differs in opening them (driver, how steps are counted and locked, the
// SQLite file's marker) is in dialect.go.
//
// The store keeps each statement as the exact signed envelope it was given
// (canonical JSON), beside the few columns it is looked up by; readers get
// the envelope back and verify it themselves. It checks nothing about
// signatures: that is the server's job (package beach/server). What it
// does guarantee, in one transaction per write:
//   - a nonce is used once per agent (ErrReplay), for every kind of write
//     and for the signed inbox and save point reads, and a statement signed
//     before the horizon of pruned nonces is refused (ErrForgotten);
//   - a passport, a mark (per agent and URL) or a save point replaces the
//     stored one only when its signed time is later (ErrStale otherwise);
//   - taking an inbox returns each unread message once, even to two
//     concurrent readers, and marks it read in the same statement.
//
// Tables are prefixed beach_ so a shared PostgreSQL database can hold them
// beside others. Times are stored as fixed-width UTC text, which sorts.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/sqldb"
)

// schemaVersion is the number of schema steps this code knows (see
// steps); a database at a higher one was made by a newer hermitcrab and is
// refused rather than misread.
const schemaVersion = 2

// timeFormat is fixed width so stored times compare as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// Errors a write or read can wrap.
var (
	ErrReplay   = errors.New("this nonce was already used by this agent")
	ErrStale    = errors.New("an entry signed at the same time or later is already stored")
	ErrNotFound = errors.New("not found")
	// ErrForgotten is an envelope signed before the horizon: nonces signed
	// that early may have been pruned, so its nonce cannot be checked.
	ErrForgotten = errors.New("signed before the beach's replay memory begins")
)

// MaxListBytes bounds a list read (Passports, Marks) by the size of the
// envelopes it returns, besides its count: passports may be ~90 KB each, so
// 500 of them in one open read would cost the beach ~45 MB per request
// (250 slow readers held 1.5 GB at 4 MiB a list). A passport as people
// write them is under 1 KB: the bound cuts only lists of giants.
// A list stops at the first entry that passes the bound (one entry is
// always returned).
const MaxListBytes = 1 << 20

// Unread is TakeInbox's after for "the unread messages".
const Unread int64 = -1

// Statement is a verified envelope to store: who signed it, when, its
// nonce, and the envelope itself (canonical JSON).
type Statement struct {
	Agent    string
	Time     time.Time
	Nonce    string
	Envelope json.RawMessage
}

// Stored is a statement read back.
type Stored struct {
	ID       int64           `json:"id,omitempty"` // messages only
	Agent    string          `json:"agent"`
	Time     string          `json:"time"`     // signed time
	Received string          `json:"received"` // when the beach stored it
	Envelope json.RawMessage `json:"envelope"`
}

// Store is an open beach database. It is safe for concurrent use.
type Store struct {
	db  *sqldb.DB
	now func() time.Time
}

// Open opens (creating if needed) the beach database: a postgres:// or
// postgresql:// URL opens PostgreSQL, anything else is a SQLite file path.
func Open(ctx context.Context, dsn string) (*Store, error) {
	d, err := dialectFor(dsn)
	if err != nil {
		return nil, err
	}
	db, err := open(ctx, d, dsn)
	if err != nil {
		// The database's own errors name it (the URL without its password,
		// the file): naming it again made one line say it twice.
		return nil, fmt.Errorf("beach store: %w", err)
	}
	s := &Store{db: sqldb.New(db, d, ""), now: time.Now}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("beach store %s: %w", Redact(dsn), err), db.Close())
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.db.Dialect.Name }

// migrate brings a PostgreSQL database to the last step (internal/sqlite
// has done it for a SQLite file), then makes sure the database can be
// written: a database the beach cannot write (a read-only file or mount, a
// read-only replica) is refused here, not at the first write a client
// sends.
func (s *Store) migrate(ctx context.Context) error {
	if s.db.Dialect == sqldb.Postgres {
		if err := pgdb.Migrate(ctx, s.db.DB, schemaLock, func(tx *sql.Tx) error { return applySteps(ctx, tx) }); err != nil {
			return err
		}
	}
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE beach_meta SET value = value WHERE key = 'schema'`)
		return err
	})
	if err != nil {
		return fmt.Errorf("the database cannot be written (a beach writes every signed request): %w", err)
	}
	return nil
}

// applySteps applies the steps a PostgreSQL database lacks (pgdb.Migrate
// holds the schema lock, so servers starting together apply each once).
// Its step count is beach_meta's schema value, which every step sets.
func applySteps(ctx context.Context, tx *sql.Tx) error {
	var v int
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass('beach_meta') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	if exists {
		err := tx.QueryRowContext(ctx, `SELECT value FROM beach_meta WHERE key = 'schema'`).Scan(&v)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	all := steps(sqldb.Postgres)
	if v > len(all) {
		return fmt.Errorf("schema version %d was written by a newer hermitcrab (this one knows %d): upgrade hermitcrab", v, len(all))
	}
	for i := v; i < len(all); i++ {
		for _, stmt := range strings.Split(all[i], ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("schema step %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// steps are the schema, one step per version, in dialect d. Each step
// sets beach_meta's schema value (PostgreSQL counts steps there; SQLite in
// user_version). Steps are only ever appended.
func steps(d *sqldb.Dialect) []string {
	return []string{d.SQL(step1), step2}
}

const step1 = `
CREATE TABLE IF NOT EXISTS beach_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO beach_meta (key, value) VALUES ('schema', 1);
CREATE TABLE IF NOT EXISTS beach_nonces (
	agent TEXT NOT NULL,
	nonce TEXT NOT NULL,
	time  TEXT NOT NULL,
	PRIMARY KEY (agent, nonce)
);
CREATE INDEX IF NOT EXISTS beach_nonces_time ON beach_nonces (time);
CREATE TABLE IF NOT EXISTS beach_passports (
	agent    TEXT PRIMARY KEY,
	name     TEXT NOT NULL,
	time     TEXT NOT NULL,
	received TEXT NOT NULL,
	envelope TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS beach_passports_received ON beach_passports (received);
CREATE TABLE IF NOT EXISTS beach_marks (
	agent    TEXT NOT NULL,
	url_hash TEXT NOT NULL,
	time     TEXT NOT NULL,
	received TEXT NOT NULL,
	envelope TEXT NOT NULL,
	PRIMARY KEY (agent, url_hash)
);
CREATE INDEX IF NOT EXISTS beach_marks_url ON beach_marks (url_hash, time);
CREATE TABLE IF NOT EXISTS beach_messages (
	id        {id},
	sender    TEXT NOT NULL,
	recipient TEXT NOT NULL,
	type      TEXT NOT NULL,
	time      TEXT NOT NULL,
	received  TEXT NOT NULL,
	read_at   TEXT,
	envelope  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS beach_messages_inbox ON beach_messages (recipient, read_at, id);
CREATE TABLE IF NOT EXISTS beach_savepoints (
	agent    TEXT PRIMARY KEY,
	time     TEXT NOT NULL,
	received TEXT NOT NULL,
	envelope TEXT NOT NULL
);`

// step2 added the horizon of pruned nonces: a hermitcrab that does not
// record it must not prune the nonces of one that checks it.
const step2 = `
CREATE TABLE IF NOT EXISTS beach_horizon (id INTEGER PRIMARY KEY CHECK (id = 1), pruned_before TEXT NOT NULL);
UPDATE beach_meta SET value = 2 WHERE key = 'schema';`

func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

// useNonce records the statement's nonce, or fails with ErrReplay, or
// with ErrForgotten when the statement was signed before the horizon
// (PruneNonces may have forgotten its nonce). The horizon is read after
// the insert: on PostgreSQL an insert that meets a nonce a concurrent
// prune is deleting waits for that prune to commit, and the read that
// follows then sees its horizon.
func useNonce(ctx context.Context, tx *sql.Tx, st Statement) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO beach_nonces (agent, nonce, time) VALUES ($1, $2, $3) ON CONFLICT (agent, nonce) DO NOTHING`,
		st.Agent, st.Nonce, ts(st.Time))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrReplay
	}
	var early int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM beach_horizon WHERE pruned_before > $1`, ts(st.Time)).Scan(&early); err != nil {
		return err
	}
	if early > 0 {
		return ErrForgotten
	}
	return nil
}

// NonceUsed reports whether agent has already used nonce. The server asks
// before it spends the agent's rate allowance, so a stranger replaying an
// agent's public envelopes cannot spend it; the write itself still records
// the nonce in its own transaction (useNonce), which is what makes a nonce
// good once.
func (s *Store) NonceUsed(ctx context.Context, agent, nonce string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM beach_nonces WHERE agent = $1 AND nonce = $2`, agent, nonce).Scan(&n)
	return n > 0, s.wrap("nonce", err)
}

// replaced fails with ErrStale when an upsert changed nothing.
func replaced(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrStale
	}
	return nil
}

// PutPassport stores an agent's passport, replacing an older one.
func (s *Store) PutPassport(ctx context.Context, st Statement, name string) error {
	return s.wrap("passport", s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := useNonce(ctx, tx, st); err != nil {
			return err
		}
		return replaced(tx.ExecContext(ctx, `INSERT INTO beach_passports (agent, name, time, received, envelope) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (agent) DO UPDATE SET name = excluded.name, time = excluded.time, received = excluded.received, envelope = excluded.envelope
			WHERE excluded.time > beach_passports.time`, st.Agent, name, ts(st.Time), ts(s.now()), string(st.Envelope)))
	}))
}

// Passport reads an agent's passport.
func (s *Store) Passport(ctx context.Context, agent string) (*Stored, error) {
	r := &Stored{}
	var env string
	err := s.db.QueryRowContext(ctx, `SELECT agent, time, received, envelope FROM beach_passports WHERE agent = $1`, agent).
		Scan(&r.Agent, &r.Time, &r.Received, &env)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("passport of %s: %w", agent, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("passport of %s: %w", agent, err)
	}
	r.Envelope = json.RawMessage(env)
	return r, nil
}

// Passports lists the passports most recently published, newest first.
func (s *Store) Passports(ctx context.Context, limit int) ([]Stored, error) {
	return s.list(ctx, "passports", `SELECT 0, agent, time, received, envelope FROM beach_passports ORDER BY received DESC, agent LIMIT $1`, limit)
}

// PutMark stores an agent's mark on a URL, replacing its older mark there.
func (s *Store) PutMark(ctx context.Context, st Statement, urlHash string) error {
	return s.wrap("mark", s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := useNonce(ctx, tx, st); err != nil {
			return err
		}
		return replaced(tx.ExecContext(ctx, `INSERT INTO beach_marks (agent, url_hash, time, received, envelope) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (agent, url_hash) DO UPDATE SET time = excluded.time, received = excluded.received, envelope = excluded.envelope
			WHERE excluded.time > beach_marks.time`, st.Agent, urlHash, ts(st.Time), ts(s.now()), string(st.Envelope)))
	}))
}

// Marks lists the latest marks on a URL hash, newest first.
func (s *Store) Marks(ctx context.Context, urlHash string, limit int) ([]Stored, error) {
	return s.list(ctx, "marks", `SELECT 0, agent, time, received, envelope FROM beach_marks WHERE url_hash = $2 ORDER BY time DESC, agent LIMIT $1`, limit, urlHash)
}

// PutMessage stores a message for its recipient and returns its id.
func (s *Store) PutMessage(ctx context.Context, st Statement, to, typ string) (int64, error) {
	var id int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := useNonce(ctx, tx, st); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO beach_messages (sender, recipient, type, time, received, envelope) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
			st.Agent, to, typ, ts(st.Time), ts(s.now()), string(st.Envelope)).Scan(&id)
	})
	return id, s.wrap("message", err)
}

// TakeInbox uses the signed request's nonce, then returns up to limit of
// the agent's unread messages, oldest first, marking them read. With after
// 0 or more (not Unread) it returns the agent's messages with ids above
// after, read or not (marking the unread ones read).
func (s *Store) TakeInbox(ctx context.Context, req Statement, after int64, limit int) ([]Stored, error) {
	var out []Stored
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := useNonce(ctx, tx, req); err != nil {
			return err
		}
		query := `UPDATE beach_messages SET read_at = $1
			WHERE read_at IS NULL AND id IN (SELECT id FROM beach_messages WHERE recipient = $2 AND read_at IS NULL ORDER BY id LIMIT $3)
			RETURNING id, sender, time, received, envelope`
		args := []any{ts(s.now()), req.Agent, limit}
		if after != Unread {
			query = `UPDATE beach_messages SET read_at = COALESCE(read_at, $1)
			WHERE id IN (SELECT id FROM beach_messages WHERE recipient = $2 AND id > $4 ORDER BY id LIMIT $3)
			RETURNING id, sender, time, received, envelope`
			args = append(args, after)
		}
		var err error
		out, err = stored(ctx, tx.QueryContext, "taking messages", 0, query, args...) // every message taken is marked read: return them all
		return err
	})
	if err != nil {
		return nil, s.wrap("inbox", err)
	}
	slices.SortFunc(out, func(a, b Stored) int { return int(a.ID - b.ID) })
	return out, nil
}

// Unread counts an agent's unread messages.
func (s *Store) Unread(ctx context.Context, agent string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM beach_messages WHERE recipient = $1 AND read_at IS NULL`, agent).Scan(&n)
	return n, s.wrap("inbox", err)
}

// PutSavePoint stores an agent's save point, replacing an older one.
func (s *Store) PutSavePoint(ctx context.Context, st Statement) error {
	return s.wrap("save point", s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := useNonce(ctx, tx, st); err != nil {
			return err
		}
		return replaced(tx.ExecContext(ctx, `INSERT INTO beach_savepoints (agent, time, received, envelope) VALUES ($1, $2, $3, $4)
			ON CONFLICT (agent) DO UPDATE SET time = excluded.time, received = excluded.received, envelope = excluded.envelope
			WHERE excluded.time > beach_savepoints.time`, st.Agent, ts(st.Time), ts(s.now()), string(st.Envelope)))
	}))
}

// TakeSavePoint uses the signed request's nonce and returns the agent's
// save point.
func (s *Store) TakeSavePoint(ctx context.Context, req Statement) (*Stored, error) {
	r := &Stored{}
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := useNonce(ctx, tx, req); err != nil {
			return err
		}
		var env string
		err := tx.QueryRowContext(ctx, `SELECT agent, time, received, envelope FROM beach_savepoints WHERE agent = $1`, req.Agent).
			Scan(&r.Agent, &r.Time, &r.Received, &env)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		r.Envelope = json.RawMessage(env)
		return err
	})
	if err != nil {
		return nil, s.wrap("save point", err)
	}
	return r, nil
}

// PruneNonces forgets nonces signed before cutoff and moves the horizon
// there (it never moves back), so from then on every write signed before
// cutoff fails with ErrForgotten, whatever window or clock the server
// that sends it has: a server on the same database with a longer window,
// or this one restarted with one, cannot accept a replay whose nonce was
// forgotten.
func (s *Store) PruneNonces(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO beach_horizon (id, pruned_before) VALUES (1, $1)
			ON CONFLICT (id) DO UPDATE SET pruned_before = excluded.pruned_before WHERE excluded.pruned_before > beach_horizon.pruned_before`, ts(cutoff)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM beach_nonces WHERE time < $1`, ts(cutoff))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, s.wrap("pruning nonces", err)
}

func (s *Store) list(ctx context.Context, what, query string, limit int, args ...any) ([]Stored, error) {
	return stored(ctx, s.db.QueryContext, "beach store: "+what, MaxListBytes, query, append([]any{limit}, args...)...)
}

// stored lists rows of Stored (never nil) until they end or, when
// maxBytes > 0, until their envelopes have passed maxBytes; its errors
// name op.
func stored(ctx context.Context, q sqldb.QueryFunc, op string, maxBytes int, query string, args ...any) ([]Stored, error) {
	total := 0
	out, err := sqldb.List(ctx, q, op, func(rows *sql.Rows) (Stored, error) {
		var r Stored
		var env string
		if err := rows.Scan(&r.ID, &r.Agent, &r.Time, &r.Received, &env); err != nil {
			return r, err
		}
		r.Envelope = json.RawMessage(env)
		if total += len(env); maxBytes > 0 && total >= maxBytes {
			return r, sqldb.Enough
		}
		return r, nil
	}, query, args...)
	if err == nil && out == nil {
		out = []Stored{}
	}
	return out, err
}

// wrap names the operation; ErrReplay, ErrStale and ErrNotFound stay
// visible to errors.Is.
func (s *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("beach store: %s: %w", what, err)
}
