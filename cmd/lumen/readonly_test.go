//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/rodir"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen"
)

// TestViewsOnAReadOnlyInstance pins that status, memory, values, goals and
// skills work on an instance the process cannot write (as root, the binary
// runs as an unprivileged user) and change nothing in it: with the memory
// index behind the day files, and with no index at all.
func TestViewsOnAReadOnlyInstance(t *testing.T) {
	bin := rodir.Executable(t, lumenBinary(t))
	base := rodir.TempDir(t)
	for _, name := range []string{"indexed", "unindexed"} {
		root := filepath.Join(base, name)
		// the second memory is not indexed
		initWithMemories(t, root, 1, memoryLine{Author: "self", Situation: "the first lesson", Description: "the first lesson"},
			memoryLine{Author: "self", Situation: "the second lesson", Description: "the second lesson"})
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

// TestWriteCommandsOnAReadOnlyInstanceAreRefusedBeforeAnyCall pins that
// every command that writes the instance (chat, run, reflect, audit
// --judge, skills restore, init over it), run by a user who cannot write
// it (as root, the binary runs as an unprivileged user), exits 1 with one
// message naming the directory it cannot write, sends nothing to the
// model, and changes no file: with its index, and as a clone has it (no
// .lumen/, and no data/goals/, which opening a writable one recreates).
func TestWriteCommandsOnAReadOnlyInstanceAreRefusedBeforeAnyCall(t *testing.T) {
	bin := rodir.Executable(t, lumenBinary(t))
	base := rodir.TempDir(t)
	for _, name := range []string{"indexed", "cloned"} {
		root := filepath.Join(base, name)
		initWithMemories(t, root, 1, memoryLine{Author: "external", Situation: "chat", Description: "hello"})
		if name == "cloned" {
			os.RemoveAll(filepath.Join(root, ".lumen"))
			os.RemoveAll(filepath.Join(root, "data", "goals"))
		}
	}
	sc, err := script.Parse([]byte(`{"responses":[{"content":[{"type":"text","text":"{}"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewServer(sc)
	defer fake.Close()
	rodir.Lock(t, base)
	before := rodir.Snapshot(t, base)
	llmFlags := []string{"--provider", "anthropic", "--base-url", fake.URL}
	for _, name := range []string{"indexed", "cloned"} {
		root := filepath.Join(base, name)
		for _, c := range []struct {
			args []string
			want []string // in the one line on stderr, besides the directory
		}{
			{append([]string{"chat"}, llmFlags...), []string{"read-only", "cannot create files in " + root}},
			{append([]string{"run", "--cycles", "1", "--interval", "0"}, llmFlags...), []string{"read-only", "cannot create files in " + root}},
			{append([]string{"reflect"}, llmFlags...), []string{"read-only", "cannot create files in " + root}},
			{append([]string{"audit", "--judge"}, llmFlags...), []string{"read-only", "cannot create files in " + root}},
			{[]string{"skills", "restore", "chat", "0123abcd"}, []string{"read-only", "cannot create files in " + root}},
			{[]string{"init"}, []string{"already holds a lumen instance"}},
		} {
			cmd := rodir.Command(t, bin, append(c.args, "--dir", root)...)
			cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-test")
			cmd.Stdin = strings.NewReader("hello\n")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var exit *exec.ExitError
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			ok := errors.As(err, &exit) && exit.ExitCode() == 1 && out.Len() == 0 && len(lines) == 1 &&
				strings.HasPrefix(lines[0], "lumen: ") && strings.Contains(lines[0], root)
			for _, w := range c.want {
				ok = ok && strings.Contains(lines[0], w)
			}
			if !ok {
				t.Errorf("lumen %v on the read-only %s instance: %v, want exit 1 and one line on stderr naming %s and saying %q\nstdout: %s\nstderr: %s",
					c.args, name, err, root, c.want, out.String(), errb.String())
			}
		}
	}
	if n := len(fake.Received()); n != 0 {
		t.Errorf("the model was sent %d requests", n)
	}
	if after := rodir.Snapshot(t, base); !maps.Equal(before, after) {
		t.Fatalf("the read-only instance changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestViewsLeaveAWritableInstanceUnchanged pins that the views create
// nothing in an instance they could write: no -wal or -shm file beside the
// index they read (SQLite left both behind a read-only connection).
func TestViewsLeaveAWritableInstanceUnchanged(t *testing.T) {
	bin := lumenBinary(t)
	root := filepath.Join(t.TempDir(), "mind")
	initWithMemories(t, root, 1, memoryLine{Author: "self", Situation: "a lesson", Description: "a lesson"})
	if _, err := os.Stat(filepath.Join(root, ".lumen", "index.db")); err != nil {
		t.Fatalf("no index to read: %v", err)
	}
	before := rodir.Snapshot(t, root)
	for _, args := range [][]string{{"status"}, {"memory"}, {"memory", "search", "lesson"}, {"values"}, {"goals"}, {"skills"},
		{"skills", "history", "chat"}, {"audit"}, {"status", "--json"}} {
		if out, err := exec.Command(bin, append(args, "--dir", root)...).CombinedOutput(); err != nil {
			t.Fatalf("lumen %v: %v\n%s", args, err, out)
		}
		if after := rodir.Snapshot(t, root); !maps.Equal(before, after) {
			t.Fatalf("lumen %v changed the instance:\nbefore %v\nafter  %v", args, before, after)
		}
	}
}

// memoryLine is a memory as lumen writes it in its day files
// (docs/lumen.md, Memory).
type memoryLine struct {
	ID          string    `json:"id"`
	Timestamp   time.Time `json:"timestamp"`
	Author      string    `json:"author"`
	Weight      float64   `json:"weight"`
	Situation   string    `json:"situation"`
	Description string    `json:"description"`
}

// initWithMemories makes a lumen instance at root holding mems (weight 0.5,
// a minute apart), the first indexed of them in its memory index and the
// rest only in the day files.
func initWithMemories(t *testing.T, root string, indexed int, mems ...memoryLine) {
	t.Helper()
	ctx := context.Background()
	if _, err := lumen.Init(ctx, root); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(root, "data", "memory", "2026", "2026-02-14.jsonl")
	if err := os.MkdirAll(filepath.Dir(day), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, m := range mems {
		m.ID = fmt.Sprintf("01KHDZ7Y00000000000000000%d", i) // a ULID of 2026-02-14
		m.Timestamp, m.Weight = time.Date(2026, 2, 14, 9, i, 0, 0, time.UTC), 0.5
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(day, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Write(append(line, '\n'))
		if err := errors.Join(err, f.Close()); err != nil {
			t.Fatal(err)
		}
		if i+1 == indexed { // a view of an instance opened for writing indexes what the files hold
			in, err := lumen.Open(root, lumen.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = in.Status(ctx)
			if err := errors.Join(err, in.Close()); err != nil {
				t.Fatal(err)
			}
		}
	}
}
