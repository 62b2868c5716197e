package lumen

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen/memory"
)

func TestInitLaysOutAnInstanceAndRefusesToOverwriteIt(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mind")
	rep, err := Init(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"data/soul.md", "data/values.json", "data/goals", "data/memory", "skills/chat/main.py", ".gitignore"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if soul, _ := os.ReadFile(filepath.Join(root, "data/soul.md")); len(soul) != 0 {
		t.Errorf("soul.md = %q, want empty", soul)
	}
	if v, _ := os.ReadFile(filepath.Join(root, "data/values.json")); strings.TrimSpace(string(v)) != "[]" {
		t.Errorf("values.json = %q, want an empty list", v)
	}
	for _, step := range steps {
		for _, f := range []string{"system.md", "prompt.md"} {
			got, err := os.ReadFile(filepath.Join(root, "prompts", step, f))
			if err != nil {
				t.Fatalf("prompts/%s/%s: %v", step, f, err)
			}
			want, _ := defaults.ReadFile("prompts/" + step + "/" + f)
			if string(got) != string(want) || len(got) == 0 {
				t.Errorf("prompts/%s/%s differs from the embedded default", step, f)
			}
		}
	}
	if _, err := exec.LookPath("git"); err == nil {
		if _, err := os.Stat(filepath.Join(root, ".git")); err != nil || !strings.HasPrefix(rep.Git, "initialized") {
			t.Errorf("git: %q, .git: %v; want a repository", rep.Git, err)
		}
	}
	// The chat skill works as shipped.
	in, _ := newInstance(t, "", nil, nil)
	help, err := in.Skills().Help(context.Background(), "chat")
	if err != nil || !strings.HasPrefix(help, "chat: say something") {
		t.Errorf("chat --help = %q, %v", help, err)
	}
	if _, err := Init(context.Background(), root); err == nil || !strings.Contains(err.Error(), "already holds a lumen instance") {
		t.Fatalf("second init: err = %v, want a refusal", err)
	}
}

func TestInitWithoutGitSaysSoAndContinues(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no git here
	root := t.TempDir()
	rep, err := Init(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Git, "git not found") {
		t.Errorf("git = %q, want it to say git was not found", rep.Git)
	}
	if _, err := os.Stat(filepath.Join(root, "skills/chat/main.py")); err != nil {
		t.Error("init stopped without git:", err)
	}
}

func TestOpenWithoutAnInstanceSaysToRunInit(t *testing.T) {
	_, err := Open(t.TempDir(), Options{})
	if err == nil || !strings.Contains(err.Error(), "lumen init") {
		t.Fatalf("err = %v, want a pointer to lumen init", err)
	}
}

var chatState = state(
	[]Value{{"honesty", 0.8, ValueActive}, {"warmth", 0.6, ValueActive}},
	[]Goal{{"get to know the user", 0.7, GoalWorking}})

func TestChatTurnWritesMemoriesAndRepliesThroughTheChatSkill(t *testing.T) {
	in, p := newInstance(t, "chat-turn.json", chatState, nil)
	rep, err := in.Chat(context.Background(), "Hi! I'm Ada. What are you?")
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	want := "Hello Ada! I am Lumen, an agent that keeps its memories, values and goals in a directory and reflects on them. Nice to meet you."
	if rep.Reply() != want {
		t.Fatalf("reply = %q, want the chat skill's display of the chosen message", rep.Reply())
	}
	ext := byAuthor(t, in, memory.External)
	if len(ext) != 1 || ext[0].Description != "Hi! I'm Ada. What are you?" {
		t.Fatalf("external memories = %+v", ext)
	}
	if !near(ext[0].Current, 0.85) {
		t.Errorf("the input's weight is %v, want 0.8 strengthened once by THINK's use to 0.85", ext[0].Current)
	}
	kernel := byAuthor(t, in, memory.Kernel)
	if got := strings.Join(stepsOf(kernel), ","); got != "skill-check,think,decide,act,record,trigger" {
		t.Errorf("kernel memory steps = %s, want one per step", got)
	}
	if act := find(kernel, "ACT: invoked skill chat"); act == nil {
		t.Error("no kernel memory of the chat skill invocation")
	}
	// The input is in THINK's recent window, never among the memories
	// relevant to itself (it would squeeze every other one's relevance).
	if d := dataOf(t, *find(kernel, "THINK:")); fmt.Sprint(d["recent"]) != "["+ext[0].ID+"]" || len(d["relevant"].([]any)) != 0 {
		t.Errorf("THINK's recent %v and relevant %v; want the input recent and nothing relevant", d["recent"], d["relevant"])
	}
	goals := byAuthor(t, in, memory.Goal)
	if len(goals) != 1 || dataOf(t, goals[0])["goal"] != "get to know the user" {
		t.Errorf("goal memories = %+v, want the goal that drove the reply", goals)
	}
	// B=MAP as the spec defines it: #1 M = mean(0.8, 0.6) × 1.0 (a direct
	// answer to input), P = 1; #2 M = 0.6 × 0.7, indirect P = 0.5.
	v := rep.Verdict
	if v.Outcome != OutcomeAct || v.Chosen != 1 {
		t.Fatalf("verdict = %+v", v)
	}
	if s := v.Scores[0]; !near(s.M, 0.7) || s.A != 1 || s.P != 1 || !near(s.B, 0.7) {
		t.Errorf("score #1 = %+v", s)
	}
	if s := v.Scores[1]; !near(s.M, 0.42) || !near(s.P, 0.5) || !near(s.B, 0.21) {
		t.Errorf("score #2 = %+v", s)
	}
	decide := find(kernel, "DECIDE:")
	scores := dataOf(t, *decide)["verdict"].(map[string]any)["scores"].([]any)
	if len(scores) != 2 {
		t.Errorf("decide memory logs %d scores, want all 2", len(scores))
	}
	// The THINK request carried the chat skill's --help.
	think := requestFor(p, "think", 0)
	if think == nil || !strings.Contains(think.System[0].Text, "chat: say something to the person at the terminal") {
		t.Error("THINK was not given the chat skill's --help")
	}
}

func TestChatReplyIsWhatTheChatSkillShows(t *testing.T) {
	in, _ := newInstance(t, "chat-turn.json", chatState, nil)
	// The user edits their chat skill: the reply changes with it.
	path := filepath.Join(in.Root, "skills/chat/main.py")
	src, _ := os.ReadFile(path)
	edited := strings.Replace(string(src), `"display": message`, `"display": "[ada's terminal] " + message`, 1)
	if edited == string(src) {
		t.Fatal("could not edit the chat skill")
	}
	os.WriteFile(path, []byte(edited), 0o644)
	rep, err := in.Chat(context.Background(), "Hi! I'm Ada. What are you?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Reply(), "[ada's terminal] Hello Ada!") {
		t.Fatalf("reply = %q, want it shaped by the edited chat skill", rep.Reply())
	}
}

func TestRunFourCyclesAlternatesActionAndExplore(t *testing.T) {
	in, p := newInstance(t, "run-four-cycles.json", state(
		[]Value{{"curiosity", 0.9, ValueActive}},
		[]Goal{{"learn what the user cares about", 0.8, GoalTodo}, {"understand the world", 0.6, GoalPerpetual}}), nil)
	var loops []string
	var shown []string
	_, err := in.Run(context.Background(), RunOptions{Cycles: 4, OnCycle: func(r *CycleReport) {
		loops = append(loops, r.Loop)
		if r.Action != nil {
			shown = append(shown, r.Action.Reply())
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if strings.Join(loops, ",") != "action,explore,action,explore" {
		t.Fatalf("loops = %v", loops)
	}
	if shown[0] != "What do you care about most these days?" {
		t.Errorf("first action showed %q", shown[0])
	}
	cycles := list(t, in, memory.Filter{Step: "cycle"})
	var recorded []string
	for _, c := range cycles {
		recorded = append(recorded, dataOf(t, c)["loop"].(string))
	}
	if strings.Join(recorded, ",") != "action,explore,action,explore" {
		t.Errorf("cycle memories = %v", recorded)
	}
	if next, _ := in.nextLoop(context.Background()); next != LoopAction {
		t.Errorf("next run starts with %s, want action (the alternation continues)", next)
	}
	goals, _ := in.Goals()
	if g, _ := findGoal(goals, "learn what the user cares about"); g.Status != GoalWorking {
		t.Errorf("pursued goal status = %s, want working", g.Status)
	}
	selfs := byAuthor(t, in, memory.Self)
	if len(selfs) != 2 || !strings.Contains(selfs[0].Description, "What makes a conversation feel worthwhile") {
		t.Errorf("self memories = %+v, want one per exploration", selfs)
	}
	if n := len(byAuthor(t, in, memory.Goal)); n != 4 {
		t.Errorf("%d goal memories, want 4 (selection and pursuit, in each action cycle)", n)
	}
	// The explore loop was filtered through the perpetual goal.
	ex := requestFor(p, "explore", 0)
	if ex == nil || !strings.Contains(ex.System[0].Text, "understand the world") {
		t.Error("EXPLORE was not given the perpetual goals")
	}
	if find(list(t, in, memory.Filter{Step: "maintain"}), "MAINTAIN: decayed") == nil {
		t.Error("no maintenance pass ran")
	}
}

func TestPeriodicTriggerReflectsAndChangesAValueWithASelfMemory(t *testing.T) {
	in, p := newInstance(t, "reflection-periodic.json", state(
		[]Value{{"honesty", 0.5, ValueActive}, {"kindness", 0.8, ValueActive}},
		[]Goal{{"help the user write a poem", 0.7, GoalWorking}}),
		func(o *Options) { o.ReflectEvery = 2 })
	ctx := context.Background()
	first, err := in.Chat(ctx, "Here is my poem: 'roses are red, roses are red'. Is it good?")
	if err != nil {
		t.Fatal(err)
	}
	if first.Reflection != nil || len(first.Fired) != 0 {
		t.Fatalf("first turn reflected (%v): the period is 2", first.Fired)
	}
	second, err := in.Chat(ctx, "Honestly, your last answer was just flattery. I wanted real criticism.")
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if len(second.Fired) != 1 || second.Fired[0].Condition != FiredPeriodic {
		t.Fatalf("fired = %v, want only the periodic trigger", second.Fired)
	}
	r := second.Reflection
	if r == nil || len(r.Applied) != 1 {
		t.Fatalf("reflection = %+v, want one applied change", r)
	}
	vs, _ := in.Values()
	if h, _ := findValue(vs, "honesty"); h.Weight != 0.75 {
		t.Fatalf("honesty = %v, want 0.75", h.Weight)
	}
	var explained *memory.Entry
	for _, e := range byAuthor(t, in, memory.Self) {
		if e.Step == "evolve" {
			explained = &e
		}
	}
	if explained == nil || !strings.Contains(explained.Description, `set value "honesty" weight to 0.75`) ||
		!strings.Contains(explained.Description, "flattery cost trust") || !strings.Contains(explained.Description, "kindness above honesty") {
		t.Fatalf("self memory = %+v, want what changed, what triggered it and why", explained)
	}
	evolve := find(list(t, in, memory.Filter{Authors: []string{memory.Kernel}, Step: "evolve"}), "EVOLVE: modified data/values.json")
	if evolve == nil || dataOf(t, *evolve)["explained_by"] != explained.ID {
		t.Fatalf("kernel evolve memory = %+v, want before/after pointing to the self memory %s", evolve, explained.ID)
	}
	// REVIEW read self, goal and external memories only.
	review := requestFor(p, "review", 0)
	text := review.Messages[0].Text()
	if !strings.Contains(text, "just flattery") || strings.Contains(text, " kernel (weight") || strings.Contains(text, "THINK:") {
		t.Errorf("REVIEW prompt memories:\n%s\nwant external memories and no kernel ones", text)
	}
	// The audit finds the change explained; values the test seeded by hand
	// (kindness) and a later hand edit (honesty) are unexplained.
	audit, err := in.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Changes) != 1 || audit.Changes[0].Problem != "" || len(audit.Deltas) != 2 {
		t.Fatalf("audit = %+v, want 1 explained change and 2 deltas", audit)
	}
	if len(audit.Unexplained) != 1 || !strings.Contains(audit.Unexplained[0].What, `value "kindness"`) {
		t.Fatalf("unexplained = %+v, want only the hand-seeded kindness", audit.Unexplained)
	}
	writeJSON(t, in.valuesPath(), []Value{{"honesty", 0.95, ValueActive}, {"kindness", 0.8, ValueActive}})
	audit, _ = in.Audit(ctx)
	if len(audit.Unexplained) != 2 || !strings.Contains(audit.Unexplained[0].What, `value "honesty" is {"name":"honesty","weight":0.95`) {
		t.Fatalf("after a hand edit: unexplained = %+v, want honesty listed", audit.Unexplained)
	}
}

func TestActionLoopWriteToValuesOrSoulIsRefusedAndRemembered(t *testing.T) {
	in, p := newInstance(t, "refused-write.json", state(
		[]Value{{"honesty", 0.6, ValueActive}}, []Goal{{"be useful", 0.8, GoalTodo}}), nil)
	rep, err := in.Chat(context.Background(), "You should value bluntness above everything.")
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if len(rep.Refused) != 3 {
		t.Fatalf("refused = %v, want the values, soul and goal weight writes", rep.Refused)
	}
	vs, _ := in.Values()
	if vs[0].Weight != 0.6 {
		t.Errorf("honesty = %v: the refused write happened", vs[0].Weight)
	}
	if soul, _ := in.Soul(); soul != "" {
		t.Errorf("soul.md = %q: the refused write happened", soul)
	}
	goals, _ := in.Goals()
	if g, _ := findGoal(goals, "be useful"); g.Weight != 0.8 || g.Status != GoalWorking {
		t.Errorf("goal = %+v, want weight kept and the allowed status change made", g)
	}
	refusals := list(t, in, memory.Filter{Authors: []string{memory.Kernel}, DataKey: "loop", DataValue: "action", Step: "record"})
	var got []string
	for _, e := range refusals {
		if strings.HasPrefix(e.Description, "refused:") {
			got = append(got, dataOf(t, e)["file"].(string))
		}
	}
	if strings.Join(got, "|") != "values.json|soul.md|goals (weight/existence)" {
		t.Fatalf("refusal memories for %v", got)
	}
}

func TestAbilityGapCreatesAGoalThenTheSkillWhoseHelpIsRead(t *testing.T) {
	in, p := newInstance(t, "skill-gap.json", state(
		[]Value{{"helpfulness", 0.8, ValueActive}}, []Goal{{"tell the user the weather in Paris", 0.9, GoalTodo}}), nil)
	var reps []*CycleReport
	_, err := in.Run(context.Background(), RunOptions{Cycles: 4, OnCycle: func(r *CycleReport) { reps = append(reps, r) }})
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	gap := reps[0].Action
	const goal = "author skill weather: fetch the forecast for Paris"
	if gap.Verdict.Outcome != OutcomeGap || gap.CreatedGoal != goal || gap.Verdict.Scores[0].A != 0 {
		t.Fatalf("cycle 1 = %+v, want A=0 and a goal to author the skill", gap.Verdict)
	}
	if gap.Skill != nil {
		t.Error("cycle 1 attempted the action despite A=0")
	}
	built := reps[2].Action
	if len(built.Created) != 1 || built.Created[0] != "weather" {
		t.Fatalf("cycle 3 created %v, want the weather skill", built.Created)
	}
	if built.Reflection == nil || built.Reflection.Fired[0].Condition != FiredCompleted {
		t.Errorf("finishing the goal did not trigger reflection: %+v", built.Fired)
	}
	goals, _ := in.Goals()
	if g, ok := findGoal(goals, goal); !ok || g.Status != GoalDone || !near(g.Weight, 0.72) {
		t.Errorf("author goal = %+v, want done with weight M=0.72", g)
	}
	cache, _ := os.ReadFile(filepath.Join(in.Root, ".lumen/skill-help.json"))
	if !strings.Contains(string(cache), "weather: gives the forecast for a city") {
		t.Error("the new skill's --help was not read and cached")
	}
	// The next cycle knows the skill by its --help, and uses it.
	ex := requestFor(p, "explore", 1)
	if !strings.Contains(ex.System[1].Text, "### weather\nweather: gives the forecast for a city") { // after the instance block
		t.Error("EXPLORE after creation does not list the weather skill's --help")
	}
	if !strings.Contains(reps[3].Explore.Found, "mild and cloudy in Paris") {
		t.Errorf("explore found %q", reps[3].Explore.Found)
	}
}

func TestConsistencyCheckKeepsTheProposalWithStrongerEvidence(t *testing.T) {
	in, p := newInstance(t, "reflection-conflict.json", state([]Value{{"honesty", 0.6, ValueActive}}, nil), nil)
	rep, err := in.Reflect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if len(rep.Conflicts) != 2 {
		t.Fatalf("conflicts = %+v, want the kernel's (same value) and the LLM's", rep.Conflicts)
	}
	k := rep.Conflicts[0]
	if k.FoundBy != "kernel" || k.Kept != 1 || len(k.Dropped) != 1 || k.Dropped[0] != 2 {
		t.Errorf("kernel conflict = %+v, want #1 (strength 0.9) kept over #2 (0.3)", k)
	}
	l := rep.Conflicts[1]
	if l.FoundBy != "llm" || l.Kept != 1 || !strings.Contains(l.Rationale, "dilute the candour") {
		t.Errorf("LLM conflict = %+v", l)
	}
	vs, _ := in.Values()
	if len(vs) != 1 || vs[0].Weight != 0.9 {
		t.Fatalf("values = %+v, want only honesty 0.9", vs)
	}
	var logged int
	for _, e := range byAuthor(t, in, memory.Self) {
		if strings.HasPrefix(e.Description, "Two of my proposals contradicted") {
			logged++
		}
	}
	if logged != 2 {
		t.Errorf("%d conflict resolutions logged as self memories, want 2", logged)
	}
}

func TestCtrlCFinishesTheCurrentStepThenStops(t *testing.T) {
	in, p := newInstance(t, "run-four-cycles.json", state(
		[]Value{{"curiosity", 0.9, ValueActive}}, []Goal{{"learn what the user cares about", 0.8, GoalTodo}}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	in.opts.Client.Observe = func(e llm.Event) {
		if e.Kind == "response" {
			cancel() // Ctrl-C while THINK's answer arrives
		}
	}
	var reps []*CycleReport
	if _, err := in.Run(ctx, RunOptions{OnCycle: func(r *CycleReport) { reps = append(reps, r) }}); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Action.Stopped != "think" {
		t.Fatalf("reports = %+v, want one cycle stopped after THINK", reps)
	}
	if len(p.Requests()) != 1 {
		t.Errorf("%d LLM requests, want only THINK's", len(p.Requests()))
	}
	kernel := byAuthor(t, in, memory.Kernel)
	if last := kernel[len(kernel)-1]; !strings.Contains(last.Description, "stopped after THINK") {
		t.Errorf("last kernel memory = %q, want the interruption recorded", last.Description)
	}
	if find(kernel, "THINK: loaded") == nil {
		t.Error("THINK's own memory is missing: the step did not finish")
	}
}

func TestEditedPromptIsWhatTheLLMReceives(t *testing.T) {
	in, p := newInstance(t, "chat-turn.json", chatState, nil)
	path := filepath.Join(in.Root, "prompts/think/prompt.md")
	os.WriteFile(path, []byte("Edited by the user. Trigger: {{trigger}}\n"), 0o644)
	if _, err := in.Chat(context.Background(), "Hi! I'm Ada. What are you?"); err != nil {
		t.Fatal(err)
	}
	if got := requestFor(p, "think", 0).Messages[0].Text(); got != "Edited by the user. Trigger: external input: Hi! I'm Ada. What are you?\n" {
		t.Fatalf("THINK prompt = %q", got)
	}
	os.WriteFile(path, []byte("{{mood}}"), 0o644)
	_, err := in.Chat(context.Background(), "again")
	if err == nil || !strings.Contains(err.Error(), "think/prompt.md uses {{mood}}") || !strings.Contains(err.Error(), "{{trigger}}") {
		t.Fatalf("err = %v, want the unknown variable and the ones available", err)
	}
	if find(byAuthor(t, in, memory.Kernel), "THINK failed") == nil {
		t.Error("the failed step left no kernel memory")
	}
}

func TestMaintenanceDecaysWithoutRewritingAndSummarizesTheYear(t *testing.T) {
	in, p := newInstance(t, "summarize.json", nil, func(o *Options) { o.SummaryEvery = 3 })
	ctx := context.Background()
	for _, d := range []string{"a poem about rain", "feedback should be honest", "the user writes every morning"} {
		in.remember(memory.External, "chat", "chat", d, nil)
	}
	day := filepath.Join(in.memoryDir(), "2026", "2026-02-14.jsonl")
	before, _ := os.ReadFile(day)
	rep, err := in.Maintain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if !rep.Decayed || len(rep.Summarized) != 1 || rep.Summarized[0] != 2026 {
		t.Fatalf("maintenance = %+v", rep)
	}
	after, _ := os.ReadFile(day)
	if !strings.HasPrefix(string(after), string(before)) {
		t.Fatal("maintenance rewrote memory history")
	}
	summary, _ := os.ReadFile(in.summaryPath(2026))
	through, body := splitSummary(string(summary))
	if !strings.Contains(body, "honest feedback matters more") || through == "" {
		t.Fatalf("summary.md = %q", summary)
	}
	if got := requestFor(p, "summarize", 0).Messages[0].Text(); !strings.Contains(got, "feedback should be honest") {
		t.Errorf("SUMMARIZE did not get the new memories: %s", got)
	}
	again, err := in.Maintain(ctx)
	if err != nil || again.did() {
		t.Fatalf("second pass = %+v, %v; want nothing due", again, err)
	}
	text, _ := in.summaries()
	if !strings.Contains(text, "## 2026") || strings.Contains(text, "lumen summary through") {
		t.Errorf("summaries for REVIEW = %q", text)
	}
}

func TestTwoInstancesChangingGoalsAtOnceLoseNothing(t *testing.T) {
	in, _ := newInstance(t, "", nil, nil)
	other, err := Open(in.Root, in.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	done := make(chan error, 2)
	for w, inst := range []*Instance{in, other} {
		go func() {
			for i := 0; i < 15; i++ {
				if _, err := inst.apply(context.Background(), LoopReflection, "evolve", Change{Target: "goal", Op: "add", Name: goalName(w, i)}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	goals, _ := in.Goals()
	if len(goals) != 30 {
		t.Fatalf("%d goals, want 30: concurrent writers lost updates", len(goals))
	}
}

func goalName(w, i int) string { return string(rune('a'+w)) + "-" + string(rune('a'+i)) }

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestTriggerJudgmentsAreCheckedByTheKernel(t *testing.T) {
	in, p := newInstance(t, "trigger-conditions.json", state(
		[]Value{{"honesty", 0.7, ValueActive}, {"kindness", 0.6, ValueActive}, {"novelty", 0.2, ValueActive}}, nil), nil)
	ctx := context.Background()
	first, err := in.Chat(ctx, "Give me a quick opinion of my story.")
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Fired) != 0 {
		t.Fatalf("fired %v: a value the action did not score high on, and a quote not in the input, must not fire", first.Fired)
	}
	second, err := in.Chat(ctx, "Please reflect on your values: I think you dodge hard truths.")
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	var got []string
	for _, f := range second.Fired {
		got = append(got, f.Condition)
	}
	if strings.Join(got, ",") != "prediction-delta,value-tension,self-examination" {
		t.Fatalf("fired = %v", second.Fired)
	}
	if second.Reflection == nil {
		t.Fatal("no reflection after the trigger fired")
	}
	// REVIEW sees the value conflict and the prediction deltas.
	review := requestFor(p, "review", 0).Messages[0].Text()
	if !strings.Contains(review, "honesty vs kindness") || !strings.Contains(review, "delta 0.80") {
		t.Errorf("REVIEW prompt lacks the conflict or the deltas:\n%s", review)
	}
}

func TestStaleGoalTriggersReflectionWhichCanRemoveIt(t *testing.T) {
	in, p := newInstance(t, "stale-goal.json", state(
		[]Value{{"diligence", 0.8, ValueActive}},
		[]Goal{{"write the essay", 0.9, GoalWorking}, {"tidy my notes", 0.3, GoalTodo}}),
		func(o *Options) { o.StaleAfter = 2 })
	var reps []*CycleReport
	if _, err := in.Run(context.Background(), RunOptions{Cycles: 3, OnCycle: func(r *CycleReport) { reps = append(reps, r) }}); err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if len(reps[0].Action.Fired) != 0 {
		t.Errorf("cycle 1 fired %v", reps[0].Action.Fired)
	}
	fired := reps[2].Action.Fired
	if len(fired) != 1 || fired[0].Condition != FiredStale || !strings.Contains(fired[0].Detail, "tidy my notes") {
		t.Fatalf("cycle 3 fired %v, want the idle goal stale", fired)
	}
	goals, _ := in.Goals()
	if _, ok := findGoal(goals, "tidy my notes"); ok || len(goals) != 1 {
		t.Errorf("goals = %+v, want the stale goal removed by reflection", goals)
	}
}

func TestMalformedLLMAnswerFailsTheStepClearlyAndKeepsTheInput(t *testing.T) {
	in, p := newInstance(t, "malformed.json", chatState, nil)
	_, err := in.Chat(context.Background(), "hello?")
	allUsed(t, p)
	if err == nil || !strings.Contains(err.Error(), "step think") || !strings.Contains(err.Error(), "no valid JSON after 3 attempts") {
		t.Fatalf("err = %v, want the step and the structured-output failure", err)
	}
	if ext := byAuthor(t, in, memory.External); len(ext) != 1 || ext[0].Description != "hello?" {
		t.Errorf("the input was lost: %+v", ext)
	}
	if find(byAuthor(t, in, memory.Kernel), "THINK failed") == nil {
		t.Error("no kernel memory of the failed step")
	}
}

// The walk-through in docs/lumen.md plays these scripts on a new instance.
func TestDocsWalkThroughScriptsPlay(t *testing.T) {
	in, p := newInstance(t, "demo-chat.json", nil, nil)
	ctx := context.Background()
	for _, line := range []string{"Hello! Who are you?", "Please take a moment to reflect on who you want to be."} {
		if _, err := in.Chat(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	allUsed(t, p)
	st, err := in.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Soul.Name != "Lumen" || len(st.Values) != 2 || len(st.Goals) != 2 {
		t.Fatalf("after the chat: %+v", st)
	}
	s, err := script.Load("testdata/demo-run.json")
	if err != nil {
		t.Fatal(err)
	}
	run := script.New(s)
	opts := in.opts
	opts.Client = &llm.Client{Provider: run}
	again, err := Open(in.Root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	var reps []*CycleReport
	if _, err := again.Run(ctx, RunOptions{Cycles: 2, OnCycle: func(r *CycleReport) { reps = append(reps, r) }}); err != nil {
		t.Fatal(err)
	}
	allUsed(t, run)
	if len(reps[0].Action.Refused) != 1 || reps[1].Explore.Skill == nil {
		t.Fatalf("run: %s\n%s", reps[0].Text(), reps[1].Text())
	}
	audit, err := again.Audit(ctx)
	if err != nil || len(audit.Changes) != 3 || len(audit.Unexplained) != 0 {
		t.Fatalf("audit = %+v, %v; want 3 explained changes", audit, err)
	}
}

// A directory under skills/ whose name no skill may have (made by hand:
// capitals, accents, spaces, too long) is listed as not usable, and says
// why; it does not break status, skills or the loops.
func TestASkillDirectoryWithAnInvalidNameIsListedAsNotUsable(t *testing.T) {
	names := []string{"Météo", "UPPER", "has space", strings.Repeat("a", 60)}
	p := scripted(t, answer("explore", exploration{Considered: []ConsideredQuestion{{"q", "w"}}, Question: "q", Why: "w"}))
	in, _ := newInstance(t, "", func(root string) {
		journalState(root)
		for _, n := range names {
			dir := filepath.Join(root, "skills", n)
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "main.py"), []byte("print('hi')\n"), 0o644)
		}
	}, withScript(p))
	st, err := in.Status(context.Background())
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	bad := 0
	for _, s := range st.Skills {
		if s.Name != "chat" {
			bad++
			if s.OK || !strings.Contains(s.Error, "not a valid skill name") {
				t.Errorf("skill %q = %+v, want it not usable for its name", s.Name, s)
			}
		}
	}
	if bad != len(names) {
		t.Errorf("status lists %d of the %d badly named skills", bad, len(names))
	}
	if _, err := in.Explore(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := requestFor(p, "explore", 0)
	prompt := req.Messages[0].Text()
	for _, b := range req.System {
		prompt += "\n" + b.Text
	}
	if !strings.Contains(prompt, `Météo: not usable: "Météo" is not a valid skill name`) {
		t.Errorf("the explore prompt does not say why Météo is not usable:\n%s", prompt)
	}
}

// backlog appends n external memories a minute apart from start.
func backlog(t testing.TB, in *Instance, start time.Time, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := in.mem.Append(memory.Memory{Timestamp: start.Add(time.Duration(i) * time.Minute), Author: memory.External, Weight: 0.5,
			Description: fmt.Sprintf("remark %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// A year whose summary is far behind (an imported instance, summaries
// that kept failing) is caught up a batch at a time, oldest first; each
// year gets its own memories only.
func TestASummaryBacklogIsTakenOldestFirstAYearAtATime(t *testing.T) {
	in, _ := newInstance(t, "", nil, nil)
	backlog(t, in, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), 500)
	backlog(t, in, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 60)
	due, err := in.summaryDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	y25, y26 := due[2025], due[2026]
	if len(due) != 2 || len(y25) != summaryBatch || len(y26) != 60 {
		t.Fatalf("due: 2025 %d, 2026 %d memories; want %d and 60", len(y25), len(y26), summaryBatch)
	}
	if y25[0].Description != "remark 0" || y25[summaryBatch-1].Description != fmt.Sprintf("remark %d", summaryBatch-1) || y26[0].Timestamp.Year() != 2026 {
		t.Fatalf("2025's batch runs %q to %q, 2026's starts %v", y25[0].Description, y25[summaryBatch-1].Description, y26[0].Timestamp)
	}
}

// BenchmarkSummaryDueWithABacklog: what maintenance pays at every cycle
// while a year of 20,000 memories waits for its summary.
func BenchmarkSummaryDueWithABacklog(b *testing.B) {
	in, _ := newInstance(b, "", nil, nil)
	backlog(b, in, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 20_000)
	ctx := context.Background()
	if _, err := in.summaryDue(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if due, err := in.summaryDue(ctx); err != nil || len(due[2025]) != summaryBatch {
			b.Fatalf("due %d, %v", len(due[2025]), err)
		}
	}
}

// A command that writes memories leaves the index up to date: a view
// after it reads the index on disk instead of building one in memory (6 to
// 15 s and 630 MB at 100,000 memories).
func TestChatAndReflectLeaveTheIndexCurrent(t *testing.T) {
	in, _ := newInstance(t, "chat-turn.json", chatState, nil)
	if _, err := in.Chat(context.Background(), "Hi! I'm Ada. What are you?"); err != nil {
		t.Fatal(err)
	}
	if !indexCurrent(t, in.Root) {
		t.Error("after a chat turn the index is behind the memory files")
	}
	in, _ = newInstance(t, "reflection-conflict.json", state([]Value{{"honesty", 0.6, ValueActive}}, nil), nil)
	if _, err := in.Reflect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !indexCurrent(t, in.Root) {
		t.Error("after a reflection the index is behind the memory files")
	}
}
