package main_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// What a person sees: solve status shows an achieved root as achieved
// (not pending), each node's money apart (its own spend, what it was
// allocated, what it delegated, its reserve), its goal and timestamps;
// solve log names each row's goal; solve run writes a report (tree,
// critical path; Markdown, Mermaid, SVG) like solve plan.
func TestStatusLogAndReportShowWhatARunDid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/stats")
	sc := writeScript(t, dir, statsSteps()...)
	r := runSolve(t, dir, "run", statsGoal, "--provider", "script", "--script", sc, "--workspace", ws, "--budget", "5", "--time", "30m")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	root := rootOf(t, r.stdout)
	st := runSolve(t, dir, "status", root)
	lines := strings.Split(st.stdout, "\n")
	if !strings.HasPrefix(lines[0], root[:8]+" achieved · σ_v 0.90 σ_path 0.90 · spent $") {
		t.Errorf("the achieved root's line: %q", lines[0])
	}
	for _, want := range []string{"· allocated $5.0000 · delegated $", "· reserve $", "created 20", ", resolved 20",
		"  Add Mean — Add Mean(xs []float64) float64 with a test", "attempts 2/5", "\nconfinement of commands on this machine: "} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st.stdout)
		}
	}
	if strings.Contains(lines[0], "pending") {
		t.Errorf("the achieved root shows pending: %q", lines[0])
	}
	var js struct {
		Nodes []struct {
			State        string  `json:"state"`
			SpentUSD     float64 `json:"spent_usd"`
			AllocatedUSD float64 `json:"allocated_usd"`
			DelegatedUSD float64 `json:"delegated_usd"`
			ReserveUSD   float64 `json:"reserve_usd"`
			Goal         string  `json:"goal"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(runSolve(t, dir, "status", root, "--json").stdout), &js); err != nil {
		t.Fatal(err)
	}
	rootNode := js.Nodes[0]
	// The root's own calls cost cents; what it handed its children is
	// delegated, not spent (before: "spent $3.99 of $5").
	if rootNode.State != "achieved" || rootNode.SpentUSD > 0.5 || rootNode.DelegatedUSD < 3 ||
		abs(rootNode.AllocatedUSD-rootNode.SpentUSD-rootNode.DelegatedUSD-rootNode.ReserveUSD) > 1e-9 {
		t.Errorf("root %+v", rootNode)
	}
	lg := runSolve(t, dir, "log", "--tier", "1")
	if !strings.Contains(lg.stdout, "T1 (Add Median) Node ") || strings.Contains(lg.stdout, "T1 () ") {
		t.Errorf("log rows do not name their goal:\n%s", lg.stdout)
	}
	// The spec's resolver ids name programs that never run: every view
	// that shows them says once what they are.
	const modelCall, shellRunner = "claude-code-0 is an API call to the model", "codex-tools-0 is"
	if strings.Count(lg.stdout, modelCall) != 1 || strings.Contains(lg.stdout, shellRunner) || !strings.HasSuffix(lg.stdout, "(not the Claude Code program)\n") {
		t.Errorf("the log does not say once what its resolvers are:\n%s", lg.stdout)
	}
	rs := runSolve(t, dir, "resolvers")
	help := runSolve(t, dir, "resolvers", "--help")
	if strings.Count(rs.stdout, "an API call to the model") != 1 || strings.Count(rs.stdout, "a shell runner") != 1 ||
		!strings.Contains(help.stdout, "claude-code-0 is an API call to the\nmodel") {
		t.Errorf("resolvers:\n%s\nhelp:\n%s", rs.stdout, help.stdout)
	}
	report := "run-" + root[:8]
	if !strings.Contains(r.stdout, "report: "+report+".json, "+report+".md, "+report+".mmd, "+report+".svg") {
		t.Errorf("the run did not say where its report is:\n%s", r.stdout)
	}
	md, err := os.ReadFile(filepath.Join(dir, report+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Run: " + statsGoal, "**achieved** · σ_system 0.90", "## Tree", "| `" + root[:8] + "` | " + statsGoal + " | achieved | 0.90 |",
		"· Add Median — Add Median(xs \\[\\]float64) float64 with a test | resolved |", "## Critical path", root[:8] + " → ", "```mermaid\n", "flowchart TB"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, report+".svg"))
	if err != nil || !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), ": critical path ") || !strings.Contains(string(svg), "Add Median") {
		t.Errorf("the Gantt chart: %v\n%.300s", err, svg)
	}
	// A run of seconds is drawn in seconds or milliseconds (before: an axis
	// of 0.0002h), with one finish line where low, mid and high agree,
	// no row for the run's end, and a legend of only what is drawn.
	var texts []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(string(svg), -1) {
		texts = append(texts, m[1])
	}
	axis := regexp.MustCompile(`^[0-9.]+(ms|s|min|h)$`)
	units := map[string]bool{}
	for _, x := range texts {
		if m := axis.FindStringSubmatch(x); m != nil {
			units[m[1]] = true
		}
	}
	all := strings.Join(texts, "\n")
	if len(units) != 1 || units["h"] || units["min"] || !strings.Contains(all, "finish ") || strings.Contains(all, "low ") || strings.Contains(all, "high ") ||
		strings.Contains(all, "the run's end") || strings.Contains(all, "Whisker") || strings.Contains(all, "time limit") || strings.Contains(all, "swapped") {
		t.Errorf("the Gantt chart of a short run (axis units %v):\n%s", units, all)
	}
	mmd, err := os.ReadFile(filepath.Join(dir, report+".mmd"))
	if err != nil || !strings.Contains(string(mmd), "class ") {
		t.Errorf("the Mermaid chart: %v\n%s", err, mmd)
	}
	// solve report writes the same for any run, reading only.
	again := runSolve(t, dir, "report", root[:8], "--out", "again.json")
	if again.code != 0 || !strings.Contains(again.stdout, "again.md") {
		t.Errorf("solve report: exit %d %s%s", again.code, again.stdout, again.stderr)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The gating scenario's status lists what changed the tree: the gating
// and the reopened ancestor, with times.
func TestStatusShowsReopensAndGating(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := writeScript(t, dir, gatingSteps()...)
	r := runSolve(t, dir, "run", runbookGoal, "--provider", "script", "--script", sc, "--budget", "5", "--time", "1h", "--no-report")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	st := runSolve(t, dir, "status", rootOf(t, r.stdout))
	for _, want := range []string{"events:\n", `"Dual-write phase": σ_path 0.38 < τ_global 0.50; backtracked to `, `"Cutover procedure": reopened to selecting_resolver`,
		"reopened 1×", "invalidated"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "run-"+rootOf(t, r.stdout)[:8]+".md")); err == nil {
		t.Error("--no-report wrote a report")
	}
}

// A run's report holds goals and summaries as text, whatever they say:
// the SVG parses with only the chart's elements, the Mermaid labels keep
// their quotes, every Markdown table row has its header's cells, and no
// tag or heading comes from a goal.
func TestRunReportHoldsHostileGoals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/stats")
	goal := `Add Mean | and "Median" <script>alert(1)</script> ]) %%{init: {"theme":"dark"}}%% #35; ` + "`x`\n## injected\n| a | b |"
	child := `Add <img src=x onerror=alert(1)> | Median"] --> n0["`
	steps := statsSteps()
	for i, s := range steps {
		switch s.goal {
		case statsGoal:
			steps[i].goal = goal
		case "Add Median(xs []float64) float64 with a test":
			steps[i].goal = child
		}
		if s.op == OpDecompose {
			kids := s.answer.(m)["children"].([]any)
			kids[1].(m)["goal"], kids[1].(m)["summary"] = child, child
		}
		if s.op == OpAssemble {
			steps[i].answer = m{"summary": "done | <b>bold</b>\n# heading"}
		}
	}
	r := runSolve(t, dir, "run", goal, "--provider", "script", "--script", writeScript(t, dir, steps...), "--workspace", ws, "--budget", "5", "--time", "30m")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	base := filepath.Join(dir, "run-"+rootOf(t, r.stdout)[:8])
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
		if e, ok := tok.(xml.StartElement); ok && !slices.Contains([]string{"svg", "rect", "text", "line", "title"}, e.Name.Local) {
			t.Errorf("element <%s> in the SVG", e.Name.Local)
		}
	}
	mmd, err := os.ReadFile(base + ".mmd")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(mmd)), "\n") {
		if label, ok := strings.CutPrefix(strings.TrimLeft(l, " n0123456789"), `["`); ok {
			if !strings.HasSuffix(label, `"]`) || strings.ContainsAny(strings.TrimSuffix(label, `"]`), "\"<>`|%") && !strings.Contains(label, "<br/>") {
				t.Errorf("label line %q", l)
			}
			if strings.Contains(label, "<script") || strings.Contains(label, "<img") || strings.Count(label, `"`) != 1 {
				t.Errorf("label line %q lets markup through", l)
			}
		}
	}
	md, err := os.ReadFile(base + ".md")
	if err != nil {
		t.Fatal(err)
	}
	header := 0
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "## ") && !slices.Contains([]string{"## Tree", "## Critical path", "## Events", "## Tree as a flowchart"}, l) {
			t.Errorf("a heading the report does not write: %q", l)
		}
		if regexp.MustCompile(`(^|[^\\])<(script|img|b>)`).MatchString(l) {
			t.Errorf("a tag in the report: %q", l)
		}
		if !strings.HasPrefix(l, "|") {
			header = 0
			continue
		}
		n := strings.Count(l, "|") - strings.Count(l, `\|`)
		if header == 0 {
			header = n
		} else if n != header {
			t.Errorf("a row with %d cell borders under a header with %d: %q", n, header, l)
		}
	}
}

// What the model says reaches the terminal inert: a summary that would
// retitle the window and clear the screen shows its escapes as text in
// run's result, the live view, status and log (docs/configuration.md).
func TestModelTextReachesTheTerminalInert(t *testing.T) {
	t.Parallel()
	const hostile = "\x1b]0;pwned\x07\x1b[2J"
	dir := t.TempDir()
	ws := workspace(t, dir, "example.com/mathx")
	steps := clampSteps()
	for i, s := range steps {
		switch s.op {
		case OpResolve:
			steps[i].answer.(m)["summary"] = "Clamp" + hostile
		case OpAssemble:
			steps[i].answer = m{"summary": "mathx gains Clamp" + hostile}
		}
	}
	r := runSolve(t, dir, "run", clampGoal, "--provider", "script", "--script", writeScript(t, dir, steps...), "--workspace", ws, "--budget", "5", "--time", "30m")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `mathx gains Clamp\x1b]0;pwned\a\x1b[2J`) {
		t.Errorf("run does not show the summary's escapes as text:\n%q", r.stdout)
	}
	root := rootOf(t, r.stdout)
	st := runSolve(t, dir, "status", root)
	lg := runSolve(t, dir, "log", "--tier", "3")
	for name, s := range map[string]string{"run stdout": r.stdout, "run stderr": r.stderr, "status": st.stdout + st.stderr, "log": lg.stdout + lg.stderr} {
		if strings.ContainsAny(s, "\x1b\x07") {
			t.Errorf("%s printed a raw control character:\n%q", name, s)
		}
	}
}
