package main_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

const wideGoal = "Add four string helpers to module textutil, one package each, with tests"

// wideSteps: the root splits into four independent leaves, each a Go
// package of its own checked by its own test (so what a check prints does
// not depend on which other leaves have finished); the root's go test ./...
// runs on the assembled workspace (Step 12).
func wideSteps() []step {
	helpers := []struct{ pkg, fn, body, test string }{
		{"rev", "Reverse", "r := []rune(s)\n\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n\treturn string(r)", `Reverse("abc") != "cba"`},
		{"upper", "Upper", "return strings.ToUpper(s)", `Upper("ab") != "AB"`},
		{"trim", "Trim", "return strings.TrimSpace(s)", `Trim(" a ") != "a"`},
		{"dup", "Dup", "return s + s", `Dup("ab") != "abab"`},
	}
	var children []any
	var s []step
	for i, h := range helpers {
		goal := fmt.Sprintf("Add %s(s string) string in package %s with a test", h.fn, h.pkg)
		children = append(children, m{"ref": h.pkg, "goal": goal, "summary": "Add " + h.fn, "weight": float64(i + 1), "depends_on": []string{}})
		imp := ""
		if strings.Contains(h.body, "strings.") {
			imp = "import \"strings\"\n\n"
		}
		s = append(s,
			step{OpIdentify, goal, 0, m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "the package's test passes", "check": "go test ./" + h.pkg + "/"}},
				"required_capabilities": []string{"generate_code"}, "rationale": "a tested function"}},
			step{OpSelect, goal, 0, m{"selected": []string{"c1"}, "rationale": "the test decides"}},
			step{OpRoute, goal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "small function"}},
			step{OpResolve, goal, 1, m{"summary": h.fn + " with a test", "files": []any{
				m{"path": h.pkg + "/" + h.pkg + ".go", "content": "package " + h.pkg + "\n\n" + imp + "// " + h.fn + " is a string helper.\nfunc " + h.fn + "(s string) string {\n\t" + h.body + "\n}\n"},
				m{"path": h.pkg + "/" + h.pkg + "_test.go", "content": "package " + h.pkg + "\n\nimport \"testing\"\n\nfunc Test" + h.fn + "(t *testing.T) {\n\tif " + h.test + " {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n"}}}},
			step{OpVerify, goal, 1, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one function with its test"}})
	}
	return append([]step{
		{OpIdentify, wideGoal, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "tested packages"}},
		{OpSelect, wideGoal, 0, m{"selected": []string{"c1"}, "rationale": "the tests decide"}},
		{OpRoute, wideGoal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "code"}},
		{OpResolve, wideGoal, 1, m{"summary": "four independent packages", "text": "rev, upper, trim, dup"}},
		{OpVerify, wideGoal, 1, m{"checks": []any{}, "is_leaf": false, "leaf_reason": "four independent pieces"}},
		{OpDecompose, wideGoal, 0, m{"children": children, "rationale": "one package each, no dependencies"}},
		{OpConsistency, wideGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, wideGoal, 0, m{"summary": "textutil: rev, upper, trim, dup, each tested"}},
	}, s...)
}

// --workers 4 runs the four independent leaves in parallel and ends in the
// same state as one worker: tree states and σ, artifact hashes, resolver
// calls, ledger spends and totals.
func TestWorkersFourGivesTheSameResultAsOne(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, base string) {
		var states [2]string
		var spent [2]float64
		for i, w := range []string{"1", "4"} {
			dir := likeDir(t, base)
			ws := workspace(t, dir, "example.com/textutil")
			sc := writeScript(t, dir, wideSteps()...)
			r := runSolve(t, dir, "run", wideGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "1h", "--workers", w)
			if r.code != 0 || !strings.Contains(r.stdout, ": achieved") {
				t.Fatalf("--workers %s: exit %d\n%s\n%s", w, r.code, r.stdout, r.stderr)
			}
			invariants(t, dir, rootOf(t, r.stdout))
			if w == "4" && !strings.Contains(r.stderr, "running 2") {
				t.Errorf("--workers 4 never ran two nodes at once:\n%s", r.stderr)
			}
			calls, cost := paid(t, dir)
			states[i], spent[i] = finalState(t, dir)+fmt.Sprintf("\nresolver calls %d", calls), cost
		}
		if states[0] != states[1] {
			t.Errorf("--workers 4 differs from --workers 1:\n--- 1\n%s\n--- 4\n%s", states[0], states[1])
		}
		if math.Abs(spent[0]-spent[1]) > 1e-4 {
			t.Errorf("spent $%.6f with 1 worker, $%.6f with 4", spent[0], spent[1])
		}
	})
}
