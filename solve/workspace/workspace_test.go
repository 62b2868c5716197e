package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/proc"
)

// A path is taken inside the workspace whatever it says (.. and a
// leading / cannot leave it); a path naming the workspace itself is refused.
func TestWriteKeepsEveryPathInsideTheDirectory(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ws")
	for _, p := range []string{"", "/", ".", "a/.."} {
		if err := Write(dir, []File{{Path: p, Content: "x"}}); err == nil || !strings.Contains(err.Error(), "leaves the workspace") {
			t.Errorf("path %q: %v", p, err)
		}
	}
	if err := Write(dir, []File{{Path: "../escape.txt", Content: "1"}, {Path: "a/../../../escape2.txt", Content: "2"}, {Path: "/sub/ok.txt", Content: "ok"}}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"escape.txt": "1", "escape2.txt": "2", "sub/ok.txt": "ok"} {
		if data, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(data) != want {
			t.Errorf("%s = %q %v", p, data, err)
		}
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("%d entries beside the workspace, want none but it", len(entries)-1)
	}
}

func TestRunReportsExitOutputAndEnvironment(t *testing.T) {
	dir := t.TempDir()
	r := Run(context.Background(), dir, `echo "$GREETING from $(pwd)"; exit 3`, []string{"GREETING=hello"}, Sandbox{})
	if r.Passed || r.ExitCode != 3 || !strings.Contains(r.Output, "hello from "+dir) {
		t.Errorf("result %+v", r)
	}
	if r := Run(context.Background(), dir, "true", nil, Sandbox{}); !r.Passed || r.ExitCode != 0 {
		t.Errorf("true: %+v", r)
	}
}

func TestRunCapsOutput(t *testing.T) {
	r := Run(context.Background(), t.TempDir(), "head -c 100000 /dev/zero | tr '\\0' x", nil, Sandbox{})
	if len(r.Output) > OutputCap+100 || !strings.Contains(r.Output, "[output cut: 83616 more bytes]") {
		t.Errorf("output of %d bytes ends %q", len(r.Output), r.Output[len(r.Output)-40:])
	}
}

// Cancelling the context kills the command's whole process group, a
// background child included, at once.
func TestRunKillsTheProcessGroupOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result)
	began := time.Now()
	go func() { done <- Run(ctx, t.TempDir(), "sleep 60 & sleep 60; echo survived", nil, Sandbox{}) }()
	time.AfterFunc(200*time.Millisecond, cancel)
	select {
	case r := <-done:
		if r.Passed || strings.Contains(r.Output, "survived") {
			t.Errorf("result %+v", r)
		}
		if time.Since(began) > 30*time.Second {
			t.Errorf("took %s to stop", time.Since(began))
		}
	case <-time.After(50 * time.Second):
		t.Fatal("the command outlived its cancelled context")
	}
}

// A path through a symbolic link that points out of the workspace is
// refused, for writing, deleting and reading alike, and nothing outside
// changes; a link that stays inside is followed, and a link itself may be
// replaced by a file (that writes the link's name, not its target).
func TestAPathThroughALinkOutOfTheWorkspaceIsRefused(t *testing.T) {
	parent := t.TempDir()
	dir, outside := filepath.Join(parent, "ws"), filepath.Join(parent, "outside")
	for _, d := range []string{filepath.Join(dir, "in"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "keep.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"abs": outside, "rel": "../outside", "deep/up": "../../outside", "inlink": "in", "file": filepath.Join(outside, "keep.txt")} {
		p := filepath.Join(dir, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"abs/pwned.txt", "rel/pwned.txt", "deep/up/pwned.txt", "abs/new/dir/pwned.txt", "abs/keep.txt"} {
		if err := Write(dir, []File{{Path: p, Content: "pwned"}}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("write %s: %v", p, err)
		}
		if err := Write(dir, []File{{Path: p, Deleted: true}}); err == nil {
			t.Errorf("delete %s: no error", p)
		}
		if _, err := Hash(dir, p); err == nil {
			t.Errorf("hash %s: no error", p)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("%d files outside the workspace, want keep.txt only", len(entries))
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "keep.txt")); string(data) != "keep" {
		t.Errorf("keep.txt = %q", data)
	}
	if err := Write(dir, []File{{Path: "inlink/ok.txt", Content: "ok"}, {Path: "file", Content: "a file now"}}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "in", "ok.txt")); err != nil || string(data) != "ok" {
		t.Errorf("in/ok.txt = %q %v", data, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "file")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("file: %v %v", fi, err)
	}
}

// TestRunConfinesAndSaysWhenItDoesNot pins that a command writes its
// directory but nothing outside it, and that an unconfined run (the
// person's --unconfined) says so in its output.
func TestRunConfinesAndSaysWhenItDoesNot(t *testing.T) {
	if s := proc.Probe(); !s.Available {
		t.Skipf("confinement not available here: %s", s.Reason)
	}
	dir, outside := t.TempDir(), t.TempDir()
	script := "echo in > in.txt && echo out > " + filepath.Join(outside, "out.txt")
	r := Run(context.Background(), dir, script, nil, Sandbox{})
	if r.Passed || !strings.Contains(r.Output, "Permission denied") || strings.Contains(r.Output, Unconfined) {
		t.Fatalf("confined: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "in.txt")); err != nil {
		t.Errorf("the command could not write its directory: %v", err)
	}
	r = Run(context.Background(), dir, script, nil, Sandbox{Unconfined: true})
	if !r.Passed || !strings.HasSuffix(r.Output, "\n"+Unconfined) {
		t.Fatalf("unconfined: %+v", r)
	}
}
