//go:build unix

package sqlite

import (
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
// reads the file read-only and changes nothing there: with no WAL file it
// reads the main file (immutable), and with a writer's WAL present it sees
// the writer's commits.
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
		if !hasWAL(path) {
			t.Fatal("the open writer left no WAL: the case is not set up")
		}
		rodir.Lock(t, dir)
		if got := read(t, path); got != "1" {
			t.Fatalf("read %q notes, want the 1 still in the WAL", got)
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
