// Package pgdb is the one way the kernels open PostgreSQL through
// database/sql (pgx v5's stdlib driver): telling a postgres:// URL from a
// SQLite path, naming a database in messages without its secrets, one
// pool with the same settings everywhere, read-only sessions, errors that
// say the server is unavailable, and migrating a kernel's tables under a
// lock (Migrate).
package pgdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// IsURL reports whether dsn names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a SQLite file.
func IsURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// secretParams are the URL query parameters libpq and pgx read secrets
// from, besides the password in the URL's user part.
var secretParams = []string{"password", "sslpassword"}

// Redact is a PostgreSQL URL without its secrets (the password in the
// user part and in the query), for messages and logs. The user part ends
// at the URL's last @, so a password holding an unescaped @ (which
// CheckURL refuses) is hidden whole, never shown as part of the host.
func Redact(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return "(not a PostgreSQL URL)"
	}
	user := ""
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		name, _, hasPassword := strings.Cut(rest[:at], ":")
		if user = name; hasPassword {
			user += ":xxxxx"
		}
		user, rest = user+"@", rest[at+1:]
	}
	if base, query, ok := strings.Cut(rest, "?"); ok {
		q, err := url.ParseQuery(query)
		if err != nil {
			query = "(parameters that do not parse)"
		} else {
			for _, p := range secretParams {
				if q.Has(p) {
					q.Set(p, "xxxxx")
				}
			}
			query = q.Encode()
		}
		rest = base + "?" + query
	}
	return scheme + "://" + user + rest
}

// URLError is a PostgreSQL URL refused before any connection is tried:
// one that does not parse, or whose user part holds a character a URL
// reserves, unescaped. Such a character moves the URL's boundaries: with
// a second @ part of the password becomes the host (and is printed in a
// DNS error), after # or ? other parsers see another host than pgx. It is
// the command line's mistake (a usage error).
type URLError struct {
	URL    string // the URL as Redact shows it
	Reason string
	// Password is whether a password character a URL reserves may be the
	// cause: only then does the message say how to escape one, so that a
	// bad port or sslmode is not blamed on the password.
	Password bool
}

func (e *URLError) Error() string {
	if !e.Password {
		return fmt.Sprintf("PostgreSQL %s: %s", e.URL, e.Reason)
	}
	return fmt.Sprintf("PostgreSQL %s: %s (in a password, write # ? %% @ / : as %%23 %%3F %%25 %%40 %%2F %%3A, or give the password in PGPASSWORD)", e.URL, e.Reason)
}

// UsageError marks a URLError as a mistake on the command line.
func (e *URLError) UsageError() bool { return true }

// ParseError is the error for a URL that pgx cannot parse (err, from
// pgx.ParseConfig). pgx's message quotes the URL, password and all (its
// redaction is best effort), so only what follows the quoted URL is
// passed on: "invalid port", "failed to configure TLS (sslmode is
// invalid)". The escaping hint is given when the password holds a
// character a URL reserves, the usual cause.
func ParseError(dsn string, err error) error {
	reason := "the URL does not parse"
	if msg := err.Error(); strings.HasPrefix(msg, "cannot parse `") {
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			reason += ": " + msg[i+len("`: "):]
		}
	}
	if ne, ok := errors.AsType[*strconv.NumError](err); ok {
		// "invalid connect_timeout (strconv.ParseInt: ...)": say it plainly.
		reason, _, _ = strings.Cut(reason, " (strconv.")
		reason += fmt.Sprintf(" (%q is not a whole number)", ne.Num)
	}
	return &URLError{URL: Redact(dsn), Reason: reason, Password: passwordNeedsEscaping(dsn)}
}

// passwordNeedsEscaping is whether the URL's password holds a character a
// URL reserves, unescaped, or a % that starts no escape.
func passwordNeedsEscaping(dsn string) bool {
	_, rest, _ := strings.Cut(dsn, "://")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return false
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return false
	}
	_, err := url.PathUnescape(pw)
	return err != nil || strings.ContainsAny(pw, "#?@/:")
}

// CheckURL refuses, before anything is dialled, a URL whose parts are
// ambiguous (a *URLError): more than one @, an @ after the host (a
// password holding /, or an @ in the database name or a parameter, which
// must be written %40), a user part holding # or ?; or one that pgx cannot
// parse.
func CheckURL(dsn string) error {
	_, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return &URLError{URL: Redact(dsn), Reason: "not a postgres:// URL"}
	}
	host := strings.IndexByte(rest, '/')
	if host < 0 {
		host = len(rest)
	}
	at := strings.IndexByte(rest, '@')
	switch {
	case strings.Count(rest, "@") > 1:
		return &URLError{URL: Redact(dsn), Reason: "the URL holds more than one @", Password: true}
	case at > host:
		return &URLError{URL: Redact(dsn), Reason: "the URL holds an @ after the host (in a database name or a parameter, write @ as %40)", Password: true}
	case at >= 0 && strings.ContainsAny(rest[:at], "#?"):
		return &URLError{URL: Redact(dsn), Reason: "the URL's user part holds an unescaped # or ?", Password: true}
	}
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return ParseError(dsn, err)
	}
	return nil
}

// ConnectTimeout bounds each connection attempt when the URL sets no
// connect_timeout.
const ConnectTimeout = 15 * time.Second

// Options are how Open sets up the pool.
type Options struct {
	// ReadOnly makes every session read-only
	// (default_transaction_read_only): any write, DDL included, fails
	// in the server.
	ReadOnly bool
	// MaxConns bounds the pool (0: 16).
	MaxConns int
}

// Open opens a pool on the PostgreSQL database at url and checks that it
// answers. Its errors name the database without its password: pgx's own
// messages may quote the URL, so they are scrubbed of it too.
func Open(ctx context.Context, dsn string, o Options) (*sql.DB, error) {
	if err := CheckURL(dsn); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, ParseError(dsn, err)
	}
	if cfg.ConnectTimeout == 0 {
		// An unreachable host otherwise waits for the kernel's TCP
		// timeout (minutes); ?connect_timeout= in the URL overrides this.
		cfg.ConnectTimeout = ConnectTimeout
	}
	if o.ReadOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	db := stdlib.OpenDB(*cfg)
	n := o.MaxConns
	if n == 0 {
		n = 16
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("PostgreSQL %s: connect: %w", Redact(dsn), OneLine(err, cfg.Password)), db.Close())
	}
	return db, nil
}

// OneLine is a connection error on one line, without the password: pgx
// tries each address in turn (with sslmode=prefer, TLS then plain) and
// puts each attempt's error on a line of its own, which is the same line
// twice when the server cannot be reached. The lines are joined, each
// said once, and password replaced in case a message quotes the
// connection string. err stays wrapped (Unavailable looks through it).
func OneLine(err error, password string) error {
	text := err.Error()
	if ce, ok := errors.AsType[*pgconn.ConnectError](err); ok && errors.Unwrap(ce) != nil {
		text = errors.Unwrap(ce).Error() // the attempts, without pgx's "failed to connect to `user=… database=…`:"
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	msg := strings.Join(lines, "; ")
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	return &oneLine{msg: msg, err: err}
}

type oneLine struct {
	msg string
	err error
}

func (e *oneLine) Error() string { return e.msg }
func (e *oneLine) Unwrap() error { return e.err }

// Unavailable reports whether err says the database could not be reached
// rather than refusing a statement: a connection that could not be made
// or was lost, the server shutting down or not accepting connections
// (SQLSTATE classes 08 and 57P, and 55000 for a database closed to new
// connections). The same work may succeed once the database is back.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.Timeout(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || pe.Code == "55000" && strings.Contains(pe.Message, "accepting connections")
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// Migrate runs fn, which creates or updates a kernel's tables, in one
// transaction holding the advisory lock key (pg_advisory_xact_lock; any
// fixed number that names the kernel's schema), so that processes opening
// the database together apply each step once, and a failed step leaves the
// database as it was. The transaction is READ COMMITTED, the server's
// default: each statement after the lock sees what the process before this
// one committed, which a SERIALIZABLE transaction, whose snapshot is taken
// at the lock statement, would not.
func Migrate(ctx context.Context, db *sql.DB, key int64, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", key); err != nil {
		return fmt.Errorf("migrate: lock the schema: %w", err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
