package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
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

// BetaInterleavedThinking is the anthropic-beta value that lets the model
// think between tool calls. With it a thinking budget is the whole turn's,
// spread over the turn's calls, and may exceed max_tokens.
const BetaInterleavedThinking = "interleaved-thinking-2025-05-14"

// CheckRequest checks req against the rules the Messages API enforces and
// returns an *InvalidRequestError naming every violation, or nil. betas are
// the anthropic-beta values the request goes out with (each may be a
// comma-separated list); the rules they relax are relaxed here too, so the
// check never refuses what the API would take.
func CheckRequest(req *Request, betas ...string) error {
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
			if t.BudgetTokens >= req.MaxTokens && !HasBeta(betas, BetaInterleavedThinking) {
				add("max_tokens: must be greater than thinking.budget_tokens (%d >= %d); with the %s beta it need not be", t.BudgetTokens, req.MaxTokens, BetaInterleavedThinking)
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
	v = append(v, checkMCPServers(req)...)
	v = append(v, checkMessages(req)...)
	v = append(v, checkBreakpoints(req)...)
	if len(v) == 0 {
		return nil
	}
	return &InvalidRequestError{Violations: v}
}

// CheckInputSchema says what the API would refuse in a client tool's
// input_schema: it is required, and is a JSON Schema object whose type is
// "object". The error reads as the API's would after
// "tools.N.input_schema".
func CheckInputSchema(schema json.RawMessage) error {
	if len(schema) == 0 {
		return errors.New(": field required")
	}
	var s struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return errors.New(": Input should be a valid dictionary")
	}
	if s.Type != "object" {
		return fmt.Errorf(".type: Input should be 'object', got %s", compactJSON(s.Type))
	}
	return nil
}

func compactJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func checkTools(req *Request) []string {
	var v []string
	seen := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		switch {
		case t.Type == ToolMCPToolset && t.Name == "":
			continue // named by its server: checkMCPServers
		case t.Name == "":
			v = append(v, fmt.Sprintf("tools.%d.name: field required", i))
		case seen[t.Name]:
			v = append(v, fmt.Sprintf("tools: tool names must be unique: duplicate tool name %q", t.Name))
		case !t.IsServer() && !toolNamePattern.MatchString(t.Name):
			v = append(v, fmt.Sprintf("tools.%d.name: %q must match %s", i, t.Name, toolNamePattern))
		}
		seen[t.Name] = true
		// A client tool without a schema is sent with the empty object
		// schema by every adapter (and Tool's JSON), which the API takes.
		if !t.IsServer() && len(t.InputSchema) > 0 {
			if err := CheckInputSchema(t.InputSchema); err != nil {
				v = append(v, fmt.Sprintf("tools.%d.input_schema%s", i, err))
			}
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

// checkMCPServers checks the MCP connector's two halves against each
// other, as the API does: every server an https URL with a unique name,
// offered by exactly one MCP toolset, and every toolset naming a server.
func checkMCPServers(req *Request) []string {
	var v []string
	add := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	toolsets := map[string]int{}
	for i, t := range req.Tools {
		if t.Type != ToolMCPToolset {
			continue
		}
		name := t.MCPServerName()
		switch {
		case name == "":
			add("tools.%d.mcp_server_name: field required (a string naming one of mcp_servers)", i)
		case !slices.ContainsFunc(req.MCPServers, func(s MCPServer) bool { return s.Name == name }):
			add("tools.%d: mcp_server_name %q is not among mcp_servers", i, name)
		}
		toolsets[name]++
	}
	seen := map[string]bool{}
	for i, s := range req.MCPServers {
		if s.Type != "url" {
			add("mcp_servers.%d.type: must be \"url\", got %q", i, s.Type)
		}
		if !strings.HasPrefix(s.URL, "https://") {
			add("mcp_servers.%d.url: must start with https://", i)
		}
		switch {
		case s.Name == "":
			add("mcp_servers.%d.name: field required", i)
		case seen[s.Name]:
			add("mcp_servers: server names must be unique: duplicate name %q", s.Name)
		case toolsets[s.Name] != 1:
			add("mcp_servers.%d: server %q must be referenced by exactly one mcp_toolset in tools, got %d", i, s.Name, toolsets[s.Name])
		}
		seen[s.Name] = true
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
	last := len(req.Messages) - 1
	var images []placedImage // every image of the request, in order
	for i, m := range req.Messages {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			add("messages.%d.role: must be user or assistant, got %q", i, m.Role)
		}
		if len(m.Content) == 0 && (i != last || m.Role != RoleAssistant) {
			add("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
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
			v = append(v, checkImages(fmt.Sprintf("messages.%d.content.%d", i, j), b, &images)...)
		}
	}
	for _, img := range images {
		if p := checkSides(img.src, len(images) > ManyImages); p != "" {
			add("%s.%s", img.at, p)
		}
	}
	turns := combine(req.Messages)
	for t, turn := range turns {
		switch turn.role {
		case RoleUser:
			v = append(v, checkToolResults(turns, t)...)
		case RoleAssistant:
			v = append(v, checkAnswered(turns, t)...)
		}
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" {
		v = append(v, checkThinkingKept(turns)...)
	}
	return v
}

// turn is a run of consecutive messages of one role, msgs: the API
// combines them into a single turn, so the rules that pair one turn with
// the next apply to the run as a whole.
type turn struct {
	role  string
	first int // index of msgs[0] in the request
	msgs  []Message
}

// placedImage is an image block's source and where it is in the request.
type placedImage struct {
	at  string
	src *ImageSource
}

// checkImages checks the image b is, or the images of the tool result b
// is, as the API does (checkImage), and adds each to images, for the rule on their sides (checkSides).
func checkImages(at string, b ContentBlock, images *[]placedImage) []string {
	var v []string
	if b.Type == BlockImage {
		*images = append(*images, placedImage{at, b.Source})
		if p := checkImage(b.Source); p != "" {
			v = append(v, at+"."+p)
		}
	}
	for k, inner := range b.Content.Blocks {
		v = append(v, checkImages(fmt.Sprintf("%s.content.%d", at, k), inner, images)...)
	}
	return v
}

func combine(msgs []Message) []turn {
	turns := make([]turn, 0, len(msgs))
	for i, m := range msgs {
		if n := len(turns); n > 0 && turns[n-1].role == m.Role {
			turns[n-1].msgs = msgs[turns[n-1].first : i+1]
			continue
		}
		turns = append(turns, turn{role: m.Role, first: i, msgs: msgs[i : i+1]})
	}
	return turns
}

// holds reports whether the turn has a block of this type whose id (a
// tool_use's ID, a tool_result's ToolUseID) is id, or any id when id is "".
func (t turn) holds(typ, id string) bool {
	for _, m := range t.msgs {
		for _, b := range m.Content {
			if b.Type != typ {
				continue
			}
			switch {
			case id == "", typ == BlockToolUse && b.ID == id, typ == BlockToolResult && b.ToolUseID == id:
				return true
			}
		}
	}
	return false
}

// checkAnswered: every tool_use in assistant turn t needs a tool_result
// with its id in turn t+1.
func checkAnswered(turns []turn, t int) []string {
	next := turn{}
	if t+1 < len(turns) && turns[t+1].role == RoleUser {
		next = turns[t+1]
	}
	var missing []string
	msg := -1
	for i, m := range turns[t].msgs {
		for _, b := range m.Content {
			if b.Type == BlockToolUse && !next.holds(BlockToolResult, b.ID) {
				missing = append(missing, b.ID)
				if msg < 0 {
					msg = turns[t].first + i
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message",
		msg, strings.Join(missing, ", "))}
}

// checkToolResults: the tool_result blocks of user turn t come first and
// each answers a tool_use of turn t−1, once.
func checkToolResults(turns []turn, t int) []string {
	var v []string
	prev := turn{}
	if t > 0 {
		prev = turns[t-1]
	}
	var answered []string
	seenOther := false
	for i, m := range turns[t].msgs {
		i += turns[t].first
		for j, b := range m.Content {
			if b.Type != BlockToolResult {
				seenOther = true
				continue
			}
			if seenOther {
				v = append(v, fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come before any other content in the message", i, j))
			}
			if prev.role != RoleAssistant || !prev.holds(BlockToolUse, b.ToolUseID) {
				v = append(v, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message", i, j, b.ToolUseID))
			}
			if slices.Contains(answered, b.ToolUseID) {
				v = append(v, fmt.Sprintf("messages.%d.content.%d: `tool_use_id` %s is answered twice", i, j, b.ToolUseID))
			}
			answered = append(answered, b.ToolUseID)
		}
	}
	return v
}

// checkThinkingKept: with manual thinking ("enabled"), the model thinks at
// the start of its turn, and a tool loop is one turn: so the assistant
// message that began the loop being continued (answered with tool results,
// the results answered by the next call, and so on back) must still start
// with its thinking block; a loop that dropped thinking blocks is caught
// here. The answers after tool results need not start with thinking: without
// interleaved thinking the model does not think again within its turn.
// Adaptive thinking has no such rule: the model decides per turn whether to
// think, and a turn without thinking is sent back as it came (whether the
// thinking blocks the API did send came back unchanged is something only
// whoever served them can know; llm/script checks it).
func checkThinkingKept(turns []turn) []string {
	continues := func(t int) bool { // user turn t answers the assistant turn before it
		return t >= 1 && turns[t].role == RoleUser && turns[t-1].role == RoleAssistant && turns[t].holds(BlockToolResult, "")
	}
	t := len(turns) - 1
	if !continues(t) {
		return nil
	}
	for continues(t - 2) {
		t -= 2
	}
	start := turns[t-1]
	if len(start.msgs[0].Content) == 0 {
		return nil
	}
	if typ := start.msgs[0].Content[0].Type; typ != BlockThinking && typ != BlockRedactedThinking {
		return []string{fmt.Sprintf("messages.%d.content.0: expected `thinking` or `redacted_thinking`, but found `%s`. When thinking is enabled, the assistant message that starts a tool loop must start with its thinking block; keep thinking blocks in the history during a tool loop", start.first, typ)}
	}
	return nil
}

// Normalize fixes, in place, the settings the API would reject but whose
// intent is clear, and returns a note for each change: a thinking budget at
// or above max_tokens raises max_tokens (unless betas hold
// BetaInterleavedThinking, with which the API takes it as it is, or the
// budget is too large to raise it above, which CheckRequest then names),
// and a temperature other than 1 is dropped while thinking is on.
func Normalize(req *Request, betas ...string) []string {
	var notes []string
	if t := req.Thinking; t != nil && t.Type == "enabled" && t.BudgetTokens >= req.MaxTokens && t.BudgetTokens <= math.MaxInt-thinkingHeadroom &&
		!HasBeta(betas, BetaInterleavedThinking) {
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

// HasBeta reports whether the anthropic-beta values hold want; each value
// may be a comma-separated list, as the header is.
func HasBeta(betas []string, want string) bool {
	for _, list := range betas {
		for _, b := range strings.Split(list, ",") {
			if strings.TrimSpace(b) == want {
				return true
			}
		}
	}
	return false
}

// maxBreakpoints is how many blocks with cache_control a request may have.
const maxBreakpoints = 4

// checkBreakpoints counts the request's cache breakpoints (the top-level
// automatic one among them) and checks each cache_control's value.
func checkBreakpoints(req *Request) []string {
	var v []string
	n := 0
	check := func(where string, cc *CacheControl) {
		if cc == nil {
			return
		}
		n++
		path := "cache_control"
		if where != "" {
			path = where + ".cache_control"
		}
		if cc.Type != "ephemeral" {
			v = append(v, fmt.Sprintf("%s.type: Input should be 'ephemeral', got %q", path, cc.Type))
		}
		if cc.TTL != "" && cc.TTL != "5m" && cc.TTL != "1h" {
			v = append(v, fmt.Sprintf("%s.ttl: Input should be '5m' or '1h', got %q", path, cc.TTL))
		}
	}
	var blocks func(where string, bs []ContentBlock)
	blocks = func(where string, bs []ContentBlock) {
		for j, b := range bs {
			at := fmt.Sprintf("%s.content.%d", where, j)
			check(at, b.CacheControl)
			blocks(at, b.Content.Blocks)
		}
	}
	for i, t := range req.Tools {
		check(fmt.Sprintf("tools.%d", i), t.CacheControl)
	}
	for i, s := range req.System {
		check(fmt.Sprintf("system.%d", i), s.CacheControl)
	}
	for i, m := range req.Messages {
		blocks(fmt.Sprintf("messages.%d", i), m.Content)
	}
	check("", req.CacheControl)
	if n > maxBreakpoints {
		v = append(v, fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", maxBreakpoints, n))
	}
	return v
}
