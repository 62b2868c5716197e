//go:build unix

package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/rodir"
	"github.com/llmkernels/kernels/lumen"
	"github.com/llmkernels/kernels/lumen/memory"
)

// TestViewsOnAReadOnlyInstance pins that status, memory, values, goals and
// skills work on an instance the process cannot write (as root, the binary
// runs as an unprivileged user) and change nothing in it: with the memory
// index behind the day files, and with no index at all.
func TestViewsOnAReadOnlyInstance(t *testing.T) {
	bin := rodir.Executable(t, lumenBinary(t))
	base := rodir.TempDir(t)
	ctx := context.Background()
	for _, name := range []string{"indexed", "unindexed"} {
		root := filepath.Join(base, name)
		if _, err := lumen.Init(ctx, root); err != nil {
			t.Fatal(err)
		}
		in, err := lumen.Open(root, lumen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, what := range []string{"the first lesson", "the second lesson"} {
			if _, err := in.Memory().Append(memory.Memory{Timestamp: time.Date(2026, 2, 14, 9, i, 0, 0, time.UTC), Author: "self", Weight: 0.5, Situation: what, Description: what}); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if err := in.Memory().Sync(ctx); err != nil { // the second memory is not indexed
					t.Fatal(err)
				}
			}
		}
		in.Close()
		if name == "unindexed" {
			os.RemoveAll(filepath.Join(root, ".lumen"))
		}
	}
	rodir.Lock(t, base)
	before := rodir.Snapshot(t, base)
	for _, name := range []string{"indexed", "unindexed"} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"status"}, "self"},
			{[]string{"memory"}, "the second lesson"},
			{[]string{"values"}, "no values yet"},
			{[]string{"goals"}, "no goals match"},
			{[]string{"skills"}, "chat"},
		} {
			cmd := rodir.Command(t, bin, append(c.args, "--dir", filepath.Join(base, name))...)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), c.want) {
				t.Errorf("lumen %v on the read-only %s instance: %v\n%s", c.args, name, err, out)
			}
		}
	}
	if after := rodir.Snapshot(t, base); !maps.Equal(before, after) {
		t.Fatalf("the read-only instance changed:\nbefore %v\nafter  %v", before, after)
	}
}
