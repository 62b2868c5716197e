package conversation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/llm"
)

// conversation builds turns: "u" user text, "a" assistant text, "t" an
// assistant tool_use followed by its user tool_result.
func turns(pattern string) []llm.Message {
	var msgs []llm.Message
	for i, c := range pattern {
		switch c {
		case 'u':
			msgs = append(msgs, llm.UserText(fmt.Sprintf("user %d", i)))
		case 'a':
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{llm.TextBlock(fmt.Sprintf("reply %d", i))}})
		case 't':
			id := fmt.Sprintf("toolu_%d", i)
			msgs = append(msgs,
				llm.Message{Role: llm.RoleAssistant, Content: []llm.ContentBlock{{Type: llm.BlockToolUse, ID: id, Name: "block_list", Input: json.RawMessage(`{}`)}}},
				llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock(id, llm.ToolResultContent{Text: "[]"}, false)}})
		}
	}
	return msgs
}

func TestTrimNeverSplitsAToolUseFromItsResult(t *testing.T) {
	msgs := turns("uttautttau") // 15 messages
	for max := 1; max <= len(msgs); max++ {
		kept, cut := Trim(msgs, max)
		if cut+len(kept) != len(msgs) {
			t.Fatalf("max %d: %d kept + %d cut != %d", max, len(kept), cut, len(msgs))
		}
		if err := llm.CheckRequest(&llm.Request{Model: "m", MaxTokens: 1, Messages: kept}); err != nil {
			t.Fatalf("max %d: the trimmed window is not a valid conversation: %v", max, err)
		}
		if cut > 0 && !strings.Contains(kept[0].Content[0].Text, fmt.Sprintf("%d earlier messages", cut)) {
			t.Fatalf("max %d: no trim notice: %q", max, kept[0].Content[0].Text)
		}
	}
}

func TestTrimKeepsShortConversationsWhole(t *testing.T) {
	msgs := turns("uaua")
	kept, cut := Trim(msgs, 20)
	if cut != 0 || len(kept) != 4 || kept[0].Text() != "user 0" {
		t.Fatalf("kept %d cut %d", len(kept), cut)
	}
}

func TestTrimDoesNotChangeTheCallersMessages(t *testing.T) {
	msgs := turns("uauauau")
	Trim(msgs, 3)
	for _, m := range msgs {
		if strings.Contains(m.Text(), "earlier messages") {
			t.Fatal("the notice was written into the caller's conversation")
		}
	}
}

func TestAFullWindowCallSendsAValidTrimmedConversation(t *testing.T) {
	k, p := kerneltest.New(t, `{"responses":[{"content":[{"type":"text","text":"still here"}]}]}`)
	msgs := turns("uttautau" + strings.Repeat("ua", 10) + "u")
	if _, err := k.Conversation().Call(context.Background(), msgs, conversation.CallOptions{}); err != nil {
		t.Fatal(err) // the strict scripted provider would refuse a split pair
	}
	sent := p.Requests()[0].Messages
	if len(sent) > 20 || !strings.Contains(sent[0].Text(), "earlier messages") {
		t.Fatalf("sent %d messages; first %.80q", len(sent), sent[0].Text())
	}
}

func TestTrimNeverCutsInsideACombinedUserTurn(t *testing.T) {
	// A tool loop stopped at its limit, then a line typed after it: the
	// line and the tool results before it are one turn to the API.
	msgs := append(turns("uatttt"), llm.UserText("go on"))
	for max := 1; max < len(msgs); max++ {
		kept, _ := Trim(msgs, max)
		if len(kept) < 2 || kept[len(kept)-2].Role != llm.RoleUser {
			t.Fatalf("max %d: the line lost the tool results it follows: %d kept", max, len(kept))
		}
	}
}
