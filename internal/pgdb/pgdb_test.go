package pgdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/llmkernels/kernels/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestNumberedLeavesQuotesAndCommentsAlone(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT ? , ?":                              "SELECT $1 , $2",
		"WHERE a = '?' AND b = ?":                   "WHERE a = '?' AND b = $1",
		"WHERE a = 'it''s ?' AND b = ?":             "WHERE a = 'it''s ?' AND b = $1",
		`SELECT "odd?col" FROM t WHERE x = ?`:       `SELECT "odd?col" FROM t WHERE x = $1`,
		"SELECT ? -- why?\nFROM t WHERE x = ?":      "SELECT $1 -- why?\nFROM t WHERE x = $2",
		"SELECT 'unterminated ?":                    "SELECT 'unterminated ?",
		"SELECT a - ? FROM t -- trailing comment ?": "SELECT a - $1 FROM t -- trailing comment ?",
	} {
		if got := Numbered(in); got != want {
			t.Errorf("Numbered(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactHidesEveryPassword(t *testing.T) {
	for _, u := range []string{
		"postgres://me:hunter2@db.example/solve",
		"postgresql://me@db.example/solve?password=hunter2&sslmode=require",
		"postgres://me@db.example/solve?sslpassword=hunter2",
	} {
		if got := Redact(u); strings.Contains(got, "hunter2") || !strings.Contains(got, "db.example") {
			t.Errorf("Redact(%q) = %q", u, got)
		}
	}
	if !IsURL("postgresql://x/y") || !IsURL("postgres://x/y") || IsURL("kernel.db") || IsURL("file:kernel.db") {
		t.Error("IsURL")
	}
}

// A wrong password fails at Open, and neither it nor the URL's other
// secrets reach the error.
func TestOpenFailsWithoutShowingThePassword(t *testing.T) {
	dsn := pgtest.New(t)
	db, err := Open(context.Background(), dsn, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (x INT)"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a read-only session created a table: %v", err)
	}
	db.Close()
	u, _ := url.Parse(dsn)
	u.User = url.UserPassword(u.User.Username(), "Wrong-Secret-42")
	if _, err := Open(context.Background(), u.String(), Options{}); err == nil || strings.Contains(err.Error(), "Wrong-Secret-42") || !strings.Contains(err.Error(), "connect") {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := Open(context.Background(), "postgres://me:Wrong-Secret-42@[::1/x", Options{}); err == nil || strings.Contains(err.Error(), "Wrong-Secret-42") {
		t.Errorf("a URL that does not parse: %v", err)
	}
}

// Unavailable tells a database that cannot be reached from one that
// refuses a statement.
func TestUnavailable(t *testing.T) {
	for err, want := range map[error]bool{
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}: true,
		&pgconn.PgError{Code: "08006", Message: "connection failure"}:                                  true,
		&pgconn.PgError{Code: "55000", Message: `database "x" is not currently accepting connections`}: true,
		&pgconn.PgError{Code: "55000", Message: "object not in prerequisite state"}:                    false,
		&pgconn.PgError{Code: "23505", Message: "duplicate key"}:                                       false,
		&pgconn.PgError{Code: "40001", Message: "could not serialize access"}:                          false,
		errors.New("node 1234: no such status"):                                                        false,
		fmt.Errorf("settle: %w", io.ErrUnexpectedEOF):                                                  true,
	} {
		if got := Unavailable(err); got != want {
			t.Errorf("Unavailable(%v) = %v, want %v", err, got, want)
		}
	}
	if _, err := Open(context.Background(), "postgres://me@127.0.0.1:1/x?connect_timeout=2", Options{}); !Unavailable(err) {
		t.Errorf("a refused connection: Unavailable(%v) = false", err)
	}
}
