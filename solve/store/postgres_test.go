package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/internal/sqlite"
)

// columns lists the store's tables and their columns, as the engine
// reports them: the spec's tables on both engines (PostgreSQL's own two
// tables and its seq column left out).
func columns(t *testing.T, st *Store) map[string][]string {
	t.Helper()
	q := `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'`
	if st.Dialect() == "postgres" {
		q = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()
			AND table_name NOT IN ('solve_schema', 'artifact_blobs') AND column_name != 'seq'`
	}
	rows, err := st.db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], col)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, cols := range out {
		slices.Sort(cols)
	}
	return out
}

// PostgreSQL's schema is derived from schema.sql and the migrations: both
// engines have the same tables with the same columns.
func TestBothEnginesHaveTheSameTablesAndColumns(t *testing.T) {
	lite, pg := columns(t, openAt(t, "sqlite")), columns(t, openAt(t, "postgres"))
	if len(lite) < 13 {
		t.Fatalf("SQLite has %d tables: %v", len(lite), lite)
	}
	for table, cols := range lite {
		if !slices.Equal(cols, pg[table]) {
			t.Errorf("table %s: SQLite %v, PostgreSQL %v", table, cols, pg[table])
		}
	}
	for table := range pg {
		if lite[table] == nil {
			t.Errorf("table %s only in PostgreSQL", table)
		}
	}
}

// Money and time are 8-byte floats on PostgreSQL too (its REAL is 4
// bytes: $0.1 would read back as 0.10000000149).
func TestPostgresKeepsMoneyExact(t *testing.T) {
	st := openAt(t, "postgres")
	ctx := context.Background()
	id := node(t, st, NewNode{})
	if err := st.WriteLedger(ctx, LedgerEntry{Node: id, Event: Allocate, Amount: 0.1, Time: 1e9 + 0.5}); err != nil {
		t.Fatal(err)
	}
	b, err := st.Balance(ctx, id)
	if err != nil || b.Allocated != 0.1 || b.TimeAllocated != 1e9+0.5 {
		t.Errorf("balance %+v %v", b, err)
	}
}

// pgTables lists the tables of a PostgreSQL database's current schema.
func pgTables(t *testing.T, dsn string) []string {
	t.Helper()
	db, err := pgdb.Open(context.Background(), dsn, pgdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema() ORDER BY tablename")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func pgExec(t *testing.T, dsn, q string) {
	t.Helper()
	db, err := pgdb.Open(context.Background(), dsn, pgdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}

// A database with other tables and no marker, or another marker, is
// another program's: refused, for writing and for reading, and left as
// it was.
func TestAForeignPostgresDatabaseIsRefusedUntouched(t *testing.T) {
	ctx := context.Background()
	for name, setup := range map[string]string{
		"other tables":  "CREATE TABLE invoices (id BIGINT PRIMARY KEY, total DOUBLE PRECISION); INSERT INTO invoices VALUES (1, 12.5)",
		"spec names":    "CREATE TABLE nodes (id TEXT PRIMARY KEY)",
		"other marker":  "CREATE TABLE solve_schema (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE, application TEXT NOT NULL, version INTEGER NOT NULL); INSERT INTO solve_schema (application, version) VALUES ('payroll', 1)",
		"broken marker": "CREATE TABLE solve_schema (x TEXT)",
	} {
		t.Run(name, func(t *testing.T) {
			dsn := pgtest.New(t)
			pgExec(t, dsn, setup)
			before := pgTables(t, dsn)
			for _, open := range []func(context.Context, string) (*Store, error){Open, OpenReadOnly} {
				st, err := open(ctx, dsn)
				if err == nil {
					st.Close()
				}
				if !errors.Is(err, sqlite.ErrForeign) || !strings.Contains(err.Error(), "refused, nothing was changed") {
					t.Errorf("opened: %v", err)
				}
			}
			if after := pgTables(t, dsn); !slices.Equal(before, after) {
				t.Errorf("tables %v became %v", before, after)
			}
		})
	}
}

// A database a newer solve migrated further is refused, not misread.
func TestANewerPostgresSchemaIsRefused(t *testing.T) {
	dsn := pgtest.New(t)
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	pgExec(t, dsn, "UPDATE solve_schema SET version = 99")
	for _, open := range []func(context.Context, string) (*Store, error){Open, OpenReadOnly} {
		if _, err := open(context.Background(), dsn); err == nil || !strings.Contains(err.Error(), "newer solve") {
			t.Errorf("a newer schema: %v", err)
		}
	}
}

// A database at an earlier step is brought up to date; a read-only
// opening refuses it rather than migrating.
func TestAnOlderPostgresSchemaIsMigrated(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.New(t)
	steps := pgSteps()
	pgExec(t, dsn, "CREATE TABLE solve_schema (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row), application TEXT NOT NULL, version INTEGER NOT NULL); INSERT INTO solve_schema (application, version) VALUES ('"+pgMarker+"', 2);"+
		steps[0]+";"+steps[1]+";INSERT INTO nodes (id, root_id, goal_description, goal_summary, goal_modality, tau_local, tau_global) VALUES ('n', 'n', 'g', 'g', 'text', 0.5, 0.5)")
	if _, err := OpenReadOnly(ctx, dsn); err == nil || !strings.Contains(err.Error(), "older solve") {
		t.Errorf("read-only on an older schema: %v", err)
	}
	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Node(ctx, "n")
	if err != nil || n.BudgetReserved != 0 {
		t.Fatalf("the node after migrating: %+v %v", n, err)
	}
	var v int
	if err := st.db.QueryRow("SELECT version FROM solve_schema").Scan(&v); err != nil || v != len(schema.Steps) {
		t.Errorf("version %d %v", v, err)
	}
}

// Connecting with a wrong password fails with an error that names the
// database without the password, wherever in the URL it was given.
func TestAWrongPasswordIsNeverInTheError(t *testing.T) {
	dsn := pgtest.New(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-Wrong-pass"
	inUser := *u
	inUser.User = url.UserPassword(u.User.Username(), secret)
	inQuery := *u
	inQuery.User = url.User(u.User.Username())
	inQuery.RawQuery += "&password=" + secret
	for _, bad := range []string{inUser.String(), inQuery.String(), strings.Replace(inUser.String(), "sslmode=disable", "sslmode=nonsense", 1)} {
		for _, open := range []func(context.Context, string) (*Store, error){Open, OpenReadOnly} {
			_, err := open(context.Background(), bad)
			if err == nil {
				t.Fatalf("opened %s", bad)
			}
			if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "open solve kernel") {
				t.Errorf("the error: %v", err)
			}
		}
	}
}

// A read-only store writes nothing: an empty database is reported missing
// (no table is created), and a write through it fails in the server.
func TestReadOnlyPostgresWritesNothing(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.New(t)
	if _, err := OpenReadOnly(ctx, dsn); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an empty database, read-only: %v", err)
	}
	if tables := pgTables(t, dsn); len(tables) != 0 {
		t.Errorf("a read-only opening created %v", tables)
	}
	w := openAtURL(t, dsn)
	id := node(t, w, NewNode{})
	ro, err := OpenReadOnly(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n, err := ro.Node(ctx, id); err != nil || n.ID != id {
		t.Errorf("read %v %v", n, err)
	}
	if err := ro.Write(ctx, func(tx *Tx) error { return tx.Transition(ctx, id, StatusPending, StatusIdentifying) }); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("a write through a read-only store: %v", err)
	}
	if _, err := ro.InsertNode(ctx, NewNode{Goal: "g", Summary: "g"}); err == nil {
		t.Error("an insert outside a transaction went through")
	}
}

func openAtURL(t *testing.T, dsn string) *Store {
	t.Helper()
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Many processes (a store each, with its own connections) reserving
// against one node at once never hold more than the node and its parent
// have: every grant is covered, the ledger and the caches agree, and the
// budget is used up (no reservation was refused while money was left).
func TestConcurrentReservationsNeverOverdraw(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			dsn := filepath.Join(t.TempDir(), "kernel.db")
			if d == "postgres" {
				dsn = pgtest.New(t)
			}
			first := openAtURL(t, dsn)
			root, child := tree(t, first) // root $1 / 100 s, child $0.5 / 50 s of it
			const procs, each, cost = 8, 12, 0.03
			var mu sync.Mutex
			var granted []*Reservation
			var wg sync.WaitGroup
			errs := make(chan error, procs*each)
			for p := range procs {
				st := first
				if p > 0 {
					st = openAtURL(t, dsn)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						r, err := st.Reserve(ctx, Hold{Node: child, Parent: root, Root: root, Resolver: "r", Op: "op", Owner: fmt.Sprint(p), Cost: cost, Time: 0.5})
						var denied *DeniedError
						switch {
						case errors.As(err, &denied):
						case err != nil:
							errs <- err
						default:
							mu.Lock()
							granted = append(granted, r)
							mu.Unlock()
							// Half the calls settle at once, for less than held.
							if i%2 == 0 {
								if _, err := st.Settle(ctx, Settlement{Reservation: r.ID, Cost: cost / 2, Time: 0.1, LogSummary: "r op"}); err != nil {
									errs <- err
								}
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			held := 0.0
			for _, r := range granted {
				held += r.Cost
			}
			cb, _ := first.Balance(ctx, child)
			rb, _ := first.Balance(ctx, root)
			n, _ := first.Node(ctx, child)
			rn, _ := first.Node(ctx, root)
			t.Logf("%d reservations granted, $%.2f held; child %+v; root %+v", len(granted), held, cb, rb)
			if cb.Spent+cb.Reserved > cb.Allocated+1e-9 || rb.Spent+rb.Reserved > rb.Allocated+1e-9 || rb.Allocated > 1+1e-9 {
				t.Errorf("overdrawn: child %+v, root %+v", cb, rb)
			}
			if math.Abs(n.BudgetSpent-cb.Spent) > 1e-9 || math.Abs(n.BudgetReserved-cb.Reserved) > 1e-9 || math.Abs(rn.BudgetSpent-rb.Spent) > 1e-9 {
				t.Errorf("the caches left the ledger: child %+v / %+v, root %+v / %+v", n, cb, rn, rb)
			}
			// Settled calls freed part of their hold, so more than $1 / $0.03
			// reservations may be granted; a refusal means neither the child
			// nor the root could cover one more.
			if left := max(cb.RemainingCost(), rb.RemainingCost()); left >= cost-1e-9 && len(granted) < procs*each {
				t.Errorf("$%.4f left, yet %d of %d reservations were refused", left, procs*each-len(granted), procs*each)
			}
			if len(granted) == procs*each {
				t.Errorf("all %d reservations were granted: the test never ran out of money", len(granted))
			}
		})
	}
}

// Processes opening a new database at once each find the tables made
// once (the advisory lock serialises the migration).
func TestConcurrentFirstOpensOfAPostgresDatabase(t *testing.T) {
	dsn := pgtest.New(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := Open(context.Background(), dsn)
			if err == nil {
				_, err = st.InsertNode(context.Background(), NewNode{Goal: "g", Summary: "g"})
				err = errors.Join(err, st.Close())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	st := openAtURL(t, dsn)
	var rows, v, nodes int
	if err := st.db.QueryRow("SELECT COUNT(*), MAX(version), (SELECT COUNT(*) FROM nodes) FROM solve_schema").Scan(&rows, &v, &nodes); err != nil || rows != 1 || v != len(schema.Steps) || nodes != 6 {
		t.Errorf("solve_schema: %d rows, version %d; %d nodes (%v)", rows, v, nodes, err)
	}
}
