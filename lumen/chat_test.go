package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen/memory"
)

// chatTurn is the answers of one chat turn that replies with msg.
func chatTurn(msg string) []step {
	return []step{
		answer("think", thinkOf(chatSay(msg))),
		answer("decide", decideAll([]string{"honesty"}, nil, true, 1)),
		answer("record", recorded),
		answer("trigger", noTrigger),
	}
}

func TestAnEightTurnChatShowsThinkEveryEarlierInput(t *testing.T) {
	var steps []step
	for i := 1; i <= 8; i++ {
		steps = append(steps, chatTurn(fmt.Sprintf("reply %d", i))...)
	}
	p := scripted(t, steps...)
	in, _ := newInstance(t, "", state([]Value{{"honesty", 0.8, ValueActive}}, nil), withScript(p))
	ctx := context.Background()
	inputs := []string{"My name is Ada.", "I live in Lyon.", "I have a cat called Miso.", "I teach maths.",
		"My sister is Ines.", "I am learning Go.", "I dislike coffee.", "What do you remember about me?"}
	for _, input := range inputs {
		if _, err := in.Chat(ctx, input); err != nil {
			t.Fatal(err)
		}
	}
	allUsed(t, p)
	last := requestFor(p, "think", 7).Messages[0].Text()
	conv, _, _ := strings.Cut(last[strings.Index(last, "The conversation so far"):], "What you remember")
	for i, input := range inputs[:7] {
		if !strings.Contains(conv, "person: "+input) || !strings.Contains(conv, fmt.Sprintf("you: reply %d", i+1)) {
			t.Errorf("turn 8's conversation lacks turn %d (%q and its reply):\n%s", i+1, input, conv)
		}
	}
	// Each turn wrote about seven memories, mostly the kernel's audit
	// lines; the recent window holds experiences only, so every input is
	// there too.
	if n := len(byAuthor(t, in, memory.Kernel)); n < 7*5 {
		t.Fatalf("only %d kernel memories: the scenario must write many audit lines", n)
	}
	think := list(t, in, memory.Filter{Step: "think"})
	recent := dataOf(t, think[len(think)-1])["recent"].([]any)
	ext := byAuthor(t, in, memory.External)
	for _, e := range ext {
		if !containsAny(recent, e.ID) {
			t.Errorf("the last THINK's recent window lacks the input %q", e.Description)
		}
	}
	for _, id := range recent {
		es, _ := in.Memory().Get(ctx, id.(string))
		if len(es) == 1 && es[0].Author == memory.Kernel {
			t.Errorf("a kernel audit line %q is in the recent window", es[0].Description)
		}
	}
}

func containsAny(xs []any, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestTheInputsImportanceIsJudgedInTheThinkCall(t *testing.T) {
	important := 0.95
	th := thinkOf(chatSay("I will remember that."))
	th.InputImportance = &important
	p := scripted(t, answer("think", th), answer("decide", decideAll([]string{"honesty"}, nil, true, 1)), answer("record", recorded), answer("trigger", noTrigger))
	in, _ := newInstance(t, "", state([]Value{{"honesty", 0.8, ValueActive}}, nil), withScript(p))
	if _, err := in.Chat(context.Background(), "My daughter was born on 3 May."); err != nil {
		t.Fatal(err)
	}
	ext := byAuthor(t, in, memory.External)
	if len(ext) != 1 || ext[0].Importance != 0.95 || ext[0].Weight != 0.8 {
		t.Fatalf("input memory = %+v, want written at 0.8 and judged 0.95 by THINK", ext)
	}
	if !near(ext[0].Current, 1.0) { // 0.95 + THINK's use 0.05
		t.Errorf("current weight %v, want 1.0", ext[0].Current)
	}
}

func TestWithoutTheSkillItNeedsTheChatStillAnswersThePerson(t *testing.T) {
	weather := Candidate{Action: "fetch the forecast for Paris", Skill: "weather", Input: json.RawMessage(`{"city":"Paris"}`), Predicted: "she knows", Counterfactual: "she does not"}
	p := scripted(t,
		// Turn 1: the missing skill is wanted most; a chat reply is the other candidate.
		answer("think", thinkOf(weather, chatSay("I cannot check the weather yet, sorry."))),
		answer("decide", decision{Alignments: []Alignment{{Candidate: 1, Values: []string{"helpfulness"}, Goals: []string{}, Direct: true},
			{Candidate: 2, Values: []string{"honesty"}, Goals: []string{}, Direct: true}}, Preference: []int{1, 2}}),
		answer("record", recorded),
		answer("trigger", noTrigger),
		// Turn 2: only the missing skill: the kernel's own words answer.
		answer("think", thinkOf(weather)),
		answer("decide", decision{Alignments: []Alignment{{Candidate: 1, Values: []string{"helpfulness"}, Goals: []string{}, Direct: true}}, Preference: []int{1}}),
		answer("trigger", noTrigger),
	)
	in, _ := newInstance(t, "", state([]Value{{"helpfulness", 0.9, ValueActive}, {"honesty", 0.6, ValueActive}}, nil), withScript(p))
	ctx := context.Background()
	first, err := in.Chat(ctx, "What's the weather in Paris?")
	if err != nil {
		t.Fatal(err)
	}
	if first.Verdict.Outcome != OutcomeGap || first.Verdict.Fallback != 2 || first.Reply() != "I cannot check the weather yet, sorry." {
		t.Fatalf("turn 1: verdict %+v, reply %q; want the gap recorded and candidate 2 answering", first.Verdict, first.Reply())
	}
	if first.CreatedGoal != "author skill weather: fetch the forecast for Paris" {
		t.Errorf("goal = %q", first.CreatedGoal)
	}
	second, err := in.Chat(ctx, "Please, the weather in Paris?")
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if !strings.Contains(second.Reply(), "it needs a skill I don't have (weather)") || !strings.Contains(second.Reply(), first.CreatedGoal) {
		t.Fatalf("turn 2 reply = %q, want the gap reply from prompts/decide/gap-reply.md", second.Reply())
	}
}

// greetSkill writes a skill that greets in its own words.
const greetV1 = "import json, sys\nif '--help' in sys.argv:\n    print('greet: greets a person. Input: {\"name\": \"...\"}'); sys.exit(0)\nreq = json.load(sys.stdin)\nprint(json.dumps({'ok': True, 'output': 'hello ' + req['input']['name'], 'display': 'hello ' + req['input']['name']}))\n"

func TestARevisedSkillIsUsedOnTheNextStep(t *testing.T) {
	v2 := strings.ReplaceAll(greetV1, "'hello '", "'good morning, '")
	revise, _ := json.Marshal(map[string]any{"name": "greet", "description": "greets warmly", "revise": true, "files": map[string]string{"main.py": v2}})
	greet := Candidate{Action: "greet Ada", Skill: "greet", Input: json.RawMessage(`{"name":"Ada"}`), Predicted: "greeted", Counterfactual: "not greeted"}
	improve := Candidate{Action: "make greet warmer", Skill: "create-skill", Input: json.RawMessage(`{"skill":"greet"}`), Predicted: "warmer", Counterfactual: "cold"}
	toolUse := map[string]any{"match": map[string]any{"system_contains": "step: create-skill"}, "response": map[string]any{"content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "create_skill", "input": json.RawMessage(revise)}}, "stop_reason": "tool_use"}}
	done := map[string]any{"match": map[string]any{"tool_result_for": "create_skill"}, "response": map[string]any{"content": []any{
		map[string]any{"type": "text", "text": "I revised greet."}}}}
	entries := func(steps ...step) []any {
		p := scripted(t, steps...)
		_ = p
		var out []any
		for _, s := range steps {
			text, _ := json.Marshal(s.v)
			out = append(out, map[string]any{"match": map[string]any{"system_contains": "step: " + s.name},
				"response": map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}}})
		}
		return out
	}
	all := entries(answer("think", thinkOf(improve)), answer("decide", decideAll([]string{"warmth"}, []string{"greet people warmly"}, true, 1)))
	all = append(all, toolUse, done)
	all = append(all, entries(answer("record", recorded),
		answer("think", thinkOf(greet)), answer("decide", decideAll([]string{"warmth"}, []string{"greet people warmly"}, true, 1)), answer("record", recorded))...)
	data, _ := json.Marshal(map[string]any{"responses": all})
	sc, err := script.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	p := script.New(sc)
	in, _ := newInstance(t, "", func(root string) {
		state([]Value{{"warmth", 0.9, ValueActive}}, []Goal{{"greet people warmly", 0.9, GoalWorking}})(root)
		os.MkdirAll(filepath.Join(root, "skills", "greet"), 0o755)
		os.WriteFile(filepath.Join(root, "skills", "greet", "main.py"), []byte(greetV1), 0o644)
	}, withScript(p))
	ctx := context.Background()
	first, _, err := in.pursueGoal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Created) != 1 || first.Created[0] != "greet" {
		t.Fatalf("step 1 created %v", first.Created)
	}
	second, _, err := in.pursueGoal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if second.Reply() != "good morning, Ada" {
		t.Fatalf("the next step's greet said %q, want the revised version", second.Reply())
	}
	kept, _ := in.Skills().History("greet")
	if len(kept) != 1 {
		t.Fatalf("kept versions = %+v, want version 1", kept)
	}
	// The revision's --help was checked before it counted.
	if find(byAuthor(t, in, memory.Kernel), "ACT: create-skill revised skill greet") == nil {
		t.Error("the revision was not logged")
	}
}

func TestWithManySkillsOnlyTheRelevantOnesHelpIsShown(t *testing.T) {
	helps := map[string]string{
		"weather":   "weather: the forecast for a city. Input: {\"city\": \"Paris\"}",
		"calendar":  "calendar: lists appointments for a day.",
		"notes":     "notes: keeps notes in a file.",
		"timer":     "timer: counts down minutes.",
		"currency":  "currency: converts money between currencies.",
		"translate": "translate: translates text between languages.",
		"recipes":   "recipes: finds recipes for an ingredient.",
		"news":      "news: headlines of the day.",
	}
	p := scripted(t, answer("think", thinkOf(chatSay("let me check"))), answer("decide", decideAll(nil, nil, true, 1)), answer("record", recorded), answer("trigger", noTrigger))
	in, _ := newInstance(t, "", func(root string) {
		for name, help := range helps {
			os.MkdirAll(filepath.Join(root, "skills", name), 0o755)
			os.WriteFile(filepath.Join(root, "skills", name, "main.py"), []byte(fmt.Sprintf("import sys\nif '--help' in sys.argv:\n    print(%q)\n", help)), 0o644)
		}
	}, func(o *Options) { withScript(p)(o); o.SkillsInFull = 3 })
	if _, err := in.Chat(context.Background(), "Will it rain in Paris tomorrow? I need the forecast for the city."); err != nil {
		t.Fatal(err)
	}
	sys := requestFor(p, "think", 0).System[1].Text // after the instance block
	if !strings.Contains(sys, "### weather\n"+helps["weather"]) || !strings.Contains(sys, "### chat\n") {
		t.Fatalf("THINK lacks the weather or chat --help in full:\n%s", sys)
	}
	if strings.Contains(sys, "### news") || !strings.Contains(sys, "- news: headlines of the day.") {
		t.Errorf("an unrelated skill is shown in full, or not listed by name:\n%s", sys)
	}
	if n := strings.Count(sys, "\n### "); n != 3 { // chat, weather, create-skill: nothing else is relevant
		t.Errorf("%d skills in full, want chat, weather and the built-in", n)
	}
}

func TestPromptStrengthDecaysFromEachGoalsOwnLastPursuit(t *testing.T) {
	in, _ := newInstance(t, "", nil, nil)
	ctx := context.Background()
	now := in.opts.Now()
	old := now.Add(-60 * 24 * time.Hour)
	data, _ := json.Marshal(map[string]string{"goal": "Write the Book"})
	in.mem.Append(memory.Memory{Timestamp: old, Author: memory.Goal, Weight: 0.6, Description: "pursued the book", Data: data})
	other, _ := json.Marshal(map[string]string{"goal": "tidy"})
	for i := 0; i < 600; i++ { // many newer goal memories of another goal
		in.mem.Append(memory.Memory{Timestamp: now.Add(time.Duration(i) * time.Second), Author: memory.Goal, Weight: 0.6, Description: "tidied", Data: other})
	}
	last, err := in.lastPursued(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !last["write the book"].Equal(old) {
		t.Fatalf("last pursuit of the book = %v, want %v (60 days ago)", last["write the book"], old)
	}
	sc := scoring{values: nil, goals: []GoalRecord{{Goal: Goal{"Write the Book", 1, GoalWorking}}}, available: func(string) bool { return true },
		lastPursued: last, now: now}
	v := sc.score([]Candidate{{Action: "write", Skill: "chat"}}, decision{Alignments: []Alignment{{Candidate: 1, Goals: []string{"Write the Book"}}}})
	if want := IndirectPrompt * math.Pow(0.5, 60.0/7); math.Abs(v.Scores[0].P-want) > 1e-9 {
		t.Fatalf("P = %v, want %v (halved per week since its own last pursuit)", v.Scores[0].P, want)
	}
}

// A hundred exchanges: THINK's conversation keeps the last Conversation
// of them, whole, so the prompt stays bounded; the early ones are not
// lost, retrieval brings them back when the input names them.
func TestAHundredTurnChatKeepsThinksPromptBoundedAndOldTurnsRetrievable(t *testing.T) {
	turns := 100
	if raceEnabled {
		turns = 40
	}
	var steps []step
	for i := 1; i <= turns; i++ {
		steps = append(steps, chatTurn(fmt.Sprintf("noted %d", i))...)
	}
	for i := 0; i < turns/10; i++ { // the periodic reflections
		steps = append(steps, answer("review", reviewAnswer{Summary: "we talked", Tensions: []Tension{}}), answer("ask", askAnswer{Proposals: []Proposal{}}))
	}
	p := scripted(t, steps...)
	in, _ := newInstance(t, "", state([]Value{{"honesty", 0.8, ValueActive}}, nil), withScript(p))
	ctx := context.Background()
	input := func(i int) string {
		return fmt.Sprintf("Fact %d: the word of turn %d is zq%dx.", i, i, i)
	}
	for i := 1; i < turns; i++ {
		if _, err := in.Chat(ctx, input(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Chat(ctx, "Do you remember the word zq3x?"); err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	// The memories THINK gets are bounded by count (Recent + TopK), and
	// which ones come depends on the input; the conversation is bounded
	// by Conversation exchanges.
	size := func(n int) int {
		text := requestFor(p, "think", n).Messages[0].Text()
		conv, _, _ := strings.Cut(text[strings.Index(text, "The conversation so far"):], "What you remember")
		return len(conv)
	}
	if early, last := size(turns/3), size(turns-1); last > early*5/4 {
		t.Errorf("THINK's conversation grew from %d bytes at turn %d to %d at turn %d: it must be bounded", early, turns/3+1, last, turns)
	}
	last := requestFor(p, "think", turns-1).Messages[0].Text()
	conv, memories, ok := strings.Cut(last[strings.Index(last, "The conversation so far"):], "What you remember")
	if !ok {
		t.Fatalf("no memories section in:\n%s", last)
	}
	for i := turns - 12; i < turns; i++ {
		if !strings.Contains(conv, "person: "+input(i)) {
			t.Errorf("the conversation lacks turn %d", i)
		}
	}
	if strings.Contains(conv, input(3)) {
		t.Error("the conversation holds turn 3: it is not bounded")
	}
	if !strings.Contains(memories, input(3)) {
		t.Errorf("turn 3, which the input names, was not retrieved:\n%s", memories)
	}
}

// With an embedding endpoint configured on an instance that has lived
// without one, chat answers at once (memories recalled by their words)
// while they are embedded in the background, and tells the person so on
// the first turn only.
func TestChatAnswersWhileMemoriesAreEmbeddedAndSaysSoOnce(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if len(req.Input) > 1 { // a batch of memories: held until the test ends
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"data": []map[string]any{{"index": 0, "embedding": []float64{1, 0}}}})
	}))
	defer srv.Close()
	defer close(release)
	p := scripted(t, append(chatTurn("Hello again."), chatTurn("Still here.")...)...)
	in, _ := newInstance(t, "", func(root string) {
		state([]Value{{"honesty", 0.8, ValueActive}}, nil)(root)
		for i := 0; i < 300; i++ {
			appendUnindexed(t, root, memory.Memory{Timestamp: time.Date(2025, 3, 1, 9, 0, i, 0, time.UTC), Author: memory.External, Weight: 0.5,
				Situation: "chat", Description: fmt.Sprintf("an earlier message, number %d", i)})
		}
	}, func(o *Options) {
		withScript(p)(o)
		o.Embedder = &memory.Embedder{URL: srv.URL, Model: "m"}
	})
	ctx := context.Background()
	first, err := in.Chat(ctx, "Do you remember message number 7?")
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Notes) != 1 || !strings.Contains(first.Text(), "memories have no embedding yet; they are being embedded in the background") {
		t.Errorf("first turn:\n%s\nwant a note that memories are being embedded", first.Text())
	}
	if first.Reply() != "Hello again." {
		t.Errorf("reply %q", first.Reply())
	}
	think := list(t, in, memory.Filter{Step: "think"})
	if mode := dataOf(t, think[0])["retrieval"].(string); !strings.Contains(mode, "full-text") || !strings.Contains(mode, "being embedded in the background") {
		t.Errorf("THINK's retrieval: %q, want full text while memories are embedded", mode)
	}
	second, err := in.Chat(ctx, "And number 8?")
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Notes) != 0 {
		t.Errorf("the second turn said it again: %v", second.Notes)
	}
}
