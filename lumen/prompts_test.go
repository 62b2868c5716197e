package lumen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen/memory"
)

// malformedChatTurn is a chat turn whose first THINK answer is not JSON,
// so the structured-output call sends it back once.
func malformedChatTurn() []step {
	return append([]step{answer("think", "I think I should say hello")}, chatTurn("hello")...)
}

// jsonWording is the instruction THINK's first request carried and the
// re-ask its second request ended with.
func jsonWording(t *testing.T, p *script.Provider) (instruction, repair string) {
	t.Helper()
	first, second := requestFor(p, "think", 0), requestFor(p, "think", 1)
	if first == nil || second == nil || len(second.Messages) != 3 {
		t.Fatalf("want THINK asked twice, the second time with the bad answer sent back; got %v, %v", first, second)
	}
	return first.System[len(first.System)-1].Text, second.Messages[2].Text()
}

// editPrompts writes files (path under prompts/ -> content) into a new
// instance before it is opened.
func editPrompts(files map[string]string) func(root string) {
	return func(root string) {
		for path, content := range files {
			os.WriteFile(filepath.Join(root, "prompts", path), []byte(content), 0o644)
		}
	}
}

func thinkSchema(t *testing.T) *llm.Schema {
	t.Helper()
	s, err := llm.SchemaFor[thought]()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEditedJSONTemplatesAreWhatTheModelReads(t *testing.T) {
	p := scripted(t, malformedChatTurn()...)
	edit := editPrompts(map[string]string{
		"json/instruction.md": "Reply in JSON only. Schema: {{schema}} (edited)\n",
		"json/repair.md":      "That was not right (edited):\n{{problems}}\n",
	})
	in, _ := newInstance(t, "", edit, withScript(p))
	if _, err := in.Chat(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	instruction, repair := jsonWording(t, p)
	if want := "Reply in JSON only. Schema: " + string(thinkSchema(t).JSON) + " (edited)"; instruction != want {
		t.Errorf("instruction:\n got %q\nwant %q", instruction, want)
	}
	if want := "That was not right (edited):\n- the answer contains no JSON value"; repair != want {
		t.Errorf("repair:\n got %q\nwant %q", repair, want)
	}
	for _, r := range p.Requests() {
		for _, b := range r.System {
			if strings.Contains(b.Text, "Answer with one JSON value") {
				t.Fatalf("a request still carries the built-in instruction: %q", b.Text)
			}
		}
	}
}

// The shipped templates say exactly what llm says by default, so lumen's
// models read what they read before the text moved into the instance.
func TestShippedJSONTemplatesMatchTheDefaultWording(t *testing.T) {
	p := scripted(t, malformedChatTurn()...)
	in, _ := newInstance(t, "", nil, withScript(p))
	if _, err := in.Chat(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	instruction, repair := jsonWording(t, p)
	schema := thinkSchema(t)
	_, problems := schema.Check("I think I should say hello")
	if want := llm.DefaultInstruction(string(schema.JSON)); instruction != want {
		t.Errorf("instruction:\n got %q\nwant %q", instruction, want)
	}
	if want := llm.DefaultRepair(problems); repair != want {
		t.Errorf("repair:\n got %q\nwant %q", repair, want)
	}
}

// An instance made before prompts/json existed gets the templates added
// when it is opened; one whose file is gone while it is open (or that
// cannot be written) uses the shipped default.
func TestAnInstanceWithoutTheJSONTemplatesStillWorks(t *testing.T) {
	p := scripted(t, append(malformedChatTurn(), malformedChatTurn()...)...)
	old := func(root string) { os.RemoveAll(filepath.Join(root, "prompts/json")) }
	in, _ := newInstance(t, "", old, withScript(p))
	want, _ := defaults.ReadFile("prompts/json/instruction.md")
	if got, err := os.ReadFile(filepath.Join(in.Root, "prompts/json/instruction.md")); err != nil || string(got) != string(want) {
		t.Fatalf("open did not add prompts/json/instruction.md: %q, %v", got, err)
	}
	if find(byAuthor(t, in, memory.Kernel), "MIGRATE: prompts/json/repair.md added") == nil {
		t.Errorf("no kernel memory records that prompts/json/repair.md was added")
	}
	if err := os.RemoveAll(filepath.Join(in.Root, "prompts/json")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := in.Chat(context.Background(), "hi"); err != nil {
			t.Fatal(err)
		}
	}
	allUsed(t, p)
	instruction, repair := jsonWording(t, p)
	if !strings.HasPrefix(instruction, "Answer with one JSON value and nothing else, matching this JSON Schema:\n{") ||
		repair != "Your answer does not match the schema:\n- the answer contains no JSON value\nAnswer again with only the corrected JSON." {
		t.Errorf("without the files the defaults should be used; got %q and %q", instruction, repair)
	}
}

func TestAJSONTemplateWithAnUnknownVariableFailsBeforeAnyCall(t *testing.T) {
	p := scripted(t, malformedChatTurn()...)
	bad := editPrompts(map[string]string{"json/repair.md": "Wrong: {{errors}}\n"})
	in, _ := newInstance(t, "", bad, withScript(p))
	_, err := in.Chat(context.Background(), "hi")
	if err == nil || !strings.Contains(err.Error(), "json/repair.md uses {{errors}}") || !strings.Contains(err.Error(), "{{problems}}") {
		t.Fatalf("err = %v, want the template and the variable it may use named", err)
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("%d requests sent with a broken template", n)
	}
}

func TestEditedActTemplatesAreWhatRecordReads(t *testing.T) {
	p := scripted(t, chatTurn("hello Ada")...)
	edit := editPrompts(map[string]string{
		"act/succeeded.md": "EDITED: {{skill}} ran and returned {{output}}\n",
		"act/shown.md":     " | the person saw: {{display}}\n",
	})
	in, _ := newInstance(t, "", edit, withScript(p))
	if _, err := in.Chat(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	want := `What happened: EDITED: chat ran and returned {"delivered": "hello Ada"} | the person saw: hello Ada`
	if got := requestFor(p, "record", 0).Messages[0].Text(); !strings.Contains(got, want) {
		t.Fatalf("RECORD's prompt lacks the edited outcome %q:\n%s", want, got)
	}
}

func TestEditedCreateSkillTemplatesAreWhatTheModelReads(t *testing.T) {
	greet, _ := json.Marshal(map[string]any{"name": "greet", "description": "greets", "files": map[string]string{"main.py": greetV1}})
	author := Candidate{Action: "write a greeting skill", Skill: "create-skill", Input: json.RawMessage(`{"skill":"greet"}`), Predicted: "a skill", Counterfactual: "none"}
	text := func(step string, v any) map[string]any {
		data, _ := json.Marshal(v)
		return map[string]any{"match": map[string]any{"system_contains": "step: " + step},
			"response": map[string]any{"content": []any{map[string]any{"type": "text", "text": string(data)}}}}
	}
	entries := []any{
		text("think", thinkOf(author)), text("decide", decideAll([]string{"warmth"}, []string{"greet people"}, true, 1)),
		map[string]any{"match": map[string]any{"system_contains": "step: create-skill"}, "response": map[string]any{"content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "create_skill", "input": json.RawMessage(`{"name":"greet"}`)}}, "stop_reason": "tool_use"}},
		map[string]any{"match": map[string]any{"tool_result_for": "create_skill"}, "response": map[string]any{"content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_2", "name": "create_skill", "input": json.RawMessage(greet)}}, "stop_reason": "tool_use"}},
		map[string]any{"match": map[string]any{"tool_result_for": "create_skill"}, "response": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "done"}}}},
		text("record", recorded),
	}
	data, _ := json.Marshal(map[string]any{"responses": entries})
	sc, err := script.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	p := script.New(sc)
	edit := func(root string) {
		state([]Value{{"warmth", 0.9, ValueActive}}, []Goal{{"greet people", 0.9, GoalWorking}})(root)
		editPrompts(map[string]string{
			"create-skill/tool-bad-input.md": "EDITED bad input: {{problems}}\n",
			"create-skill/created.md":        "EDITED made {{skill}}\n",
			"create-skill/tool-result.md":    "EDITED result: {{what}}\n",
			"create-skill/outcome.md":        "EDITED outcome: {{what}}\n",
		})(root)
	}
	in, _ := newInstance(t, "", edit, withScript(p))
	rep, _, err := in.pursueGoal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	allUsed(t, p)
	if len(rep.Created) != 1 {
		t.Fatalf("created %v", rep.Created)
	}
	var sent strings.Builder
	for _, r := range p.Requests() {
		data, _ := json.Marshal(r.Messages)
		sent.Write(data)
	}
	for _, want := range []string{"EDITED bad input: at /: missing properties", "EDITED result: EDITED made greet"} {
		if !strings.Contains(sent.String(), want) {
			t.Errorf("no tool result says %q:\n%s", want, sent.String())
		}
	}
	if got := requestFor(p, "record", 0).Messages[0].Text(); !strings.Contains(got, "What happened: EDITED outcome: EDITED made greet") {
		t.Errorf("RECORD's prompt lacks the edited outcome:\n%s", got)
	}
}

func TestEditedPartsAreWhatTheStepsRead(t *testing.T) {
	p := scripted(t, append(chatTurn("hello Ada"), chatTurn("bye Ada")...)...)
	edit := editPrompts(map[string]string{
		"parts/trigger-input.md": "EDITED the person wrote: {{input}}\n",
		"parts/candidate.md":     "EDITED option {{number}}: {{action}} with {{skill}}\n",
		"parts/person.md":        "EDITED {{time}} they said {{input}}\n",
	})
	in, _ := newInstance(t, "", edit, withScript(p))
	for _, msg := range []string{"hi", "see you"} {
		if _, err := in.Chat(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	allUsed(t, p)
	if got := requestFor(p, "think", 0).Messages[0].Text(); !strings.Contains(got, "trigger: EDITED the person wrote: hi") {
		t.Errorf("THINK's trigger is not the edited part:\n%s", got)
	}
	if got := requestFor(p, "decide", 0).Messages[0].Text(); !strings.Contains(got, "EDITED option 1: say hello Ada with chat") {
		t.Errorf("DECIDE's candidates are not the edited part:\n%s", got)
	}
	if got := requestFor(p, "think", 1).Messages[0].Text(); !strings.Contains(got, "they said hi") {
		t.Errorf("the conversation is not the edited part:\n%s", got)
	}
	// The kernel's own records keep its wording: audit matches on it.
	acts := list(t, in, memory.Filter{Step: "act"})
	if len(acts) == 0 || acts[0].Situation != "action loop: external input: hi" {
		t.Errorf("the ACT memory's situation changed with the template: %+v", acts)
	}
}
