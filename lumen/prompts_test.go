package lumen

import (
	"context"
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
	edit := func(root string) {
		os.WriteFile(filepath.Join(root, "prompts/json/instruction.md"), []byte("Reply in JSON only. Schema: {{schema}} (edited)\n"), 0o644)
		os.WriteFile(filepath.Join(root, "prompts/json/repair.md"), []byte("That was not right (edited):\n{{problems}}\n"), 0o644)
	}
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
	bad := func(root string) {
		os.WriteFile(filepath.Join(root, "prompts/json/repair.md"), []byte("Wrong: {{errors}}\n"), 0o644)
	}
	in, _ := newInstance(t, "", bad, withScript(p))
	_, err := in.Chat(context.Background(), "hi")
	if err == nil || !strings.Contains(err.Error(), "json/repair.md uses {{errors}}") || !strings.Contains(err.Error(), "{{problems}}") {
		t.Fatalf("err = %v, want the template and the variable it may use named", err)
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("%d requests sent with a broken template", n)
	}
}
