package lumen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen/memory"
)

// copyTestdata copies a directory of testdata into a temporary directory.
func copyTestdata(t *testing.T, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "mind")
	if err := copyInstance(filepath.Join("testdata", name), root); err != nil {
		t.Fatal(err)
	}
	return root
}

// copyInstance copies the instance (or any directory) at src to dst.
func copyInstance(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

func dayFileOf(t *testing.T, in *Instance) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(in.memoryDir(), "*", "*.jsonl"))
	if len(paths) == 0 {
		t.Fatal("no day file")
	}
	return paths[0]
}

// editLines rewrites a day file: drop removes lines for which it is true,
// and head is inserted first.
func editLines(t *testing.T, path string, drop func(string) bool, head string) {
	t.Helper()
	data, _ := os.ReadFile(path)
	var kept []string
	if head != "" {
		kept = append(kept, head)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if !drop(l) {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

const handLine = `{"timestamp":"2026-02-14T08:00:00Z","author":"self","weight":0.6,"situation":"","description":"a note I added by hand"}`

func TestAnInstanceMadeByTheEarlierKernelKeepsWorkingAndItsAuditStaysCorrect(t *testing.T) {
	root := copyTestdata(t, "legacy-instance")
	ctx := context.Background()
	in, err := Open(root, Options{Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	audit, err := in.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Changes) != 3 || len(audit.Unexplained) != 0 || !memory.LegacyRef(audit.Changes[0].ExplainedBy) {
		t.Fatalf("audit of the old instance = %+v, want its 3 changes explained through their old references", audit.Changes)
	}
	// Opening it pinned the old references and brought the unedited prompts
	// up to date, each step a kernel memory.
	migrate := list(t, in, memory.Filter{Step: "migrate"})
	var pinned, prompts int
	for _, m := range migrate {
		if strings.Contains(m.Description, "old references") {
			pinned++
		}
		if strings.Contains(m.Description, "was an earlier default") {
			prompts++
		}
	}
	if pinned != 1 || prompts == 0 {
		t.Fatalf("migrate memories: %d pinning, %d prompt upgrades", pinned, prompts)
	}
	if think, _ := os.ReadFile(filepath.Join(root, "prompts/think/prompt.md")); !strings.Contains(string(think), "{{conversation") {
		t.Error("the unedited THINK prompt was not upgraded: it lacks the conversation")
	}
	// Now the user removes a line and adds one: every byte offset moves.
	day := dayFileOf(t, in)
	removed := false
	editLines(t, day, func(l string) bool {
		if !removed && strings.Contains(l, `"step":"think"`) {
			removed = true
			return true
		}
		return false
	}, handLine)
	audit, err = in.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Changes) != 3 || len(audit.Unexplained) != 0 {
		t.Fatalf("after an edit, the audit of the old instance = %+v %+v; want it still clean", audit.Changes, audit.Unexplained)
	}
	// Reopening pins only the line added by hand without an id.
	in.Close()
	again, err := Open(root, Options{Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	after := list(t, again, memory.Filter{Step: "migrate"})
	if len(after) != len(migrate)+1 || !strings.HasPrefix(after[len(after)-1].Description, "MIGRATE: 1 memories of") {
		t.Errorf("reopening wrote %d more migrate memories, want one pinning the hand-added line", len(after)-len(migrate))
	}
}

func TestAnEditedPromptIsNotUpgraded(t *testing.T) {
	root := copyTestdata(t, "legacy-instance")
	path := filepath.Join(root, "prompts/think/prompt.md")
	os.WriteFile(path, []byte("My own THINK prompt. {{trigger}}\n"), 0o644)
	in, err := Open(root, Options{Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if got, _ := os.ReadFile(path); string(got) != "My own THINK prompt. {{trigger}}\n" {
		t.Fatalf("an edited prompt was replaced: %q", got)
	}
}

// demoInstance is a new instance after the docs walk-through's chat: two
// values and soul.md changed by reflection.
func demoInstance(t *testing.T) *Instance {
	in, p := newInstance(t, "demo-chat.json", nil, nil)
	for _, line := range []string{"Hello! Who are you?", "Please take a moment to reflect on who you want to be."} {
		if _, err := in.Chat(context.Background(), line); err != nil {
			t.Fatal(err)
		}
	}
	allUsed(t, p)
	return in
}

func TestATornLineRemovedAndALineInsertedLeaveTheAuditClean(t *testing.T) {
	in := demoInstance(t)
	ctx := context.Background()
	day := dayFileOf(t, in)
	f, _ := os.OpenFile(day, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"id":"01TORN","timestamp":"2026-02-14T09:59:00Z","author":"kern`) // a process killed mid-line
	f.Close()
	if _, err := in.remember(memory.Kernel, "note", "test", "written after the torn line", nil); err != nil {
		t.Fatal(err)
	}
	if a, err := in.Audit(ctx); err != nil || len(a.Changes) != 3 || len(a.Unexplained) != 0 {
		t.Fatalf("audit with the torn line = %+v, %v", a, err)
	}
	editLines(t, day, func(l string) bool { return !json.Valid([]byte(l)) }, handLine)
	a, err := in.Audit(ctx)
	if err != nil || len(a.Changes) != 3 || len(a.Unexplained) != 0 {
		t.Fatalf("after removing the torn line and inserting one: audit = %+v %+v, %v; want 3 explained changes", a.Changes, a.Unexplained, err)
	}
}

func TestASameLengthEditOfAnExplanationsAuthorIsCaughtByTheAudit(t *testing.T) {
	in := demoInstance(t)
	ctx := context.Background()
	a, _ := in.Audit(ctx)
	target := a.Changes[0].ExplainedBy
	day := dayFileOf(t, in)
	data, _ := os.ReadFile(day)
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(l, []byte(`"id":"`+target+`"`)) {
			l = bytes.Replace(l, []byte(`"author":"self"`), []byte(`"author":"goal"`), 1)
		}
		out = append(out, l)
	}
	edited := bytes.Join(out, []byte("\n"))
	if len(edited) != len(data) || bytes.Equal(edited, data) {
		t.Fatal("the edit must change the file and keep its length")
	}
	st, _ := os.Stat(day)
	os.WriteFile(day, edited, 0o644)
	os.Chtimes(day, st.ModTime(), st.ModTime()) // even the modification time kept
	in.Close()
	// The next lumen audit, read-only as the command opens it.
	next, err := Open(in.Root, Options{ReadOnly: true, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	a, err = next.Audit(ctx)
	if err != nil || len(a.Unexplained) != 1 || !strings.Contains(a.Unexplained[0].Problem, "is by goal, not self") {
		t.Fatalf("after a same-length edit of its author: unexplained = %+v, %v", a.Unexplained, err)
	}
	if _, err := os.Stat(filepath.Join(in.Root, ".lumen", "index.db")); err != nil {
		t.Fatal("the index is gone: the edit must be caught without deleting it")
	}
}

func TestAGitCloneOfAFreshInstanceOpensAndChats(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	root := filepath.Join(t.TempDir(), "mind")
	if _, err := Init(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	run := func(dir string, args ...string) {
		cmd := exec.Command(git, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run(root, "add", "-A")
	run(root, "commit", "-q", "-m", "a new mind")
	clone := filepath.Join(t.TempDir(), "clone")
	run(filepath.Dir(clone), "clone", "-q", root, clone)
	for _, d := range []string{"data/memory", "data/goals"} {
		if _, err := os.Stat(filepath.Join(clone, d)); err != nil {
			t.Fatalf("the clone lacks %s: %v", d, err)
		}
	}
	s, err := script.Load(filepath.Join("testdata", "chat-turn.json"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Open(clone, Options{Client: &llm.Client{Provider: script.New(s)}, Model: "scripted", Now: newClock().now})
	if err != nil {
		t.Fatalf("the clone does not open: %v", err)
	}
	defer in.Close()
	if _, err := in.Chat(context.Background(), "Hi! I'm Ada. What are you?"); err != nil {
		t.Fatal(err)
	}
	// A clone that lost an empty directory anyway is repaired on open.
	os.RemoveAll(filepath.Join(clone, "data", "goals"))
	again, err := Open(clone, Options{Now: newClock().now})
	if err != nil {
		t.Fatalf("a missing data/goals is not recreated: %v", err)
	}
	again.Close()
}

// readEverything runs every read command on the instance at root, opened
// read-only, and checks what the demo instance holds.
func readEverything(root string) error {
	ctx := context.Background()
	ro, err := Open(root, Options{ReadOnly: true, Now: newClock().now})
	if err != nil {
		return err
	}
	defer ro.Close()
	st, err := ro.Status(ctx)
	if err != nil || st.Memories[memory.External] != 3 || !strings.HasPrefix(st.Index, "in memory") {
		return fmt.Errorf("status = %+v, %v; want 3 external memories from an index in memory", st, err)
	}
	if es, err := ro.Memories(ctx, MemoryQuery{All: true}); err != nil || len(es) == 0 {
		return fmt.Errorf("memory: %d, %v", len(es), err)
	}
	if r, err := ro.Search(ctx, "reflect who", nil, 5); err != nil || len(r.Relevant) == 0 {
		return fmt.Errorf("search: %+v, %v", r, err)
	}
	if _, err := ro.SortedValues(); err != nil {
		return err
	}
	if _, err := ro.FilteredGoals(0, ""); err != nil {
		return err
	}
	if _, err := ro.SkillStatuses(); err != nil {
		return err
	}
	if a, err := ro.Audit(ctx); err != nil || len(a.Changes) != 3 || len(a.Unexplained) != 0 {
		return fmt.Errorf("audit: %+v, %v", a, err)
	}
	if _, err := ro.Chat(ctx, "hello"); err == nil || !strings.Contains(err.Error(), "read-only") {
		return fmt.Errorf("chat on a read-only instance: %v, want a refusal", err)
	}
	// Opened for writing, it says why it cannot be.
	if w, err := Open(root, Options{Now: newClock().now}); err == nil {
		w.Close()
		return fmt.Errorf("opening a read-only instance for writing succeeded")
	}
	return nil
}

// lockDown takes write permission away from everything under root until
// the test ends.
func lockDown(t *testing.T, root string) {
	t.Helper()
	var paths []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	for i := len(paths) - 1; i >= 0; i-- {
		if info, err := os.Stat(paths[i]); err == nil {
			os.Chmod(paths[i], info.Mode().Perm()&^0o222)
		}
	}
	t.Cleanup(func() {
		for _, p := range paths {
			if info, err := os.Stat(p); err == nil {
				os.Chmod(p, info.Mode().Perm()|0o200)
			}
		}
	})
}
