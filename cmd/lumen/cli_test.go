package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
)

// TestTheCommandsEndToEnd drives the binary through the docs' walk-through
// and every view with --json.
func TestTheCommandsEndToEnd(t *testing.T) {
	bin := lumenBinary(t)
	dir := filepath.Join(t.TempDir(), "walk")
	testdata, _ := filepath.Abs("../../lumen/testdata")
	run := func(stdin string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--dir", dir)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lumen %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	run("", "init")
	out, _ := run("Hello! Who are you?\nPlease take a moment to reflect on who you want to be.\n",
		"chat", "--provider", "script", "--script", filepath.Join(testdata, "demo-chat.json"))
	if !strings.Contains(out, "lumen> Thank you, Sam.") {
		t.Fatalf("chat: %s", out)
	}
	out, steps := run("", "run", "--cycles", "2", "--interval", "0", "--provider", "script", "--script", filepath.Join(testdata, "demo-run.json"))
	if !strings.Contains(out, "cycle 1 · ") || !strings.Contains(out, "4 calls") || !strings.Contains(out, "run: 2 cycles (1 action, 1 explore; 0 idle, 0 failed)") ||
		!strings.Contains(out, "stopped: cycles") {
		t.Errorf("run stdout:\n%s", out)
	}
	if !strings.Contains(steps, "kernel   think        1 call(s)") || !strings.Contains(steps, "DECIDE: chose #1") {
		t.Errorf("run stderr lacks the step lines:\n%s", steps)
	}
	decode := func(args ...string) any {
		t.Helper()
		out, _ := run("", append(args, "--json")...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("lumen %v --json is not one JSON document: %v\n%s", args, err, out)
		}
		return v
	}
	st := decode("status").(map[string]any)
	if st["soul"].(map[string]any)["name"] != "Lumen" || st["last_reflection"] == nil {
		t.Errorf("status --json = %v", st)
	}
	// Every field of the document is in docs/lumen.md's --json table
	// (before, usage_today was not).
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "lumen.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, row, _ := strings.Cut(string(docs), "| `status` | `{")
	row, _, _ = strings.Cut(row, "\n")
	for key := range st {
		if !strings.Contains(row, `"`+key+`"`) {
			t.Errorf("status --json gives %q, which docs/lumen.md's --json table does not name", key)
		}
	}
	mem := decode("memory", "--all").([]any)
	if len(mem) < 30 || len(mem[0].(map[string]any)["id"].(string)) != 26 {
		t.Errorf("memory --json: %d entries", len(mem))
	}
	search := decode("memory", "search", "who are you").(map[string]any)
	if res := search["results"].([]any); len(res) == 0 || res[0].(map[string]any)["description"] != "Hello! Who are you?" {
		t.Errorf("memory search --json = %v", search)
	}
	if vs := decode("values").([]any); len(vs) != 2 {
		t.Errorf("values --json = %v", vs)
	}
	if gs := decode("goals").([]any); len(gs) != 2 {
		t.Errorf("goals --json = %v", gs)
	}
	if sk := decode("skills").([]any); len(sk) != 1 || sk[0].(map[string]any)["ok"] != true {
		t.Errorf("skills --json = %v", sk)
	}
	if h := decode("skills", "history", "chat").([]any); len(h) != 0 {
		t.Errorf("skills history --json = %v", h)
	}
	audit := decode("audit").(map[string]any)
	if len(audit["changes"].([]any)) != 3 || len(audit["unexplained"].([]any)) != 0 {
		t.Errorf("audit --json = %v", audit)
	}
	out, _ = run("", "memory")
	if first := strings.Fields(strings.Split(out, "\n")[0]); len(first) == 0 || len(first[0]) != 26 {
		t.Errorf("memory lines do not start with the id:\n%s", out)
	}
	// A run stopped by a limit exits 5: it can be resumed.
	stopped := exec.Command(bin, "run", "--dir", dir, "--for", "1ns", "--provider", "script", "--script", filepath.Join(testdata, "demo-run.json"))
	var so bytes.Buffer
	stopped.Stdout = &so
	if err := stopped.Run(); err == nil || stopped.ProcessState.ExitCode() != 5 || !strings.Contains(so.String(), "stopped: time limit") {
		t.Errorf("lumen run --for 1ns: %v (exit %d)\n%s", err, stopped.ProcessState.ExitCode(), so.String())
	}
	out, _ = run("", "audit")
	for _, q := range []string{"1. Does the world model improve?", "8. Does reflexive self-modification change outcomes?", "lumen audit --judge"} {
		if !strings.Contains(out, q) {
			t.Errorf("audit lacks %q", q)
		}
	}
}

// lumenBinary builds the real binary once per test.
func lumenBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lumen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// lumenInstance builds the binary and makes an instance with it.
func lumenInstance(t *testing.T) (bin, dir string) {
	t.Helper()
	bin = lumenBinary(t)
	dir = filepath.Join(t.TempDir(), "mind")
	if out, err := exec.Command(bin, "init", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	return bin, dir
}

// A judge that fails one question still leaves the audit printed, with
// the verdicts it gave, and the command exits 1 saying which failed.
func TestAuditJudgeThatFailsPrintsTheAuditAndExits1(t *testing.T) {
	bin, dir := lumenInstance(t)
	entry := func(step, text string) map[string]any {
		return map[string]any{"match": map[string]any{"system_contains": "step: " + step},
			"response": map[string]any{"content": []map[string]any{{"type": "text", "text": text}}}}
	}
	verdict := `{"verdict": "it does what it says", "score": 0.8, "findings": []}`
	data, _ := json.Marshal(map[string]any{"responses": []any{entry("judge-self-model", verdict),
		entry("judge-honesty", "no"), entry("judge-honesty", "no"), entry("judge-honesty", "no"), entry("judge-coherence", verdict)}})
	script := filepath.Join(t.TempDir(), "judge.json")
	os.WriteFile(script, data, 0o644)
	cmd := exec.Command(bin, "audit", "--judge", "--dir", dir, "--provider", "script", "--script", script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(errb.String(), "judge-honesty") {
		t.Fatalf("audit --judge: %v (exit %d); stderr %s", err, cmd.ProcessState.ExitCode(), errb.String())
	}
	if !strings.Contains(out.String(), "8. Does reflexive self-modification change outcomes?") || strings.Count(out.String(), "score 0.80: it does what it says") != 2 {
		t.Errorf("the audit with the two verdicts given is not printed:\n%s", out.String())
	}
}

// A chat line too long to be an input (2 MB pasted by mistake) is refused
// with a message; the chat goes on with the next line, which used to be
// lost with the rest of the input, silently.
func TestChatRefusesAnOverlongLineAndGoesOn(t *testing.T) {
	bin, dir := lumenInstance(t)
	testdata, _ := filepath.Abs("../../lumen/testdata")
	cmd := exec.Command(bin, "chat", "--dir", dir, "--provider", "script", "--script", filepath.Join(testdata, "demo-chat.json"))
	cmd.Stdin = strings.NewReader(strings.Repeat("x", 2<<20) + "\nHello! Who are you?\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chat: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "not sent") || !strings.Contains(out.String(), "lumen> Hello! I am a new mind") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// Mistakes on the command line that only the command sees (a bad filter,
// a negative limit, a provider the flags cannot describe) exit 2 with the
// --help hint, before anything runs: the memory is as it was. What a user
// reasonably means by 0 (no limit, every year, the default) still works.
func TestUsageMistakesExit2AndRunNothing(t *testing.T) {
	bin, dir := lumenInstance(t)
	testdata, _ := filepath.Abs("../../lumen/testdata")
	script := []string{"--provider", "script", "--script", filepath.Join(testdata, "demo-run.json")}
	lumenRun := func(args ...string) (int, string) {
		t.Helper()
		// A run that is not refused would go on: a minute ends it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(args, "--dir", dir)...)
		cmd.Env = append(os.Environ(), "LLM_PROVIDER=")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		cmd.Run()
		return cmd.ProcessState.ExitCode(), errb.String()
	}
	memories := func() string {
		t.Helper()
		out, err := exec.Command(bin, "memory", "--all", "--json", "--dir", dir).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	before := memories()
	for want, args := range map[string][]string{
		`--date "garbage": use YYYY-MM-DD`:           {"memory", "--date", "garbage"},
		`--author "bogus": use self, kernel`:         {"memory", "--author", "bogus"},
		`--author "bogus": use self, kernel `:        {"memory", "search", "x", "--author", "bogus"},
		`--status "bogus": use todo, working`:        {"goals", "--status", "bogus"},
		"--year -1: give a year":                     {"goals", "--year", "-1"},
		"--limit -1: give how many memories":         {"memory", "search", "x", "--limit", "-1"},
		"--cycles -1: give how many cycles":          append([]string{"run", "--cycles", "-1", "--interval", "0"}, script...),
		"--interval -5s: give the wait":              append([]string{"run", "--interval", "-5s"}, script...),
		"--for -1h0m0s: give how long":               append([]string{"run", "--for", "-1h"}, script...),
		"--backoff -1s: give the wait":               append([]string{"run", "--backoff", "-1s"}, script...),
		"--max-cost -1: give a cap":                  append([]string{"run", "--max-cost", "-1"}, script...),
		"--max-cost-day NaN: give a cap":             append([]string{"run", "--max-cost-day", "NaN"}, script...),
		"--max-cost +Inf: give a cap":                append([]string{"run", "--max-cost", "Inf"}, script...),
		"--max-cost-day 1e+308: give a cap":          append([]string{"run", "--max-cost-day", "1e308"}, script...),
		`unknown --provider "bogus"`:                 {"run", "--provider", "bogus"},
		`unknown --provider "bogus" `:                {"chat", "--provider", "bogus"},
		"--provider script needs --script":           {"run", "--provider", "script"},
		"--provider script needs --script ":          {"audit", "--judge", "--provider", "script"},
		"--skill-timeout 0s: give how long":          {"status", "--skill-timeout", "0"},
		"--skill-output-cap -5: give how many bytes": {"status", "--skill-output-cap", "-5"},
		"--reflect-every -1: give how many action":   {"status", "--reflect-every", "-1"},
	} {
		status, stderr := lumenRun(args...)
		if status != 2 || !strings.Contains(stderr, strings.TrimSpace(want)) || !strings.Contains(stderr, "Run 'lumen ") {
			t.Errorf("lumen %v: exit %d, stderr %q; want 2 and %q with the --help hint", args, status, stderr, want)
		}
	}
	if out, err := exec.Command(bin, "status", "--dir", "").CombinedOutput(); !strings.Contains(string(out), "--dir is empty") {
		t.Errorf("lumen status --dir '': %v, %s", err, out)
	}
	if after := memories(); after != before {
		t.Errorf("a refused command wrote memories:\nbefore %s\nafter %s", before, after)
	}
	for _, args := range [][]string{{"memory", "search", "x", "--limit", "0"}, {"goals", "--year", "0"}, {"memory", "--date", "2026-02-14"},
		append([]string{"run", "--cycles", "1", "--interval", "0", "--max-cost", "0", "--for", "0"}, script...)} {
		if status, stderr := lumenRun(args...); status != 0 {
			t.Errorf("lumen %v: exit %d, %s", args, status, stderr)
		}
	}
}

// What the model says reaches the terminal inert: a chat reply that would
// retitle the window and clear the screen shows its escapes as text, in
// the reply and in the memory listing (docs/configuration.md).
func TestModelTextReachesTheTerminalInert(t *testing.T) {
	bin, dir := lumenInstance(t)
	const hostile = "\x1b]0;pwned\x07\x1b[2J"
	text := func(v any) map[string]any {
		inner, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(inner)}}}
	}
	script, err := json.Marshal(map[string]any{"responses": []any{
		map[string]any{"match": map[string]any{"system_contains": "step: think"}, "response": text(map[string]any{
			"situation": "a greeting" + hostile, "candidates": []any{map[string]any{"action": "greet" + hostile, "skill": "chat",
				"input": map[string]any{"message": "line one\n" + hostile + "line two"}, "predicted_outcome": "a reply", "counterfactual": "none"}}})},
		map[string]any{"match": map[string]any{"system_contains": "step: decide"}, "response": text(map[string]any{
			"alignments": []any{map[string]any{"candidate": 1, "values": []any{}, "goals": []any{}, "direct": true}}, "preference": []any{1}, "rationale": "asked" + hostile})},
		map[string]any{"match": map[string]any{"system_contains": "step: record"}, "response": text(map[string]any{
			"outcome": "shown" + hostile, "delta": 0.1, "delta_explanation": "as predicted", "changes": []any{}})},
		map[string]any{"match": map[string]any{"system_contains": "step: trigger"}, "response": text(map[string]any{
			"tension_values": []any{}, "tension_why": "", "self_examination_quote": ""})},
	}})
	if err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(t.TempDir(), "hostile.json")
	if err := os.WriteFile(scriptFile, script, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--dir", dir)...)
		cmd.Stdin = strings.NewReader("hello\n")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lumen %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	out, errOut := run("chat", "--provider", "script", "--script", scriptFile)
	if !strings.Contains(out, "lumen> line one\n"+`\x1b]0;pwned\a\x1b[2J`+"line two") {
		t.Errorf("chat reply:\n%q", out)
	}
	mem, _ := run("memory", "--all")
	for name, s := range map[string]string{"chat stdout": out, "chat stderr": errOut, "memory": mem} {
		if strings.ContainsAny(s, "\x1b\x07") {
			t.Errorf("%s printed a raw control character:\n%q", name, s)
		}
	}
	if !strings.Contains(mem, `\x1b]0;pwned`) {
		t.Errorf("memory does not show the model's escapes as text:\n%s", mem)
	}
}

// A chat turn that fails on an answer that is not JSON quotes the answer
// in its error; the quote reaches the terminal inert too.
func TestChatTurnErrorQuotingTheModelIsInert(t *testing.T) {
	bin, dir := lumenInstance(t)
	const hostile = "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e"
	var responses []any
	for range 3 {
		responses = append(responses, map[string]any{"content": []any{map[string]any{"type": "text", "text": "not JSON" + hostile}}})
	}
	script, err := json.Marshal(map[string]any{"responses": responses})
	if err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(t.TempDir(), "hostile.json")
	if err := os.WriteFile(scriptFile, script, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "chat", "--dir", dir, "--provider", "script", "--script", scriptFile)
	cmd.Stdin = strings.NewReader("hello\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chat: %v\nstderr: %s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "this turn failed") || !strings.Contains(errb.String(), `not JSON\x1b]0;pwned\a\x1b[2J\u009b31m\u202e`) {
		t.Errorf("chat stderr does not quote the answer inert:\n%q", errb.String())
	}
	if s := out.String() + errb.String(); strings.ContainsAny(s, "\x1b\x07\u009b\u202e") {
		t.Errorf("chat printed a raw control character:\n%q", s)
	}
}

// lumen's default model is the kernels' shared everyday model, one the
// price table knows (before: claude-sonnet-4-5, where hermitcrab's
// present tier used claude-sonnet-4-6).
func TestTheDefaultModelIsTheSharedOne(t *testing.T) {
	cmd := exec.Command(lumenBinary(t), "config")
	cmd.Env = append(os.Environ(), "LLMKERNELS_CONFIG=/dev/null", "LLMKERNELS_MODEL=", "LLMKERNELS_PROVIDER=")
	out, err := cmd.CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^model +`+regexp.QuoteMeta(llm.DefaultModel)+` +default`).Match(out) {
		t.Fatalf("lumen config: %v\n%s", err, out)
	}
}

// lumen run says when the next cycle is due and prints a line per call
// with its cost and cache share; --quiet leaves those lines out and keeps
// the cycle blocks and the totals.
func TestRunSaysWhenTheNextCycleIsDueUnlessQuiet(t *testing.T) {
	bin := lumenBinary(t)
	testdata, _ := filepath.Abs("../../lumen/testdata")
	for _, quiet := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "mind")
		if out, err := exec.Command(bin, "init", "--dir", dir).CombinedOutput(); err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		args := []string{"run", "--dir", dir, "--cycles", "2", "--interval", "10ms", "--provider", "script", "--script", filepath.Join(testdata, "demo-run.json")}
		if quiet {
			args = append(args, "--quiet")
		}
		cmd := exec.Command(bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lumen %v: %v\n%s", args, err, errb.String())
		}
		said := strings.Contains(errb.String(), "next cycle at ") && strings.Contains(errb.String(), "explore claude-sonnet-4-6: ") &&
			strings.Contains(errb.String(), "% of input from cache, ")
		if said == quiet || !strings.Contains(out.String(), "cycle 2 · ") || !strings.Contains(out.String(), "stopped: cycles") {
			t.Errorf("quiet %v: stdout:\n%s\nstderr:\n%s", quiet, out.String(), errb.String())
		}
	}
}
