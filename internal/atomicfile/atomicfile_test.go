package atomicfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteReplacesTheFileAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "values.json")
	for _, content := range []string{"[]", `[{"name":"honesty"}]`} {
		if err := Write(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != content {
			t.Fatalf("content = %q, want %q", got, content)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the file", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "x"), nil, 0o644); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestLockSerialisesReadModifyWrite(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "n")
	os.WriteFile(counter, []byte{0}, 0o644)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				unlock, err := Lock(filepath.Join(dir, "lock"))
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := os.ReadFile(counter)
				Write(counter, []byte{b[0] + 1}, 0o644)
				unlock()
			}
		}()
	}
	wg.Wait()
	if b, _ := os.ReadFile(counter); b[0] != 200 {
		t.Fatalf("counter = %d, want 200: increments were lost", b[0])
	}
}

func TestTryLockFailsWhileHeldAndTakesAFreeLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok, err := TryLock(path); ok || u != nil || err != nil {
		t.Fatalf("TryLock of a held lock: %v %v", ok, err)
	}
	unlock()
	u, ok, err := TryLock(path)
	if !ok || err != nil {
		t.Fatalf("TryLock of a free lock: %v %v", ok, err)
	}
	if _, ok, _ := TryLock(path); ok {
		t.Fatal("a lock TryLock took was taken again")
	}
	u()
}
