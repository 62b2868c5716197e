package pgdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/llmkernels/kernels/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

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
	// One line (pgx tries TLS, then plain: an error each), naming the cause.
	if _, err := Open(context.Background(), u.String(), Options{}); err == nil || strings.Contains(err.Error(), "Wrong-Secret-42") ||
		!strings.Contains(err.Error(), "connect") || !strings.Contains(err.Error(), "password authentication failed") || strings.Contains(err.Error(), "\n") {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := Open(context.Background(), "postgres://me:Wrong-Secret-42@[::1/x", Options{}); err == nil || strings.Contains(err.Error(), "Wrong-Secret-42") {
		t.Errorf("a URL that does not parse: %v", err)
	}
	_, err = Open(context.Background(), "postgres://me@127.0.0.1:1/x?connect_timeout=2", Options{})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "connection refused") || !Unavailable(err) {
		t.Errorf("a refused connection, on one line: %q", err)
	}
}

// A URL whose parts are ambiguous is refused before anything is dialled,
// as a usage error with the escaping hint and without any part of the
// password: an @ in it (pgx would dial "Word9@127.0.0.1" and print it), a
// # or ? in it (pgx connects; other parsers see another host), a / in it,
// or a URL that does not parse. The same passwords escaped are accepted,
// and Redact shows none of them.
func TestAmbiguousURLsAreRefusedBeforeAnyDial(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:Secr3t@Word9@127.0.0.1:5432/x",
		"postgres://u:Hid#den9@127.0.0.1:5432/x",
		"postgres://u:Hid?den9@127.0.0.1:5432/x",
		"postgres://u:Hid?den9@127.0.0.1",
		"postgres://u:Hid/den9@127.0.0.1:5432/x",
		"postgres://u:12/Hidden9@127.0.0.1:5432/x",
		"postgres://u:Hid%zzden9@127.0.0.1:5432/x",
		"postgresql://u:Hid@den9@db.example/x?sslmode=require",
	} {
		err := CheckURL(dsn)
		ue, ok := errors.AsType[*URLError](err)
		if !ok || !ue.UsageError() || !strings.Contains(err.Error(), "write # ? % @ / : as %23 %3F %25 %40 %2F %3A") {
			t.Errorf("CheckURL(%q) = %v, want a usage error with the hint", dsn, err)
			continue
		}
		for _, part := range []string{"Secr3t", "Word9", "Hid", "den9", "Hidden9"} {
			if strings.Contains(err.Error(), part) || strings.Contains(Redact(dsn), part) {
				t.Errorf("CheckURL(%q) = %v; Redact = %s: the password shows", dsn, err, Redact(dsn))
			}
		}
		if _, err := Open(context.Background(), dsn, Options{}); err == nil || err.Error() != ue.Error() {
			t.Errorf("Open(%q) = %v, want the refusal %v", dsn, err, ue)
		}
	}
	for _, dsn := range []string{
		"postgres://u:Hid%23den9@127.0.0.1:5432/x?sslmode=disable",
		"postgres://u:Secr3t%40Word9@127.0.0.1/x",
		"postgres://u@db.example/solve",
		"postgresql://db.example/solve?application_name=solve",
		"postgres://u:p@[::1]:5432/solve",
		"postgres://u@db.example/solve?application_name=me%40work",
	} {
		if err := CheckURL(dsn); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", dsn, err)
		}
	}
}

// With a live server and a role whose password holds #: the URL with the
// password unescaped is refused (before, pgx connected while messages
// called the URL one that does not parse); escaped, it connects.
func TestAnUnescapedHashInThePasswordIsRefusedNotConnected(t *testing.T) {
	dsn := pgtest.New(t)
	admin, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), "CREATE ROLE hash_pw LOGIN PASSWORD 'Hid#den9'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE hash_pw") })
	u, _ := url.Parse(dsn)
	raw := strings.Replace(dsn, u.User.String()+"@", "hash_pw:Hid#den9@", 1)
	if _, err := Open(context.Background(), raw, Options{}); err == nil || !strings.Contains(err.Error(), "unescaped # or ?") {
		t.Fatalf("the unescaped password: %v", err)
	}
	u.User = url.UserPassword("hash_pw", "Hid#den9")
	db, err := Open(context.Background(), u.String(), Options{})
	if err != nil {
		t.Fatalf("the escaped password: %v", err)
	}
	db.Close()
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

// A URL that does not parse for another reason than its password (a port
// out of range, an unknown sslmode, a timeout that is no number) says what
// does not parse, without blaming the password or showing it.
func TestAURLThatDoesNotParseSaysWhy(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://me:Secr3t@h:1/db?sslmode=bogus":      "the URL does not parse: failed to configure TLS (sslmode is invalid)",
		"postgres://me:Secr3t@h:99999/db":                "the URL does not parse: invalid port",
		"postgres://me:Secr3t@h/db?connect_timeout=soon": `the URL does not parse: invalid connect_timeout ("soon" is not a whole number)`,
		"postgres://me@h:99999/db":                       "the URL does not parse: invalid port",
	} {
		err := CheckURL(dsn)
		ue, ok := errors.AsType[*URLError](err)
		if !ok || !ue.UsageError() || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "in a password") || strings.Contains(err.Error(), "Secr3t") {
			t.Errorf("CheckURL(%q) = %v, want a usage error ending %q", dsn, err, want)
		}
	}
}
