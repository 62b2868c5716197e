package llm

import (
	"fmt"
	"regexp"
	"strings"
)

// InvalidRequestError lists the ways a request breaks the Messages API's
// rules. The Loop raises it before sending, so a broken conversation fails
// here with the exact cause instead of as an opaque 400 from the API; the
// fake server in llm/llmtest answers it as the API's 400.
type InvalidRequestError struct {
	Violations []string
}

func (e *InvalidRequestError) Error() string {
	return "llm: invalid request: " + strings.Join(e.Violations, "; ")
}

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// minThinkingBudget is the API's smallest thinking budget.
const minThinkingBudget = 1024

// CheckRequest checks req against the rules the Messages API enforces and
// returns an *InvalidRequestError naming every violation, or nil.
func CheckRequest(req *Request) error {
	var v []string
	add := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }

	if req.Model == "" {
		add("model: field required")
	}
	if req.MaxTokens < 1 {
		add("max_tokens: must be at least 1, got %d", req.MaxTokens)
	}
	for i, s := range req.System {
		if s.Type != BlockText {
			add("system.%d.type: must be \"text\", got %q", i, s.Type)
		}
		if s.Text == "" {
			add("system.%d: text content blocks must be non-empty", i)
		}
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1) {
		add("temperature: must be between 0 and 1, got %g", *req.Temperature)
	}
	if t := req.Thinking; t != nil {
		switch t.Type {
		case "enabled":
			if t.BudgetTokens < minThinkingBudget {
				add("thinking.budget_tokens: must be at least %d, got %d", minThinkingBudget, t.BudgetTokens)
			}
			if t.BudgetTokens >= req.MaxTokens {
				add("max_tokens: must be greater than thinking.budget_tokens (%d >= %d)", t.BudgetTokens, req.MaxTokens)
			}
			// Manual thinking starts every answer with a thinking block, so
			// it cannot also be forced to start with a tool call; adaptive
			// thinking can, since the model may answer without thinking.
			if tc := req.ToolChoice; tc != nil && (tc.Type == "any" || tc.Type == "tool") {
				add("tool_choice: thinking may not be enabled when tool_choice forces tool use (%q); use adaptive thinking or tool_choice auto", tc.Type)
			}
		case "adaptive", "disabled", "between_tools":
		default:
			add("thinking.type: must be enabled, adaptive, disabled or between_tools, got %q", t.Type)
		}
		if t.On() && req.Temperature != nil && *req.Temperature != 1 {
			add("temperature: may only be set to 1 when thinking is enabled, got %g", *req.Temperature)
		}
	}
	v = append(v, checkTools(req)...)
	v = append(v, checkMessages(req)...)
	if len(v) == 0 {
		return nil
	}
	return &InvalidRequestError{Violations: v}
}

func checkTools(req *Request) []string {
	var v []string
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		switch {
		case t.Name == "":
			v = append(v, fmt.Sprintf("tools.%d.name: field required", i))
		case seen[t.Name]:
			v = append(v, fmt.Sprintf("tools: tool names must be unique: duplicate tool name %q", t.Name))
		case !t.IsServer() && !toolNamePattern.MatchString(t.Name):
			v = append(v, fmt.Sprintf("tools.%d.name: %q must match %s", i, t.Name, toolNamePattern))
		}
		seen[t.Name] = true
		if !t.IsServer() && len(t.InputSchema) == 0 {
			v = append(v, fmt.Sprintf("tools.%d.input_schema: field required", i))
		}
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if !seen[tc.Name] {
				v = append(v, fmt.Sprintf("tool_choice.name: tool %q is not among the request's tools", tc.Name))
			}
		default:
			v = append(v, fmt.Sprintf("tool_choice.type: must be auto, any, tool or none, got %q", tc.Type))
		}
	}
	return v
}

func checkMessages(req *Request) []string {
	var v []string
	add := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	if len(req.Messages) == 0 {
		add("messages: at least one message is required")
		return v
	}
	if req.Messages[0].Role != RoleUser {
		add("messages.0.role: the first message must use the user role, got %q", req.Messages[0].Role)
	}
	for i, m := range req.Messages {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			add("messages.%d.role: must be user or assistant, got %q", i, m.Role)
		}
		if i > 0 && m.Role == req.Messages[i-1].Role {
			add("messages.%d: roles must alternate between user and assistant, got two %q turns in a row", i, m.Role)
		}
		if len(m.Content) == 0 {
			add("messages.%d: all messages must have non-empty content", i)
		}
		for j, b := range m.Content {
			switch {
			case b.Type == BlockText && b.Text == "":
				add("messages.%d.content.%d: text content blocks must be non-empty", i, j)
			case b.Type == BlockToolUse && m.Role != RoleAssistant:
				add("messages.%d.content.%d: tool_use blocks may only appear in assistant messages", i, j)
			case b.Type == BlockToolResult && m.Role != RoleUser:
				add("messages.%d.content.%d: tool_result blocks may only appear in user messages", i, j)
			case (b.Type == BlockThinking || b.Type == BlockRedactedThinking) && m.Role != RoleAssistant:
				add("messages.%d.content.%d: %s blocks may only appear in assistant messages", i, j, b.Type)
			}
		}
		if m.Role == RoleUser {
			v = append(v, checkToolResults(req.Messages, i)...)
		}
		if m.Role == RoleAssistant {
			v = append(v, checkAnswered(req.Messages, i)...)
		}
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" {
		v = append(v, checkThinkingKept(req.Messages)...)
	}
	return v
}

// checkAnswered: every tool_use in assistant message i needs a tool_result
// with its id in message i+1.
func checkAnswered(msgs []Message, i int) []string {
	var ids []string
	for _, b := range msgs[i].Content {
		if b.Type == BlockToolUse {
			ids = append(ids, b.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	answered := map[string]bool{}
	if i+1 < len(msgs) && msgs[i+1].Role == RoleUser {
		for _, b := range msgs[i+1].Content {
			if b.Type == BlockToolResult {
				answered[b.ToolUseID] = true
			}
		}
	}
	var missing []string
	for _, id := range ids {
		if !answered[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message",
		i, strings.Join(missing, ", "))}
}

// checkToolResults: the tool_result blocks of user message i come first and
// each answers a tool_use of message i−1, once.
func checkToolResults(msgs []Message, i int) []string {
	var v []string
	uses := map[string]bool{}
	if i > 0 {
		for _, b := range msgs[i-1].Content {
			if b.Type == BlockToolUse {
				uses[b.ID] = true
			}
		}
	}
	seenOther := false
	answered := map[string]bool{}
	for j, b := range msgs[i].Content {
		if b.Type != BlockToolResult {
			seenOther = true
			continue
		}
		if seenOther {
			v = append(v, fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come before any other content in the message", i, j))
		}
		if !uses[b.ToolUseID] {
			v = append(v, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message", i, j, b.ToolUseID))
		}
		if answered[b.ToolUseID] {
			v = append(v, fmt.Sprintf("messages.%d.content.%d: `tool_use_id` %s is answered twice", i, j, b.ToolUseID))
		}
		answered[b.ToolUseID] = true
	}
	return v
}

// checkThinkingKept: with manual thinking ("enabled"), every answer starts
// with a thinking block, so an assistant turn that used a tool and is being
// continued must still start with it; a loop that dropped thinking blocks
// is caught here. Adaptive thinking has no such rule: the model decides per
// turn whether to think, and a turn without thinking is sent back as it
// came (whether the thinking blocks the API did send came back unchanged
// is something only whoever served them can know; llm/script checks it).
func checkThinkingKept(msgs []Message) []string {
	last := len(msgs) - 1
	if msgs[last].Role != RoleUser {
		return nil
	}
	hasResult := false
	for _, b := range msgs[last].Content {
		if b.Type == BlockToolResult {
			hasResult = true
		}
	}
	if !hasResult || last == 0 {
		return nil
	}
	prev := msgs[last-1]
	if len(prev.Content) == 0 {
		return nil
	}
	if t := prev.Content[0].Type; t != BlockThinking && t != BlockRedactedThinking {
		return []string{fmt.Sprintf("messages.%d.content.0: expected `thinking` or `redacted_thinking`, but found `%s`. When thinking is enabled, an assistant message that used tools must start with its thinking block; keep thinking blocks in the history during a tool loop", last-1, t)}
	}
	return nil
}

// Normalize fixes, in place, the settings the API would reject but whose
// intent is clear, and returns a note for each change: a thinking budget at
// or above max_tokens raises max_tokens, and a temperature other than 1 is
// dropped while thinking is on.
func Normalize(req *Request) []string {
	var notes []string
	if t := req.Thinking; t != nil && t.Type == "enabled" && t.BudgetTokens >= req.MaxTokens {
		raised := t.BudgetTokens + thinkingHeadroom
		notes = append(notes, fmt.Sprintf("max_tokens raised from %d to %d so it stays above the thinking budget of %d", req.MaxTokens, raised, t.BudgetTokens))
		req.MaxTokens = raised
	}
	if req.Thinking.On() && req.Temperature != nil && *req.Temperature != 1 {
		notes = append(notes, fmt.Sprintf("temperature %g dropped: thinking requires the default temperature", *req.Temperature))
		req.Temperature = nil
	}
	return notes
}

// thinkingHeadroom is the room left for the answer when max_tokens is raised
// above a thinking budget.
const thinkingHeadroom = 4096
