package sqldb

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/pgdb"
	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/internal/sqlite"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("SQLDB_TEST_FILE"); path != "" {
		os.Exit(child(path, os.Getenv("SQLDB_TEST_CHILD")))
	}
	pgtest.Main(m)
}

// child is this test binary run as another process writing the SQLite
// file at path: "increment" says "ready" on stdout, then adds 1 to the
// counter 100 times, each a read-then-write; "hold" begins a write,
// updates the counter, says "in" and waits to be killed.
func child(path, mode string) int {
	ctx := context.Background()
	sdb, err := sqlite.Open(ctx, path, sqliteSchema)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	db := New(sdb, SQLite, "child")
	fmt.Println("ready")
	for range 100 {
		err = db.Write(ctx, func(tx *sql.Tx) error {
			if err := increment(ctx, tx, func() {}); err != nil || mode != "hold" {
				return err
			}
			fmt.Println("in")
			select {}
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// startChild runs this test binary as a child process in mode on path.
func startChild(t *testing.T, path, mode string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SQLDB_TEST_FILE="+path, "SQLDB_TEST_CHILD="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); line != "ready\n" {
		t.Fatalf("the child did not open the file: %q %v", line, err)
	}
	return cmd, r
}

// counterTable is the table every test writes: one counter row.
const counterTable = `CREATE TABLE counter (id {id}, n INTEGER NOT NULL); INSERT INTO counter (n) VALUES (0)`

var sqliteSchema = &sqlite.Schema{Name: "sqldb test", ID: 0x54455354, Steps: []string{SQLite.SQL(counterTable)}}

// open opens a fresh database of the dialect holding counterTable.
func open(t *testing.T, d *Dialect) *DB {
	t.Helper()
	ctx := context.Background()
	var db *sql.DB
	var err error
	if d == Postgres {
		db, err = pgdb.Open(ctx, pgtest.New(t), pgdb.Options{})
		if err == nil {
			_, err = db.Exec(d.SQL(counterTable))
		}
	} else {
		db, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "test.db"), sqliteSchema)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return New(db, d, "test database")
}

// increment reads the counter, then writes it one higher: a lost update
// unless writers are serialised.
func increment(ctx context.Context, tx *sql.Tx, between func()) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT n FROM counter`).Scan(&n); err != nil {
		return err
	}
	between()
	_, err := tx.ExecContext(ctx, `UPDATE counter SET n = $1`, n+1)
	return err
}

func count(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT n FROM counter`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

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

// The dialect marks are the only per-engine words in a statement.
func TestDialectFillsItsMarks(t *testing.T) {
	q := "CREATE TABLE t (id {id}); SELECT CAST(x AS {float}) FROM t WHERE {noindex}c = ? AND d = '?' ORDER BY {seq}"
	for d, want := range map[*Dialect]string{
		SQLite:   "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT); SELECT CAST(x AS REAL) FROM t WHERE +c = ? AND d = '?' ORDER BY rowid",
		Postgres: "CREATE TABLE t (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY); SELECT CAST(x AS DOUBLE PRECISION) FROM t WHERE c = $1 AND d = '?' ORDER BY seq",
	} {
		for range 2 { // the second time from the cache
			if got := d.SQL(q); got != want {
				t.Errorf("%s: got %q, want %q", d.Name, got, want)
			}
		}
	}
}

// Concurrent read-then-write transactions lose no update and fail none,
// on either engine.
func TestConcurrentWritersAllSucceedAndLoseNothing(t *testing.T) {
	for _, d := range []*Dialect{SQLite, Postgres} {
		t.Run(d.Name, func(t *testing.T) {
			db := open(t, d)
			const writers, each = 8, 10
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for range each {
						if err := db.Write(t.Context(), func(tx *sql.Tx) error { return increment(t.Context(), tx, func() {}) }); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if n := count(t, db); n != writers*each {
				t.Fatalf("counter %d, want %d", n, writers*each)
			}
		})
	}
}

// On PostgreSQL two transactions that both read before either writes
// conflict: the server rolls one back (40001), Write runs it again, and
// both callers see success.
func TestASerializationFailureIsRunAgainUnseen(t *testing.T) {
	db := open(t, Postgres)
	var bothRead sync.WaitGroup
	bothRead.Add(2)
	var runs atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			first := true
			err := db.Write(t.Context(), func(tx *sql.Tx) error {
				runs.Add(1)
				return increment(t.Context(), tx, func() {
					if first {
						first = false
						bothRead.Done()
						bothRead.Wait()
					}
				})
			})
			if err != nil {
				t.Errorf("a write saw the conflict: %v", err)
			}
		})
	}
	wg.Wait()
	if n, r := count(t, db), runs.Load(); n != 2 || r < 3 {
		t.Fatalf("counter %d after %d runs, want 2 after at least 3 (one run again)", n, r)
	}
}

// Two transactions that each update a row, then the other's, deadlock:
// the server rolls one back (40P01), Write runs it again, and both
// callers see success.
func TestADeadlockIsRunAgainUnseen(t *testing.T) {
	db := open(t, Postgres)
	if _, err := db.Exec(`INSERT INTO counter (n) VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	var bothUpdated sync.WaitGroup
	bothUpdated.Add(2)
	var deadlocks atomic.Int32
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			first := true
			err := db.Write(t.Context(), func(tx *sql.Tx) error {
				mine, theirs := i+1, 2-i
				if _, err := tx.ExecContext(t.Context(), `UPDATE counter SET n = n + 1 WHERE id = $1`, mine); err != nil {
					return err
				}
				if first {
					first = false
					bothUpdated.Done()
					bothUpdated.Wait()
				}
				_, err := tx.ExecContext(t.Context(), `UPDATE counter SET n = n + 1 WHERE id = $1`, theirs)
				if e, ok := errors.AsType[interface {
					error
					SQLState() string
				}](err); ok && e.SQLState() == "40P01" {
					deadlocks.Add(1)
				}
				return err
			})
			if err != nil {
				t.Errorf("a write saw the deadlock: %v", err)
			}
		})
	}
	wg.Wait()
	var total int
	if err := db.QueryRow(`SELECT SUM(n) FROM counter`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != 4 || deadlocks.Load() == 0 { // both may be rolled back, at times
		t.Fatalf("total %d after %d deadlocks, want 4 after at least 1", total, deadlocks.Load())
	}
}

// sqlState is an error carrying a SQLSTATE, as the driver's do.
type sqlState string

func (s sqlState) Error() string    { return "SQLSTATE " + string(s) }
func (s sqlState) SQLState() string { return string(s) }

// A conflict that never clears ends after 20 runs, with its error.
func TestAConflictThatPersistsEndsAfterTwentyRuns(t *testing.T) {
	db := open(t, Postgres)
	runs := 0
	err := db.Write(t.Context(), func(*sql.Tx) error {
		runs++
		return fmt.Errorf("update: %w", sqlState("40001"))
	})
	if !errors.Is(err, sqlState("40001")) || runs != 20 {
		t.Fatalf("err %v after %d runs, want the conflict after 20", err, runs)
	}
}

// dbFile is the path of db's SQLite file.
func dbFile(t *testing.T, db *DB) string {
	t.Helper()
	var seq int
	var name, file string
	if err := db.QueryRow(`PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	return file
}

// Processes writing one SQLite file at once (each its own queue) wait
// for each other on the file's lock: no update is lost, none fails.
func TestProcessesWritingOneSQLiteFileLoseNothing(t *testing.T) {
	db := open(t, SQLite)
	file := dbFile(t, db)
	var children []*exec.Cmd
	for range 2 {
		cmd, _ := startChild(t, file, "increment")
		children = append(children, cmd)
	}
	for range 100 {
		if err := db.Write(t.Context(), func(tx *sql.Tx) error { return increment(t.Context(), tx, func() {}) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range children {
		if err := c.Wait(); err != nil {
			t.Fatalf("a child writer: %v", err)
		}
	}
	if n := count(t, db); n != 300 {
		t.Fatalf("counter %d, want 300", n)
	}
}

// A process killed (-9) inside a write keeps nothing of it, and the next
// writer gets the file.
func TestAWriterKilledMidTransactionKeepsNothing(t *testing.T) {
	db := open(t, SQLite)
	cmd, out := startChild(t, dbFile(t, db), "hold")
	line, err := out.ReadString('\n')
	if line != "in\n" {
		t.Fatalf("the child never began its write: %q %v", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := count(t, db); n != 0 {
		t.Fatalf("counter %d after the writer was killed, want 0", n)
	}
	if err := db.Write(t.Context(), func(tx *sql.Tx) error { return increment(t.Context(), tx, func() {}) }); err != nil || count(t, db) != 1 {
		t.Fatalf("the next write: %v, counter %d", err, count(t, db))
	}
}

// An error of fn's own rolls back and is returned as it is, after one run.
func TestFnErrorRollsBackAndIsNotRunAgain(t *testing.T) {
	errMine := errors.New("mine")
	for _, d := range []*Dialect{SQLite, Postgres} {
		t.Run(d.Name, func(t *testing.T) {
			db := open(t, d)
			runs := 0
			err := db.Write(t.Context(), func(tx *sql.Tx) error {
				runs++
				if err := increment(t.Context(), tx, func() {}); err != nil {
					return err
				}
				return errMine
			})
			if err != errMine || runs != 1 || count(t, db) != 0 {
				t.Fatalf("err %v after %d runs, counter %d: want errMine, 1 run, nothing kept", err, runs, count(t, db))
			}
		})
	}
}

// SQLite writers wait in the queue, not in SQLite: a waiting writer holds
// no connection (readers still get one from a small pool), and gives up
// when its context ends, having run nothing.
func TestSQLiteWritersQueueWithoutHoldingConnections(t *testing.T) {
	db := open(t, SQLite)
	db.SetMaxOpenConns(2)
	entered, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- db.Write(t.Context(), func(tx *sql.Tx) error {
			close(entered)
			<-release
			return increment(t.Context(), tx, func() {})
		})
	}()
	<-entered
	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error, 2)
	var ran atomic.Int32
	for range 2 {
		go func() {
			waiting <- db.Write(ctx, func(tx *sql.Tx) error { ran.Add(1); return nil })
		}()
	}
	// A guard against a hang, not a time measured: the read is immediate.
	rctx, rcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer rcancel()
	if err := db.QueryRowContext(rctx, `SELECT n FROM counter`).Scan(new(int)); err != nil {
		t.Fatalf("a read while writers wait: %v", err)
	}
	cancel()
	for range 2 {
		if err := <-waiting; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "test database: wait for the other writers") {
			t.Errorf("a cancelled waiting writer: %v", err)
		}
	}
	close(release)
	if err := <-holder; err != nil || ran.Load() != 0 || count(t, db) != 1 {
		t.Fatalf("holder %v, the cancelled writers ran %d times, counter %d", err, ran.Load(), count(t, db))
	}
}

func TestListScansEveryRowAndNamesTheOperation(t *testing.T) {
	db := open(t, SQLite)
	for i := range 5 {
		if _, err := db.Exec(`INSERT INTO counter (n) VALUES (?)`, i+1); err != nil {
			t.Fatal(err)
		}
	}
	scanN := func(r *sql.Rows) (int, error) {
		var n int
		err := r.Scan(&n)
		return n, err
	}
	ctx := t.Context()
	got, err := List(ctx, db.QueryContext, "list counters", Column[int], `SELECT n FROM counter WHERE n > ? ORDER BY n`, 2)
	if err != nil || len(got) != 3 || got[0] != 3 || got[2] != 5 {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, err := List(ctx, db.QueryContext, "list none", scanN, `SELECT n FROM counter WHERE n > 99`); err != nil || got != nil {
		t.Fatalf("no rows: %v, %v (want nil, nil)", got, err)
	}
	// Enough keeps its row and ends the list.
	total := 0
	got, err = List(ctx, db.QueryContext, "bounded", func(r *sql.Rows) (int, error) {
		n, err := scanN(r)
		if total += n; err == nil && total >= 3 {
			err = Enough
		}
		return n, err
	}, `SELECT n FROM counter ORDER BY n`)
	if err != nil || len(got) != 3 || got[2] != 2 {
		t.Fatalf("bounded list %v, %v: want [0 1 2]", got, err)
	}
	for _, c := range []struct {
		query string
		scan  func(*sql.Rows) (int, error)
	}{
		{`SELECT nothing FROM counter`, scanN},                                                 // the query fails
		{`SELECT 'x' FROM counter`, scanN},                                                     // a row does not scan
		{`SELECT n FROM counter`, func(*sql.Rows) (int, error) { return 0, errors.New("no") }}, // scan's own error
	} {
		if _, err := List(ctx, db.QueryContext, "list counters", c.scan, c.query); err == nil || !strings.HasPrefix(err.Error(), "list counters: ") {
			t.Errorf("%s: %v, want an error naming the operation", c.query, err)
		}
	}
}

// A write that cannot begin says which database.
func TestWriteErrorsNameTheDatabase(t *testing.T) {
	db := open(t, SQLite)
	db.Close()
	err := db.Write(t.Context(), func(*sql.Tx) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "test database: begin transaction: ") {
		t.Fatalf("got %v", err)
	}
}
