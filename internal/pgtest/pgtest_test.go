//go:build linux

package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestEachTestGetsAFreshDatabase(t *testing.T) {
	ctx := context.Background()
	a, b := New(t), New(t)
	if a == b {
		t.Fatal("two databases share a URL")
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'x'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the second database sees the first one's table (n=%d, %v)", n, err)
	}
	if err := ca.QueryRow(ctx, "SELECT v FROM x").Scan(&n); err != nil || n != 1 {
		t.Fatalf("read back: %d %v", n, err)
	}
}

// Without the binaries a test skips, except in CI, where it fails.
func TestMissingPostgreSQLSkipsOutsideCIAndFailsInCI(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") != "" {
		New(t)
		return
	}
	run := func(ci string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingPostgreSQLSkipsOutsideCIAndFailsInCI$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", "PGTEST_INITDB_GLOB=/nonexistent/*/initdb", "CI="+ci)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "apt-get install postgresql") {
		t.Fatalf("outside CI: %v\n%s", err, out)
	}
	out, err = run("true")
	if err == nil || !strings.Contains(out, "--- FAIL") {
		t.Fatalf("in CI: %v\n%s", err, out)
	}
}

func TestTheClusterRefusesAWrongPassword(t *testing.T) {
	good := New(t)
	cfg, err := pgx.ParseConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = "wrong"
	if c, err := pgx.ConnectConfig(context.Background(), cfg); err == nil {
		c.Close(context.Background())
		t.Fatal("connected with a wrong password")
	}
}
