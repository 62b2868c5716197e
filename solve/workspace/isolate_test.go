package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A copy has every file (modes kept, the kernel's own directory left out);
// what changed in it reads back as files: new and changed with their
// content, binary as base64, deleted marked.
func TestCopyThenDiffReadsBackWhatChanged(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	for p, c := range map[string]string{"a.txt": "a", "sub/b.txt": "b", "gone.txt": "x", ".solve/tools/t/run.sh": "kernel"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := Copy(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 4 || m[".solve/tools/t/run.sh"] != "" {
		t.Errorf("manifest %v: four files, the kernel's directory left out", m)
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh in the copy: %v %v", fi, err)
	}
	if err := Write(dst, []File{{Path: "a.txt", Content: "A"}, {Path: "new/c.txt", Content: "c"}, {Path: "gone.txt", Deleted: true}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "bin"), []byte{0xff, 0x00, 0xfe}, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Diff(dst, m)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path+"="+f.Content+"/"+f.Encoding+map[bool]string{true: "/deleted"}[f.Deleted])
	}
	if strings.Join(got, " ") != "a.txt=A/ bin=/wD+/base64 gone.txt=//deleted new/c.txt=c/" {
		t.Errorf("diff %v", got)
	}
	// Written back, the files make the source equal the copy.
	if err := Write(src, files); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "bin")); string(b) != "\xff\x00\xfe" {
		t.Errorf("bin %q", b)
	}
	if _, err := os.Stat(filepath.Join(src, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("gone.txt: %v", err)
	}
}

// A merge writes an attempt's files only when each is still what the
// attempt found (or already what it writes); anything else is a conflict
// and nothing is written.
func TestMergeRefusesFilesChangedSinceTheAttempt(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "shared.go"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := []File{{Path: "shared.go", Content: "mine"}, {Path: "own.go", Content: "own"}}
	base, err := baseHashes(ws, mine)
	if err != nil || base["own.go"] != "" || base["shared.go"] == "" {
		t.Fatalf("base %v %v", base, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "shared.go"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *ConflictError
	if err := Merge(ws, mine, base); !errors.As(err, &ce) || len(ce.Paths) != 1 || ce.Paths[0] != "shared.go" {
		t.Fatalf("merge over a changed file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "own.go")); err == nil {
		t.Error("a refused merge wrote own.go")
	}
	// Unchanged since: merged; merged again (a resumed step): nothing to do.
	if err := os.WriteFile(filepath.Join(ws, "shared.go"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := Merge(ws, mine, base); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "shared.go")); string(b) != "mine" {
		t.Errorf("shared.go %q", b)
	}
}

// A workspace must exist, be a directory and be writable.
func TestUsableRefusesMissingAndUnwritableDirectories(t *testing.T) {
	dir := t.TempDir()
	if err := Usable(dir); err != nil {
		t.Error(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the check left %d files", len(entries))
	}
	if err := Usable(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "does not exist; create it") {
		t.Errorf("missing: %v", err)
	}
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Usable(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		ro = "/proc/self/fdinfo" // root may write any directory of a writable file system
	}
	if err := Usable(ro); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		t.Errorf("read-only: %v", err)
	}
}

// baseHashes records, for each file an attempt writes, the content the
// workspace held when the attempt was made ("" = no file): what Merge
// requires it still holds.
func baseHashes(dir string, files []File) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range files {
		h, err := Hash(dir, f.Path)
		if err != nil {
			return nil, err
		}
		out[f.Path] = h
	}
	return out, nil
}
