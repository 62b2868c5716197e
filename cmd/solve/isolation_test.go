package main_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/cmd/internal/cli"
)

const trioGoal = "Add Abs, Sign and Square to package num, with tests"

// trioSteps: three independent leaves of one Go module, each checked by
// go test ./... over the whole module. Abs's first attempt does not
// compile; its second does. extra are appended to the leaves' steps.
func trioSteps(extra ...step) []step {
	leaf := func(fn, body, test string) []step {
		goal := fmt.Sprintf("Add %s(x float64) float64 with a test", fn)
		files := func(b string) m {
			return m{"summary": fn, "files": []any{
				m{"path": strings.ToLower(fn) + ".go", "content": "package num\n\n// " + fn + " is a helper.\nfunc " + fn + "(x float64) float64 {\n\t" + b + "\n}\n"},
				m{"path": strings.ToLower(fn) + "_test.go", "content": "package num\n\nimport \"testing\"\n\nfunc Test" + fn + "(t *testing.T) {\n\tif " + test + " {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n"}}}
		}
		ok := m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one function"}
		s := []step{
			{OpIdentify, goal, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "tested"}},
			{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "the test"}},
			{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "code"}},
			{OpVerify, goal, 1, ok}, {OpVerify, goal, 2, ok},
		}
		if fn == "Abs" {
			return append(s, step{OpResolve, goal, 1, files("if x < 0 { return -x } return x syntax error here")}, step{OpResolve, goal, 2, files(body)})
		}
		// (A second attempt's answer is there so a run that needs one, as
		// it did before attempts were isolated, finishes and shows it.)
		return append(s, step{OpResolve, goal, 1, files(body)}, step{OpResolve, goal, 2, files(body)})
	}
	s := []step{
		{OpIdentify, trioGoal, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "tested"}},
		{OpSelect, trioGoal, 0, m{"selected": []string{"c1"}, "rationale": "the tests"}},
		{OpRoute, trioGoal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "code"}},
		{OpResolve, trioGoal, 1, m{"summary": "three functions", "text": "Abs, Sign, Square"}},
		{OpVerify, trioGoal, 1, m{"checks": []any{}, "is_leaf": false, "leaf_reason": "three pieces"}},
		{OpDecompose, trioGoal, 0, m{"children": []any{
			m{"ref": "a", "goal": "Add Abs(x float64) float64 with a test", "summary": "Add Abs", "weight": 1, "depends_on": []string{}},
			m{"ref": "s", "goal": "Add Sign(x float64) float64 with a test", "summary": "Add Sign", "weight": 1, "depends_on": []string{}},
			m{"ref": "q", "goal": "Add Square(x float64) float64 with a test", "summary": "Add Square", "weight": 1, "depends_on": []string{}}}, "rationale": "one each"}},
		{OpConsistency, trioGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, trioGoal, 0, m{"summary": "num: Abs, Sign, Square"}},
	}
	s = append(s, leaf("Abs", "if x < 0 {\n\t\treturn -x\n\t}\n\treturn x", "Abs(-2) != 2")...)
	s = append(s, leaf("Sign", "switch {\n\tcase x < 0:\n\t\treturn -1\n\tcase x > 0:\n\t\treturn 1\n\t}\n\treturn 0", "Sign(-3) != -1")...)
	s = append(s, leaf("Square", "return x * x", "Square(3) != 9")...)
	return append(s, extra...)
}

// attempts maps each live node's summary to its attempt count.
func attempts(t *testing.T, dir string) map[string]int {
	t.Helper()
	rows, err := openDB(t, dir).Query(`SELECT goal_summary, attempt_count FROM nodes WHERE invalidated_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var g string
		var n int
		if err := rows.Scan(&g, &n); err != nil {
			t.Fatal(err)
		}
		out[g] = n
	}
	return out
}

// An attempt works in its own copy of the workspace: Abs's first answer,
// which does not compile, never reaches the workspace, so Sign and Square
// pass go test ./... at their first attempt, and 1 worker and 3 end alike.
// (Before: the broken file stayed in the workspace and made its siblings
// fail and retry.)
func TestAFailedAttemptsFilesStayOutOfTheWorkspace(t *testing.T) {
	t.Parallel()
	for _, workers := range []string{"1", "3"} {
		t.Run("workers="+workers, func(t *testing.T) {
			dir := t.TempDir()
			ws := workspace(t, dir, "example.com/num")
			sc := writeScript(t, dir, trioSteps()...)
			r := runSolve(t, dir, "run", trioGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h", "--workers", workers)
			if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			invariants(t, dir, rootOf(t, r.stdout))
			got := attempts(t, dir)
			if got["Add Abs"] != 2 || got["Add Sign"] != 1 || got["Add Square"] != 1 {
				t.Errorf("attempts %v: want Abs 2 (its first did not compile), Sign and Square 1", got)
			}
			data, err := os.ReadFile(filepath.Join(ws, "abs.go"))
			if err != nil || strings.Contains(string(data), "syntax error") {
				t.Errorf("the workspace's abs.go: %q %v", data, err)
			}
			if entries, _ := filepath.Glob(filepath.Join(os.TempDir(), "solve-attempt-"+rootOf(t, r.stdout)[:8]+"-*")); len(entries) > 0 {
				t.Errorf("attempt directories left behind: %v", entries)
			}
		})
	}
}

// Two siblings writing one file: the second to be verified finds the
// file changed in the workspace since its attempt was made; its merge is
// refused loudly (MERGE CONFLICT, an UNSAT attempt naming the file and
// what the workspace holds now) and its retry writes around it. Nothing
// is overwritten silently. (Before: the second simply replaced the first.)
func TestTwoLeavesWritingOneFileConflictLoudly(t *testing.T) {
	t.Parallel()
	s := sharedFileSteps()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/cfg")
	sc := writeScript(t, dir, s...)
	r := runSolve(t, dir, "run", sharedGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	oneConflict(t, dir, ws, r, r.stderr)
}

// With two solve worker processes, the leaves writing one file run on
// different machines, each in a workspace built from the database: the
// second merge is refused loudly as in process.
func TestTwoWorkersWritingOneFileConflictLoudly(t *testing.T) {
	t.Parallel()
	dir, url := pgDir(t)
	ws := workspace(t, dir, "example.com/cfg")
	api := newFakeAPI(t, 1, sharedFileSteps()...)
	// Both leaves' first resolve calls are held until both have arrived, so
	// each attempt's workspace is built before either merges: on a loaded
	// machine one leaf could otherwise merge before the other began, and
	// the second would build on the first's file, with no conflict.
	api.mu.Lock()
	const first = "Operation: resolve · attempt 1\\nGoal: "
	api.hold = func(body []byte) bool {
		return bytes.Contains(body, []byte(first+"Add the limits")) ||
			bytes.Contains(body, []byte(first+"Add the shared constants")) && !bytes.Contains(body, []byte(first+sharedGoal))
	}
	api.mu.Unlock()
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			api.mu.Lock()
			n := api.nheld
			api.mu.Unlock()
			if n >= 2 {
				break
			}
		}
		api.setHold(nil)
		api.release() // the held calls fail once; the client's retries are served
	}()
	workers := startWorkers(t, api, dir, url, 2)
	r := api.run(t, dir, "run", sharedGoal, "--remote", "--workspace", ws, "--budget", "5", "--time", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	oneConflict(t, dir, ws, r, workers[0].stderr.String()+workers[1].stderr.String())
}

const sharedGoal = "Add the shared constants and the limits to package cfg"

// sharedFileSteps: two leaves whose first attempts both write shared.go;
// the second attempt of each writes a file of its own.
func sharedFileSteps() []step {
	const goal = sharedGoal
	leaf := func(goal, content, retry string) []step {
		ok := m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one file"}
		return []step{
			{OpIdentify, goal, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "tested"}},
			{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "the test"}},
			{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "code"}},
			{OpResolve, goal, 1, m{"summary": "shared.go", "files": []any{m{"path": "shared.go", "content": content}}}},
			{OpVerify, goal, 1, ok},
			{OpResolve, goal, 2, m{"summary": "its own file", "files": []any{m{"path": retry, "content": strings.Replace(content, "shared", "own", 1)}}}},
			{OpVerify, goal, 2, ok},
		}
	}
	a, b := "Add the shared constants", "Add the limits"
	s := []step{
		{OpIdentify, goal, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "tested"}},
		{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "the tests"}},
		{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "code"}},
		{OpResolve, goal, 1, m{"summary": "two parts", "text": "constants, limits"}},
		{OpVerify, goal, 1, m{"checks": []any{}, "is_leaf": false, "leaf_reason": "two pieces"}},
		{OpDecompose, goal, 0, m{"children": []any{m{"ref": "a", "goal": a, "summary": a, "weight": 1, "depends_on": []string{}},
			m{"ref": "b", "goal": b, "summary": b, "weight": 1, "depends_on": []string{}}}, "rationale": "two"}},
		{OpConsistency, goal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, goal, 0, m{"summary": "cfg"}},
	}
	s = append(s, leaf(a, "package cfg\n\n// Name is the service name.\nconst Name = \"orders\"\n", "constants.go")...)
	return append(s, leaf(b, "package cfg\n\n// MaxRows bounds a page.\nconst MaxRows = 500\n", "limits.go")...)
}

// oneConflict checks the run r of sharedFileSteps: one merge conflict,
// reported in progress (where the steps ran), recorded and shown by status; the first verified version of
// shared.go kept; the retry's own file merged.
func oneConflict(t *testing.T, dir, ws string, r result, progress string) {
	t.Helper()
	invariants(t, dir, rootOf(t, r.stdout))
	if n := strings.Count(progress, "MERGE CONFLICT: merge conflict: shared.go changed in the workspace since this attempt was made"); n != 1 {
		t.Errorf("%d merge conflicts reported, want 1:\n%s", n, progress)
	}
	db := openDB(t, dir)
	if n := count(t, db, "SELECT COUNT(*) FROM resolution_attempts WHERE failure_mode = 'failure:merge_conflict'"); n != 1 {
		t.Errorf("%d attempts failed with merge_conflict, want 1", n)
	}
	shared, _ := os.ReadFile(filepath.Join(ws, "shared.go"))
	_, errC := os.Stat(filepath.Join(ws, "constants.go"))
	_, errL := os.Stat(filepath.Join(ws, "limits.go"))
	if !(strings.Contains(string(shared), `const Name = "orders"`) && errL == nil || strings.Contains(string(shared), `const MaxRows = 500`) && errC == nil) {
		t.Errorf("shared.go is %q (constants.go: %v, limits.go: %v): the first verified leaf's version must stay, the other's retry be merged", shared, errC, errL)
	}
	st := runSolve(t, dir, "status", rootOf(t, r.stdout))
	if !strings.Contains(st.stdout, "its files changed in the workspace since the attempt was made: shared.go") {
		t.Errorf("status does not show the conflict:\n%s", st.stdout)
	}
}

// A retry sees every earlier attempt: the resolver it used, its verdict,
// the whole violation trace and its output (the failing code itself).
// (Before: only the last attempt's violations, never the code.)
func TestARetrySeesTheWholeAttemptHistoryWithItsOutput(t *testing.T) {
	t.Parallel()
	goal := clampGoal
	s := clampSteps()
	bad1 := m{"summary": "Clamp, first try", "files": []any{m{"path": "clamp.go", "content": "package mathx\n\n// Clamp limits x.\nfunc Clamp(x, lo, hi float64) float64 { return x + } // FIRST-TRY\n"}}}
	bad2 := m{"summary": "Clamp, second try", "files": []any{m{"path": "clamp.go", "content": "package mathx\n\n// Clamp limits x.\nfunc Clamp(x, lo, hi float64) float64 { return lo } // SECOND-TRY\n"},
		m{"path": "clamp_test.go", "content": "package mathx\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tif Clamp(5, 0, 1) != 1 {\n\t\tt.Fatal(\"Clamp(5, 0, 1) is not 1\")\n\t}\n}\n"}}}
	good := s[3].answer
	s[3] = step{OpResolve, goal, 1, bad1}
	s[4] = step{OpVerify, goal, 1, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one function", "feedback": "there is no test; add one"}}
	s = append(s,
		step{OpResolve, goal, 2, bad2}, step{OpVerify, goal, 2, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one function"}},
		step{OpResolve, goal, 3, good}, step{OpVerify, goal, 3, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one function"}})
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/mathx")
	api := newFakeAPI(t, 1, s...)
	r := api.run(t, dir, "run", goal, "--workspace", ws, "--budget", "5", "--time", "1h")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	reqs := api.requests("Operation: resolve · attempt 3")
	if len(reqs) != 1 {
		t.Fatalf("%d attempt-3 resolve requests", len(reqs))
	}
	for _, want := range []string{"Attempt 1 (claude-code-0): UNSAT", "there is no test; add one", "FIRST-TRY",
		"Attempt 2 (claude-code-0): UNSAT", "`go test ./...` exited 1", "Clamp(5, 0, 1) is not 1", "SECOND-TRY"} {
		if !strings.Contains(reqs[0], want) {
			t.Errorf("the third attempt's request lacks %q:\n%s", want, reqs[0])
		}
	}
	if strings.Contains(reqs[0], "map[") {
		t.Errorf("the request prints a Go map:\n%s", reqs[0])
	}
}

const boardGoal = "Measure the hot spot of the prototype board"

func boardSteps() []step {
	return []step{
		{OpIdentify, boardGoal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "hardware", "title": "a reading in degrees C", "rubric": "a number"}},
			"required_capabilities": []string{"thermal_measurement"}, "rationale": "a measurement"}},
		{OpSelect, boardGoal, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
		{OpRoute, boardGoal, 0, m{"resolver_id": "", "capability": "", "rationale": "no candidate measures",
			"gap": m{"capability_tag": "thermal_measurement", "resolver_type": "physical", "build_constraints": []string{"reads the board with a thermal camera"}, "rationale": "hands and a camera"}}},
		{OpGap, boardGoal, 0, m{"capability_tag": "thermal_measurement", "resolver_type": "physical", "build_constraints": []string{"reads the board with a thermal camera"}, "rationale": "hands and a camera"}},
	}
}

// A hired tool that fails opens a new request saying it failed and how
// (its exit status and output); declining it ends the node infeasible
// with that reason. (Before: resume died with "answered, yet the node
// needs it again" and nothing was open.)
func TestAFailingHiredToolOpensANewRequestSayingHow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/board")
	sc := writeScript(t, dir, boardSteps()...)
	r := runSolve(t, dir, "run", boardGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h")
	if r.code != cli.ExitWaiting {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	root := rootOf(t, r.stdout)
	id := strings.Fields(strings.TrimPrefix(runSolve(t, dir, "hire").stdout, "request "))[0]
	if a := runSolve(t, dir, "hire", id, "--resolver-command", "echo camera not found; exit 3"); a.code != 0 {
		t.Fatalf("hire: %s%s", a.stdout, a.stderr)
	}
	res := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
	if res.code != cli.ExitWaiting || !strings.Contains(res.stderr, "the hired tool human-thermal_measurement-1 failed; HIRE again") {
		t.Fatalf("resume: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	invariants(t, dir, root)
	h := runSolve(t, dir, "hire")
	for _, want := range []string{"Need:   thermal_measurement (physical, hired_tool_failed)", "the hired tool human-thermal_measurement-1 (echo camera not found; exit 3) failed", "exited 3", "camera not found"} {
		if !strings.Contains(h.stdout, want) {
			t.Errorf("the new request lacks %q:\n%s", want, h.stdout)
		}
	}
	if strings.Contains(h.stdout, "map[") {
		t.Errorf("the request prints a Go map:\n%s", h.stdout)
	}
	id2 := strings.Fields(strings.TrimPrefix(h.stdout, "request "))[0]
	if id2 == id {
		t.Fatal("the failed tool's request was not a new one")
	}
	if d := runSolve(t, dir, "hire", id2, "--decline", "--reason", "no camera this week"); d.code != 0 || !strings.Contains(d.stdout, "is infeasible") {
		t.Fatalf("decline: %s%s", d.stdout, d.stderr)
	}
	end := runSolve(t, dir, "resume", root, "--provider", "script", "--script", sc)
	if end.code != cli.ExitInfeasible {
		t.Fatalf("after the decline: exit %d\n%s\n%s", end.code, end.stdout, end.stderr)
	}
	if l := runSolve(t, dir, "log"); !strings.Contains(l.stdout, "INFEASIBLE: capability request "+id2) {
		t.Errorf("the log does not say the decline ended the node:\n%s", l.stdout)
	}
	invariants(t, dir, root)
}

// A registered tool whose capability matches is used when the router
// names it, even though the capability match did not put it among the
// candidates. (Before: it was refused, and the node went to HIRE.)
func TestARegisteredToolIsUsedWhenItsCapabilityMatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/lint")
	// A first run leaves a human tool providing lint_report in the registry.
	first := "Lint the repository"
	s := []step{
		{OpIdentify, first, 0, m{"constraints": []any{m{"type": "semantic", "domain": "quality", "title": "a lint report", "rubric": "a report"}}, "required_capabilities": []string{"lint_report"}, "rationale": "lint"}},
		{OpSelect, first, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
		{OpRoute, first, 0, m{"resolver_id": "", "capability": "", "rationale": "none", "gap": m{"capability_tag": "lint_report", "resolver_type": "physical", "build_constraints": []string{"a report"}, "rationale": "a person runs it"}}},
	}
	second := "Write the lint report for the release"
	s = append(s,
		step{OpIdentify, second, 0, m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "the report exists", "check": "test -s lint.txt"}}, "required_capabilities": []string{"generate_text"}, "rationale": "a file"}},
		step{OpSelect, second, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
		step{OpRoute, second, 0, m{"resolver_id": "human-lint_report-1", "capability": "lint_report", "rationale": "the lint tool makes the report"}},
		step{OpVerify, second, 1, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one file"}},
		step{OpConsistency, second, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		step{OpAssemble, second, 0, m{"summary": "the lint report"}})
	sc := writeScript(t, dir, s...)
	if r := runSolve(t, dir, "run", first, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h"); r.code != cli.ExitWaiting {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	id := strings.Fields(strings.TrimPrefix(runSolve(t, dir, "hire").stdout, "request "))[0]
	if a := runSolve(t, dir, "hire", id, "--resolver-command", "echo 'no findings' > lint.txt"); a.code != 0 {
		t.Fatalf("hire: %s%s", a.stdout, a.stderr)
	}
	r := runSolve(t, dir, "run", second, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h")
	if r.code != 0 || !strings.Contains(r.stderr, "SELECT_RESOLVER → human-lint_report-1") {
		t.Fatalf("second run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	invariants(t, dir, rootOf(t, r.stdout))
	if data, err := os.ReadFile(filepath.Join(ws, "lint.txt")); err != nil || string(data) != "no findings\n" {
		t.Errorf("lint.txt %q %v", data, err)
	}
}

// A cyclic decomposition is asked again with the cycle quoted first (as
// solve plan does); the corrected answer is used. (Before: straight to HIRE.)
func TestACyclicDecompositionIsAskedAgainWithTheCycleQuoted(t *testing.T) {
	t.Parallel()
	const goal = "Prepare the quarterly review"
	node := func(goal string) []step {
		return []step{
			{OpIdentify, goal, 0, m{"constraints": []any{m{"type": "semantic", "domain": "content", "title": "complete", "rubric": "all there"}}, "required_capabilities": []string{"technical_writing"}, "rationale": "prose"}},
			{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "it"}},
			{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "technical_writing", "rationale": "prose"}},
			{OpResolve, goal, 1, m{"summary": goal, "text": goal}},
		}
	}
	judged := func(goal string, leaf bool) step {
		return step{OpVerify, goal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.9, "detail": "ok"}}, "is_leaf": leaf, "leaf_kind": "atomic", "leaf_reason": "ok"}}
	}
	kids := func(figDeps, textDeps []string) m {
		return m{"children": []any{m{"ref": "figures", "goal": "Draw the figures", "summary": "Figures", "weight": 1, "depends_on": figDeps},
			m{"ref": "text", "goal": "Write the text", "summary": "Text", "weight": 1, "depends_on": textDeps}}, "rationale": "two parts"}
	}
	s := append(node(goal), judged(goal, false),
		step{OpDecompose, goal, 0, kids([]string{"text"}, []string{"figures"})},
		step{OpDecompose, goal, 2, kids([]string{}, []string{"figures"})},
		step{OpConsistency, goal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		step{OpAssemble, goal, 0, m{"summary": "the review"}})
	for _, g := range []string{"Draw the figures", "Write the text"} {
		s = append(s, node(g)...)
		s = append(s, judged(g, true))
	}
	dir := t.TempDir()
	api := newFakeAPI(t, 1, s...)
	r := api.run(t, dir, "run", goal, "--budget", "5", "--time", "1h")
	if r.code != 0 || !strings.Contains(r.stderr, "DECOMPOSE answer rejected (cycle: figures → text → figures") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	reqs := api.requests("Operation: decompose · attempt 2")
	if len(reqs) != 1 || !strings.Contains(reqs[0], "Feedback from earlier attempts:\n- cycle: figures → text → figures") {
		t.Errorf("the re-ask does not quote the cycle first: %q", reqs)
	}
}

// A second process on a run that is running is refused at once, with a
// message naming the process, and makes no call. (Before: it ran the same
// nodes, repeating paid calls, until one died on a UNIQUE error.)
func TestASecondProcessOnARunningRootIsRefused(t *testing.T) {
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/mathx")
	steps := clampSteps()
	// The check runs confined: it marks its start in its own directory,
	// the attempt's copy of the workspace, made under TMPDIR.
	steps[0].answer = m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "the check passes", "check": "touch started; sleep 30"}},
		"required_capabilities": []string{"generate_code"}, "rationale": "a slow check"}
	sc := writeScript(t, dir, steps...)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	first := runBackground(t, dir, "run", clampGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if found, _ := filepath.Glob(filepath.Join(tmp, "solve-attempt-*", "started")); len(found) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first process never reached its check")
		}
	}
	db := openDB(t, dir)
	calls := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3")
	r := runSolve(t, dir, "resume", latestRoot(t, dir), "--provider", "script", "--script", sc)
	if r.code == 0 || !strings.Contains(r.stderr, "is being run by process") || !strings.Contains(r.stderr, "two processes on one run would repeat its paid calls") {
		t.Errorf("second process: exit %d\n%s", r.code, r.stderr)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM logs WHERE tier = 3"); n != calls {
		t.Errorf("the refused process made %d calls", n-calls)
	}
	first.stop()
}

// A workspace that is missing or cannot be written is refused before any
// call is made. (Before: a missing one was created, and a read-only one
// failed only after the calls had been paid for.)
func TestAMissingOrReadOnlyWorkspaceIsRefusedBeforeAnySpend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := writeScript(t, dir, clampSteps()...)
	readOnly := filepath.Join(dir, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		readOnly = "/proc/self/fdinfo" // root writes anywhere else: a directory of a read-only file system
	}
	for _, tc := range []struct{ ws, want string }{
		{filepath.Join(dir, "missing"), "solve: --workspace " + filepath.Join(dir, "missing") + " does not exist; create it"},
		{readOnly, "solve: --workspace " + readOnly + " cannot be written"},
	} {
		// A usage error (exit 2) in the flag's name, never the library's
		// field (Request.Workspace).
		r := runSolve(t, dir, "run", clampGoal, "--provider", "script", "--script", sc, "--workspace", tc.ws, "--budget", "5", "--time", "1h")
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "Request") {
			t.Errorf("workspace %s: exit %d\n%s", tc.ws, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("the missing workspace was created")
	}
	if _, err := os.Stat(filepath.Join(dir, "kernel.db")); err == nil {
		if n := count(t, openDB(t, dir), "SELECT COUNT(*) FROM budget_ledger WHERE event_type = 'spend'"); n != 0 {
			t.Errorf("%d spends before the refusal", n)
		}
	}
}

// Flags that make no sense are refused with a message (exit 2), never
// replaced by defaults or a panic.
func TestNonsenseFlagsAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--budget", "Inf"}, "--budget +Inf: give a positive, finite budget"},
		{[]string{"--budget", "NaN"}, "--budget NaN: give a positive, finite budget"},
		{[]string{"--budget", "1e308"}, "--budget 1e+308: give a positive, finite budget in USD, e.g. 2 (at most $1,000,000)"},
		{[]string{"--budget", "1000000.01"}, "--budget 1.00000001e+06: give a positive"},
		{[]string{"--workers", "-3"}, "--workers -3: give at least 1"},
		{[]string{"--tmax", "-1"}, "--tmax -1: give at least 1 attempt"},
		{[]string{"--tmax", "0"}, "--tmax 0: give at least 1 attempt"},
		{[]string{"--budget", "1e309"}, `"1e309" for "--budget" flag`},
		{[]string{"--time", "-1s"}, "--time -1s: give a positive duration"},
	} {
		r := runSolve(t, dir, append([]string{"run", "Name the queue", "--provider", "script", "--script", "none.json"}, tc.args...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "panic") {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q", tc.args, r.code, r.stderr, cli.ExitUsage, tc.want)
		}
	}
	if r := runSolve(t, dir, "resume", "--workers", "-1"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--workers -1") {
		t.Errorf("resume --workers -1: exit %d %q", r.code, r.stderr)
	}
	if r := runSolve(t, dir, "hire", "abc", "--add-budget", "Inf"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--add-budget +Inf") {
		t.Errorf("hire --add-budget Inf: exit %d %q", r.code, r.stderr)
	}
	if r := runSolve(t, dir, "hire", "abc", "--add-budget", "1e308"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--add-budget 1e+308: give a positive, finite amount in USD (at most $1,000,000)") {
		t.Errorf("hire --add-budget 1e308: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "kernel.db")); err == nil {
		t.Error("a refused command created kernel.db")
	}
	// A model no price covers runs, said loudly: its calls cost $0 in the
	// ledger, so --budget cannot hold them.
	if err := os.WriteFile(filepath.Join(dir, "empty.json"), []byte(`{"responses": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runSolve(t, dir, "run", "Name the queue", "--provider", "script", "--script", "empty.json", "--model", "claude-future-9")
	if !strings.Contains(r.stderr, `warning: model "claude-future-9" has no price (give one with --prices FILE)`) {
		t.Errorf("an unpriced model: exit %d, stderr %q", r.code, r.stderr)
	}
}
