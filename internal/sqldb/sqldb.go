// Package sqldb is the storage seam every kernel's store runs on, whether
// the database is a SQLite file (opened by internal/sqlite) or PostgreSQL
// (opened by internal/pgdb):
//
//   - DB.Write runs a function in one write transaction: all of it is
//     kept, or none. On SQLite the process's writers queue in Go, one at a
//     time (internal/sqlite begins each IMMEDIATE), so no write meets
//     SQLITE_BUSY half-way; waiting in the queue ends with the context. On
//     PostgreSQL it is SERIALIZABLE, and a run the server rolls back for a
//     serialization failure or a deadlock (40001, 40P01) is run again, the
//     function included, up to 20 times: the caller sees only the last
//     outcome. So the function writes only through its transaction and
//     sets its results afresh on every run.
//   - List runs a query and scans each row into a slice; its errors name
//     the operation.
//   - A Dialect is what the engines' SQL says differently: statements are
//     written once, with ? placeholders and marks ({seq}, {id}, {float},
//     {noindex}), which Dialect.SQL fills in.
//
// docs/design/README.md ("Storage") says why the seam is shaped so.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Dialect is what one engine's SQL says differently. The marks a
// statement may hold:
//
//	{seq}      the column that orders a table's rows by insertion
//	{id}       an auto-increment integer primary key, in CREATE TABLE
//	{float}    the 64-bit floating point type, in a CAST
//	{noindex}  before a column the planner must not use an index for
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name     string
	marks    *strings.Replacer
	numbered bool     // ? placeholders become $1, $2, …
	rewrite  sync.Map // statement as written → as sent
}

// SQLite is the dialect of a SQLite file.
var SQLite = &Dialect{Name: "sqlite", marks: strings.NewReplacer(
	"{seq}", "rowid", "{id}", "INTEGER PRIMARY KEY AUTOINCREMENT", "{float}", "REAL", "{noindex}", "+")}

// Postgres is the dialect of a PostgreSQL database.
var Postgres = &Dialect{Name: "postgres", numbered: true, marks: strings.NewReplacer(
	"{seq}", "seq", "{id}", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "{float}", "DOUBLE PRECISION", "{noindex}", "")}

// SQL is q as this dialect sends it: marks filled in and, for PostgreSQL,
// placeholders numbered. It is rewritten once, then cached.
func (d *Dialect) SQL(q string) string {
	if s, ok := d.rewrite.Load(q); ok {
		return s.(string)
	}
	s := d.marks.Replace(q)
	if d.numbered {
		s = Numbered(s)
	}
	d.rewrite.Store(q, s)
	return s
}

// DB is an open database and its dialect. The embedded *sql.DB runs
// statements outside a transaction; Write runs them inside one.
type DB struct {
	*sql.DB
	Dialect *Dialect
	name    string
	// queue holds the SQLite writer of this process (a semaphore, so that
	// a writer waiting for it gives up when its context ends). SQLite has
	// one writer per file: queueing in Go costs nothing, while waiting in
	// SQLite's busy handler sleeps and polls, which under many concurrent
	// writers costs far more than the writes.
	queue chan struct{}
}

// New is db, whose engine d names, ready for Write. name says which
// database in Write's errors ("kernel database kernel.db"); "" for none,
// when the caller names it.
func New(db *sql.DB, d *Dialect, name string) *DB {
	return &DB{DB: db, Dialect: d, name: name, queue: make(chan struct{}, 1)}
}

// maxTries bounds how often Write runs a PostgreSQL transaction the
// server keeps rolling back for conflicts.
const maxTries = 20

// Write runs fn in one write transaction; fn's error rolls everything
// back and is returned as it is. See the package doc for how writers
// wait (SQLite) or are run again (PostgreSQL).
func (db *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	if db.Dialect != Postgres {
		select {
		case db.queue <- struct{}{}:
		case <-ctx.Done():
			return db.wrap("wait for the other writers", ctx.Err())
		}
		defer func() { <-db.queue }()
		return db.run(ctx, nil, fn)
	}
	for try := 1; ; try++ {
		err := db.run(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable}, fn)
		if err == nil || try == maxTries || !retryable(err) || ctx.Err() != nil {
			return err
		}
		// Back off a little, more with each try and at random, so the
		// conflicting transactions do not meet again at once.
		select {
		case <-time.After(time.Duration(1+rand.IntN(try*try)) * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// retryable reports whether err is PostgreSQL's serialization failure or
// deadlock (SQLSTATE 40001, 40P01): the server rolled the transaction
// back, and running it again may succeed. The driver's error says its
// SQLSTATE (pgx's pgconn.PgError.SQLState), so no driver is imported here
// and a kernel on SQLite alone links none.
func retryable(err error) bool {
	var e interface{ SQLState() string }
	return errors.As(err, &e) && (e.SQLState() == "40001" || e.SQLState() == "40P01")
}

func (db *DB) run(ctx context.Context, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return db.wrap("begin transaction", err)
	}
	defer tx.Rollback() // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return db.wrap("commit", err)
	}
	return nil
}

func (db *DB) wrap(op string, err error) error {
	if db.name == "" {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %s: %w", db.name, op, err)
}

// QueryFunc runs a query: the QueryContext method of a *sql.DB, *sql.Tx
// or *sql.Conn, or a store's own (prepared statements, a dialect).
type QueryFunc func(ctx context.Context, query string, args ...any) (*sql.Rows, error)

// Enough is returned by a List scan function, with its row's value, to
// end the list there: the value is kept and no further row is read (a
// list bounded by the size of what it holds).
var Enough = errors.New("enough rows")

// List runs query through q and returns scan's value for each row, in
// order (nil for none). Every error is wrapped with op, the operation
// ("list the blocks"), and ends the list.
func List[T any](ctx context.Context, q QueryFunc, op string, scan func(*sql.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if errors.Is(err, Enough) {
			return append(out, v), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// Column is a List scan function for a row of one column.
func Column[T any](r *sql.Rows) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}

// Numbered rewrites ? placeholders as $1, $2, … (PostgreSQL's), leaving
// those inside quoted strings, quoted identifiers and comments alone.
func Numbered(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			if j >= len(q) {
				j = len(q) - 1
			}
			b.WriteString(q[i : j+1])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i - 1
			}
			b.WriteString(q[i : i+j+1])
			i += j
		case c == '?':
			n++
			fmt.Fprintf(&b, "$%d", n)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
