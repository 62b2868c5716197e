package conversation_test

import (
	"context"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
)

func TestAFailedRenderIsToldToTheLLMOnce(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[{"type":"text","text":"I will fix it."}]},
		{"content":[{"type":"text","text":"Hello."}]}
	]}`)
	ctx := context.Background()
	sh, _ := k.Conversation().Store().AddShell(ctx, "function A(){ return <div>{x.y}</div> }")
	k.Conversation().Store().SetShellStatus(ctx, sh.ID, store.ShellFailed, "ReferenceError: x is not defined")
	k.Conversation().Call(ctx, []llm.Message{llm.UserText("hi")}, conversation.CallOptions{})
	k.Conversation().Call(ctx, []llm.Message{llm.UserText("hi again")}, conversation.CallOptions{})
	first := p.Requests()[0].Messages[0]
	if len(first.Content) != 2 || !strings.Contains(first.Content[1].Text, "ReferenceError: x is not defined") {
		t.Fatalf("the render error was not told: %+v", first.Content)
	}
	if second := p.Requests()[1].Messages[0]; len(second.Content) != 1 {
		t.Fatalf("the render error was told twice: %+v", second.Content)
	}
}

func TestToolLoopRunsTheKernelsToolsNamedInTheRequest(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[
		{"content":[`+kerneltest.ToolUse("t1", "block_list", map[string]string{})+`]},
		{"content":[{"type":"text","text":"nine blocks"}]}
	]}`)
	req := &llm.Request{Model: "claude-haiku-4-5", MaxTokens: 500, Messages: []llm.Message{llm.UserText("how many blocks?")},
		Tools: []llm.Tool{{Name: "block_list", InputSchema: []byte(`{"type":"object"}`)}, {Type: "web_search_20260209", Name: "web_search"}}}
	res, err := k.Conversation().ToolLoop(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "nine blocks" || !strings.Contains(p.Requests()[1].Messages[2].Content[0].Content.Text, `"name":"wake"`) {
		t.Fatalf("result %q; tool result %q", res.Text(), p.Requests()[1].Messages[2].Content[0].Content.Text)
	}
	if n := len(p.Requests()[0].Tools); n != 2 {
		t.Fatalf("sent %d tools, want the two declared", n)
	}
}

// A request of the page without a model gets the deep tier's, as
// callAPI's does (§7.1), instead of the API's refusal.
func TestToolLoopWithoutAModelTakesTheDeepTiers(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"hi"}]}]}`)
	ctx := context.Background()
	res, err := k.Conversation().ToolLoop(ctx, &llm.Request{MaxTokens: 100, Messages: []llm.Message{llm.UserText("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	deep, err := k.Conversation().TierParams(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Requests()[0].Model; res.Text() != "hi" || got == "" || got != deep.Model {
		t.Fatalf("sent model %q, want the deep tier's %q", got, deep.Model)
	}
}

func TestDescribeGivesOneLinePerEvent(t *testing.T) {
	line, level, ok := Describe(llm.Event{Kind: llm.EventToolResult, Tool: "block_read", Result: "no\nsuch   block", IsError: true})
	if !ok || level != LevelError || line != "← error: block_read no such block" {
		t.Fatalf("%q %q %v", line, level, ok)
	}
	if _, _, ok := Describe(llm.Event{Kind: "other"}); ok {
		t.Fatal("unknown events get no line")
	}
}
