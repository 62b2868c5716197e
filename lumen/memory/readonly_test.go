package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestReadOnlyIndex pins the read-only index: a missing one is built in
// memory and nothing is created; a current one is read as it is; one behind
// the day files is rebuilt in memory, and the file keeps every byte.
func TestReadOnlyIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	index := filepath.Join(t.TempDir(), "derived", "index.db")
	add := func(s *Store, what string) {
		t.Helper()
		if _, err := s.Append(Memory{Timestamp: t0, Author: "self", Weight: 0.5, Situation: what, Description: what}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(opts Options) int {
		t.Helper()
		s, err := Open(dir, index, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n, err := s.Count(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	rw, err := Open(dir, index, Options{})
	if err != nil {
		t.Fatal(err)
	}
	add(rw, "first")
	os.RemoveAll(filepath.Dir(index))
	if n := count(Options{ReadOnly: true}); n != 1 {
		t.Fatalf("no index: %d memories read, want 1", n)
	}
	if _, err := os.Stat(filepath.Dir(index)); !os.IsNotExist(err) {
		t.Fatalf("a read-only open created the index directory (%v)", err)
	}
	rw.Close()

	if n := count(Options{}); n != 1 {
		t.Fatalf("%d memories, want 1", n)
	}
	before := fileHash(t, index)
	if n := count(Options{ReadOnly: true}); n != 1 {
		t.Fatalf("a current index: %d memories, want 1", n)
	}
	s, _ := Open(dir, index, Options{})
	add(s, "second")
	s.Close()
	if n := count(Options{ReadOnly: true}); n != 2 {
		t.Fatalf("an index behind the files: %d memories, want 2", n)
	}
	if fileHash(t, index) != before {
		t.Fatal("a read-only open changed the index")
	}
}

// TestIndexFromBeforeTheMarker pins that an index from before the marker
// (meta 'schema' 3) is adopted, and one of an older layout replaced.
func TestIndexFromBeforeTheMarker(t *testing.T) {
	ctx := context.Background()
	for layout, legacy := range map[string]string{
		"3": schema.Steps[0] + `; INSERT INTO meta VALUES ('schema', '3')`,
		"2": `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema', '2');
			CREATE TABLE memories (seq INTEGER PRIMARY KEY, old TEXT)`,
	} {
		dir := t.TempDir()
		index := filepath.Join(t.TempDir(), "index.db")
		db, err := sql.Open("sqlite", "file:"+index)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(legacy); err != nil {
			t.Fatal(err)
		}
		db.Close()
		s, err := Open(dir, index, Options{})
		if err != nil {
			t.Fatalf("layout %s: %v", layout, err)
		}
		if _, err := s.Append(Memory{Timestamp: t0, Author: "self", Weight: 0.5, Situation: "s", Description: "d"}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Count(ctx, Filter{}); err != nil || n != 1 {
			t.Fatalf("layout %s: %d memories, %v", layout, n, err)
		}
		s.Close()
	}
}
