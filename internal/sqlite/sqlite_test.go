package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testSchema has two steps; the second is an ALTER TABLE, which fails with
// "duplicate column name" when two processes both apply it.
var testSchema = &Schema{
	Name: "test file",
	ID:   0x54455354, // "TEST"
	Steps: []string{
		`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`,
		`ALTER TABLE notes ADD COLUMN author TEXT NOT NULL DEFAULT ''`,
	},
	// A file from before the marker: a notes table without author is
	// version 1, with it version 2.
	Legacy: func(ctx context.Context, q Querier) (int, bool, error) {
		tables, err := Tables(ctx, q)
		if err != nil || !tables["notes"] {
			return 0, false, err
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('notes') WHERE name = 'author'`).Scan(&n); err != nil {
			return 0, false, err
		}
		return 1 + n, true, nil
	},
}

func TestMain(m *testing.M) {
	if mode := os.Getenv("SQLITE_TEST_CHILD"); mode != "" {
		os.Exit(child(mode, os.Getenv("SQLITE_TEST_PATH")))
	}
	os.Exit(m.Run())
}

// child is this test binary run as another process: "create" waits for a
// byte on stdin (so that two children start together), opens the file
// read-write and adds a note; "read" opens it read-only and prints the
// number of notes; "read twice" counts them again after a byte on stdin.
func child(mode, path string) int {
	ctx := context.Background()
	var db *sql.DB
	var err error
	switch mode {
	case "create":
		os.Stdin.Read(make([]byte, 1))
		if db, err = Open(ctx, path, testSchema); err == nil {
			_, err = db.ExecContext(ctx, `INSERT INTO notes (body, author) VALUES ('hello', 'child')`)
		}
	case "read":
		if db, err = OpenReadOnly(ctx, path, testSchema); err == nil {
			var n int
			if err = db.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err == nil {
				fmt.Println(n)
			}
		}
	case "read twice":
		// Counts, waits for a byte on stdin, counts again.
		if db, err = OpenReadOnly(ctx, path, testSchema); err == nil {
			for i := range 2 {
				if i == 1 {
					os.Stdin.Read(make([]byte, 1))
				}
				var n int
				if err = db.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
					break
				}
				fmt.Println(n)
			}
		}
	}
	if db != nil {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func mustOpen(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := Open(context.Background(), path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func countNotes(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestPathsWithURICharacters pins that the DSN escapes the path: a
// directory or file name with '#', '?', '%', spaces or '&' opens exactly
// that file (string concatenation opened "a" for "a#b").
func TestPathsWithURICharacters(t *testing.T) {
	for _, name := range []string{"a#b", "c?d", "e f", "g%41h", "i%", "j&k=l+m;n", "#", "?x=1"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sub := filepath.Join(dir, name)
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(sub, name+".db")
			db := mustOpen(t, path)
			if _, err := db.Exec(`INSERT INTO notes (body) VALUES (?)`, name); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if got := names(t, dir); !slices.Equal(got, []string{name}) {
				t.Fatalf("the parent directory holds %q, want only %q", got, name)
			}
			if got := names(t, sub); !slices.Equal(got, []string{name + ".db"}) {
				t.Fatalf("%s holds %q, want only %q", sub, got, name+".db")
			}
			ro, err := OpenReadOnly(context.Background(), path, testSchema)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			var body string
			if err := ro.QueryRow(`SELECT body FROM notes`).Scan(&body); err != nil || body != name {
				t.Fatalf("read back %q, %v; want %q", body, err, name)
			}
		})
	}
}

// foreign writes a SQLite file as another program would, through the
// driver directly.
func foreign(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestForeignFilesRefusedUnchanged pins that a file which is not ours is
// refused by both opens, with an error naming the path, and that nothing
// in its directory changes: not the file's bytes, and no side file.
func TestForeignFilesRefusedUnchanged(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"other program's SQLite": func(t *testing.T, path string) {
			foreign(t, path, `CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)`, `INSERT INTO users (name) VALUES ('ann')`)
		},
		"other program's SQLite in WAL mode": func(t *testing.T, path string) {
			foreign(t, path, `PRAGMA journal_mode = WAL`, `CREATE TABLE users (id INTEGER PRIMARY KEY)`)
		},
		"another kernel's file": func(t *testing.T, path string) {
			foreign(t, path, `PRAGMA application_id = 1280658766`, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`)
		},
		"an unknown application_id": func(t *testing.T, path string) {
			foreign(t, path, `PRAGMA application_id = 7`)
		},
		"our marker with a negative user_version": func(t *testing.T, path string) {
			// Index -1 of the steps: this panicked.
			foreign(t, path, fmt.Sprintf("PRAGMA application_id = %d", testSchema.ID), `PRAGMA user_version = -1`)
		},
		"empty SQLite with a user_version": func(t *testing.T, path string) {
			foreign(t, path, `PRAGMA user_version = 12`)
		},
		"text file": func(t *testing.T, path string) {
			os.WriteFile(path, []byte("name,score\nann,3\n"), 0o644)
		},
		"short binary file": func(t *testing.T, path string) {
			os.WriteFile(path, []byte("SQLite format 3\x00\x10"), 0o644)
		},
	}
	for name, make := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "other.db")
			make(t, path)
			before := snapshot(t, dir)
			_, err := Open(context.Background(), path, testSchema)
			if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not changed") {
				t.Fatalf("Open: %v; want ErrForeign naming %s", err, path)
			}
			t.Log(err)
			_, err = OpenReadOnly(context.Background(), path, testSchema)
			if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), path) {
				t.Fatalf("OpenReadOnly: %v; want ErrForeign naming %s", err, path)
			}
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Fatalf("the directory changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	for _, n := range names(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		snap[n] = fmt.Sprintf("%x", sha256.Sum256(data))
	}
	return snap
}

// TestMarkerInHeader pins the application_id and user_version a new file
// carries, read from its header without SQLite.
func TestMarkerInHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db := mustOpen(t, path)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := readHeader(path)
	if err != nil || h.appID != testSchema.ID {
		t.Fatalf("header application_id %#x, %v; want %#x", h.appID, err, testSchema.ID)
	}
	data, _ := os.ReadFile(path)
	if v := int(data[63]); v != len(testSchema.Steps) {
		t.Fatalf("header user_version %d, want %d", v, len(testSchema.Steps))
	}
}

// TestEmptyFileIsNew pins that a 0-byte file (touch x.db) is a new
// database, not a foreign file.
func TestEmptyFileIsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db := mustOpen(t, path)
	defer db.Close()
	if n := countNotes(t, db); n != 0 {
		t.Fatalf("%d notes in a new file", n)
	}
}

// TestReadOnlyNeverCreates pins that a read-only open of a missing or
// empty file creates nothing and says so, and that the handle refuses
// writes.
func TestReadOnlyNeverCreates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	_, err := OpenReadOnly(context.Background(), path, testSchema)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("OpenReadOnly of a missing file: %v; want fs.ErrNotExist naming the path", err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("a read-only open left %q", got)
	}
	os.WriteFile(path, nil, 0o644)
	// Empty: as missing for the callers (nothing to read), but not said to
	// be missing.
	if _, err := OpenReadOnly(context.Background(), path, testSchema); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrEmpty) ||
		!strings.Contains(err.Error(), "empty") || strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("OpenReadOnly of an empty file: %v; want ErrEmpty (and fs.ErrNotExist), saying it is empty", err)
	}
	if data, _ := os.ReadFile(path); len(data) != 0 {
		t.Fatal("a read-only open wrote to an empty file")
	}
	os.Remove(path)

	db := mustOpen(t, path)
	db.Close()
	ro, err := OpenReadOnly(context.Background(), path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Exec(`INSERT INTO notes (body) VALUES ('x')`); err == nil {
		t.Fatal("a read-only handle accepted an INSERT")
	}
}

// TestReadOnlyLeavesNoSideFiles pins that a read in a directory the
// process can write leaves no -wal or -shm file behind (a mode=ro
// connection cannot checkpoint, so SQLite kept both), and that a writer
// that came and went during the read still has its commit in the file.
func TestReadOnlyLeavesNoSideFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	db := mustOpen(t, path)
	db.Exec(`INSERT INTO notes (body) VALUES ('a')`)
	db.Close()
	ro, err := OpenReadOnly(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if n := countNotes(t, ro); n != 1 {
		t.Fatalf("read %d notes, want 1", n)
	}
	if _, err := ro.Exec(`INSERT INTO notes (body) VALUES ('x')`); err == nil {
		t.Fatal("a read-only handle accepted an INSERT")
	}
	w := mustOpen(t, path)
	if _, err := w.Exec(`INSERT INTO notes (body) VALUES ('b')`); err != nil {
		t.Fatal(err)
	}
	w.Close() // the reader still has the file open: the WAL stays
	if n := countNotes(t, ro); n != 2 {
		t.Fatalf("read %d notes after the writer's commit, want 2", n)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"x.db"}) {
		t.Fatalf("after a read the directory holds %q, want x.db alone", got)
	}
	ro, err = OpenReadOnly(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n := countNotes(t, ro); n != 2 {
		t.Fatalf("the main file holds %d notes, want 2", n)
	}
}

// TestMigrationSteps pins the scheme: steps are applied in order, one
// transaction each; a failing step leaves the file at the step before it
// and names the step; a file from a newer kernel is refused; a read-only
// open of an older file asks for a write.
func TestMigrationSteps(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	v1 := &Schema{Name: testSchema.Name, ID: testSchema.ID, Steps: testSchema.Steps[:1]}
	db, err := Open(ctx, path, v1)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(`INSERT INTO notes (body) VALUES ('kept')`)
	db.Close()

	if _, err := OpenReadOnly(ctx, path, testSchema); err == nil || !strings.Contains(err.Error(), "older") {
		t.Fatalf("read-only open of a version-1 file by a version-2 reader: %v; want a request to write once", err)
	}
	// A kernel whose read-only commands need only step 1 reads it as it is.
	readsV1 := &Schema{Name: testSchema.Name, ID: testSchema.ID, Steps: testSchema.Steps, ReadOnlyFrom: 1}
	ro, err := OpenReadOnly(ctx, path, readsV1)
	if err != nil {
		t.Fatalf("read-only open with ReadOnlyFrom 1: %v", err)
	}
	var body string
	if err := ro.QueryRow(`SELECT body FROM notes`).Scan(&body); err != nil || body != "kept" {
		t.Fatalf("read %q, %v", body, err)
	}
	ro.Close()

	broken := &Schema{Name: testSchema.Name, ID: testSchema.ID, Steps: append(slices.Clone(testSchema.Steps), `CREATE TABLE notes (x)`)}
	_, err = Open(ctx, path, broken)
	if err == nil || !strings.Contains(err.Error(), "migrate schema 2 → 3") {
		t.Fatalf("a failing step 3: %v; want an error naming it", err)
	}
	db = mustOpen(t, path) // version 2 is what was committed: nothing to do
	var author string
	if err := db.QueryRow(`SELECT author FROM notes WHERE body = 'kept'`).Scan(&author); err != nil {
		t.Fatalf("step 2 was not kept after step 3 failed: %v", err)
	}
	db.Close()

	before := snapshot(t, filepath.Dir(path))
	if _, err := Open(ctx, path, v1); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("a version-2 file opened by a version-1 kernel: %v; want it refused as newer", err)
	}
	if after := snapshot(t, filepath.Dir(path)); !maps.Equal(before, after) {
		t.Fatalf("refusing a newer file changed its directory:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := OpenReadOnly(ctx, path, v1); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("read-only: %v; want it refused as newer", err)
	}
}

// TestLegacyFileAdopted pins that a file written before the marker
// existed is recognised: read-only it opens untouched when it is at the
// latest version, and the first read-write open marks it and applies the
// steps it lacks.
func TestLegacyFileAdopted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "old.db")
	foreign(t, path, `PRAGMA journal_mode = WAL`, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`, `INSERT INTO notes (body) VALUES ('old')`)
	if _, err := OpenReadOnly(ctx, path, testSchema); err == nil || !strings.Contains(err.Error(), "older") {
		t.Fatalf("read-only open of a legacy version-1 file: %v; want a request to write once", err)
	}
	db := mustOpen(t, path)
	if n := countNotes(t, db); n != 1 {
		t.Fatalf("%d notes after adoption, want 1", n)
	}
	if _, err := db.Exec(`INSERT INTO notes (body, author) VALUES ('new', 'me')`); err != nil {
		t.Fatalf("step 2 was not applied to the legacy file: %v", err)
	}
	db.Close()
	if h, _ := readHeader(path); h.appID != testSchema.ID {
		t.Fatalf("the adopted file's application_id is %#x", h.appID)
	}

	// A legacy file already at the latest version reads without a write.
	path2 := filepath.Join(dir, "old2.db")
	foreign(t, path2, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, author TEXT NOT NULL DEFAULT '')`)
	before := snapshot(t, dir)
	ro, err := OpenReadOnly(ctx, path2, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	countNotes(t, ro)
	ro.Close()
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Fatal("a read-only open of a legacy file changed the directory")
	}
}

// TestTwoProcessesCreateAtOnce pins safe concurrent creation: two
// processes open the same new file at the same moment, 20 times, and both
// always succeed (no "database is locked", no "duplicate column name").
func TestTwoProcessesCreateAtOnce(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "new.db")
		var cmds []*childProc
		for range 2 {
			cmds = append(cmds, startChild(t, "create", path))
		}
		for _, c := range cmds {
			c.stdin.Write([]byte{1}) // go
		}
		for i, c := range cmds {
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("round %d, process %d: %v: %s", round, i, err, c.stderr.String())
			}
		}
		db := mustOpen(t, path)
		if n := countNotes(t, db); n != 2 {
			t.Fatalf("round %d: %d notes, want 2", round, n)
		}
		db.Close()
	}
}

type childProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *strings.Builder
}

// startChild runs this test binary as a child process in mode on path.
func startChild(t *testing.T, mode, path string) *childProc {
	t.Helper()
	c := &childProc{cmd: exec.Command(os.Args[0]), stderr: &strings.Builder{}}
	c.cmd.Env = append(os.Environ(), "SQLITE_TEST_CHILD="+mode, "SQLITE_TEST_PATH="+path)
	c.cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill() })
	return c
}

// TestOpenMemory pins that an in-memory database has the schema, is shared
// by the handle's connections, is private to each call and creates no
// file.
func TestOpenMemory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	a, err := OpenMemory(ctx, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Exec(`INSERT INTO notes (body, author) VALUES ('x', 'y')`); err != nil {
		t.Fatal(err)
	}
	c1, _ := a.Conn(ctx)
	c2, _ := a.Conn(ctx)
	for _, c := range []*sql.Conn{c1, c2} {
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("a second connection sees %d notes, %v", n, err)
		}
		c.Close()
	}
	b, err := OpenMemory(ctx, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n := countNotes(t, b); n != 0 {
		t.Fatalf("a second in-memory database sees %d notes of the first", n)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("OpenMemory created %q", got)
	}
}

// TestCopyToMemory pins that a copy in memory holds what the file holds,
// its WAL's commits included (a writer has it open), takes writes, and
// leaves the file as it was.
func TestCopyToMemory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "notes.db")
	db, err := Open(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO notes (body, author) VALUES ('kept', 'a')`); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the commit is not in the WAL (%v): the test does not show a copy reads it", err)
	}
	ro, err := OpenReadOnly(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	files := func() []byte {
		main, _ := os.ReadFile(path)
		wal, _ := os.ReadFile(path + "-wal")
		return append(main, wal...)
	}
	before := files()
	mem, err := CopyToMemory(ctx, ro, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if _, err := mem.Exec(`INSERT INTO notes (body, author) VALUES ('added', 'b')`); err != nil {
		t.Fatal(err)
	}
	c1, _ := mem.Conn(ctx)
	c2, _ := mem.Conn(ctx)
	for _, c := range []*sql.Conn{c1, c2} {
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("the copy holds %d notes, %v; want the file's one and the one added", n, err)
		}
		c.Close()
	}
	if n := countNotes(t, ro); n != 1 {
		t.Fatalf("the file holds %d notes after the copy took a write, want 1", n)
	}
	if !bytes.Equal(before, files()) {
		t.Fatal("copying into memory changed the file or its WAL")
	}
}
