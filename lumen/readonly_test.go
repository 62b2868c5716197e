//go:build unix

package lumen

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmkernels/kernels/internal/rodir"
	"github.com/llmkernels/kernels/lumen/memory"
)

func TestAReadOnlyInstanceIsReadableByEveryReadCommand(t *testing.T) {
	in := demoInstance(t)
	if _, err := in.Status(context.Background()); err != nil { // the index is up to date on disk
		t.Fatal(err)
	}
	in.Close()
	// A line whose writer was killed before it indexed it: now it is stale.
	appendUnindexed(t, in.Root, memory.Memory{Timestamp: newClock().now(), Author: memory.External, Weight: 0.8, Situation: "chat",
		Description: "a line the index has not read"})
	// Another user's instance: this test's copy, locked, read by a child
	// process that cannot write it (as root, the child runs as nobody).
	root := filepath.Join(rodir.TempDir(t), "mind")
	if err := copyInstance(in.Root, root); err != nil {
		t.Fatal(err)
	}
	rodir.Lock(t, root)
	before := rodir.Snapshot(t, root)
	bin := rodir.Executable(t, os.Args[0])
	cmd := rodir.Command(t, bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), readOnlyHelperEnv+"="+root, "HOME="+os.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("reading the instance as another user: %v: %s", err, out.String())
	}
	if after := rodir.Snapshot(t, root); !maps.Equal(before, after) {
		t.Fatal("reading the instance changed it")
	}
}
