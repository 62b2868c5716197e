package main_test

import (
	"database/sql"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx", to check what the kernel wrote

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/internal/sqldb"
)

// The loop's end-to-end tests run on both stores: eachStore runs a test
// body once on kernel.db (the default) and once on a fresh PostgreSQL
// database (internal/pgtest), passed to every solve command the body runs
// in its directory as --db.

// pgDBs maps a test directory to the PostgreSQL URL its commands use.
var pgDBs sync.Map

// eachStore runs f as subtests "sqlite" and "postgres", each in a fresh
// directory.
func eachStore(t *testing.T, f func(t *testing.T, dir string)) {
	t.Helper()
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			dir := t.TempDir()
			if d == "postgres" {
				pgDBs.Store(dir, pgtest.New(t))
				t.Cleanup(func() { pgDBs.Delete(dir) })
			}
			f(t, dir)
		})
	}
}

// dbOf is the --db of dir's commands: the PostgreSQL URL eachStore gave
// it, else dir/kernel.db.
func dbOf(dir string) string {
	if u, ok := pgDBs.Load(dir); ok {
		return u.(string)
	}
	return filepath.Join(dir, "kernel.db")
}

// dbCommands are the commands that take --db.
var dbCommands = []string{"plan", "eval", "run", "resume", "status", "log", "report", "hire", "kg", "artifacts", "resolvers", "requests", "invariants"}

// solveCommand is the binary on args in dir, given dir's PostgreSQL
// database when it has one.
func solveCommand(dir string, args ...string) *exec.Cmd {
	if u, ok := pgDBs.Load(dir); ok && len(args) > 0 && slices.Contains(dbCommands, args[0]) {
		args = append(slices.Clip(args), "--db", u.(string))
	}
	cmd := exec.Command(solveBin, args...)
	cmd.Dir = dir
	return cmd
}

// testDB reads what the kernel wrote, as a user with sqlite3 or psql
// would. Queries are written for SQLite; on PostgreSQL rowid is the seq
// column and placeholders are numbered.
type testDB struct {
	*sql.DB
	pg bool
}

func openDB(t *testing.T, dir string) *testDB {
	t.Helper()
	driver, db := "sqlite", dbOf(dir)
	if pgdb.IsURL(db) {
		driver = "pgx"
	}
	sdb, err := sql.Open(driver, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close() })
	return &testDB{DB: sdb, pg: driver == "pgx"}
}

func (d *testDB) fix(q string) string {
	if !d.pg {
		return q
	}
	return sqldb.Numbered(strings.ReplaceAll(q, "rowid", "seq"))
}

func (d *testDB) Query(q string, args ...any) (*sql.Rows, error) {
	return d.DB.Query(d.fix(q), args...)
}

func (d *testDB) QueryRow(q string, args ...any) *sql.Row { return d.DB.QueryRow(d.fix(q), args...) }

func (d *testDB) Exec(q string, args ...any) (sql.Result, error) { return d.DB.Exec(d.fix(q), args...) }

// likeDir is a fresh directory on the same store as dir: a new PostgreSQL
// database when dir has one.
func likeDir(t *testing.T, dir string) string {
	t.Helper()
	d := t.TempDir()
	if _, ok := pgDBs.Load(dir); ok {
		pgDBs.Store(d, pgtest.New(t))
		t.Cleanup(func() { pgDBs.Delete(d) })
	}
	return d
}
