//go:build unix

package main_test

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
	"github.com/llmkernels/kernels/internal/rodir"
)

var readCommands = [][]string{{"status"}, {"log"}, {"kg"}, {"artifacts"}, {"resolvers"}, {"hire"}}

// TestReadCommandsNeverCreateKernelDB pins that the read commands in a
// directory without kernel.db say so and create nothing, also for a --db
// path with URI characters (it once created runs/e for runs/e#f/kernel.db).
func TestReadCommandsNeverCreateKernelDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "runs", "e#f"), 0o755)
	for _, args := range readCommands {
		for _, db := range []string{"kernel.db", "runs/e#f/kernel.db"} {
			r := runSolve(t, dir, append(args, "--db", db)...)
			if r.code == 0 || !strings.Contains(r.stderr, "no kernel.db at "+db) {
				t.Errorf("solve %v --db %s: exit %d, stderr %q; want a clear error", args, db, r.code, r.stderr)
			}
		}
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		files = append(files, strings.TrimPrefix(p, dir))
		return nil
	})
	if want := []string{"", "/runs", "/runs/e#f"}; !slicesEqual(files, want) {
		t.Fatalf("the read commands left %q, want only %q", files, want)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// TestReadCommandsOnAReadOnlyDirectory pins that status, log, kg,
// artifacts, resolvers and the hire listing read a run's kernel.db in a directory the
// process cannot write (as root, the binary runs as an unprivileged user)
// and change nothing there.
func TestReadCommandsOnAReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	bin := rodir.Executable(t, solveBin)
	dir := filepath.Join(rodir.TempDir(t), "run")
	os.Mkdir(dir, 0o755)
	sc := writeScript(t, dir, gatingSteps()...)
	if r := runSolve(t, dir, "run", runbookGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h"); r.code != 0 {
		t.Fatalf("solve run: exit %d\n%s", r.code, r.stderr)
	}
	rodir.Lock(t, dir)
	before := rodir.Snapshot(t, dir)
	want := map[string]string{"status": "achieved", "log": "Goal achieved", "kg": "edges:", "artifacts": "artifact_store/", "resolvers": "codex-tools-0", "hire": "no open capability requests"}
	for _, args := range readCommands {
		cmd := rodir.Command(t, bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want[args[0]]) {
			t.Errorf("solve %v in a read-only directory: %v\n%s", args, err, out)
		}
	}
	if after := rodir.Snapshot(t, dir); !maps.Equal(before, after) {
		t.Fatalf("the read-only directory changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestAnotherProgramsDatabaseIsRefusedUnchanged pins that --db naming
// another program's SQLite file is refused by read and write commands
// alike, and the file keeps every byte (it once gained 11 tables).
func TestAnotherProgramsDatabaseIsRefusedUnchanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "other-program.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices (total) VALUES (12.5)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	hash := func() [32]byte {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(data)
	}
	sc := writeScript(t, t.TempDir(), gatingSteps()...)
	before, files := hash(), names(t, dir)
	for _, args := range append(readCommands, []string{"hire", "x", "--decline"}, []string{"run", runbookGoal, "--provider", "script", "--script", sc}) {
		r := runSolve(t, dir, append(args, "--db", "other-program.db")...)
		if r.code == 0 || !strings.Contains(r.stderr, "refused, the file was not changed") {
			t.Errorf("solve %v on another program's database: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if hash() != before || !maps.Equal(names(t, dir), files) {
		t.Fatal("another program's database, or its directory, changed")
	}
}

func names(t *testing.T, dir string) map[string]bool {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range es {
		out[e.Name()] = true
	}
	return out
}

// TestKernelDBFromBeforeTheMarkerIsAdopted pins that a kernel.db written
// by an earlier solve (no application_id, user_version 2) is kept: a
// command that only reads refuses it untouched, saying to run one that
// writes (its schema lacks the reservations), and the first command that
// writes migrates and marks it, after which the read side opens it.
func TestKernelDBFromBeforeTheMarkerIsAdopted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schemaSQL, err := os.ReadFile(filepath.Join("..", "..", "solve", "store", "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "kernel.db")+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{string(schemaSQL), "ALTER TABLE nodes ADD COLUMN invalidated_at TEXT", "PRAGMA user_version = 2"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	before := names(t, dir)
	old, _ := os.ReadFile(filepath.Join(dir, "kernel.db"))
	if r := runSolve(t, dir, "status"); r.code == 0 || !strings.Contains(r.stderr, "written by an older solve (schema 2; this one reads ") || !strings.Contains(r.stderr, "): run a command that writes once") {
		t.Fatalf("solve status on the earlier solve's kernel.db: exit %d: %s", r.code, r.stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "kernel.db")); !bytes.Equal(data, old) {
		t.Fatal("solve status changed the earlier solve's kernel.db")
	}
	if r := runSolve(t, dir, "hire", "x", "--decline"); r.code != 1 || !strings.Contains(r.stderr, `no capability request "x"`) {
		t.Fatalf("solve hire x --decline: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "kernel.db"))
	if string(data[68:72]) != "SOLV" || !maps.Equal(names(t, dir), before) {
		t.Fatalf("after a command that writes: application_id %q, files %v", data[68:72], names(t, dir))
	}
	if r := runSolve(t, dir, "status"); r.code != 0 {
		t.Fatalf("solve status after the migration: exit %d: %s", r.code, r.stderr)
	}
}

// TestWriteCommandsOnAReadOnlyDatabaseSayWhatWorks pins that run and
// resume on a kernel.db this user cannot write (a read-only directory, a
// read-only file, or no file in a read-only directory) stop before any
// call, saying the database is read-only and which commands work on it
// (before: "setting WAL mode: attempt to write a readonly database
// (1544)"), and change nothing.
func TestWriteCommandsOnAReadOnlyDatabaseSayWhatWorks(t *testing.T) {
	t.Parallel()
	bin := rodir.Executable(t, solveBin)
	for _, c := range []struct{ name, db, why string }{
		{"read-only directory", "kernel.db", "this user cannot create files in"},
		{"read-only file", "kernel.db", "this user cannot write the file"},
		{"no file in a read-only directory", "new.db", "the file does not exist, and this user cannot create files in"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(rodir.TempDir(t), "run")
			os.Mkdir(dir, 0o755)
			sc := writeScript(t, dir, gatingSteps()...)
			if r := runSolve(t, dir, "run", runbookGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h", "--no-report"); r.code != 0 { // creates kernel.db
				t.Fatalf("solve run: exit %d\n%s", r.code, r.stderr)
			}
			if err := os.Chmod(filepath.Join(dir, "kernel.db"), 0o444); err != nil {
				t.Fatal(err)
			}
			switch c.name {
			case "read-only file":
				os.Chmod(dir, 0o777)
				t.Cleanup(func() { os.Chmod(dir, 0o755) })
			case "read-only directory":
				rodir.Lock(t, dir) // the file stays writable by its user
				if os.Geteuid() == 0 {
					os.Chown(filepath.Join(dir, "kernel.db"), 65534, 65534)
				}
			default:
				rodir.Lock(t, dir)
			}
			before := rodir.Snapshot(t, dir)
			for _, args := range [][]string{{"run", runbookGoal, "--provider", "script", "--script", sc}, {"resume", "--provider", "script", "--script", sc}} {
				cmd := rodir.Command(t, bin, append(args, "--db", c.db)...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				hint := "(status, log, kg, artifacts, resolvers, the hire listing) work on it"
				if c.db != "kernel.db" {
					hint = "they need a place this user can write"
				}
				if err == nil || !strings.Contains(string(out), "read-only: "+c.why) || !strings.Contains(string(out), hint) || strings.Contains(string(out), "started") {
					t.Errorf("solve %s: %v\n%s", args[0], err, out)
				}
			}
			if after := rodir.Snapshot(t, dir); !maps.Equal(before, after) {
				t.Fatalf("the directory changed:\nbefore %v\nafter  %v", before, after)
			}
			if c.db == "kernel.db" {
				cmd := rodir.Command(t, bin, "status")
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("solve status on the read-only database: %v\n%s", err, out)
				}
			}
		})
	}
}

// TestReadCommandsOnAnEmptyFileSayItIsEmpty pins that status and log on
// an empty --db say it is empty, not that it does not exist (it does),
// and leave it as it is.
func TestReadCommandsOnAnEmptyFileSayItIsEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range readCommands {
		r := runSolve(t, dir, append(args, "--db", "empty.db")...)
		if r.code != 1 || !strings.Contains(r.stderr, "empty.db: the file is empty (0 bytes), not a solve kernel.db") || strings.Contains(r.stderr, "does not exist") {
			t.Errorf("solve %v on an empty file: exit %d, %s", args, r.code, r.stderr)
		}
	}
	if got := names(t, dir); !maps.Equal(got, map[string]bool{"empty.db": true}) {
		t.Errorf("files after: %v", got)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "empty.db")); err != nil || len(data) != 0 {
		t.Errorf("empty.db changed: %d bytes, %v", len(data), err)
	}
}

// TestHireListingOnlyReads pins that `solve hire` without REQUEST only
// reads: on a run waiting for a human in a directory this user cannot
// write, it lists the open request (text, --json, --all) and changes
// nothing (before: refused as read-only, the database was opened for
// writing); and that the answer flags without REQUEST are a usage error,
// exit 2, with nothing created (before: ignored, and the listing created
// kernel.db).
func TestHireListingOnlyReads(t *testing.T) {
	t.Parallel()
	bin := rodir.Executable(t, solveBin)
	dir := filepath.Join(rodir.TempDir(t), "run")
	os.Mkdir(dir, 0o755)
	sc := writeScript(t, dir, pcbSteps()...)
	if r := runSolve(t, dir, "run", pcbGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h"); r.code != cli.ExitWaiting {
		t.Fatalf("solve run: exit %d\n%s", r.code, r.stderr)
	}
	rodir.Lock(t, dir)
	before := rodir.Snapshot(t, dir)
	for _, args := range [][]string{{"hire"}, {"hire", "--json"}, {"hire", "--all"}} {
		cmd := rodir.Command(t, bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "thermal_measurement") {
			t.Errorf("solve %v in a read-only directory: %v\n%s", args, err, out)
		}
	}
	if after := rodir.Snapshot(t, dir); !maps.Equal(before, after) {
		t.Fatalf("the read-only directory changed:\nbefore %v\nafter  %v", before, after)
	}
	empty := t.TempDir()
	for _, flags := range [][]string{{"--decline"}, {"--add-budget", "1"}, {"--add-time", "1h"}, {"--resolver-command", "true"}, {"--label", "rig"}, {"--reason", "no rig"}} {
		r := runSolve(t, empty, append([]string{"hire"}, flags...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "hire "+flags[0]+": the answer flags need a REQUEST id") {
			t.Errorf("solve hire %v without REQUEST: exit %d, %s%s", flags, r.code, r.stdout, r.stderr)
		}
	}
	if got := names(t, empty); len(got) != 0 {
		t.Errorf("the refused answers left %v", got)
	}
}
