package memory

import (
	"bytes"
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
// the day files by lines appended is copied into memory and extended
// there, not rebuilt, and the file keeps every byte; one behind by an edit
// is rebuilt in memory.
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
	if fileHash(t, index) == before {
		t.Fatal("an append left the index behind the files")
	}
	before = fileHash(t, index)
	// A line whose writer was killed before it indexed it.
	appendLine(dir, Memory{Timestamp: t0, Author: "self", Weight: 0.5, Description: "third"})
	ro, err := Open(dir, index, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n, err := ro.Count(ctx, Filter{}); err != nil || n != 3 {
		t.Fatalf("an index behind the files: %d memories, %v; want 3", n, err)
	}
	if !ro.InMemory() || ro.rebuilds != 0 {
		t.Fatalf("an index behind the files by an append: in memory %v, %d rebuilds; want it copied and extended", ro.InMemory(), ro.rebuilds)
	}
	if fileHash(t, index) != before {
		t.Fatal("a read-only open changed the index")
	}
	data, _ := os.ReadFile(dayFile(dir))
	os.WriteFile(dayFile(dir), bytes.Replace(data, []byte(`"second"`), []byte(`"SECOND"`), 1), 0o644)
	edited, err := Open(dir, index, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer edited.Close()
	if es, err := edited.List(ctx, Filter{}); err != nil || len(es) != 3 || es[1].Situation != "SECOND" || edited.rebuilds != 1 {
		t.Fatalf("an index behind an edit: %+v, %v, %d rebuilds; want it rebuilt in memory", es, err, edited.rebuilds)
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
