//go:build unix

package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/rodir"
)

func TestAReadOnlyInstanceIsReadableFreshStaleOrWithoutAnIndex(t *testing.T) {
	root := rodir.TempDir(t)
	dir := filepath.Join(root, "memory")
	index := filepath.Join(root, "derived", "index.db")
	ctx := context.Background()
	s, err := Open(dir, index, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "indexed"})
	s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "indexed too"})
	s.Count(ctx, Filter{})
	s.Close()
	asAnotherUser(t, root, "fresh")
	// A line whose writer was killed before it indexed it.
	appendLine(dir, Memory{Timestamp: t0.Add(time.Minute), Author: Self, Weight: 0.5, Description: "not indexed yet"})
	asAnotherUser(t, root, "stale")
	os.RemoveAll(filepath.Join(root, "derived"))
	asAnotherUser(t, root, "none")
	if _, err := os.Stat(filepath.Join(root, "derived")); !os.IsNotExist(err) {
		t.Error("a read-only open created the index directory")
	}
}

// readOnlyCheck reads the memory under root (memory/, derived/index.db)
// read-only: its index up to date ("fresh": 2 memories, read from the
// file), stale ("stale": 3, one not indexed) or missing ("none": 3).
func readOnlyCheck(root, index string) error {
	ctx := context.Background()
	ro, err := Open(filepath.Join(root, "memory"), filepath.Join(root, "derived", "index.db"), Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer ro.Close()
	want := 3
	if index == "fresh" {
		want = 2
	}
	got, err := ro.List(ctx, Filter{})
	if err != nil || len(got) != want {
		return fmt.Errorf("read-only, index %s: %+v, %v; want %d memories", index, got, err, want)
	}
	if ro.InMemory() != (index != "fresh") {
		return fmt.Errorf("read-only, index %s: in memory = %v", index, ro.InMemory())
	}
	if _, err := ro.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "x"}); err == nil {
		return fmt.Errorf("append to a read-only store succeeded")
	}
	return nil
}

// asAnotherUser runs readOnlyCheck on root, locked, in a child process
// that cannot write it (as root, the child runs as nobody).
func asAnotherUser(t *testing.T, root, index string) {
	t.Helper()
	sub := t.Name() + "/" + index
	t.Run(index, func(t *testing.T) {
		rodir.Lock(t, root)
		cmd := rodir.Command(t, rodir.Executable(t, os.Args[0]), "-test.run=^$")
		cmd.Env = append(os.Environ(), readOnlyHelperEnv+"="+root+","+index)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: reading as another user: %v: %s", sub, err, out)
		}
	})
}
