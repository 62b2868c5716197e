package lumen

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/lumen/memory"
)

var journalState = state([]Value{{"diligence", 0.8, ValueActive}}, []Goal{{"keep a journal", 0.9, GoalWorking}})

// brokenSkill is a skill whose --help fails.
func brokenSkill(root string) {
	dir := filepath.Join(root, "skills", "broken")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.py"), []byte("import sys\nsys.stderr.write('ImportError: no module named weather')\nsys.exit(1)\n"), 0o644)
}

func TestRunKeepsGoingPastABrokenSkillAndMalformedAnswersAndLogsEachFailure(t *testing.T) {
	p := scripted(t,
		// cycle 1, action: THINK never answers valid JSON (three attempts)
		answer("think", "I will write in my journal!"), answer("think", "still not JSON"), answer("think", "{\"situation\": 3}"),
		// cycle 2, explore, through the chat skill
		answer("explore", exploration{Considered: []ConsideredQuestion{{"why journal?", "I would know"}}, Question: "why journal?", Why: "diligence", Skill: "chat",
			Input: json.RawMessage(`{"message":"Why do people keep journals?"}`)}),
		// cycle 3, action: the broken skill is wanted most: A = 0, a goal to author it
		answer("think", thinkOf(Candidate{Action: "file today's entry", Skill: "broken", Input: json.RawMessage(`{}`), Predicted: "filed", Counterfactual: "lost"})),
		answer("decide", decideAll([]string{"diligence"}, []string{"keep a journal"}, true, 1)),
		// cycle 4, explore
		answer("explore", exploration{Considered: []ConsideredQuestion{{"what to write?", "clarity"}}, Question: "what to write?", Why: "diligence", Skill: "chat",
			Input: json.RawMessage(`{"message":"What should I write today?"}`)}),
		// cycle 5, action through chat
		answer("think", thinkOf(chatSay("I wrote today's entry."))),
		answer("decide", decideAll([]string{"diligence"}, []string{"keep a journal"}, true, 1)),
		answer("record", recorded),
	)
	in, _ := newInstance(t, "", func(root string) { journalState(root); brokenSkill(root) }, withScript(p))
	var cycles []*CycleReport
	rep, err := in.Run(context.Background(), RunOptions{Cycles: 5, Backoff: time.Millisecond, OnCycle: func(r *CycleReport) { cycles = append(cycles, r) }})
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if rep.Cycles != 5 || len(cycles) != 5 || rep.Stopped != StopCycles || rep.Failed != 1 {
		t.Fatalf("run = %+v, want 5 cycles with 1 failed, stopped by --cycles", rep)
	}
	if !strings.Contains(cycles[0].Failed, "no valid JSON after 3 attempts") || cycles[0].Backoff != time.Millisecond {
		t.Errorf("cycle 1 = %+v, want the malformed answers as its failure and a back-off", cycles[0])
	}
	kernel := byAuthor(t, in, memory.Kernel)
	if find(kernel, "THINK failed") == nil || find(kernel, "CYCLE FAILED: cycle 1 (action loop)") == nil {
		t.Error("the failed THINK and the failed cycle were not logged")
	}
	help := find(kernel, "SKILL CHECK: broken")
	if help == nil || !strings.Contains(help.Description, "--help failed") || !strings.Contains(help.Description, "no module named weather") {
		t.Fatalf("the broken skill's --help failure was not logged: %+v", help)
	}
	if n := len(list(t, in, memory.Filter{Step: "skill-check", DataValue: "broken", DataKey: "skill"})); n != 1 {
		t.Errorf("--help of the broken skill checked %d times, want once (its failure is cached)", n)
	}
	if cycles[2].Action == nil || cycles[2].Action.Verdict.Outcome != OutcomeGap || cycles[2].Action.Verdict.Scores[0].A != 0 {
		t.Errorf("cycle 3 = %+v, want A=0 for the broken skill", cycles[2].Action)
	}
	if cycles[4].Action == nil || cycles[4].Action.Reply() != "I wrote today's entry." {
		t.Errorf("cycle 5 did not act")
	}
	// Every LLM call's spend is on a line: the three failed attempts too.
	var calls int
	for _, e := range list(t, in, memory.Filter{}) {
		if e.Usage != nil {
			calls += e.Usage.Calls
		}
	}
	if calls != len(p.Requests()) || rep.Usage.Calls != calls {
		t.Errorf("memory records %d calls, the run %d, the provider saw %d", calls, rep.Usage.Calls, len(p.Requests()))
	}
}

// failingRun is a run whose every THINK is malformed.
func failingRun(t *testing.T, cycles int) *Instance {
	var steps []step
	for i := 0; i < 3*cycles; i++ {
		steps = append(steps, answer("think", "nope"))
	}
	in, _ := newInstance(t, "", journalState, withScript(scripted(t, steps...)))
	return in
}

func TestFailuresInARowBackOffLongerAndLongerUpToTheCap(t *testing.T) {
	in := failingRun(t, 4)
	// Only action cycles fail here; explore cycles have no script: they
	// fail too (the script is exhausted), which is what a dead provider does.
	var backoffs []time.Duration
	rep, err := in.Run(context.Background(), RunOptions{Cycles: 5, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		OnCycle: func(r *CycleReport) { backoffs = append(backoffs, r.Backoff) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{1, 2, 4, 4, 4}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if rep.Failed != 5 || len(backoffs) != 5 {
		t.Fatalf("run = %+v", rep)
	}
	for i := range want {
		if backoffs[i] != want[i] {
			t.Fatalf("back-offs = %v, want %v (doubling, capped)", backoffs, want)
		}
	}
	recorded := list(t, in, memory.Filter{Step: "cycle", DataHas: "backoff_seconds"})
	if len(recorded) != 5 || dataOf(t, recorded[2])["in_a_row"].(float64) != 3 {
		t.Fatalf("cycle failure memories = %d, want 5 with the count in a row", len(recorded))
	}
}

func TestASuccessResetsTheBackOff(t *testing.T) {
	p := scripted(t,
		answer("think", "x"), answer("think", "x"), answer("think", "x"), // cycle 1 fails
		answer("explore", exploration{Considered: []ConsideredQuestion{{"q", "w"}}, Question: "q", Why: "w"}), // cycle 2 succeeds (no skill)
		answer("think", "x"), answer("think", "x"), answer("think", "x"), // cycle 3 fails
	)
	in, _ := newInstance(t, "", journalState, withScript(p))
	var backoffs []time.Duration
	if _, err := in.Run(context.Background(), RunOptions{Cycles: 3, Backoff: time.Millisecond,
		OnCycle: func(r *CycleReport) { backoffs = append(backoffs, r.Backoff) }}); err != nil {
		t.Fatal(err)
	}
	if len(backoffs) != 3 || backoffs[0] != time.Millisecond || backoffs[1] != 0 || backoffs[2] != time.Millisecond {
		t.Fatalf("back-offs = %v, want 1ms, none, 1ms", backoffs)
	}
}

// pricedCycle is one action cycle whose three calls cost, on
// claude-haiku-4-5 ($1 in, $5 out per MTok), 3 × (100k in + 10k out) =
// 3 × $0.15 = $0.45.
func pricedCycle() []step {
	heavy := func(s step) step { s.in, s.out = 100_000, 10_000; return s }
	return []step{
		heavy(answer("think", thinkOf(chatSay("hello")))),
		heavy(answer("decide", decideAll([]string{"diligence"}, []string{"keep a journal"}, true, 1))),
		heavy(answer("record", recorded)),
	}
}

func pricedInstance(t *testing.T, cycles int, root string) (*Instance, *strings.Builder) {
	var steps []step
	for i := 0; i < cycles; i++ {
		steps = append(steps, pricedCycle()...)
		steps = append(steps, answer("explore", exploration{Considered: []ConsideredQuestion{{"q", "w"}}, Question: "q", Why: "w"}))
	}
	p := scripted(t, steps...)
	tune := func(o *Options) { withScript(p)(o); o.Model = "claude-haiku-4-5" }
	if root == "" {
		in, _ := newInstance(t, "", journalState, tune)
		return in, nil
	}
	opts := Options{Model: "claude-haiku-4-5"}
	tune(&opts)
	opts.Now = newClock().now
	in, err := Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in, nil
}

func TestTheRunSpendCapStopsTheRun(t *testing.T) {
	in, _ := pricedInstance(t, 5, "")
	rep, err := in.Run(context.Background(), RunOptions{MaxCost: 1.0, Cycles: 10, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// $0.45 a cycle (explore cycles cost $0.0015): the cap is reached in
	// the third action cycle, whose first call over it is refused.
	if rep.Stopped != StopRunCost || rep.Usage.CostUSD < 1.0 || rep.Usage.CostUSD > 1.0+0.15+1e-9 {
		t.Fatalf("run = %+v, want stopped by the run cap, past it by one call at most", rep)
	}
	if find(byAuthor(t, in, memory.Kernel), "spend cap reached") == nil {
		t.Error("the refused call was not recorded")
	}
}

func TestTheDailyCapCountsWhatEarlierRunsRecorded(t *testing.T) {
	first, _ := pricedInstance(t, 2, "")
	if _, err := first.Run(context.Background(), RunOptions{Cycles: 2}); err != nil {
		t.Fatal(err)
	}
	spent, _ := first.Memory().Spend(context.Background(), "2026-02-14")
	if spent < 0.45 {
		t.Fatalf("spend recorded today = %v, want the first run's $0.45+", spent)
	}
	root := first.Root
	first.Close()
	// A new process, the same day: the cap is already reached.
	again, _ := pricedInstance(t, 2, root)
	rep, err := again.Run(context.Background(), RunOptions{MaxCostDay: spent, Cycles: 10, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != StopDayCost || rep.Cycles != 0 || rep.Usage.Calls != 0 {
		t.Fatalf("second run = %+v, want stopped before any call by the day cap", rep)
	}
	// A higher cap lets it run until the day's total reaches it.
	rep, err = again.Run(context.Background(), RunOptions{MaxCostDay: spent + 0.5, Cycles: 10, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != StopDayCost || rep.SpentDay < spent+0.5 {
		t.Fatalf("third run = %+v, want it stopped once today's spend passed $%.2f", rep, spent+0.5)
	}
}

func TestATimeLimitStopsTheRun(t *testing.T) {
	in, _ := pricedInstance(t, 50, "")
	rep, err := in.Run(context.Background(), RunOptions{For: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != StopTimeLimit || rep.Cycles > 1 {
		t.Fatalf("run = %+v, want the time limit", rep)
	}
	rep, err = in.Run(context.Background(), RunOptions{For: 50 * time.Millisecond, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != StopTimeLimit || rep.Cycles != 1 {
		t.Fatalf("run = %+v, want one cycle, then the time limit inside the hour-long interval", rep)
	}
}

func TestNoReflectIsRecordedOnEveryCycleAndNeverReflects(t *testing.T) {
	p := scripted(t, pricedCycle()...)
	in, _ := newInstance(t, "", journalState, func(o *Options) { withScript(p)(o); o.ReflectEvery = 1 })
	rep, err := in.Run(context.Background(), RunOptions{Cycles: 1, NoReflect: true})
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p) // no TRIGGER and no REVIEW were asked, though the period is 1
	if rep.Cycles != 1 {
		t.Fatal(rep)
	}
	c := list(t, in, memory.Filter{Step: "cycle"})
	if len(c) != 1 || dataOf(t, c[0])["reflect"] != false {
		t.Fatalf("cycle memory = %+v, want reflect: false", c)
	}
	tr := list(t, in, memory.Filter{Step: stepTrigger})
	if len(tr) != 1 || !strings.Contains(tr[0].Description, "--no-reflect") {
		t.Fatalf("trigger memory = %+v", tr)
	}
	audit, err := in.Audit(context.Background())
	if err != nil || audit.Ablation.Off.ActionCycles != 1 || audit.Ablation.On.ActionCycles != 0 {
		t.Fatalf("audit ablation = %+v, %v", audit.Ablation, err)
	}
}

func TestStepLinesAndTotalsShowTokensCostAndTheChoice(t *testing.T) {
	in, _ := pricedInstance(t, 1, "")
	var lines []string
	var cycle *CycleReport
	rep, err := in.Run(context.Background(), RunOptions{Cycles: 1, OnStep: func(r Record) { lines = append(lines, StepLine(r)) },
		OnCycle: func(r *CycleReport) { cycle = r }})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "think        1 call(s) 100.0k→10.0k tok $0.1500  THINK:") || !strings.Contains(all, `DECIDE: chose #1 "say hello"`) {
		t.Fatalf("step lines:\n%s", all)
	}
	if !strings.Contains(cycle.Text(), "3 calls, 300.0k→30.0k tokens, cost $0.4500, 0% of input from cache") {
		t.Errorf("cycle header: %s", cycle.Text())
	}
	if !strings.Contains(rep.Text(), "run: 1 cycles (1 action, 0 explore; 0 idle, 0 failed)") || !strings.Contains(rep.Text(), "$0.4500") {
		t.Errorf("totals: %s", rep.Text())
	}
}

// A scripted client's calls are metered as a real run on the same model
// would be, and what shows that money says it was charged to no one: the
// run's totals once, and lumen status beside the day's spend. A real
// client's money carries no such label.
func TestScriptedMoneyIsMeteredAndLabelledAsNotCharged(t *testing.T) {
	const note = "scripted: what claude-haiku-4-5 would charge; nothing is charged"
	for _, scriptedClient := range []bool{true, false} {
		in, _ := pricedInstance(t, 1, "")
		in.opts.Client.Scripted = scriptedClient
		rep, err := in.Run(context.Background(), RunOptions{Cycles: 1})
		if err != nil {
			t.Fatal(err)
		}
		st, err := in.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		text, status := rep.Text(), st.Text()
		if !strings.Contains(text, "cost $0.4500") || !strings.Contains(status, "$0.4500 today") {
			t.Errorf("scripted %v: the calls were not metered at the model's price:\n%s\n%s", scriptedClient, text, status)
		}
		if got := strings.Contains(text, "cost $0.4500, 0% of input from cache ("+note+")"); got != scriptedClient {
			t.Errorf("scripted %v: run totals labelled %v:\n%s", scriptedClient, got, text)
		}
		if got := strings.Contains(status, "; of it, $0.4500 "+note); got != scriptedClient {
			t.Errorf("scripted %v: status labelled %v:\n%s", scriptedClient, got, status)
		}
	}
}

// A spend cap counts dollars from the price table: with a model the table
// does not price, every call costs $0 and the cap would never stop the
// run. The run refuses to start instead, before any call.
func TestASpendCapRefusesAModelWithoutAPrice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		model    string
		fallback []string
		ro       RunOptions
	}{
		{"run cap, unpriced model", "claude-sonnet-9", nil, RunOptions{MaxCost: 1, Cycles: 2}},
		{"day cap, unpriced model", "my-local-llama", nil, RunOptions{MaxCostDay: 1, Cycles: 2}},
		{"run cap, unpriced fallback", "claude-haiku-4-5", []string{"claude-next"}, RunOptions{MaxCost: 1, Cycles: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scripted(t, pricedCycle()...)
			in, _ := newInstance(t, "", journalState, func(o *Options) {
				withScript(p)(o)
				o.Model = tc.model
				o.Client.Fallback = tc.fallback
			})
			rep, err := in.Run(context.Background(), tc.ro)
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != "prices" || !strings.Contains(err.Error(), "has no price for model") {
				t.Fatalf("run = %+v, %v; want a refusal naming the price table", rep, err)
			}
			if n := len(p.Requests()); n != 0 {
				t.Errorf("%d LLM calls made before the refusal, want none", n)
			}
		})
	}
	// Without a cap an unpriced model runs: nothing needs its price.
	p := scripted(t, pricedCycle()...)
	in, _ := newInstance(t, "", journalState, func(o *Options) { withScript(p)(o); o.Model = "my-local-llama" })
	if rep, err := in.Run(context.Background(), RunOptions{Cycles: 1}); err != nil || rep.Cycles != 1 {
		t.Fatalf("uncapped run on an unpriced model: %+v, %v", rep, err)
	}
}

// The repairs of a malformed answer are calls too: the cap is checked
// before each, so a step sending its answer back for repair cannot pass
// the cap by more than one call.
func TestTheRunCapCountsEachRepairAttemptAsItHappens(t *testing.T) {
	heavy := func(s step) step { s.in, s.out = 100_000, 10_000; return s } // $0.15 each on claude-haiku-4-5
	p := scripted(t, heavy(answer("think", "not JSON")), heavy(answer("think", "still not JSON")), heavy(answer("think", thinkOf(chatSay("hi")))),
		heavy(answer("decide", decideAll([]string{"diligence"}, []string{"keep a journal"}, true, 1))), heavy(answer("record", recorded)))
	in, _ := newInstance(t, "", journalState, func(o *Options) { withScript(p)(o); o.Model = "claude-haiku-4-5" })
	rep, err := in.Run(context.Background(), RunOptions{MaxCost: 0.2, Cycles: 3, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != StopRunCost || len(p.Requests()) != 2 || rep.Usage.CostUSD > 0.2+0.15+1e-9 {
		t.Fatalf("run = %+v after %d calls; want the third attempt refused (the cap passed by one call at most)", rep, len(p.Requests()))
	}
}

// When not even a cycle's failure can be written (a full disk, a memory
// directory gone), the run stops with an error: exit status 1, not the 5
// of a limit that running again resumes from.
func TestARunThatCannotRecordAFailureStopsWithAnError(t *testing.T) {
	in := failingRun(t, 3)
	day := filepath.Join(in.Root, "data", "memory", "2026", "2026-02-14.jsonl")
	rep, err := in.Run(context.Background(), RunOptions{Cycles: 3, Backoff: time.Millisecond, OnStep: func(r Record) {
		if strings.HasPrefix(r.Description, "THINK failed") {
			// The day file becomes a directory: no line can be appended.
			os.Rename(day, day+".moved")
			os.Mkdir(day, 0o755)
		}
	}})
	if err == nil || rep == nil || !rep.Limited() || rep.Stopped != StopFailed {
		t.Fatalf("run = %+v, %v; want an error and the stop %q", rep, err, StopFailed)
	}
}

// The run's spend cap wraps the provider; the request check must still see
// the provider's betas.
func TestTheSpendCapKeepsTheProvidersBetas(t *testing.T) {
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: "http://127.0.0.1:1", Betas: []string{llm.BetaInterleavedThinking}})
	if err != nil {
		t.Fatal(err)
	}
	c := &llm.Client{Provider: capped{Provider: p, check: func() error { return nil }}}
	if !llm.HasBeta(c.Betas(), llm.BetaInterleavedThinking) {
		t.Errorf("betas under the cap: %q", c.Betas())
	}
}
