package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/llm"
)

// Server tools: run by the provider, declared with their versioned types.
var serverTools = []llm.Tool{
	{Type: "web_search_20260209", Name: "web_search", Options: map[string]json.RawMessage{"max_uses": json.RawMessage("5")}},
	{Type: "web_fetch_20260209", Name: "web_fetch", Options: map[string]json.RawMessage{"max_uses": json.RawMessage("10")}},
	{Type: "code_execution_20250825", Name: "code_execution"},
}

// serverToolOptions are the fields a server tool definition given to
// set_tools may carry besides type and name, with the JSON kind each
// takes. A definition the API would refuse would make every later call
// fail before the LLM could change it back, so set_tools checks them.
var serverToolOptions = map[string]map[string]byte{
	"web_search":     {"max_uses": '0', "allowed_domains": '[', "blocked_domains": '[', "user_location": '{'},
	"web_fetch":      {"max_uses": '0', "allowed_domains": '[', "blocked_domains": '[', "citations": '{', "max_content_tokens": '0'},
	"code_execution": {},
}

// BootTools is the tool set active until the LLM changes it with
// set_tools: the clean-build spec's boot tools, set_tools itself, and the
// server tools. Their definitions are measured against the spec's budget
// of about 500 tokens (BenchmarkBootTools). Every other tool is one
// set_tools away, and the capabilities block says what each does.
func BootTools() []string { return slices.Clone(bootTools) }

var bootTools = []string{
	"block_read", "block_write", "block_list", "block_create",
	"get_source", "recompile", "get_datetime", "set_tools",
	"web_search", "web_fetch", "code_execution",
}

// readOnlyTools may be called by code execution (programmatic tool
// calling, §8.3) unless Options.NoPTC.
var readOnlyTools = []string{"block_read", "block_list", "bsp", "resolve", "get_datetime", "get_source"}

// toolsSetting keeps the active tool set: a JSON array of tool names and
// tool definitions, as set_tools was given them.
const toolsSetting = "tools"

// KnownTools lists every tool name set_tools accepts: the kernel's client
// tools and the server tools.
func (c *Caller) KnownTools() []string {
	names := make([]string, 0, 40)
	for name := range c.catalogue(&callState{}) {
		names = append(names, name)
	}
	for _, t := range serverTools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// ParseToolEntries reads set_tools' entries: each a tool name, or a tool
// definition (the API's tool object).
func ParseToolEntries(raw []json.RawMessage) ([]llm.Tool, error) {
	out := make([]llm.Tool, 0, len(raw))
	for i, r := range raw {
		r = bytes.TrimSpace(r)
		var t llm.Tool
		switch {
		case len(r) > 0 && r[0] == '"':
			if err := json.Unmarshal(r, &t.Name); err != nil {
				return nil, fmt.Errorf("tools[%d]: %w", i, err)
			}
		case len(r) > 0 && r[0] == '{':
			if err := json.Unmarshal(r, &t); err != nil {
				return nil, fmt.Errorf("tools[%d]: %w", i, err)
			}
		default:
			return nil, fmt.Errorf("tools[%d] is %s: give a tool's name or its definition ({\"name\": …})", i, r)
		}
		out = append(out, t)
	}
	return out, nil
}

// SetTools sets the active tool set for later calls and returns its names.
// Each entry is a tool name, or a definition: of one of the kernel's tools
// (its description or input schema replace the kernel's; the kernel still
// runs it), or of a server tool (web_search, web_fetch, code_execution with
// its type and options, e.g. a version or allowed_domains). Unknown names,
// definitions of tools the kernel cannot run, and server tool options the
// API would refuse are errors that change nothing. A tool of an MCP
// server the person added (NAME__tool) is given by name, and only while
// its server offers it. set_tools itself always
// stays active, so the LLM can always change its tools again.
func (c *Caller) SetTools(ctx context.Context, tools []llm.Tool) ([]string, error) {
	known := c.KnownTools()
	var unknown, names, mcpNames []string
	var entries []any
	seen := map[string]bool{}
	for _, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("a tool entry has no name: give a name such as \"bsp\" or a definition with \"name\"")
		}
		if c.servesMCP(t.Name) {
			if err := checkMCPEntry(t); err != nil {
				return nil, err
			}
			if _, api := c.viaConnector(t.Name); !api { // the API checks the connector's
				mcpNames = append(mcpNames, t.Name)
			}
		} else if !slices.Contains(known, t.Name) {
			unknown = append(unknown, t.Name)
			continue
		} else if err := checkToolDefinition(t); err != nil {
			return nil, err
		}
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		names = append(names, t.Name)
		entries = append(entries, toolEntry(t))
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown tools %s: the kernel runs only its own tools, the server tools and the tools of the MCP servers your person added (NAME__tool, capabilities 0.9); known: %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	if len(mcpNames) > 0 {
		if err := c.checkMCPTools(ctx, mcpNames); err != nil {
			return nil, err
		}
	}
	if !seen["set_tools"] {
		names = append(names, "set_tools")
		entries = append(entries, "set_tools")
	}
	data, err := json.Marshal(entries)
	if err != nil {
		return nil, err
	}
	return names, c.store.SetSetting(ctx, toolsSetting, string(data))
}

// toolEntry is what the setting keeps for t: its name alone when it is
// only a name, else its definition.
func toolEntry(t llm.Tool) any {
	if t.Type == "" && t.Description == "" && len(t.InputSchema) == 0 && len(t.Options) == 0 && len(t.AllowedCallers) == 0 && t.CacheControl == nil {
		return t.Name
	}
	return t
}

// checkToolDefinition refuses a definition the kernel cannot honour.
func checkToolDefinition(t llm.Tool) error {
	opts, server := serverToolOptions[t.Name]
	switch {
	case server && t.Type == "" && (t.Description != "" || len(t.InputSchema) > 0):
		return fmt.Errorf("tool %q is a server tool: define it with its \"type\" (e.g. %q), not a description or input_schema", t.Name, serverType(t.Name))
	case !server && t.IsServer():
		return fmt.Errorf("tool %q is one of the kernel's own tools: its definition has no \"type\"", t.Name)
	case !server:
		if len(t.Options) > 0 {
			return fmt.Errorf("tool %q: unknown fields %s (a definition has name, description and input_schema)", t.Name, strings.Join(slices.Sorted(maps.Keys(t.Options)), ", "))
		}
		if len(t.InputSchema) == 0 {
			return nil // the kernel's own schema stays
		}
		// A schema the API refuses would fail every later call, set_tools
		// included, with no way back for the LLM.
		if err := llm.CheckInputSchema(t.InputSchema); err != nil {
			return fmt.Errorf("tool %q: input_schema%s: the API takes a JSON Schema of an object, {\"type\": \"object\", \"properties\": {…}}", t.Name, err)
		}
		if _, err := llm.CompileSchema(t.InputSchema); err != nil {
			return fmt.Errorf("tool %q: input_schema is not a valid JSON Schema: %w", t.Name, err)
		}
		return nil
	}
	if t.Type != "" && !strings.HasPrefix(t.Type, t.Name+"_") {
		return fmt.Errorf("tool %q: type %q is not a version of %s (e.g. %q)", t.Name, t.Type, t.Name, serverType(t.Name))
	}
	for key, raw := range t.Options {
		want, ok := opts[key]
		if !ok {
			return fmt.Errorf("tool %q: unknown option %q (known: %s)", t.Name, key, strings.Join(slices.Sorted(maps.Keys(opts)), ", "))
		}
		got := bytes.TrimSpace(raw)
		if len(got) == 0 || (want == '0' && !(got[0] >= '0' && got[0] <= '9')) || (want != '0' && got[0] != want) {
			return fmt.Errorf("tool %q: option %q is %s, want %s", t.Name, key, got, map[byte]string{'0': "a number", '[': "an array", '{': "an object"}[want])
		}
	}
	return nil
}

func serverType(name string) string {
	for _, t := range serverTools {
		if t.Name == name {
			return t.Type
		}
	}
	return ""
}

// ResetTools puts the boot tools back in place of the set the LLM chose
// with set_tools: the way out when that set makes every call fail (huge
// definitions that leave no room in the context window, say), since the
// LLM cannot call set_tools from a call that fails. It reports whether a
// chosen set was there.
func (c *Caller) ResetTools(ctx context.Context) (bool, error) {
	return c.store.DeleteSetting(ctx, toolsSetting)
}

// ActiveTools is the tool set the LLM chose with set_tools, or BootTools,
// each as a name or a definition.
func (c *Caller) ActiveTools(ctx context.Context) ([]llm.Tool, error) {
	boot := func() []llm.Tool {
		out := make([]llm.Tool, len(bootTools))
		for i, n := range bootTools {
			out[i] = llm.Tool{Name: n}
		}
		return out
	}
	v, ok, err := c.store.Setting(ctx, toolsSetting)
	if err != nil || !ok {
		return boot(), err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		c.log.Warn("the stored tool set is damaged; using the boot tools", "err", err)
		return boot(), nil
	}
	tools, err := ParseToolEntries(raw)
	if err != nil {
		c.log.Warn("the stored tool set is damaged; using the boot tools", "err", err)
		return boot(), nil
	}
	return tools, nil
}

// ToolList is the active tools and the size of the definitions sent with
// every call: what `hermitcrab tools list --json` prints.
type ToolList struct {
	Tools                []ToolInfo `json:"tools"`
	DefinitionCharacters int        `json:"definition_characters"` // the definitions' total
}

// ToolInfo is one active tool: used by name (the kernel's own definition)
// or with the definition set_tools gave, as it is sent with every call.
type ToolInfo struct {
	Name       string          `json:"name"`
	Characters int             `json:"characters"`           // the definition's size; 0 without one
	Definition json.RawMessage `json:"definition,omitempty"` // present only when set_tools gave one
}

// ToolList lists the active tools (ActiveTools) with the size of each
// definition set_tools gave.
func (c *Caller) ToolList(ctx context.Context) (*ToolList, error) {
	active, err := c.ActiveTools(ctx)
	if err != nil {
		return nil, err
	}
	out := &ToolList{Tools: []ToolInfo{}}
	for _, t := range active {
		info := ToolInfo{Name: t.Name}
		if t.Description != "" || len(t.InputSchema) != 0 || t.Type != "" || len(t.Options) != 0 {
			if info.Definition, err = json.Marshal(t); err != nil {
				return nil, err
			}
			info.Characters = len(info.Definition)
		}
		out.Tools = append(out.Tools, info)
		out.DefinitionCharacters += info.Characters
	}
	return out, nil
}

// CurrentTools is the tool definitions a call sends now, as the API takes
// them: the server tools of the active set (with their type and options),
// then the kernel's client tools (with their input_schema, and
// allowed_callers for programmatic tool calling), in the order a call puts
// them on the wire. It carries no cache_control: the one breakpoint a call
// puts on its last tool is the call's own choice, not the definitions'.
func (c *Caller) CurrentTools(ctx context.Context) ([]llm.Tool, error) {
	handlers, server, err := c.toolSet(ctx, &callState{}, nil)
	if err != nil {
		return nil, err
	}
	var out []llm.Tool
	for _, t := range server {
		// A connector's toolset goes only with its mcp_servers, which a
		// call adds itself.
		if t.Type != llm.ToolMCPToolset {
			out = append(out, t)
		}
	}
	for _, h := range handlers {
		out = append(out, h.Tool)
	}
	return out, nil
}

// toolSet returns the handlers and server-tool declarations of the active
// set and of extra (added for one call). Server tools are left out when Options.ServerTools is off; the
// read-only tools get allowed_callers when code execution is among them
// (programmatic tool calling) unless Options.NoPTC. The active MCP tools
// come last, as their servers offer them now (mcpHandlers).
func (c *Caller) toolSet(ctx context.Context, cs *callState, extra []string) ([]llm.ToolHandler, []llm.Tool, error) {
	active, err := c.ActiveTools(ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(c.skillList()) > 0 { // the prompt's index of skills names it
		extra = append(slices.Clip(extra), "skill_load")
	}
	for _, name := range extra {
		if !slices.ContainsFunc(active, func(t llm.Tool) bool { return t.Name == name }) {
			active = append(active, llm.Tool{Name: name})
		}
	}
	all := c.catalogue(cs)
	var handlers []llm.ToolHandler
	var server []llm.Tool
	var mcpNames, connectorNames []string
	for _, t := range active {
		if _, api := c.viaConnector(t.Name); api && c.opts.ServerTools {
			connectorNames = append(connectorNames, t.Name)
			continue
		}
		if c.servesMCP(t.Name) {
			mcpNames = append(mcpNames, t.Name)
			continue
		}
		if h, ok := all[t.Name]; ok {
			if t.Description != "" {
				h.Tool.Description = t.Description
			}
			if len(t.InputSchema) > 0 {
				h.Tool.InputSchema = t.InputSchema
			}
			handlers = append(handlers, h)
			continue
		}
		if !c.opts.ServerTools {
			continue
		}
		if t.Type == "" {
			t.Type = serverType(t.Name)
			for _, s := range serverTools {
				if s.Name == t.Name && len(t.Options) == 0 {
					t.Options = s.Options
				}
			}
		}
		if t.Type != "" {
			server = append(server, t)
		}
	}
	if len(mcpNames) > 0 {
		mcpHandlers, note := c.mcpHandlers(ctx, mcpNames)
		handlers = append(handlers, mcpHandlers...)
		cs.mcpNote = note
	}
	if len(connectorNames) > 0 {
		var toolsets []llm.Tool
		cs.mcpServers, toolsets = c.connectorTools(connectorNames)
		server = append(server, toolsets...)
	}
	if i := slices.IndexFunc(server, func(t llm.Tool) bool { return t.Name == "code_execution" }); i >= 0 && !c.opts.NoPTC {
		for j := range handlers {
			if slices.Contains(readOnlyTools, handlers[j].Tool.Name) {
				handlers[j].Tool.AllowedCallers = []string{server[i].Type}
			}
		}
	}
	return handlers, server, nil
}
