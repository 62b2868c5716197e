package hermitcrab

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/llm"
)

func TestChatGoesOnAfterTheToolLoopLimit(t *testing.T) {
	var entries []string
	for i := 1; i <= 10; i++ {
		entries = append(entries, `{"content":[{"type":"thinking","thinking":"again","signature":"s`+fmt.Sprint(i)+`"},`+toolUse(fmt.Sprintf("t%d", i), "get_datetime", map[string]string{})+`]}`)
	}
	entries = append(entries, `{"match":{"last_user_contains":"go on"},"response":{"content":[{"type":"thinking","thinking":"ok","signature":"s11"},{"type":"text","text":"Done at last."}]}}`)
	k, p := newKernel(t, `{"responses":[`+strings.Join(entries, ",")+`]}`)
	ctx := context.Background()
	res, err := k.Say(ctx, "chat", "keep checking the time", CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "" || !strings.Contains(res.Limit, "stopped after 10 API calls") || !strings.Contains(strings.Join(res.Notes, "\n"), "max_tool_loops") {
		t.Fatalf("the limit was not said: text %q, limit %q, notes %q", res.Text, res.Limit, res.Notes)
	}
	saved, err := k.Conversation(ctx, "chat")
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.CheckRequest(&llm.Request{Model: "m", MaxTokens: 1, Messages: saved}); err != nil {
		t.Fatalf("the saved conversation is not valid: %v", err)
	}
	res, err = k.Say(ctx, "chat", "go on", CallOptions{})
	if err != nil || res.Text != "Done at last." {
		t.Fatalf("the next line after the limit: %v %+v", err, res)
	}
	last := p.Requests()[10].Messages
	results, line := last[len(last)-2], last[len(last)-1]
	if results.Role != llm.RoleUser || results.Content[0].Type != llm.BlockToolResult || line.Role != llm.RoleUser || line.Text() != "go on" {
		t.Fatalf("the line should follow the pending tool results: %+v %+v", results, line)
	}
}

func TestContinuableAnswersAToolUseLeftOpen(t *testing.T) {
	msgs := []llm.Message{
		llm.UserText("write a long thing"),
		{Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.TextBlock("Let me"), {Type: llm.BlockToolUse, ID: "t1", Name: "block_write", Input: []byte(`{}`)}}},
		llm.UserText("hello?"),
		llm.UserText("are you there?"),
	}
	got := continuable(msgs)
	if err := llm.CheckRequest(&llm.Request{Model: "m", MaxTokens: 1, Messages: got}); err != nil {
		t.Fatalf("still invalid: %v", err)
	}
	if len(got) != 4 || !got[2].Content[0].IsError || got[2].Content[1].Text != "hello?" || got[3].Text() != "are you there?" {
		t.Fatalf("got %+v", got)
	}
	if len(msgs) != 4 || len(msgs[2].Content) != 1 {
		t.Fatal("the input was changed")
	}
}

// TestChatHittingTheToolLoopLimitLineAfterLineKeepsItsWindowBounded: when
// the tool loop stops at its limit on every line, no user turn of the
// window is a clean place to cut (each is tool results or a line joined to
// them). The window still keeps to max_messages (a combined turn whole),
// and every request is valid, instead of growing by a tool loop per line.
func TestChatHittingTheToolLoopLimitLineAfterLineKeepsItsWindowBounded(t *testing.T) {
	var entries []string
	for n := 1; n <= 60; n++ {
		entries = append(entries, fmt.Sprintf(`{"content":[{"type":"thinking","thinking":"again","signature":"s%d"},%s]}`, n, toolUse(fmt.Sprintf("t%d", n), "get_datetime", map[string]string{})))
	}
	k, p := newKernel(t, `{"responses":[`+strings.Join(entries, ",")+`]}`)
	ctx := context.Background()
	for line := 1; line <= 6; line++ {
		before := len(p.Requests())
		res, err := k.Say(ctx, "chat", fmt.Sprintf("line %d", line), CallOptions{})
		if err != nil || res.Limit == "" {
			t.Fatalf("line %d: %v, limit %q", line, err, res.Limit)
		}
		// The call's first request is the trimmed window (the default
		// shell's present tier: 20 messages).
		if first := p.Requests()[before].Messages; len(first) > 21 {
			t.Fatalf("line %d: the window sent has %d messages", line, len(first))
		}
	}
	last := p.Requests()[50].Messages
	if !strings.Contains(last[0].Text(), "earlier messages") || !strings.Contains(last[0].Text(), "tool results, whose calls were moved out") {
		t.Fatalf("the window's first turn: %q", last[0].Text())
	}
}
