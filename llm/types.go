package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
)

// Roles of a conversation turn.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Content block types the runtime interprets. Every other type is kept as raw
// JSON (see ContentBlock.Raw).
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// Stop reasons the Messages API returns.
const (
	StopEndTurn                    = "end_turn"
	StopToolUse                    = "tool_use"
	StopPauseTurn                  = "pause_turn"
	StopMaxTokens                  = "max_tokens"
	StopSequence                   = "stop_sequence"
	StopRefusal                    = "refusal"
	StopModelContextWindowExceeded = "model_context_window_exceeded"
)

// Request is a Messages API request. Its JSON form is the API's wire format,
// so scripts, the fake server and adapters all speak the same shape.
type Request struct {
	Model         string        `json:"model"`
	MaxTokens     int           `json:"max_tokens"`
	System        []SystemBlock `json:"system,omitempty"`
	Messages      []Message     `json:"messages"`
	Tools         []Tool        `json:"tools,omitempty"`
	ToolChoice    *ToolChoice   `json:"tool_choice,omitempty"`
	Thinking      *Thinking     `json:"thinking,omitempty"`
	Temperature   *float64      `json:"temperature,omitempty"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	Metadata      *Metadata     `json:"metadata,omitempty"`
	// Container is the code-execution container id from an earlier
	// response; sending it back keeps the sandbox's files between calls.
	Container string `json:"container,omitempty"`
	// MCPServers are remote MCP servers the provider itself connects to
	// and calls (Anthropic's MCP connector, beta): each is offered to the
	// model through the one MCPToolset tool in Tools that names it.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`

	// CacheControl asks for automatic prompt caching: the API puts a
	// breakpoint on the last cacheable block and moves it forward as the
	// conversation grows. It counts as one of the four breakpoints a
	// request may have.
	CacheControl *CacheControl `json:"cache_control,omitempty"`

	// OnDelta, when set, receives the answer's pieces as they arrive
	// (text, thinking, tool input; see Delta), in order, on the goroutine
	// that sends the request: it should return quickly. It is not sent.
	OnDelta func(Delta) `json:"-"`
}

// Clone returns a copy of r whose top-level slices (system, messages, tools,
// stop sequences) and pointed-to settings are its own: appending to them or
// replacing their elements leaves r alone. A message's content blocks and
// raw JSON stay shared, so change a message by replacing it whole.
func (r *Request) Clone() *Request {
	c := *r
	c.System = append([]SystemBlock(nil), r.System...)
	c.Messages = append([]Message(nil), r.Messages...)
	c.Tools = append([]Tool(nil), r.Tools...)
	c.StopSequences = append([]string(nil), r.StopSequences...)
	c.MCPServers = append([]MCPServer(nil), r.MCPServers...)
	if r.ToolChoice != nil {
		tc := *r.ToolChoice
		c.ToolChoice = &tc
	}
	if r.Thinking != nil {
		t := *r.Thinking
		c.Thinking = &t
	}
	if r.Temperature != nil {
		t := *r.Temperature
		c.Temperature = &t
	}
	if r.Metadata != nil {
		m := *r.Metadata
		c.Metadata = &m
	}
	if r.CacheControl != nil {
		cc := *r.CacheControl
		c.CacheControl = &cc
	}
	return &c
}

// WithoutCache returns a copy of r with no cache breakpoint: no top-level
// cache_control, none on a tool, a system block or a content block (nor
// inside a tool result). r is not changed. Client.NoCache sends every
// request so.
func (r *Request) WithoutCache() *Request {
	c := r.Clone()
	c.CacheControl = nil
	for i := range c.Tools {
		c.Tools[i].CacheControl = nil
	}
	for i := range c.System {
		c.System[i].CacheControl = nil
	}
	for i, m := range c.Messages {
		if blocks, changed := uncached(m.Content); changed {
			c.Messages[i] = Message{Role: m.Role, Content: blocks}
		}
	}
	return c
}

// uncached is blocks without cache_control, copied when one had it.
func uncached(blocks []ContentBlock) ([]ContentBlock, bool) {
	var out []ContentBlock
	for i, b := range blocks {
		inner, innerChanged := uncached(b.Content.Blocks)
		if b.CacheControl == nil && !innerChanged {
			continue
		}
		if out == nil {
			out = slices.Clone(blocks)
		}
		out[i].CacheControl = nil
		if innerChanged {
			out[i].Content.Blocks = inner
		}
	}
	return out, out != nil
}

// WithCacheControl returns m with cc on its last block (a copy; m is not
// changed): a breakpoint at the end of the message.
func (m Message) WithCacheControl(cc *CacheControl) Message {
	if len(m.Content) == 0 {
		return m
	}
	blocks := slices.Clone(m.Content)
	blocks[len(blocks)-1].CacheControl = cc
	return Message{Role: m.Role, Content: blocks}
}

// CacheControl marks a prompt-caching breakpoint.
type CacheControl struct {
	Type string `json:"type"`          // "ephemeral"
	TTL  string `json:"ttl,omitempty"` // "5m" or "1h"
}

// Ephemeral is the cache_control value that marks a cache breakpoint
// (the 5-minute cache).
func Ephemeral() *CacheControl { return &CacheControl{Type: "ephemeral"} }

// EphemeralTTL marks a breakpoint with a lifetime: "5m" or "1h" (a 1-hour
// write costs 2× an input token instead of 1.25×).
func EphemeralTTL(ttl string) *CacheControl { return &CacheControl{Type: "ephemeral", TTL: ttl} }

// SystemBlock is one text block of the system prompt.
type SystemBlock struct {
	Type         string        `json:"type"` // always "text"
	Text         string        `json:"text"`
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// UnmarshalJSON accepts a block object; a plain string is handled by
// Request's system field through systemList.
func (s *SystemBlock) UnmarshalJSON(data []byte) error {
	type plain SystemBlock
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if p.Type == "" {
		p.Type = BlockText
	}
	*s = SystemBlock(p)
	return nil
}

// UnmarshalJSON accepts the API's two forms of "system" (a string or a list
// of text blocks) and of message content (a string or a list of blocks).
func (r *Request) UnmarshalJSON(data []byte) error {
	type plain Request
	var aux struct {
		plain
		System json.RawMessage `json:"system,omitempty"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*r = Request(aux.plain)
	r.System = nil
	if len(aux.System) == 0 || string(aux.System) == "null" {
		return nil
	}
	var text string
	if err := json.Unmarshal(aux.System, &text); err == nil {
		r.System = []SystemBlock{{Type: BlockText, Text: text}}
		return nil
	}
	return json.Unmarshal(aux.System, &r.System)
}

// Message is one conversation turn.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// UnmarshalJSON accepts content as a string (one text block) or a list.
func (m *Message) UnmarshalJSON(data []byte) error {
	var aux struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	m.Role = aux.Role
	m.Content = nil
	if len(aux.Content) == 0 || string(aux.Content) == "null" {
		return nil
	}
	var text string
	if err := json.Unmarshal(aux.Content, &text); err == nil {
		m.Content = []ContentBlock{TextBlock(text)}
		return nil
	}
	return json.Unmarshal(aux.Content, &m.Content)
}

// UserText is a user message holding one text block.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []ContentBlock{TextBlock(text)}}
}

// Text joins the text blocks of the message.
func (m Message) Text() string { return joinText(m.Content) }

// ContentBlock is one block of message content. The fields used depend on
// Type. Blocks of types the runtime does not interpret (server_tool_use,
// web_search_tool_result, code_execution_tool_result, document, …) have
// only Raw and CacheControl, and are marshalled back as Raw's bytes with
// CacheControl's value in its cache_control member; their type cannot be
// changed.
//
// A block decoded from JSON keeps the bytes it was decoded from in Raw,
// whatever its type, so that every block the API sent goes back byte for
// byte, fields the runtime does not know included (a tool_use's
// toolset_name, or a field added to the API later). MarshalJSON writes Raw
// while the block's fields still hold what Raw holds; once a field has been
// changed, it writes the fields, and keeps the members of Raw that no field
// holds. A block built in Go has no Raw and is written from its fields.
type ContentBlock struct {
	Type string

	// text
	Text      string
	Citations json.RawMessage // kept as given; nil when absent

	// image
	Source *ImageSource

	// tool_use
	ID    string
	Name  string
	Input json.RawMessage
	// Caller is set on a tool_use that code execution made (programmatic
	// tool calling); kept as given.
	Caller json.RawMessage

	// tool_result
	ToolUseID string
	Content   ToolResultContent
	IsError   bool

	// thinking
	Thinking  string
	Signature string

	// redacted_thinking
	Data string

	CacheControl *CacheControl

	// Raw holds the bytes the block was decoded from; for a type the
	// runtime does not interpret it is the whole block.
	Raw json.RawMessage
}

// ImageSource is an image block's source.
type ImageSource struct {
	Type      string `json:"type"` // "base64", "url" or "file"
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"` // Files API
}

// ToolResultContent is a tool_result's content: a string, or a list of
// blocks when Blocks is non-nil. The form received is the form sent back.
type ToolResultContent struct {
	Text   string
	Blocks []ContentBlock
}

// TextBlock returns a text content block.
func TextBlock(text string) ContentBlock { return ContentBlock{Type: BlockText, Text: text} }

// ToolResultBlock returns a tool_result block answering the tool_use id.
func ToolResultBlock(toolUseID string, content ToolResultContent, isError bool) ContentBlock {
	return ContentBlock{Type: BlockToolResult, ToolUseID: toolUseID, Content: content, IsError: isError}
}

// IsKnownType reports whether the runtime interprets blocks of this type.
func IsKnownType(t string) bool {
	switch t {
	case BlockText, BlockImage, BlockToolUse, BlockToolResult, BlockThinking, BlockRedactedThinking:
		return true
	}
	return false
}

type textWire struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Citations    json.RawMessage `json:"citations,omitempty"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

type imageWire struct {
	Type         string        `json:"type"`
	Source       *ImageSource  `json:"source"`
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

type toolUseWire struct {
	Type         string          `json:"type"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	Caller       json.RawMessage `json:"caller,omitempty"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

type toolResultWire struct {
	Type         string          `json:"type"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
}

type thinkingWire struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedWire struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

// unknownWire is what the fields of a block of a type the runtime does not
// interpret hold; the rest of it is in Raw.
type unknownWire struct {
	Type         string        `json:"type"`
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// MarshalJSON writes the block in the API's wire format: Raw while the
// fields still hold what Raw holds, else the fields with the members of Raw
// that no field holds.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	if len(b.Raw) == 0 {
		return b.marshalFields()
	}
	var orig ContentBlock
	if err := orig.decodeFields(b.Raw); err != nil {
		return nil, fmt.Errorf("%s block: its raw JSON does not decode: %w", b.Type, err)
	}
	orig.Raw = b.Raw
	if sameBlock(b, orig) {
		return b.Raw, nil
	}
	if !IsKnownType(b.Type) || !IsKnownType(orig.Type) {
		// Only Raw says what such a block holds: it keeps its type, and
		// CacheControl is the one field written over it.
		if orig.Type != b.Type {
			return nil, fmt.Errorf("a %s block cannot be sent as %s: its raw JSON holds a %s", orig.Type, b.Type, orig.Type)
		}
		head, err := json.Marshal(unknownWire{b.Type, b.CacheControl})
		if err != nil {
			return nil, err
		}
		return withUnknownMembers(head, b.Raw, jsonNames(reflect.TypeFor[unknownWire]()))
	}
	fields, err := b.marshalFields()
	if err != nil || orig.Type != b.Type {
		// A block whose type was changed keeps nothing of its old self.
		return fields, err
	}
	return withUnknownMembers(fields, b.Raw, wireMembers[b.Type])
}

// marshalFields writes the block from its fields alone.
func (b ContentBlock) marshalFields() ([]byte, error) {
	switch b.Type {
	case BlockText:
		return json.Marshal(textWire{b.Type, b.Text, b.Citations, b.CacheControl})
	case BlockImage:
		return json.Marshal(imageWire{b.Type, b.Source, b.CacheControl})
	case BlockToolUse:
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return json.Marshal(toolUseWire{b.Type, b.ID, b.Name, input, b.Caller, b.CacheControl})
	case BlockToolResult:
		content, err := b.Content.MarshalJSON()
		if err != nil {
			return nil, err
		}
		return json.Marshal(toolResultWire{b.Type, b.ToolUseID, content, b.IsError, b.CacheControl})
	case BlockThinking:
		return json.Marshal(thinkingWire{b.Type, b.Thinking, b.Signature})
	case BlockRedactedThinking:
		return json.Marshal(redactedWire{b.Type, b.Data})
	}
	return nil, fmt.Errorf("content block of type %q has no raw JSON to send", b.Type)
}

// wireMembers names, per interpreted block type, the JSON members its
// fields hold; any other member of Raw is kept as received.
var wireMembers = map[string][]string{
	BlockText:             jsonNames(reflect.TypeFor[textWire]()),
	BlockImage:            jsonNames(reflect.TypeFor[imageWire]()),
	BlockToolUse:          jsonNames(reflect.TypeFor[toolUseWire]()),
	BlockToolResult:       jsonNames(reflect.TypeFor[toolResultWire]()),
	BlockThinking:         jsonNames(reflect.TypeFor[thinkingWire]()),
	BlockRedactedThinking: jsonNames(reflect.TypeFor[redactedWire]()),
}

func jsonNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// withUnknownMembers appends to the JSON object fields the members of raw
// whose names are not in known, in name order.
func withUnknownMembers(fields, raw []byte, known []string) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, err
	}
	var extra []string
	for name := range members {
		if !slices.Contains(known, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return fields, nil
	}
	slices.Sort(extra)
	out := bytes.TrimSuffix(bytes.TrimSpace(fields), []byte("}"))
	for _, name := range extra {
		key, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		out = append(append(append(append(out, ','), key...), ':'), members[name]...)
	}
	return append(out, '}'), nil
}

// sameBlock reports whether a and b say the same thing: the same fields,
// and for a type the runtime does not interpret the same raw bytes.
func sameBlock(a, b ContentBlock) bool {
	if a.Type != b.Type {
		return false
	}
	if !IsKnownType(a.Type) {
		return bytes.Equal(a.Raw, b.Raw) && ptrEqual(a.CacheControl, b.CacheControl)
	}
	return a.Text == b.Text && bytes.Equal(a.Citations, b.Citations) &&
		ptrEqual(a.Source, b.Source) &&
		a.ID == b.ID && a.Name == b.Name && bytes.Equal(a.Input, b.Input) && bytes.Equal(a.Caller, b.Caller) &&
		a.ToolUseID == b.ToolUseID && a.IsError == b.IsError && sameResult(a.Content, b.Content) &&
		a.Thinking == b.Thinking && a.Signature == b.Signature && a.Data == b.Data &&
		ptrEqual(a.CacheControl, b.CacheControl)
}

func sameResult(a, b ToolResultContent) bool {
	if a.Text != b.Text || (a.Blocks == nil) != (b.Blocks == nil) || len(a.Blocks) != len(b.Blocks) {
		return false
	}
	for i := range a.Blocks {
		if !sameBlock(a.Blocks[i], b.Blocks[i]) {
			return false
		}
	}
	return true
}

func ptrEqual[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// UnmarshalJSON reads a block in the API's wire format and keeps its bytes
// in Raw.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	if err := b.decodeFields(data); err != nil {
		return err
	}
	b.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// decodeFields sets the block's fields from data, leaving Raw empty.
func (b *ContentBlock) decodeFields(data []byte) error {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	*b = ContentBlock{Type: head.Type}
	switch head.Type {
	case "":
		return fmt.Errorf("content block has no type: %s", clip.Line(string(data), 200))
	case BlockText:
		var w textWire
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
		b.Text, b.Citations, b.CacheControl = w.Text, w.Citations, w.CacheControl
	case BlockImage:
		var w imageWire
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
		b.Source, b.CacheControl = w.Source, w.CacheControl
	case BlockToolUse:
		var w toolUseWire
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
		b.ID, b.Name, b.Input, b.Caller, b.CacheControl = w.ID, w.Name, w.Input, w.Caller, w.CacheControl
	case BlockToolResult:
		var w toolResultWire
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
		b.ToolUseID, b.IsError, b.CacheControl = w.ToolUseID, w.IsError, w.CacheControl
		if err := b.Content.UnmarshalJSON(w.Content); err != nil {
			return fmt.Errorf("tool_result %s: %w", w.ToolUseID, err)
		}
	case BlockThinking:
		var w thinkingWire
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
		b.Thinking, b.Signature = w.Thinking, w.Signature
	case BlockRedactedThinking:
		var w redactedWire
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
		b.Data = w.Data
	default:
		// Nothing else of such a block is read, so nothing else can fail:
		// a cache_control of a shape CacheControl does not hold stays in
		// Raw as it is.
		var w unknownWire
		if json.Unmarshal(data, &w) == nil {
			b.CacheControl = w.CacheControl
		}
	}
	return nil
}

// MarshalJSON writes a string, or a list when Blocks is non-nil.
func (c ToolResultContent) MarshalJSON() ([]byte, error) {
	if c.Blocks != nil {
		return json.Marshal(c.Blocks)
	}
	return json.Marshal(c.Text)
}

// UnmarshalJSON reads a string or a list of blocks; absent content is "".
func (c *ToolResultContent) UnmarshalJSON(data []byte) error {
	*c = ToolResultContent{}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	if data[0] == '"' {
		return json.Unmarshal(data, &c.Text)
	}
	c.Blocks = []ContentBlock{}
	return json.Unmarshal(data, &c.Blocks)
}

// String is the result's text: the string form, or its text blocks joined.
func (c ToolResultContent) String() string {
	if c.Blocks != nil {
		return joinText(c.Blocks)
	}
	return c.Text
}

// Tool declares a tool. A client tool has Name, Description and
// InputSchema and is run by a Go handler; a server tool (web_search,
// web_fetch, code_execution, …) has a versioned Type such as
// "web_search_20260209" and is run by the provider. Options carries a server
// tool's other settings (max_uses, allowed_domains, …) as given.
type Tool struct {
	Type           string
	Name           string
	Description    string
	InputSchema    json.RawMessage
	CacheControl   *CacheControl
	AllowedCallers []string
	Options        map[string]json.RawMessage
}

// IsServer reports whether the provider, not the caller, runs the tool.
func (t Tool) IsServer() bool { return t.Type != "" && t.Type != "custom" }

// ToolMCPToolset is the type of the tool that offers the model the tools
// of one of the request's MCPServers (the MCP connector). It has no name:
// its mcp_server_name option names the server.
const ToolMCPToolset = "mcp_toolset"

// MCPServer is a remote MCP server the provider connects to and calls
// itself (Anthropic's MCP connector): a streamable-HTTP or SSE endpoint
// the provider can reach, at an https URL. Its JSON is the API's
// mcp_servers entry.
type MCPServer struct {
	Type string `json:"type"` // "url"
	URL  string `json:"url"`
	// Name is unique in the request; the MCPToolset that offers the
	// server's tools names it, and the mcp_tool_use blocks of the answer
	// carry it as server_name.
	Name string `json:"name"`
	// AuthorizationToken is sent to the server as a Bearer token. A secret.
	AuthorizationToken string `json:"authorization_token,omitempty"`
}

// MCPToolset is the tool offering every tool of the request's MCP server
// named server.
func MCPToolset(server string) Tool {
	name, _ := json.Marshal(server) // a string always encodes
	return Tool{Type: ToolMCPToolset, Options: map[string]json.RawMessage{"mcp_server_name": name}}
}

// MCPServerName is the server an MCPToolset names, "" for any other tool.
func (t Tool) MCPServerName() string {
	var name string
	if t.Type == ToolMCPToolset {
		_ = json.Unmarshal(t.Options["mcp_server_name"], &name) // not a string: no name, which CheckRequest refuses
	}
	return name
}

// MarshalJSON writes the API's tool object, Options merged in.
func (t Tool) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(t.Options)+6)
	for k, v := range t.Options {
		m[k] = v
	}
	if t.Type != "" {
		m["type"] = t.Type
	}
	if t.Type != ToolMCPToolset || t.Name != "" {
		m["name"] = t.Name // an MCP toolset has none: its server is named in its options
	}
	if t.Description != "" {
		m["description"] = t.Description
	}
	if len(t.InputSchema) > 0 {
		m["input_schema"] = t.InputSchema
	} else if !t.IsServer() {
		m["input_schema"] = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if t.CacheControl != nil {
		m["cache_control"] = t.CacheControl
	}
	if len(t.AllowedCallers) > 0 {
		m["allowed_callers"] = t.AllowedCallers
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the API's tool object; unknown fields go to Options.
func (t *Tool) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*t = Tool{}
	take := func(key string, into any) error {
		raw, ok := m[key]
		if !ok {
			return nil
		}
		delete(m, key)
		if err := json.Unmarshal(raw, into); err != nil {
			return fmt.Errorf("tool field %q: %w", key, err)
		}
		return nil
	}
	for key, into := range map[string]any{
		"type": &t.Type, "name": &t.Name, "description": &t.Description,
		"cache_control": &t.CacheControl, "allowed_callers": &t.AllowedCallers,
	} {
		if err := take(key, into); err != nil {
			return err
		}
	}
	if raw, ok := m["input_schema"]; ok {
		t.InputSchema = raw
		delete(m, "input_schema")
	}
	if len(m) > 0 {
		t.Options = m
	}
	return nil
}

// ToolChoice says whether and which tool the model must use.
type ToolChoice struct {
	Type                   string `json:"type"` // auto, any, tool, none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// Thinking configures extended thinking: {"type":"enabled","budget_tokens":N}
// (manual: every answer starts with thinking) or {"type":"adaptive"} (the
// model decides per turn whether to think); "disabled" turns it off, and
// "between_tools" is passed on as the API defines it. Display ("summarized"
// or "omitted") says how thinking text comes back.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	Display      string `json:"display,omitempty"`
}

// On reports whether thinking is switched on (enabled or adaptive).
func (t *Thinking) On() bool { return t != nil && (t.Type == "enabled" || t.Type == "adaptive") }

// Metadata is the request's metadata.
type Metadata struct {
	UserID string `json:"user_id,omitempty"`
}

// Response is a Messages API response.
type Response struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   string         `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
	Container    *Container     `json:"container,omitempty"`

	// Notes are what the provider says about how it answered (once: a
	// server that does not stream, say). Not part of the API's JSON.
	Notes []string `json:"-"`
}

// Text joins the response's text blocks.
func (r *Response) Text() string { return joinText(r.Content) }

// ToolUses returns the client tool_use blocks of the response, in order.
func (r *Response) ToolUses() []ContentBlock {
	var uses []ContentBlock
	for _, b := range r.Content {
		if b.Type == BlockToolUse {
			uses = append(uses, b)
		}
	}
	return uses
}

// Container is the code-execution container a response ran in.
type Container struct {
	ID        string `json:"id"`
	ExpiresAt string `json:"expires_at,omitempty"`
}

// Usage counts tokens. Input tokens exclude cache reads and writes, as the
// API reports them: the prompt is InputTokens + CacheCreationInputTokens +
// CacheReadInputTokens.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	// CacheCreation splits the cache writes by lifetime when the API
	// does; zero when it did not.
	CacheCreation CacheCreation `json:"cache_creation,omitzero"`
}

// CacheCreation is the API's split of cache writes by lifetime.
type CacheCreation struct {
	Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + o.InputTokens,
		OutputTokens:             u.OutputTokens + o.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + o.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + o.CacheReadInputTokens,
		CacheCreation: CacheCreation{
			Ephemeral5mInputTokens: u.CacheCreation.Ephemeral5mInputTokens + o.CacheCreation.Ephemeral5mInputTokens,
			Ephemeral1hInputTokens: u.CacheCreation.Ephemeral1hInputTokens + o.CacheCreation.Ephemeral1hInputTokens,
		},
	}
}

// PromptTokens is every input token: uncached, written to the cache and
// read from it.
func (u Usage) PromptTokens() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// CacheReadShare is the part of the prompt read from the cache, from 0 to
// 1: cache reads over all input tokens. 0 for no input.
func (u Usage) CacheReadShare() float64 {
	if u.PromptTokens() == 0 {
		return 0
	}
	return float64(u.CacheReadInputTokens) / float64(u.PromptTokens())
}

// EffectiveInputTokens weighs the prompt by what the API charges for it
// against an uncached token: uncached + 1.25 × written for 5 minutes + 2 ×
// written for an hour + 0.1 × read (the usual multipliers; a few models
// charge less for reads, see models.go). Writes the usage does not split
// count as 5-minute writes.
func (u Usage) EffectiveInputTokens() float64 {
	w1h := min(u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreationInputTokens)
	return float64(u.InputTokens) + 1.25*float64(u.CacheCreationInputTokens-w1h) + 2*float64(w1h) + 0.1*float64(u.CacheReadInputTokens)
}

func joinText(blocks []ContentBlock) string {
	var buf bytes.Buffer
	for _, b := range blocks {
		if b.Type == BlockText {
			buf.WriteString(b.Text)
		}
	}
	return buf.String()
}

// MarshalWire encodes v as the API's wire JSON. Unlike json.Marshal it does
// not escape <, > and &, so raw blocks keep their exact bytes. Like any
// encoding/json output it is compact: whitespace between tokens, which the
// API never sends, is not kept.
func MarshalWire(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
