package skill

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newRunner(t *testing.T) *Runner {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "skills")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &Runner{Dir: dir, Root: root, CacheFile: filepath.Join(root, ".lumen", "skill-help.json"), testWrite: []string{root}}
}

func writeSkill(t *testing.T, r *Runner, name, mainPy string) {
	t.Helper()
	dir := filepath.Join(r.Dir, name)
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(mainPy), 0o644); err != nil {
		t.Fatal(err)
	}
}

// echo reports what it received and where it ran; --help counts its runs.
const echo = `import json, os, sys
if "--help" in sys.argv:
    with open(os.path.join(os.environ["LUMEN_DIR"], "help-runs"), "a") as f:
        f.write("x")
    print("echo: returns its input. Input: any JSON. Output: the same JSON.")
    sys.exit(0)
req = json.load(sys.stdin)
print(json.dumps({"ok": True, "output": {"got": req["input"], "situation": req["situation"], "skill": os.environ["LUMEN_SKILL"]}, "display": "echoed"}))
`

func TestListShowsEverySkillDirectoryAndWhetherMainPyExists(t *testing.T) {
	r := newRunner(t)
	writeSkill(t, r, "echo", echo)
	os.MkdirAll(filepath.Join(r.Dir, "half-built"), 0o755)
	got, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "echo" || !got[0].HasMain || got[1].Name != "half-built" || got[1].HasMain {
		t.Fatalf("List = %+v", got)
	}
	if r.Available("half-built") {
		t.Error("a directory without main.py counts as available")
	}
}

func TestHelpIsCachedUntilMainPyChanges(t *testing.T) {
	r := newRunner(t)
	writeSkill(t, r, "echo", echo)
	ctx := context.Background()
	runs := func() int {
		data, _ := os.ReadFile(filepath.Join(r.Root, "help-runs"))
		return len(data)
	}
	for i := 0; i < 3; i++ {
		help, err := r.Help(ctx, "echo")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(help, "echo: returns its input") {
			t.Fatalf("help = %q", help)
		}
	}
	// A new Runner (another process) reads the same cache file.
	again := &Runner{Dir: r.Dir, Root: r.Root, CacheFile: r.CacheFile, testWrite: r.testWrite}
	if _, err := again.Help(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if runs() != 1 {
		t.Fatalf("--help ran %d times, want 1 (cached)", runs())
	}
	writeSkill(t, r, "echo", strings.Replace(echo, "returns its input", "returns its input unchanged", 1))
	help, err := r.Help(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if runs() != 2 || !strings.Contains(help, "unchanged") {
		t.Fatalf("after main.py changed: %d runs, help %q; want a fresh --help", runs(), help)
	}
}

func TestInvokeSendsTheRequestOnStdinAndReadsTheJSONAnswer(t *testing.T) {
	r := newRunner(t)
	writeSkill(t, r, "echo", echo)
	res, err := r.Invoke(context.Background(), "echo", Request{Input: json.RawMessage(`{"city":"Paris"}`), Situation: "testing"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Display != "echoed" {
		t.Fatalf("result = %+v", res)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Output), &out); err != nil {
		t.Fatalf("output %q: %v", res.Output, err)
	}
	if out["situation"] != "testing" || out["skill"] != "echo" || out["got"].(map[string]any)["city"] != "Paris" {
		t.Fatalf("the skill received %v", out)
	}
}

func TestInvokeReportsFailuresAsResults(t *testing.T) {
	r := newRunner(t)
	r.OutputCap = 1000
	writeSkill(t, r, "crash", "import sys\nsys.stderr.write('boom: no network')\nsys.exit(3)\n")
	writeSkill(t, r, "refuse", `print('{"ok": false, "error": "city unknown"}')`)
	writeSkill(t, r, "slow", "import time\ntime.sleep(120)\n")
	writeSkill(t, r, "chatty", "print('x' * 100000)\n")
	writeSkill(t, r, "plain", "print('just text')\n")
	cases := map[string]string{
		"crash":  "boom: no network",
		"refuse": "city unknown",
		"slow":   "did not finish within 3s",
		"chatty": "more than 1000 bytes",
	}
	for name, want := range cases {
		// Only the slow skill gets a short timeout: interpreter start-up
		// alone can take a good part of a second on a loaded machine.
		r.Timeout = 0
		if name == "slow" {
			r.Timeout = 3 * time.Second
		}
		res, err := r.Invoke(context.Background(), name, Request{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.OK || !strings.Contains(res.Error, want) {
			t.Errorf("%s: result %+v, want a failure containing %q", name, res, want)
		}
	}
	res, err := r.Invoke(context.Background(), "plain", Request{})
	if err != nil || !res.OK || res.Output != "just text" {
		t.Fatalf("plain: %+v, %v; want plain stdout as the output", res, err)
	}
	if _, err := r.Invoke(context.Background(), "missing", Request{}); err == nil || !strings.Contains(err.Error(), "skills: chatty, crash, plain, refuse, slow") {
		t.Fatalf("missing skill: err = %v, want the list of skills", err)
	}
}

func TestCreateChecksHelpBeforeTheSkillCounts(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	_, err := r.Create(ctx, NewSkill{Name: "weather", Files: map[string]string{"main.py": "import sys\nsys.exit(1)\n"}})
	if err == nil || !strings.Contains(err.Error(), "--help failed") {
		t.Fatalf("err = %v, want the failed --help", err)
	}
	if r.Available("weather") {
		t.Fatal("a skill whose --help fails became available")
	}
	if entries, _ := os.ReadDir(r.Dir); len(entries) != 0 {
		t.Fatalf("a failed attempt left %v behind", entries)
	}
	_, err = r.Create(ctx, NewSkill{Name: "weather", Files: map[string]string{
		"main.py":    "import sys\nfrom lib import forecast\nif '--help' in sys.argv:\n    print('weather: ' + forecast())\n",
		"lib/..":     "",
		"lib.py":     "def forecast():\n    return 'tells the forecast'\n",
		"data/x.txt": "kept",
	}})
	if err == nil {
		t.Fatal("a file path of lib/.. was accepted")
	}
	made, err := r.Create(ctx, NewSkill{Name: "weather", Files: map[string]string{
		"main.py":    "import sys\nfrom lib import forecast\nif '--help' in sys.argv:\n    print('weather: ' + forecast())\n",
		"lib.py":     "def forecast():\n    return 'tells the forecast'\n",
		"data/x.txt": "kept",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if made.Help != "weather: tells the forecast" || !r.Ready(ctx, "weather") {
		t.Fatalf("help = %q, ready = %v", made.Help, r.Ready(ctx, "weather"))
	}
	if data, _ := os.ReadFile(filepath.Join(r.Dir, "weather", "data", "x.txt")); string(data) != "kept" {
		t.Error("nested file not written")
	}
	if _, err := r.Create(ctx, NewSkill{Name: "weather", Files: map[string]string{"main.py": ""}}); err == nil || !strings.Contains(err.Error(), "set revise to true") {
		t.Errorf("creating over an existing skill without revise: err = %v", err)
	}
	for _, bad := range []string{"../up", "Create", BuiltinCreate, ""} {
		if _, err := r.Create(ctx, NewSkill{Name: bad, Files: map[string]string{"main.py": ""}}); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

func TestAHelpThatHangsCostsItsTimeoutOncePerVersion(t *testing.T) {
	r := newRunner(t)
	r.Timeout = 2 * time.Second // time for python to start (and the race detector) before it hangs
	ctx := context.Background()
	hang := "import os, sys, time\nopen(os.path.join(os.environ['LUMEN_DIR'], 'help-runs'), 'a').write('x')\ntime.sleep(30)\n"
	writeSkill(t, r, "stuck", hang)
	runs := func() int {
		data, _ := os.ReadFile(filepath.Join(r.Root, "help-runs"))
		return len(data)
	}
	for i := 0; i < 3; i++ {
		if r.Ready(ctx, "stuck") {
			t.Fatal("a skill whose --help hangs counts as ready")
		}
	}
	if runs() != 1 {
		t.Fatalf("--help ran %d times for one version, want 1 (the failure is cached)", runs())
	}
	c, _ := r.Cached("stuck")
	if !c.Checked || c.OK || !strings.Contains(c.Error, "did not finish") {
		t.Fatalf("cached check = %+v, want the timeout", c)
	}
	// Any file of the skill changing makes a new version, checked again.
	os.WriteFile(filepath.Join(r.Dir, "stuck", "notes.txt"), []byte("v2"), 0o644)
	r.Ready(ctx, "stuck")
	if runs() != 2 {
		t.Fatalf("after an edit --help ran %d times in all, want 2", runs())
	}
	// __pycache__ is not part of the version.
	os.MkdirAll(filepath.Join(r.Dir, "stuck", "__pycache__"), 0o755)
	os.WriteFile(filepath.Join(r.Dir, "stuck", "__pycache__", "x.pyc"), []byte("cache"), 0o644)
	r.Ready(ctx, "stuck")
	if runs() != 2 {
		t.Fatalf("a __pycache__ file made a new version (%d runs)", runs())
	}
}

func TestARevisionIsANewVersionTheOldOneKeptAndRestorable(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	v1 := "import sys\nif '--help' in sys.argv:\n    print('greet: says hello'); sys.exit(0)\nprint('{\"ok\": true, \"output\": \"hello\"}')\n"
	first, err := r.Create(ctx, NewSkill{Name: "greet", Files: map[string]string{"main.py": v1, "state.json": "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	// A revision whose --help fails changes nothing.
	if _, err := r.Create(ctx, NewSkill{Name: "greet", Revise: true, Files: map[string]string{"main.py": "import sys\nsys.exit(2)\n"}}); err == nil {
		t.Fatal("a revision whose --help fails was installed")
	}
	if c, _ := r.Cached("greet"); c.Version != first.Version || !c.OK {
		t.Fatalf("after a failed revision: %+v, want version 1 ready", c)
	}
	v2 := strings.Replace(strings.Replace(v1, "says hello", "says hello warmly", 1), `"hello"`, `"hello, friend"`, 1)
	second, err := r.Create(ctx, NewSkill{Name: "greet", Revise: true, Files: map[string]string{"main.py": v2}})
	if err != nil {
		t.Fatal(err)
	}
	if second.Replaced != first.Version || second.Version == first.Version || second.Help != "greet: says hello warmly" {
		t.Fatalf("revision = %+v", second)
	}
	if data, _ := os.ReadFile(filepath.Join(r.Dir, "greet", "state.json")); string(data) != "{}" {
		t.Error("a file the revision did not name was not carried over")
	}
	res, _ := r.Invoke(ctx, "greet", Request{})
	if res.Output != "hello, friend" {
		t.Fatalf("the revised skill answered %q", res.Output)
	}
	kept, err := r.History("greet")
	if err != nil || len(kept) != 1 || kept[0].Version != first.Version {
		t.Fatalf("history = %+v, %v", kept, err)
	}
	if got, _ := r.List(); len(got) != 1 {
		t.Fatalf("List = %+v: the history is not a skill", got)
	}
	back, err := r.Restore(ctx, "greet", first.Version[:8])
	if err != nil || back.Version != first.Version || back.Replaced != second.Version {
		t.Fatalf("restore = %+v, %v", back, err)
	}
	res, _ = r.Invoke(ctx, "greet", Request{})
	if res.Output != "hello" {
		t.Fatalf("the restored skill answered %q", res.Output)
	}
	if kept, _ := r.History("greet"); len(kept) != 2 {
		t.Fatalf("after the restore the history holds %d versions, want both", len(kept))
	}
}

// keeper appends every request to a log in its own directory, as a
// model-written skill keeping notes beside main.py does.
const keeper = `import json, os, sys
if "--help" in sys.argv:
    with open(os.path.join(os.environ["LUMEN_DIR"], "help-runs"), "a") as f:
        f.write("x")
    print("keeper: keeps a note. Input: any JSON. Output: how many notes.")
    sys.exit(0)
req = json.load(sys.stdin)
with open("notes.jsonl", "a") as f:
    f.write(json.dumps(req["input"]) + "\n")
print(json.dumps({"ok": True, "output": sum(1 for _ in open("notes.jsonl"))}))
`

// A skill that writes files in its own directory while it runs makes a
// new version each run; its --help result carries over to it (the code
// did not change), so it is not checked again on every step. A change of
// main.py is checked again.
func TestASkillWritingItsOwnFilesKeepsItsCheckedHelp(t *testing.T) {
	r := newRunner(t)
	writeSkill(t, r, "keeper", keeper)
	var checks int
	r.OnCheck = func(Check) { checks++ }
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if !r.Ready(ctx, "keeper") {
			t.Fatal("keeper is not ready")
		}
		res, err := r.Invoke(ctx, "keeper", Request{Input: json.RawMessage(`"a note"`)})
		if err != nil || !res.OK || res.Output != strconv.Itoa(i+1) {
			t.Fatalf("run %d = %+v, %v", i+1, res, err)
		}
		if res.Rewrote == "" {
			t.Errorf("run %d: the new version the skill wrote itself is not reported", i+1)
		}
	}
	if runs, _ := os.ReadFile(filepath.Join(r.Root, "help-runs")); checks != 1 || len(runs) != 1 {
		t.Fatalf("--help ran %d times (%d checks recorded), want once", len(runs), checks)
	}
	// An edit of main.py during a run is not carried over.
	writeSkill(t, r, "rewriter", `import json, sys
if "--help" in sys.argv:
    print("rewriter: breaks itself. Input: none. Output: none.")
    sys.exit(0)
open("main.py", "w").write("import sys\nsys.exit(3)\n")
print(json.dumps({"ok": True, "output": "done"}))
`)
	if res, err := r.Invoke(ctx, "rewriter", Request{}); err != nil || !res.OK {
		t.Fatalf("rewriter = %+v, %v", res, err)
	}
	if c, _ := r.Cached("rewriter"); c.Checked {
		t.Fatalf("a main.py the skill rewrote counts as checked: %+v", c)
	}
}

// A skill directory of 5,000 files is hashed once, not at every
// check: later checks compare each file's size and times.
func BenchmarkCachedVersionOfA5000FileSkill(b *testing.B) {
	r := &Runner{Dir: filepath.Join(b.TempDir(), "skills")}
	dir := filepath.Join(r.Dir, "big")
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "main.py"), []byte("print('big')\n"), 0o644)
	page := strings.Repeat("x", 4096)
	for i := 0; i < 5000; i++ {
		os.WriteFile(filepath.Join(dir, "data", strconv.Itoa(i)), []byte(page), 0o644)
	}
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, _ error) error { return os.Chtimes(p, old, old) })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Cached("big"); err != nil {
			b.Fatal(err)
		}
	}
}
