//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNotARegularFile pins that a path naming a directory, a FIFO or a
// device is refused at once by both opens, with an error naming it: a
// FIFO used to hang the open forever (waiting for a writer), and /dev/null
// failed with SQLite's "disk I/O error".
func TestNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.db")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.db")
	os.Mkdir(sub, 0o755)
	for path, want := range map[string]string{fifo: "not a regular file", "/dev/null": "not a regular file", sub: "is a directory"} {
		for _, open := range []func(context.Context, string, *Schema) (*sql.DB, error){Open, OpenReadOnly} {
			done := make(chan error, 1)
			go func() { _, err := open(context.Background(), path, testSchema); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s: %v; want an error naming it, %q", path, err, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the open has not returned after 30 s", path)
			}
		}
	}
}
