package script

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
)

const testModel = "claude-sonnet-4-5"

func mustParse(t *testing.T, script string) *Script {
	t.Helper()
	s, err := Parse([]byte(script))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// userRequest is a valid one-turn request.
func userRequest(text string) *llm.Request {
	return &llm.Request{Model: testModel, MaxTokens: 256, Messages: []llm.Message{llm.UserText(text)}}
}

// toolResultRequest is a valid request whose last user turn answers a
// get_weather tool_use with result.
func toolResultRequest(result string) *llm.Request {
	return &llm.Request{
		Model:     testModel,
		MaxTokens: 256,
		System:    []llm.SystemBlock{{Type: llm.BlockText, Text: "You are a weather bot."}},
		Tools:     []llm.Tool{{Name: "get_weather", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Messages: []llm.Message{
			llm.UserText("weather in Paris?"),
			{Role: llm.RoleAssistant, Content: []llm.ContentBlock{
				{Type: llm.BlockToolUse, ID: "toolu_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.ContentBlock{
				llm.ToolResultBlock("toolu_1", llm.ToolResultContent{Text: result}, false),
			}},
		},
	}
}

// unansweredToolUseRequest breaks the API's rule that every tool_use is
// answered by a tool_result in the next user turn.
func unansweredToolUseRequest() *llm.Request {
	req := toolResultRequest("")
	req.Messages[2] = llm.UserText("never mind")
	return req
}

func TestParseScriptRejectsUnknownFieldsNamingTheEntry(t *testing.T) {
	ok := `{"content":[{"type":"text","text":"fine"}]}`
	cases := []struct {
		name, entry, want string
	}{
		{"typo in match", `{"match":{"last_user_contain":"x"},"response":` + ok + `}`, `"last_user_contain"`},
		{"typo in wrapped entry", `{"match":{"model":"m"},"reponse":` + ok + `}`, `"reponse"`},
		{"typo in bare response", `{"content":[{"type":"text","text":"x"}],"stop_reasn":"end_turn"}`, `"stop_reasn"`},
		{"typo in wrapped response", `{"response":{"content":[],"usgae":{}}}`, `"usgae"`},
		{"typo in error", `{"error":{"status":529,"type":"overloaded_error","retry_afer":2}}`, `"retry_afer"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"responses":[` + ok + `,` + c.entry + `]}`))
			if err == nil {
				t.Fatalf("Parse accepted %s", c.entry)
			}
			if !strings.Contains(err.Error(), "responses[1]") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q should name responses[1] and the field %s", err, c.want)
			}
		})
	}
}

func TestParseScriptRejectsMalformedScripts(t *testing.T) {
	cases := []struct {
		name, script, want string
	}{
		{"typo at top level", `{"respones":[]}`, `"respones"`},
		{"no responses", `{}`, `no "responses"`},
		{"response and error", `{"responses":[{"response":{"content":[]},"error":{"status":529,"type":"overloaded_error"}}]}`, "not both"},
		{"match alone", `{"responses":[{"match":{"model":"m"}}]}`, `needs a "response" or an "error"`},
		{"error status not an error", `{"responses":[{"error":{"status":200,"type":"x"}}]}`, "status 200"},
		{"error without type", `{"responses":[{"error":{"status":500}}]}`, `no "type"`},
		{"unknown stop reason", `{"responses":[{"content":[],"stop_reason":"end_trun"}]}`, `"end_trun"`},
		{"response without content", `{"responses":[{"stop_reason":"end_turn"}]}`, `no "content"`},
		{"tool_use without name", `{"responses":[{"content":[{"type":"tool_use","id":"t1","input":{}}]}]}`, "no name"},
		{"entry not an object", `{"responses":["hi"]}`, "responses[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.script))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%s) = %v, want an error containing %s", c.script, err, c.want)
			}
		})
	}
}

func TestLoadScriptReadsFileAndNamesItInErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"responses":[{"content":[{"type":"text","text":"hi"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"responses":[{"match":{"modle":"x"},"response":{"content":[]}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(good)
	if err != nil || s.Len() != 1 {
		t.Fatalf("Load(good) = %v entries, %v; want 1 entry", s.Len(), err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `"modle"`) {
		t.Errorf("Load(bad) error = %v, want it to name %s and the field \"modle\"", err, bad)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load(missing) error = %v, want it to name the file", err)
	}
}

func TestScriptEachProviderKeepsItsOwnUsedState(t *testing.T) {
	s := mustParse(t, `{"responses":[{"content":[{"type":"text","text":"one"}]},{"content":[{"type":"text","text":"two"}]}]}`)
	a, b := New(s), New(s)
	ra, err := a.Messages(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	ra.Content[0].Text = "mutated by caller a"
	rb, err := b.Messages(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if rb.Text() != "one" {
		t.Errorf("second provider's first answer = %q, want \"one\" (its own used state, unshared response)", rb.Text())
	}
	if a.Remaining() != 1 || b.Remaining() != 1 {
		t.Errorf("Remaining = %d and %d, want 1 each", a.Remaining(), b.Remaining())
	}
}

// TestDocExamplePlaysAsDocumented keeps docs/scripts.md's example valid.
func TestDocExamplePlaysAsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scripts.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/scripts.md has no ```json example")
	}
	p := New(mustParse(t, example))
	var waits []time.Duration
	c := &llm.Client{Provider: p, Retry: llm.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}}
	req := toolResultRequest("")
	req.Model = "claude-opus-4-6"
	req.Messages = req.Messages[:1]

	call, err := c.Send(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	uses := call.Response.ToolUses()
	if call.Attempts != 2 || len(waits) != 1 || waits[0] != 2*time.Second || len(uses) != 1 || uses[0].Name != "get_weather" {
		t.Fatalf("first call: %d attempts, waits %v, tool uses %+v; want a 2s retry, then the get_weather call", call.Attempts, waits, uses)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: call.Response.Content},
		llm.Message{Role: llm.RoleUser, Content: []llm.ContentBlock{llm.ToolResultBlock(uses[0].ID, llm.ToolResultContent{Text: "sunny"}, false)}})
	if call, err = c.Send(context.Background(), req); err != nil || call.Response.Text() != "It is sunny in Paris." {
		t.Fatalf("tool result call: %v, %v; want the tool_result_for entry", call, err)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: call.Response.Content}, llm.UserText("thanks"))
	if call, err = c.Send(context.Background(), req); err != nil || call.Response.Text() != "Anything else?" || call.Usage.InputTokens != 120 {
		t.Fatalf("last call: %v, %v; want \"Anything else?\" with 120 input tokens", call, err)
	}
	if _, err := c.Send(context.Background(), req); !errors.Is(err, ErrExhausted) {
		t.Errorf("fifth request: %v, want the script exhausted", err)
	}
}
