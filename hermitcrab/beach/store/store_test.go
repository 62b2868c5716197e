package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/internal/sqldb"
	isqlite "github.com/llmkernels/kernels/internal/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// both runs a test against a fresh SQLite file and a fresh PostgreSQL
// database.
func both(t *testing.T, fn func(t *testing.T, s *Store, dsn string)) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "beach.db")
			if name == "postgres" {
				dsn = pgtest.New(t)
			}
			s, err := Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if s.Dialect() != name {
				t.Fatalf("dialect %s, want %s", s.Dialect(), name)
			}
			fn(t, s, dsn)
		})
	}
}

var t0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)

func stmt(agent string, n int, at time.Time) Statement {
	return Statement{Agent: agent, Time: at, Nonce: fmt.Sprintf("%032x", n), Envelope: []byte(fmt.Sprintf(`{"agent":%q,"n":%d}`, agent, n))}
}

func TestANonceIsUsedOncePerAgentAcrossKinds(t *testing.T) {
	both(t, func(t *testing.T, s *Store, _ string) {
		ctx := context.Background()
		if err := s.PutMark(ctx, stmt("a", 1, t0), "0123456789abcdef"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutMessage(ctx, stmt("a", 1, t0.Add(time.Second)), "b", "general"); !errors.Is(err, ErrReplay) {
			t.Fatalf("the same nonce as a message: %v, want ErrReplay", err)
		}
		if _, err := s.TakeInbox(ctx, stmt("a", 1, t0), Unread, 10); !errors.Is(err, ErrReplay) {
			t.Fatalf("the same nonce as an inbox read: %v, want ErrReplay", err)
		}
		// Another agent may use the same nonce.
		if _, err := s.PutMessage(ctx, stmt("b", 1, t0), "a", "general"); err != nil {
			t.Fatal(err)
		}
		n, err := s.PruneNonces(ctx, t0.Add(time.Millisecond))
		if err != nil || n != 2 {
			t.Fatalf("prune: %d %v, want 2", n, err)
		}
	})
}

func TestPassportsReplaceOnlyWithNewer(t *testing.T) {
	both(t, func(t *testing.T, s *Store, _ string) {
		ctx := context.Background()
		if _, err := s.Passport(ctx, "a"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing passport: %v", err)
		}
		if err := s.PutPassport(ctx, stmt("a", 1, t0), "first"); err != nil {
			t.Fatal(err)
		}
		if err := s.PutPassport(ctx, stmt("a", 2, t0.Add(-time.Second)), "older"); !errors.Is(err, ErrStale) {
			t.Fatalf("older passport: %v, want ErrStale", err)
		}
		if err := s.PutPassport(ctx, stmt("a", 3, t0.Add(time.Second)), "newer"); err != nil {
			t.Fatal(err)
		}
		if err := s.PutPassport(ctx, stmt("b", 1, t0), "bee"); err != nil {
			t.Fatal(err)
		}
		p, err := s.Passport(ctx, "a")
		if err != nil || !strings.Contains(string(p.Envelope), `"n":3`) {
			t.Fatalf("passport a: %+v %v", p, err)
		}
		list, err := s.Passports(ctx, 10)
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %v %v", list, err)
		}
	})
}

func TestMarksKeepTheLatestPerAgentAndURL(t *testing.T) {
	both(t, func(t *testing.T, s *Store, _ string) {
		ctx := context.Background()
		const u, other = "00000000000000aa", "00000000000000bb"
		for i, m := range []struct {
			agent string
			at    time.Duration
			url   string
		}{{"a", 0, u}, {"a", time.Minute, u}, {"b", 2 * time.Minute, u}, {"c", 0, other}} {
			if err := s.PutMark(ctx, stmt(m.agent, i, t0.Add(m.at)), m.url); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutMark(ctx, stmt("a", 9, t0), u); !errors.Is(err, ErrStale) {
			t.Fatalf("an older mark: %v", err)
		}
		marks, err := s.Marks(ctx, u, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(marks) != 2 || marks[0].Agent != "b" || marks[1].Agent != "a" || !strings.Contains(string(marks[1].Envelope), `"n":1`) {
			t.Fatalf("marks: %+v", marks)
		}
		if one, _ := s.Marks(ctx, u, 1); len(one) != 1 {
			t.Fatalf("limit 1: %d marks", len(one))
		}
	})
}

func TestInboxGivesEachMessageOnceEvenToConcurrentReaders(t *testing.T) {
	both(t, func(t *testing.T, s *Store, _ string) {
		ctx := context.Background()
		const n = 60
		for i := range n {
			if _, err := s.PutMessage(ctx, stmt("sender", i, t0), "me", "general"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.PutMessage(ctx, stmt("sender", n, t0), "someone-else", "general"); err != nil {
			t.Fatal(err)
		}
		if u, err := s.Unread(ctx, "me"); err != nil || u != n {
			t.Fatalf("unread %d %v", u, err)
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for r := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; ; k++ {
					got, err := s.TakeInbox(ctx, stmt("me", 1000+r*100+k, t0), Unread, 7)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for i, m := range got {
						seen[m.ID]++
						if i > 0 && got[i-1].ID >= m.ID {
							t.Error("inbox not oldest first")
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != n {
			t.Fatalf("%d distinct messages taken, want %d", len(seen), n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("message %d taken %d times", id, c)
			}
		}
		// An answer lost on the way: the messages above an id come back,
		// read or not, and only the recipient's.
		again, err := s.TakeInbox(ctx, stmt("me", 5000, t0), 10, 100)
		if err != nil || len(again) != n-10 || again[0].ID != 11 {
			t.Fatalf("after 10: %d messages (first %v), %v; want %d from id 11", len(again), again, err, n-10)
		}
	})
}

func TestSavePoints(t *testing.T) {
	both(t, func(t *testing.T, s *Store, _ string) {
		ctx := context.Background()
		if _, err := s.TakeSavePoint(ctx, stmt("a", 1, t0)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("no save point: %v", err)
		}
		if err := s.PutSavePoint(ctx, stmt("a", 2, t0)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSavePoint(ctx, stmt("a", 3, t0)); !errors.Is(err, ErrStale) {
			t.Fatalf("same time: %v", err)
		}
		sp, err := s.TakeSavePoint(ctx, stmt("a", 4, t0))
		if err != nil || !strings.Contains(string(sp.Envelope), `"n":2`) {
			t.Fatalf("take: %+v %v", sp, err)
		}
	})
}

func TestReopeningKeepsEverythingAndTwoServersCanCreateTheSchemaAtOnce(t *testing.T) {
	both(t, func(t *testing.T, s *Store, dsn string) {
		ctx := context.Background()
		if err := s.PutPassport(ctx, stmt("a", 1, t0), "a"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s2, err := Open(ctx, dsn)
				if err != nil {
					t.Error(err)
					return
				}
				defer s2.Close()
				if _, err := s2.Passport(ctx, "a"); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	})
}

func TestAForeignSQLiteFileIsRefusedUntouched(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE blocks (name TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// A hermitcrab store (application_id HCRB) is refused too.
	hc := filepath.Join(dir, "hermitcrab.db")
	hdb, err := isqlite.Open(context.Background(), hc, &isqlite.Schema{Name: "hermitcrab store", ID: isqlite.HermitcrabID, Steps: []string{`CREATE TABLE blocks (name TEXT)`}})
	if err != nil {
		t.Fatal(err)
	}
	hdb.Close()
	for _, path := range []string{other, hc} {
		before, _ := os.ReadFile(path)
		if _, err := Open(context.Background(), path); !errors.Is(err, isqlite.ErrForeign) {
			t.Fatalf("a foreign SQLite file %s: %v", path, err)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Fatalf("the foreign file %s was changed", path)
		}
	}
	if _, err := Open(context.Background(), "mysql://x"); err == nil {
		t.Fatal("an unknown URL scheme was accepted")
	}
}

func TestANewerSchemaIsRefused(t *testing.T) {
	both(t, func(t *testing.T, s *Store, dsn string) {
		newer := `UPDATE beach_meta SET value = 99 WHERE key = 'schema'`
		if s.Dialect() == "sqlite" {
			newer = `PRAGMA user_version = 99`
		}
		if _, err := s.db.Exec(newer); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(context.Background(), dsn); err == nil || !strings.Contains(err.Error(), "newer hermitcrab") {
			t.Fatalf("schema 99: %v", err)
		}
	})
}

// A beach whose database it cannot write would start, serve reads, and
// answer every write with 500: it is refused at start instead, saying so.
func TestADatabaseTheBeachCannotWriteIsRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "beach.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	readOnly(t, path)
	if s, err := Open(context.Background(), path); err == nil {
		s.Close()
		t.Fatal("a read-only beach database was opened for serving")
	} else if !strings.Contains(err.Error(), "readonly") && !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a read-only beach database: %v (want it to say read-only)", err)
	}
}

// readOnly makes path unwritable even for root (chattr +i), or by mode for
// other users; the test is skipped where neither works.
func readOnly(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			t.Skipf("running as root and chattr +i failed (%v: %s): no way to make a read-only file here", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
	} else if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Skip("the file is still writable")
	}
}

// legacyBeach writes a SQLite beach as hermitcrab wrote them before the
// files were marked (schema 2: beach_meta and every table, WAL, no
// application_id and user_version 0), holding one passport.
func legacyBeach(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{sqldb.SQLite.SQL(step1), step2, `PRAGMA journal_mode=WAL`,
		`INSERT INTO beach_passports (agent, name, time, received, envelope) VALUES ('a', 'alice', '2026-11-03T12:00:00.000000000Z', '2026-11-03T12:00:00.000000000Z', '{}')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// A beach file from before the marker (schema 2, or 1 before the horizon)
// opens: it is marked as a beach and brought to the last step, keeping
// what it holds.
func TestALegacyBeachFileIsAdoptedAndUpgraded(t *testing.T) {
	ctx := context.Background()
	for _, version := range []int{2, 1} {
		t.Run(fmt.Sprint(version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "beach.db")
			legacyBeach(t, path)
			if version == 1 {
				db, _ := sql.Open("sqlite", path)
				for _, q := range []string{`DROP TABLE beach_horizon`, `UPDATE beach_meta SET value = 1 WHERE key = 'schema'`} {
					if _, err := db.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()
			}
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var id, uv, v int
			s.db.QueryRow(`PRAGMA application_id`).Scan(&id)
			s.db.QueryRow(`PRAGMA user_version`).Scan(&uv)
			s.db.QueryRow(`SELECT value FROM beach_meta WHERE key = 'schema'`).Scan(&v)
			if int32(id) != isqlite.BeachID || uv != schemaVersion || v != schemaVersion {
				t.Fatalf("application_id %#x user_version %d beach_meta %d; want BECH, %d, %d", id, uv, v, schemaVersion, schemaVersion)
			}
			if _, err := s.PruneNonces(ctx, t0); err != nil {
				t.Fatalf("pruning (the horizon table): %v", err)
			}
			if p, err := s.Passport(ctx, "a"); err != nil || p.Agent != "a" {
				t.Fatalf("the legacy passport: %+v %v", p, err)
			}
		})
	}
}

// A version 1 PostgreSQL beach (before the horizon) is brought to version
// 2 on open, keeping what it holds.
func TestAVersion1PostgreSQLBeachIsUpgraded(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.New(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutPassport(ctx, stmt("a", 1, t0), "alice"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE beach_horizon`, `UPDATE beach_meta SET value = 1 WHERE key = 'schema'`} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var v int
	if err := s2.db.QueryRow(`SELECT value FROM beach_meta WHERE key = 'schema'`).Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("schema after the upgrade: %d %v", v, err)
	}
	if _, err := s2.PruneNonces(ctx, t0); err != nil {
		t.Fatalf("pruning (the horizon table): %v", err)
	}
	if _, err := s2.Passport(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

// A PostgreSQL password may come in the URL's user part or, as libpq and
// pgx also read it, in its query (?password=, ?sslpassword=): neither may
// reach an error message.
func TestAPasswordInThePostgreSQLURLIsNeverPrinted(t *testing.T) {
	for _, dsn := range []string{
		"postgres://beach:S3cretUser@127.0.0.1:1/beach?sslmode=disable",
		"postgres://beach@127.0.0.1:1/beach?password=S3cretQuery&sslmode=disable",
		"postgresql://beach@127.0.0.1:1/beach?sslmode=disable&sslpassword=S3cretKey",
		"postgres://beach@127.0.0.1:1/beach?password=S3cret%zzBad",
	} {
		_, err := Open(context.Background(), dsn)
		if err == nil {
			t.Fatalf("%s: opened", dsn)
		}
		if strings.Contains(err.Error(), "S3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
		if d := Redact(dsn); strings.Contains(d, "S3cret") || !strings.Contains(d, "127.0.0.1:1") {
			t.Errorf("Redact(%s) = %s", dsn, d)
		}
	}
}
