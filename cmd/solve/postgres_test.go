package main_test

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/llmkernels/kernels/internal/pgtest"
)

// pgAdmin runs statements as the test cluster's superuser on the database.
func pgAdmin(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// The read commands on PostgreSQL only read: they work for a role that
// may only SELECT (any write, DDL or migration would be refused by the
// server), and on an empty database they say so, create nothing and
// never show the password.
func TestReadCommandsOnPostgresOnlyRead(t *testing.T) {
	t.Parallel()
	dsn := pgtest.New(t)
	dir := t.TempDir()
	empty := []string{"status", "log", "kg", "artifacts", "resolvers", "report", "hire"}
	for _, c := range empty {
		r := runSolve(t, dir, c, "--db", dsn)
		u, _ := url.Parse(dsn)
		pw, _ := u.User.Password()
		if r.code == 0 || !strings.Contains(r.stderr, "no solve kernel in PostgreSQL") || strings.Contains(r.stderr, pw) {
			t.Errorf("solve %s on an empty database: exit %d, %s", c, r.code, r.stderr)
		}
	}
	sc := writeScript(t, dir, gatingSteps()...)
	if r := runSolve(t, dir, "run", runbookGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h", "--db", dsn); r.code != 0 {
		t.Fatalf("solve run: exit %d\n%s", r.code, r.stderr)
	}
	role := "reader_" + strings.TrimPrefix(strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")), "test")
	role = role[:min(len(role), 40)]
	u, _ := url.Parse(dsn)
	db := strings.TrimPrefix(u.Path, "/")
	pgAdmin(t, dsn, "CREATE ROLE "+role+" LOGIN PASSWORD 'reads-only'",
		"GRANT CONNECT ON DATABASE "+db+" TO "+role, "GRANT USAGE ON SCHEMA public TO "+role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO "+role)
	t.Cleanup(func() {
		pgAdmin(t, dsn, "REASSIGN OWNED BY "+role+" TO CURRENT_USER", "DROP OWNED BY "+role, "DROP ROLE "+role)
	})
	u.User = url.UserPassword(role, "reads-only")
	reader := u.String()
	want := map[string]string{"status": "achieved", "log": "Goal achieved", "kg": "edges:", "artifacts": "artifact_blobs/", "resolvers": "codex-tools-0", "report": "report: run-", "hire": "no open capability requests"}
	for _, c := range empty {
		r := runSolve(t, dir, c, "--db", reader)
		if r.code != 0 || !strings.Contains(r.stdout, want[c]) {
			t.Errorf("solve %s as a SELECT-only role: exit %d\n%s\n%s", c, r.code, r.stdout, r.stderr)
		}
	}
	// A writing command as that role is refused by the server.
	if r := runSolve(t, dir, "run", runbookGoal, "--db", reader, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h"); r.code == 0 || !strings.Contains(r.stderr, "permission denied") {
		t.Errorf("run as a SELECT-only role: exit %d\n%s", r.code, r.stderr)
	}
}

// A database holding another program's tables is refused by every
// command and left as it was.
func TestAForeignPostgresDatabaseIsRefusedByTheCLI(t *testing.T) {
	t.Parallel()
	dsn := pgtest.New(t)
	dir := t.TempDir()
	pgAdmin(t, dsn, "CREATE TABLE invoices (id BIGINT PRIMARY KEY)")
	sc := writeScript(t, dir, gatingSteps()...)
	for _, args := range [][]string{{"run", runbookGoal, "--provider", "script", "--script", sc}, {"status"}} {
		r := runSolve(t, dir, append(args, "--db", dsn)...)
		if r.code == 0 || !strings.Contains(r.stderr, "refused, nothing was changed") {
			t.Errorf("solve %s on a foreign database: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil || n != 1 {
		t.Errorf("%d tables after the refusals (%v)", n, err)
	}
}

// solve plan keeps its nodes, constraints and logs in PostgreSQL too.
func TestPlanOnPostgres(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pgDBs.Store(dir, pgtest.New(t))
	t.Cleanup(func() { pgDBs.Delete(dir) })
	abs, err := filepath.Abs(filepath.Join("testdata", "swe_agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r := runSolve(t, dir, "plan", sweGoal, "--provider", "script", "--script", abs, "--out", "plan.json"); r.code != 0 {
		t.Fatalf("solve plan: exit %d\n%s", r.code, r.stderr)
	}
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM constraints"); n == 0 {
		t.Error("no constraints in PostgreSQL")
	}
	if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE node_id IN (SELECT id FROM nodes WHERE parent_id IS NULL)"); n == 0 {
		t.Error("no logs of the plan's root in PostgreSQL")
	}
	if _, err := os.Stat(filepath.Join(dir, "kernel.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("kernel.db was created beside the plan: %v", err)
	}
}
