package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/solve"
	"github.com/llmkernels/kernels/solve/loop"
)

// step is one scripted LLM answer: the operation, the goal it answers
// (a prefix of the node's goal), the attempt (resolve/verify) and the JSON.
type step struct {
	op      string
	goal    string
	attempt int
	answer  any
}

// writeScript turns steps into an llmtest script matched by operation,
// goal and attempt, so any process (a resumed one too) gets the right
// answer for each request whatever the order.
func writeScript(t *testing.T, dir string, steps ...step) string {
	t.Helper()
	return writeScriptUsage(t, dir, nil, steps...)
}

// writeScriptUsage is writeScript with every answer's usage given (so its
// cost is known), or estimated by the script player when usage is nil.
func writeScriptUsage(t *testing.T, dir string, usage map[string]int, steps ...step) string {
	t.Helper()
	var rs []any
	for _, s := range steps {
		e := scriptEntry(t, s)
		if usage != nil {
			e["response"].(map[string]any)["usage"] = usage
		}
		rs = append(rs, e)
	}
	data, _ := json.MarshalIndent(map[string]any{"responses": rs}, "", " ")
	p := filepath.Join(dir, "script.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type m = map[string]any

const statsGoal = "Add Mean and Median to package stats, with tests"

func goTest() m {
	return m{"type": "logic", "domain": "software", "title": "go test passes", "check": "go test ./..."}
}

// statsSteps is the small software goal: decomposed into Mean and Median,
// Median's first attempt fails its test and is fixed with the feedback.
func statsSteps() []step {
	mean := "Add Mean(xs []float64) float64 with a test"
	median := "Add Median(xs []float64) float64 with a test"
	leaf := func(goal string, attempt int, ok bool, fb string) step {
		return step{OpVerify, goal, attempt, m{"checks": []any{}, "is_leaf": ok, "leaf_kind": "atomic", "leaf_reason": "one small function with its test", "feedback": fb}}
	}
	return []step{
		{OpIdentify, statsGoal, 0, m{"constraints": []any{goTest(), m{"type": "semantic", "domain": "code_quality", "title": "idiomatic, documented Go", "rubric": "exported functions have doc comments"}},
			"required_capabilities": []string{"generate_code", "test_execution"}, "rationale": "a Go package change verified by its tests"}},
		{OpSelect, statsGoal, 0, m{"selected": []string{"c1", "c2"}, "rationale": "both needed"}},
		{OpRoute, statsGoal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "code generation"}},
		{OpResolve, statsGoal, 1, m{"summary": "plan: Mean first, then Median reusing a sorted copy", "text": "1. Mean with test\n2. Median with test"}},
		{OpVerify, statsGoal, 1, m{"checks": []any{m{"ref": "c2", "passed": true, "sigma": 0.9, "detail": "the plan keeps each function documented"}},
			"is_leaf": false, "leaf_reason": "two functions: decompose"}},
		{OpDecompose, statsGoal, 0, m{"children": []any{
			m{"ref": "m1", "goal": mean, "summary": "Add Mean", "weight": 1, "depends_on": []string{}},
			m{"ref": "m2", "goal": median, "summary": "Add Median", "weight": 1.5, "depends_on": []string{"m1"}}}, "rationale": "one function each"}},
		{OpIdentify, mean, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "tested function"}},
		{OpSelect, mean, 0, m{"selected": []string{"c1"}, "rationale": "the test decides"}},
		{OpRoute, mean, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "small function"}},
		{OpResolve, mean, 1, m{"summary": "Mean with a table test", "files": []any{
			m{"path": "mean.go", "content": "package stats\n\n// Mean is the arithmetic mean of xs (0 for none).\nfunc Mean(xs []float64) float64 {\n\tif len(xs) == 0 {\n\t\treturn 0\n\t}\n\ts := 0.0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s / float64(len(xs))\n}\n"},
			m{"path": "mean_test.go", "content": "package stats\n\nimport \"testing\"\n\nfunc TestMean(t *testing.T) {\n\tif got := Mean([]float64{1, 2, 6}); got != 3 {\n\t\tt.Fatalf(\"Mean = %v, want 3\", got)\n\t}\n}\n"}}}},
		leaf(mean, 1, true, ""),
		{OpIdentify, median, 0, m{"constraints": []any{goTest()}, "required_capabilities": []string{"generate_code"}, "rationale": "tested function"}},
		{OpSelect, median, 0, m{"selected": []string{"c1"}, "rationale": "the test decides"}},
		{OpRoute, median, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "small function"}},
		{OpResolve, median, 1, m{"summary": "Median (middle element)", "files": []any{
			m{"path": "median.go", "content": "package stats\n\n// Median is the middle value of xs.\nfunc Median(xs []float64) float64 {\n\treturn xs[len(xs)/2]\n}\n"},
			m{"path": "median_test.go", "content": "package stats\n\nimport \"testing\"\n\nfunc TestMedian(t *testing.T) {\n\tif got := Median([]float64{9, 1, 5}); got != 5 {\n\t\tt.Fatalf(\"Median = %v, want 5\", got)\n\t}\n}\n"}}}},
		leaf(median, 1, true, "Median must sort a copy of xs before taking the middle element"),
		{OpResolve, median, 2, m{"summary": "Median sorts a copy first", "files": []any{
			m{"path": "median.go", "content": "package stats\n\nimport \"sort\"\n\n// Median is the middle value of xs (mean of the two middle values for an even count).\nfunc Median(xs []float64) float64 {\n\ts := append([]float64(nil), xs...)\n\tsort.Float64s(s)\n\tn := len(s)\n\tif n%2 == 0 {\n\t\treturn (s[n/2-1] + s[n/2]) / 2\n\t}\n\treturn s[n/2]\n}\n"},
			m{"path": "median_test.go", "content": "package stats\n\nimport \"testing\"\n\nfunc TestMedian(t *testing.T) {\n\tif got := Median([]float64{9, 1, 5}); got != 5 {\n\t\tt.Fatalf(\"Median = %v, want 5\", got)\n\t}\n}\n"}}}},
		leaf(median, 2, true, ""),
		{OpConsistency, statsGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, statsGoal, 0, m{"summary": "package stats gains Mean and Median, each tested; go test ./... passes"}},
	}
}

const (
	OpIdentify    = loop.OpIdentify
	OpSelect      = loop.OpSelect
	OpRoute       = loop.OpRoute
	OpResolve     = loop.OpResolve
	OpVerify      = loop.OpVerify
	OpDecompose   = loop.OpDecompose
	OpGap         = loop.OpGap
	OpConsistency = loop.OpConsistency
	OpAssemble    = loop.OpAssemble
)

func workspace(t *testing.T, dir, module string) string {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module "+module+"\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func invariants(t *testing.T, dir, root string) {
	t.Helper()
	k, err := solve.Open(context.Background(), dbOf(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	bad, err := k.CheckInvariants(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("invariants violated:\n%s", strings.Join(bad, "\n"))
	}
}

func rootOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "root ") {
			return strings.TrimSuffix(strings.Fields(l)[1], ":")
		}
	}
	t.Fatalf("no root line in:\n%s", out)
	return ""
}

func TestRunSoftwareGoalDecomposesRetriesWithFeedbackAndPassesGoTest(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, dir string) {
		ws := workspace(t, dir, "example.com/stats")
		sc := writeScript(t, dir, statsSteps()...)
		r := runSolve(t, dir, "run", statsGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "30m")
		if r.code != 0 || !strings.Contains(r.stdout, "achieved") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		t.Logf("run:\n%s%s", r.stderr, r.stdout)
		root := rootOf(t, r.stdout)
		invariants(t, dir, root)
		if !strings.Contains(r.stderr, "RETRY 2/5 with feedback") {
			t.Errorf("Median's failing test did not lead to a retry with feedback:\n%s", r.stderr)
		}
		if !strings.Contains(r.stdout, "LLM calls: 20") {
			t.Errorf("want 20 LLM calls:\n%s", r.stdout)
		}
		data, err := os.ReadFile(filepath.Join(ws, "median.go"))
		if err != nil || !strings.Contains(string(data), "sort.Float64s") {
			t.Errorf("the workspace does not hold the fixed Median: %s %v", data, err)
		}
		st := runSolve(t, dir, "status", root)
		t.Logf("status:\n%s", st.stdout)
		if !strings.Contains(st.stdout, "resolved") || !strings.Contains(st.stdout, "outcome achieved") {
			t.Errorf("status:\n%s", st.stdout)
		}
	})
}
