package conversation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/openai"
)

// After the tool loop stopped at its limit, the conversation ends on the
// tool results; the next line joins them as one user turn in the request
// the kernel builds (OpenAI-compatible servers may refuse two user turns
// in a row), checked by the strict fake Anthropic server.
func TestChatGoesOnAfterTheToolLoopLimit(t *testing.T) {
	var entries []string
	for i := 1; i <= 10; i++ {
		entries = append(entries, `{"content":[{"type":"thinking","thinking":"again","signature":"s`+fmt.Sprint(i)+`"},`+kerneltest.ToolUse(fmt.Sprintf("t%d", i), "get_datetime", map[string]string{})+`]}`)
	}
	entries = append(entries, `{"match":{"last_user_contains":"go on"},"response":{"content":[{"type":"thinking","thinking":"ok","signature":"s11"},{"type":"text","text":"Done at last."}]}}`)
	client, srv := kerneltest.FakeAnthropic(t, `{"responses":[`+strings.Join(entries, ",")+`]}`)
	k := kerneltest.Open(t, kernel.Options{Client: client, ServerTools: true})
	ctx := context.Background()
	res, err := k.Conversation().Say(ctx, "chat", "keep checking the time", conversation.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "" || !strings.Contains(res.Limit, "stopped after 10 API calls") || !strings.Contains(strings.Join(res.Notes, "\n"), "max_tool_loops") {
		t.Fatalf("the limit was not said: text %q, limit %q, notes %q", res.Text, res.Limit, res.Notes)
	}
	saved, err := k.Conversation().Conversation(ctx, "chat")
	if err != nil {
		t.Fatal(err)
	}
	if err := llm.CheckRequest(&llm.Request{Model: "m", MaxTokens: 1, Messages: saved}); err != nil {
		t.Fatalf("the saved conversation is not valid: %v", err)
	}
	res, err = k.Conversation().Say(ctx, "chat", "go on", conversation.CallOptions{})
	if err != nil || res.Text != "Done at last." {
		t.Fatalf("the next line after the limit: %v %+v", err, res)
	}
	everyRequestAcceptedAndEchoed(t, srv, 11)
	last := srv.Received()[10].Request.Messages
	alternating(t, last)
	turn := last[len(last)-1]
	if turn.Role != llm.RoleUser || turn.Content[0].Type != llm.BlockToolResult || turn.Content[0].ToolUseID != "t10" || turn.Text() != "go on" {
		t.Fatalf("the line should join the pending tool results in one user turn: %+v", turn)
	}
	saved, _ = k.Conversation().Conversation(ctx, "chat")
	alternating(t, saved)
}

// alternating fails when two consecutive messages have one role.
func alternating(t *testing.T, msgs []llm.Message) {
	t.Helper()
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == msgs[i-1].Role {
			t.Fatalf("messages %d and %d are both %s turns", i-1, i, msgs[i].Role)
		}
	}
}

// The same through the openai adapter, against a Chat Completions server
// as strict as a chat template that wants the roles to alternate: the
// line after the limit follows the tool messages as the one user message.
func TestChatGoesOnAfterTheToolLoopLimitOverOpenAI(t *testing.T) {
	var mu sync.Mutex
	var got [][]map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		got = append(got, req.Messages)
		n := len(got)
		mu.Unlock()
		for i := 1; i < len(req.Messages); i++ {
			if req.Messages[i]["role"] == "user" && req.Messages[i-1]["role"] == "user" {
				w.WriteHeader(400)
				io.WriteString(w, `{"error":{"message":"Conversation roles must alternate user/assistant/user/assistant/...","type":"BadRequestError"}}`)
				return
			}
		}
		msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": fmt.Sprintf("c%d", n), "type": "function",
			"function": map[string]any{"name": "get_datetime", "arguments": "{}"}}}}
		finish := "tool_calls"
		if n > 5 {
			msg, finish = map[string]any{"role": "assistant", "content": "Done at last."}, "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer srv.Close()
	p, err := openai.New(openai.Config{APIKey: "test-key", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	k := kerneltest.Open(t, kernel.Options{Client: &llm.Client{Provider: p}})
	ctx := context.Background()
	// The light tier: no thinking, five tool loops.
	if res, err := k.Conversation().Say(ctx, "chat", "keep checking the time", conversation.CallOptions{Tier: 1}); err != nil || res.Limit == "" {
		t.Fatalf("the first line: %v %+v", err, res)
	}
	res, err := k.Conversation().Say(ctx, "chat", "go on", conversation.CallOptions{Tier: 1})
	if err != nil || res.Text != "Done at last." {
		t.Fatalf("the next line after the limit: %v %+v", err, res)
	}
	last := got[5]
	var roles []string
	for _, m := range last {
		roles = append(roles, fmt.Sprint(m["role"]))
	}
	if tail := strings.Join(roles[len(roles)-3:], ","); tail != "assistant,tool,user" || fmt.Sprint(last[len(last)-1]["content"]) != "go on" {
		t.Fatalf("the request after the limit ends %v: %v", tail, last[len(last)-1])
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
	if len(got) != 3 || !got[2].Content[0].IsError || got[2].Content[1].Text != "hello?" || got[2].Content[2].Text != "are you there?" {
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
		entries = append(entries, fmt.Sprintf(`{"content":[{"type":"thinking","thinking":"again","signature":"s%d"},%s]}`, n, kerneltest.ToolUse(fmt.Sprintf("t%d", n), "get_datetime", map[string]string{})))
	}
	k, p := kerneltest.New(t, `{"responses":[`+strings.Join(entries, ",")+`]}`)
	ctx := context.Background()
	for line := 1; line <= 6; line++ {
		before := len(p.Requests())
		res, err := k.Conversation().Say(ctx, "chat", fmt.Sprintf("line %d", line), conversation.CallOptions{})
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
