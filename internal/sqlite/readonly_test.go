//go:build unix

package sqlite

import (
	"bufio"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/rodir"
)

// TestReadOnlyDirectory pins that a process that cannot write the
// directory (chmod -w; as root the child runs as an unprivileged user)
// reads the file read-only and changes nothing there: with no WAL in use
// it reads the main file (immutable), and while a writer has the file open
// it reads through the writer's WAL and sees its commits.
func TestReadOnlyDirectory(t *testing.T) {
	bin := rodir.Executable(t, os.Args[0])
	read := func(t *testing.T, path string) string {
		t.Helper()
		cmd := rodir.Command(t, bin)
		cmd.Env = append(os.Environ(), "SQLITE_TEST_CHILD=read", "SQLITE_TEST_PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("read-only child: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("closed cleanly", func(t *testing.T) {
		dir := filepath.Join(rodir.TempDir(t), "data")
		os.Mkdir(dir, 0o755)
		path := filepath.Join(dir, "x.db")
		db := mustOpen(t, path)
		db.Exec(`INSERT INTO notes (body) VALUES ('a'), ('b')`)
		db.Close()
		rodir.Lock(t, dir)
		before := rodir.Snapshot(t, dir)
		if got := read(t, path); got != "2" {
			t.Fatalf("read %q notes, want 2", got)
		}
		if after := rodir.Snapshot(t, dir); !maps.Equal(before, after) {
			t.Fatalf("the read-only directory changed:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("a writer's WAL present", func(t *testing.T) {
		dir := filepath.Join(rodir.TempDir(t), "data")
		os.Mkdir(dir, 0o755)
		path := filepath.Join(dir, "x.db")
		db := mustOpen(t, path)
		t.Cleanup(func() { db.Close() }) // after Lock's cleanup gives write permission back
		if _, err := db.Exec(`INSERT INTO notes (body) VALUES ('in the WAL')`); err != nil {
			t.Fatal(err)
		}
		if !walInUse(path) {
			t.Fatal("the open writer left no WAL: the case is not set up")
		}
		rodir.Lock(t, dir)
		if got := read(t, path); got != "1" {
			t.Fatalf("read %q notes, want the 1 still in the WAL", got)
		}
	})

	t.Run("a writer open with an empty WAL", func(t *testing.T) {
		// A writer that has the file open but whose WAL is empty (it has
		// not written since its last checkpoint) writes there next: a
		// reader must read through the WAL (mode=ro), not the main file
		// alone (immutable), which the writer's next checkpoint rewrites
		// under it and whose later commits it never sees.
		dir := filepath.Join(rodir.TempDir(t), "data")
		os.Mkdir(dir, 0o755)
		path := filepath.Join(dir, "x.db")
		db := mustOpen(t, path)
		t.Cleanup(func() { db.Close() })
		if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path + "-wal"); err != nil || st.Size() != 0 {
			t.Fatalf("the WAL is not there and empty (%v): the case is not set up", err)
		}
		rodir.Lock(t, dir)
		cmd := rodir.Command(t, bin)
		cmd.Env = append(os.Environ(), "SQLITE_TEST_CHILD=read twice", "SQLITE_TEST_PATH="+path)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || lines.Text() != "0" {
			cmd.Process.Kill()
			t.Fatalf("first count %q, %s", lines.Text(), stderr.String())
		}
		if _, err := db.Exec(`INSERT INTO notes (body) VALUES ('committed meanwhile')`); err != nil {
			t.Fatal(err)
		}
		stdin.Write([]byte{1})
		if !lines.Scan() || lines.Text() != "1" {
			cmd.Process.Kill()
			t.Fatalf("second count %q, want 1: the reader did not see the writer's commit (%s)", lines.Text(), stderr.String())
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("reader: %v: %s", err, stderr.String())
		}
	})

	t.Run("an empty side file left by a crash", func(t *testing.T) {
		// A crash between the two deletions of a clean close leaves an
		// empty -wal or -shm alone; the main file holds every commit.
		for _, side := range []string{"-wal", "-shm"} {
			dir := filepath.Join(rodir.TempDir(t), "data")
			os.Mkdir(dir, 0o755)
			path := filepath.Join(dir, "x.db")
			db := mustOpen(t, path)
			db.Exec(`INSERT INTO notes (body) VALUES ('a')`)
			db.Close()
			if err := os.WriteFile(path+side, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			rodir.Lock(t, dir)
			if got := read(t, path); got != "1" {
				t.Fatalf("with an empty %s alone: read %q notes, want 1", side, got)
			}
		}
	})

	t.Run("missing file", func(t *testing.T) {
		dir := rodir.TempDir(t)
		rodir.Lock(t, dir)
		cmd := rodir.Command(t, bin)
		cmd.Env = append(os.Environ(), "SQLITE_TEST_CHILD=read", "SQLITE_TEST_PATH="+filepath.Join(dir, "x.db"))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "nothing has been written") {
			t.Fatalf("read-only open of a missing file: %v: %s", err, out)
		}
	})
	_ = context.Background
}
