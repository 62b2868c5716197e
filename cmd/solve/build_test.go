package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// csvWorkspace is a Go module holding NAME.csv and a test that NAME.json
// holds its records as objects keyed by the header (quoted commas kept).
func csvWorkspace(t *testing.T, dir, name, csvText, want string) string {
	t.Helper()
	ws := filepath.Join(dir, "ws-"+name)
	files := map[string]string{
		"go.mod":      "module example.com/" + name + "\n\ngo 1.22\n",
		name + ".csv": csvText,
		"convert_test.go": "package " + name + "\n\nimport (\n\t\"encoding/json\"\n\t\"os\"\n\t\"reflect\"\n\t\"testing\"\n)\n\n" +
			"func TestJSONMatchesCSV(t *testing.T) {\n\tdata, err := os.ReadFile(\"" + name + ".json\")\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n" +
			"\tvar got, want []map[string]string\n\tif err := json.Unmarshal(data, &got); err != nil {\n\t\tt.Fatal(err)\n\t}\n" +
			"\t_ = json.Unmarshal([]byte(`" + want + "`), &want)\n\tif !reflect.DeepEqual(got, want) {\n\t\tt.Fatalf(\"" + name + ".json = %v, want %v\", got, want)\n\t}\n}\n",
	}
	for p, c := range files {
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

const (
	peopleGoal = "Convert people.csv to people.json (an array of objects keyed by the header) in the workspace"
	citiesGoal = "Convert cities.csv to cities.json (an array of objects keyed by the header) in the workspace"
	buildGoal  = "Build resolver with capability: csv_to_json"
)

// csvTool is the built tool's source: convert every *.csv in a directory
// to .json. naive is the first, buggy version (splits on commas).
func csvTool(naive bool) []any {
	parse := "\trows, err := csv.NewReader(f).ReadAll()\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"%s: %w\", path, err)\n\t}\n"
	imports := "\t\"encoding/csv\"\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"os\"\n\t\"path/filepath\"\n\t\"strings\"\n"
	if naive {
		parse = "\tdata, err := io.ReadAll(f)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tvar rows [][]string\n" +
			"\tfor _, l := range strings.Split(strings.TrimSpace(string(data)), \"\\n\") {\n\t\trows = append(rows, strings.Split(l, \",\"))\n\t}\n"
		imports = "\t\"encoding/json\"\n\t\"fmt\"\n\t\"io\"\n\t\"os\"\n\t\"path/filepath\"\n\t\"strings\"\n"
	}
	main := "package main\n\nimport (\n" + imports + ")\n\n" +
		"// convert reads a CSV file with a header row: one object per record, keyed by the header.\n" +
		"func convert(path string) ([]map[string]string, error) {\n\tf, err := os.Open(path)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tdefer f.Close()\n" + parse +
		"\tout := []map[string]string{}\n\tif len(rows) == 0 {\n\t\treturn out, nil\n\t}\n\tfor _, r := range rows[1:] {\n\t\tm := map[string]string{}\n" +
		"\t\tfor i, h := range rows[0] {\n\t\t\tif i < len(r) {\n\t\t\t\tm[h] = r[i]\n\t\t\t}\n\t\t}\n\t\tout = append(out, m)\n\t}\n\treturn out, nil\n}\n\n" +
		"func main() {\n\tdir := \".\"\n\tif len(os.Args) > 1 {\n\t\tdir = os.Args[1]\n\t}\n\tpaths, _ := filepath.Glob(filepath.Join(dir, \"*.csv\"))\n\tfor _, p := range paths {\n" +
		"\t\trecs, err := convert(p)\n\t\tif err != nil {\n\t\t\tfmt.Fprintln(os.Stderr, err)\n\t\t\tos.Exit(1)\n\t\t}\n\t\tdata, _ := json.MarshalIndent(recs, \"\", \"  \")\n" +
		"\t\tout := strings.TrimSuffix(p, \".csv\") + \".json\"\n\t\tif err := os.WriteFile(out, append(data, '\\n'), 0o644); err != nil {\n\t\t\tfmt.Fprintln(os.Stderr, err)\n\t\t\tos.Exit(1)\n\t\t}\n\t\tfmt.Println(\"wrote\", out)\n\t}\n}\n"
	test := "package main\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"testing\"\n)\n\n" +
		"func TestConvertKeepsQuotedCommas(t *testing.T) {\n\tp := filepath.Join(t.TempDir(), \"x.csv\")\n" +
		"\tif err := os.WriteFile(p, []byte(\"name,age\\n\\\"Hopper, Grace\\\",85\\n\"), 0o644); err != nil {\n\t\tt.Fatal(err)\n\t}\n" +
		"\tgot, err := convert(p)\n\tif err != nil || len(got) != 1 || got[0][\"name\"] != \"Hopper, Grace\" || got[0][\"age\"] != \"85\" {\n\t\tt.Fatalf(\"convert = %v, %v\", got, err)\n\t}\n}\n"
	return []any{m{"path": "go.mod", "content": "module csv2json\n\ngo 1.22\n"}, m{"path": "main.go", "content": main}, m{"path": "main_test.go", "content": test}}
}

// buildSteps: the people goal fails T_max = 2 times with claude-code-0
// (the quoted comma), the gap is csv_to_json, the build subgoal's first
// tool fails its own test and is fixed, then the tool resolves the goal.
// The cities goal finds the tool by lookup-before-build.
func buildSteps() []step {
	tool := m{"label": "csv2json", "description": "converts every *.csv in the workspace to a .json array of objects keyed by the header (RFC 4180 quoting)",
		"capabilities": []string{"csv_to_json"}, "command": `go run -C "$SOLVE_TOOL_DIR" . "$PWD"`, "test_command": "go test ./..."}
	leafOK := m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one file produced by one command"}
	identify := func(goal string, caps ...string) step {
		return step{OpIdentify, goal, 0, m{"constraints": []any{m{"type": "logic", "domain": "software", "title": "the JSON test passes", "check": "go test ./..."}},
			"required_capabilities": caps, "rationale": "the workspace test decides the conversion"}}
	}
	return []step{
		identify(peopleGoal, "generate_code"),
		{OpSelect, peopleGoal, 0, m{"selected": []string{"c1"}, "rationale": "the test is the whole goal"}},
		{OpRoute, peopleGoal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "write the JSON file"}},
		{OpResolve, peopleGoal, 1, m{"summary": "people.json written by splitting lines on commas", "files": []any{
			m{"path": "people.json", "content": `[{"name":"Ada","age":"36"},{"name":"\"Hopper","age":" Grace\""}]`}}}},
		{OpVerify, peopleGoal, 1, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one file", "feedback": "the quoted field \"Hopper, Grace\" was split at its comma"}},
		{OpResolve, peopleGoal, 2, m{"summary": "people.json with quotes stripped", "files": []any{
			m{"path": "people.json", "content": `[{"name":"Ada","age":"36"},{"name":"Hopper","age":"Grace"}]`}}}},
		{OpVerify, peopleGoal, 2, m{"checks": []any{}, "is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one file", "feedback": "still split at the quoted comma"}},
		{OpGap, peopleGoal, 0, m{"capability_tag": "csv_to_json", "resolver_type": "digital",
			"build_constraints": []string{"parses RFC 4180 CSV, quoted fields with commas included", "its own go test covers a quoted comma"},
			"rationale":         "hand-writing JSON from CSV keeps breaking on quoting; a tested converter using encoding/csv is reliable and reusable"}},
		{OpIdentify, buildGoal, 0, m{"constraints": []any{}, "required_capabilities": []string{"generate_code"}, "rationale": "the build constraints cover it"}},
		{OpSelect, buildGoal, 0, m{"selected": []string{"c1", "c2"}, "rationale": "both are the tool's contract"}},
		{OpRoute, buildGoal, 0, m{"resolver_id": "claude-code-0", "capability": "generate_code", "rationale": "write a small Go command"}},
		{OpResolve, buildGoal, 1, m{"summary": "csv2json splitting on commas", "files": csvTool(true), "tool": tool}},
		{OpVerify, buildGoal, 1, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.8, "detail": "reads a header row"}, m{"ref": "c2", "passed": true, "sigma": 0.9, "detail": "has a quoted-comma test"}},
			"is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one command", "feedback": "the tool's own test fails: use encoding/csv instead of strings.Split"}},
		{OpResolve, buildGoal, 2, m{"summary": "csv2json with encoding/csv", "files": csvTool(false), "tool": tool}},
		{OpVerify, buildGoal, 2, m{"checks": []any{m{"ref": "c1", "passed": true, "sigma": 0.95, "detail": "encoding/csv handles RFC 4180"}, m{"ref": "c2", "passed": true, "sigma": 0.95, "detail": "the quoted-comma test passes"}},
			"is_leaf": true, "leaf_kind": "atomic", "leaf_reason": "one command with its test"}},
		{OpVerify, peopleGoal, 3, leafOK},
		{OpConsistency, peopleGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, peopleGoal, 0, m{"summary": "people.json written by the built csv2json tool; go test passes"}},

		identify(citiesGoal, "csv_to_json"),
		{OpSelect, citiesGoal, 0, m{"selected": []string{"c1"}, "rationale": "the test is the whole goal"}},
		{OpRoute, citiesGoal, 0, m{"resolver_id": "", "capability": "", "rationale": "the history shows hand-written JSON failing on quoting for this kind of goal",
			"gap": m{"capability_tag": "csv_to_json", "resolver_type": "digital", "build_constraints": []string{"parses RFC 4180 CSV"}, "rationale": "needs a CSV converter"}}},
		{OpVerify, citiesGoal, 1, leafOK},
		{OpConsistency, citiesGoal, 0, m{"verdict": "SAT", "conflicts": []any{}}},
		{OpAssemble, citiesGoal, 0, m{"summary": "cities.json written by csv2json"}},
	}
}

var llmCalls = regexp.MustCompile(`LLM calls: (\d+)`)

func callCount(t *testing.T, out string) int {
	t.Helper()
	mm := llmCalls.FindStringSubmatch(out)
	if mm == nil {
		t.Fatalf("no LLM call count in:\n%s", out)
	}
	n, _ := strconv.Atoi(mm[1])
	return n
}

// T_max exhausted → BUILD: the tool is built by a subgoal of the same
// loop, registered only after its own go test passes, resolves the goal;
// a second, similar goal finds it by lookup-before-build with fewer LLM
// calls.
func TestTmaxExhaustedBuildsATestedToolThatASimilarGoalReusesWithFewerCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws1 := csvWorkspace(t, dir, "people", "name,age\nAda,36\n\"Hopper, Grace\",85\n", `[{"name":"Ada","age":"36"},{"name":"Hopper, Grace","age":"85"}]`)
	ws2 := csvWorkspace(t, dir, "cities", "city,country\n\"Washington, D.C.\",US\nLyon,FR\n", `[{"city":"Washington, D.C.","country":"US"},{"city":"Lyon","country":"FR"}]`)
	sc := writeScript(t, dir, buildSteps()...)

	a := runSolve(t, dir, "run", peopleGoal, "--provider", "script", "--script", sc, "--workspace", ws1, "--budget", "5", "--time", "1h", "--tmax", "2")
	if a.code != 0 || !strings.Contains(a.stdout, ": achieved") {
		t.Fatalf("first goal: exit %d\n%s\n%s", a.code, a.stdout, a.stderr)
	}
	rootA := rootOf(t, a.stdout)
	invariants(t, dir, rootA)
	t.Logf("first run:\n%s%s", a.stderr, a.stdout)
	for _, want := range []string{"T_max exhausted after 2 attempts: BUILD", "BUILD: no resolver provides csv_to_json", "BUILD: registered tool-csv_to_json-1", "SELECT_RESOLVER → tool-csv_to_json-1"} {
		if !strings.Contains(a.stderr, want) {
			t.Errorf("first run lacks %q:\n%s", want, a.stderr)
		}
	}
	db := openDB(t, dir)
	// Registered once, after the second build attempt's go test passed.
	if n := count(t, db, "SELECT COUNT(*) FROM resolvers WHERE built_by = 'system'"); n != 1 {
		t.Errorf("%d built resolvers, want 1", n)
	}
	var buildAttempts int
	var firstVerdict string
	if err := db.QueryRow(`SELECT n.attempt_count, (SELECT verdict FROM resolution_attempts WHERE node_id = n.id AND attempt_index = 1)
		FROM nodes n WHERE n.goal_summary = 'Build resolver: csv_to_json'`).Scan(&buildAttempts, &firstVerdict); err != nil {
		t.Fatal(err)
	}
	if buildAttempts != 2 || firstVerdict != "UNSAT" {
		t.Errorf("build subgoal: %d attempts, first %s; want 2 with the first UNSAT (its tool's test failed)", buildAttempts, firstVerdict)
	}
	for _, e := range []string{"resolver:tool-csv_to_json-1|provides|capability:csv_to_json", "resolver:tool-csv_to_json-1|built_by|resolver:claude-code-0",
		"resolver:claude-code-0|replaced_by|resolver:tool-csv_to_json-1", "resolver:tool-csv_to_json-1|composed_of|resolver:codex-tools-0"} {
		p := strings.Split(e, "|")
		if count(t, db, "SELECT COUNT(*) FROM kg_edges WHERE source_id = ? AND relation = ? AND target_id = ?", p[0], p[1], p[2]) == 0 {
			t.Errorf("no KG edge %s", e)
		}
	}
	// The workspace's go test judged what the tool did (σ 1.0), not the model.
	var ver string
	if err := db.QueryRow("SELECT verification FROM nodes WHERE id = ?", rootA).Scan(&ver); err != nil || !strings.Contains(ver, `"command":"go test ./..."`) || !strings.Contains(ver, `"passed":true`) {
		t.Errorf("the goal's go test did not run on the tool's work: %s %v", ver, err)
	}
	if data, err := os.ReadFile(filepath.Join(ws1, "people.json")); err != nil || !strings.Contains(string(data), `"Hopper, Grace"`) {
		t.Errorf("people.json was not written by the tool: %s %v", data, err)
	}

	b := runSolve(t, dir, "run", citiesGoal, "--provider", "script", "--script", sc, "--workspace", ws2, "--budget", "5", "--time", "1h", "--tmax", "2")
	if b.code != 0 || !strings.Contains(b.stdout, ": achieved") {
		t.Fatalf("second goal: exit %d\n%s\n%s", b.code, b.stdout, b.stderr)
	}
	invariants(t, dir, rootOf(t, b.stdout))
	if !strings.Contains(b.stderr, "LOOKUP-BEFORE-BUILD: tool-csv_to_json-1 provides csv_to_json") || strings.Contains(b.stderr, "BUILD: no resolver") {
		t.Errorf("the second goal did not find the tool by lookup-before-build:\n%s", b.stderr)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM resolvers WHERE built_by = 'system'"); n != 1 {
		t.Errorf("%d built resolvers after the second goal, want the one reused", n)
	}
	first, second := callCount(t, a.stdout), callCount(t, b.stdout)
	t.Logf("LLM calls: first goal %d (with BUILD), second goal %d (lookup-before-build)", first, second)
	// Each scripted answer is one call, counted once: 18 for the first goal
	// (8 before BUILD, 7 for the build subgoal, 3 after), 6 for the second.
	if first != 18 || second != 6 {
		t.Errorf("LLM calls %d and %d, want 18 and 6 (one per scripted answer)", first, second)
	}
	if second >= first {
		t.Errorf("the second goal used %d LLM calls, the first %d: reuse should cost fewer", second, first)
	}
	if data, err := os.ReadFile(filepath.Join(ws2, "cities.json")); err != nil || !strings.Contains(string(data), `"Washington, D.C."`) {
		t.Errorf("cities.json: %s %v", data, err)
	}
}
