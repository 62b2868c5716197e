package conversation

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/budget"
	"github.com/llmkernels/kernels/hermitcrab/fetch"
	"github.com/llmkernels/kernels/hermitcrab/network"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/shells"
	"github.com/llmkernels/kernels/hermitcrab/skills"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/hermitcrab/tool"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/mcp"
)

//go:embed prompts/*.md
var prompts embed.FS

func promptText(name string) string {
	data, err := prompts.ReadFile("prompts/" + name)
	if err != nil {
		panic("hermitcrab: missing embedded prompt " + name) // a build defect, not a runtime condition
	}
	return strings.TrimSpace(string(data))
}

// ErrNoClient is the error of a call made before the kernel has an LLM
// client (no API key given yet).
var ErrNoClient = errors.New("no LLM client configured: give an API key (ANTHROPIC_API_KEY, or the web page's key form) or choose another provider")

// Options configure a Caller.
type Options struct {
	// Client sends LLM requests; SetClient replaces it (a server that
	// learns the API key after it started). Block and prompt operations
	// work without one.
	Client *llm.Client
	// Model, when set, replaces the wake block's model on every tier; the
	// wake block still decides everything else.
	Model string
	// TierModels are the models, by tier, of a tier whose wake block names
	// none, in place of the spec's fallbacks.
	TierModels map[int]string
	// ServerTools declares web_search, web_fetch and code_execution, which
	// only the Anthropic provider runs. Set it false for other providers.
	ServerTools bool
	// NoPTC stops code execution from calling the read-only tools. By
	// default (§8.3) block_read, block_list, bsp, resolve, get_datetime and
	// get_source carry allowed_callers whenever code_execution is active
	// (programmatic tool calling).
	NoPTC bool
	// MCP is the person's MCP servers the kernel calls: their tools,
	// NAME__tool, are one set_tools away (mcp.go). Nil: none.
	MCP *mcp.Set
	// MCPConnector are the servers of MCP whose tools the API calls itself
	// (Anthropic's MCP connector), by name; the kernel runs the others'.
	// Used only with ServerTools (the Anthropic provider).
	MCPConnector map[string]llm.MCPServer
	// Skills are the instance's skills (package skills); nil: none.
	Skills *skills.Dir
	// Browser relays browser tools to an attached page; nil answers them
	// with an error saying no browser is attached.
	Browser Browser
	// Observe receives LLM and tool events as they happen (progress lines).
	Observe func(llm.Event)
	Log     *slog.Logger
}

// Browser runs a browser tool (clipboard_write, speak, download, …) in the
// page attached to the kernel, and returns its answer.
type Browser interface {
	Call(ctx context.Context, tool string, input json.RawMessage) (llm.ToolOutput, error)
}

// Caller makes an instance's calls to the LLM (callLLM) on its
// conversations, with the tools that reach its blocks, shells, network
// and the web.
type Caller struct {
	store  *store.Store
	blocks *blocks.Blocks
	shells *shells.Shells
	net    *network.Agent
	fetch  *fetch.Fetcher
	opts   Options
	log    *slog.Logger
	client atomic.Pointer[llm.Client]
}

// Parts are what a Caller's tools reach.
type Parts struct {
	Store   *store.Store
	Blocks  *blocks.Blocks
	Shells  *shells.Shells
	Network *network.Agent
	Fetch   *fetch.Fetcher
}

// New makes the Caller of an instance.
func New(p Parts, o Options) *Caller {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Caller{store: p.Store, blocks: p.Blocks, shells: p.Shells, net: p.Network, fetch: p.Fetch, opts: o, log: log}
	c.client.Store(o.Client)
	return c
}

// SetClient sets the LLM client, for a server that learns the API key
// after it started.
func (c *Caller) SetClient(cl *llm.Client) { c.client.Store(cl) }

// Client is the LLM client, nil until one is configured.
func (c *Caller) Client() *llm.Client { return c.client.Load() }

// containerSetting keeps the code-execution container id between calls.
const containerSetting = "container"

// callState is what one call's tools share: the shell recompile built.
type callState struct {
	shell      *store.Shell
	mcpNote    string          // active MCP tools not offered this turn, and why
	mcpServers []llm.MCPServer // the servers the API calls for this call (the MCP connector)
}

// CallOptions tune one call.
type CallOptions struct {
	Tier int // 1 light, 2 present (default), 3 deep
	// Tools are added to the active tools for this call only (an inbox
	// wake gets the tools to answer with).
	Tools []string
	// OnDelta, when set, receives each answer's pieces as they arrive
	// (llm.Request.OnDelta): text, thinking and tool input, and a restart
	// when a broken answer is asked for again.
	OnDelta func(llm.Delta)
}

// CallResult is what a call did.
type CallResult struct {
	// CostNote says what the call's money is when its client is
	// scripted (llm.ScriptedNote): what the models would charge, nothing
	// charged; "" for a real provider.
	CostNote string          `json:"cost_note,omitempty"`
	Text     string          `json:"text"`
	Messages []llm.Message   `json:"messages"` // the window the call saw, then the turns it added
	Added    []llm.Message   `json:"added"`    // the turns the call added: replies and tool results
	Result   *llm.Result     `json:"-"`
	Params   prompt.Params   `json:"params"`
	Prompt   prompt.Compiled `json:"prompt"`
	Shell    *store.Shell    `json:"shell,omitempty"` // set when recompile built a shell
	Trimmed  int             `json:"trimmed"`         // messages trimmed off the front
	// Limit says why the tool loop stopped before the LLM finished its
	// turn (the tier's max_tool_loops), "" when it finished. The
	// conversation stays valid: the next message continues it.
	Limit string   `json:"limit,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// Call is callLLM (spec §9.3): it reads the tier's parameters and compiles
// its system prompt from the blocks, trims the conversation to the tier's
// window, runs the tool loop with the active tools, and auto-saves a summary
// of the reply to the history block. Everything is read anew on every call,
// so the LLM's writes to its wake block steer the next call.
func (c *Caller) Call(ctx context.Context, messages []llm.Message, opts CallOptions) (*CallResult, error) {
	tier := opts.Tier
	if tier == 0 {
		tier = prompt.Present
	}
	client := c.llmClient(ctx, tier)
	if client == nil {
		return nil, ErrNoClient
	}
	if err := c.blocks.Ready(ctx); err != nil {
		return nil, err
	}
	params, err := c.tierParams(c.blocks.Source(ctx), tier)
	if err != nil {
		return nil, err
	}
	compiled, err := c.CompilePrompt(ctx, tier)
	if err != nil {
		return nil, err
	}
	kept, trimmed := Trim(continuable(messages), params.MaxMessages)
	sent, fallback := withFallbackBreakpoint(kept)
	state := &callState{}
	handlers, server, err := c.toolSet(ctx, state, opts.Tools)
	if err != nil {
		return nil, err
	}
	req := &llm.Request{
		Model:      params.Model,
		MaxTokens:  params.MaxTokens,
		Thinking:   params.Thinking,
		System:     []llm.SystemBlock{{Type: llm.BlockText, Text: compiled.Text, CacheControl: llm.Ephemeral()}},
		Messages:   sent,
		Tools:      server,
		MCPServers: state.mcpServers,
		OnDelta:    opts.OnDelta,
		// The conversation's tail is a cache breakpoint (the API's
		// automatic one, which follows the tool loop's turns): the next
		// call, and the next exchange while the window keeps its start,
		// read everything before it from the cache.
		CacheControl: llm.Ephemeral(),
	}
	if id, ok, err := c.store.Setting(ctx, containerSetting); err == nil && ok {
		req.Container = id
	}
	markToolsForCaching(req, handlers)
	if note := c.shells.Notice(ctx); note != "" {
		req.Messages = withNote(req.Messages, note)
	}
	if state.mcpNote != "" {
		req.Messages = withNote(req.Messages, state.mcpNote)
	}
	loop := &llm.Loop{Client: client, Handlers: handlers, MaxLoops: params.MaxToolLoops, Observe: c.opts.Observe}
	res, err := loop.Run(ctx, req)
	out := &CallResult{Result: res, Params: params, Prompt: compiled, Shell: state.shell, Trimmed: trimmed}
	if client.Scripted {
		out.CostNote = llm.ScriptedNote(calledModels(res)...)
	}
	out.Notes = append(append(append(out.Notes, params.Notes...), compiled.Problems...), res.Notes...)
	if res != nil {
		out.Messages = res.Messages
		if fallback >= 0 {
			// The window handed back carries no breakpoint of this call's:
			// a caller sending it again gets the next call's, not more.
			out.Messages = slices.Clone(res.Messages)
			out.Messages[fallback] = kept[fallback]
		}
		if len(res.Messages) > len(kept) {
			out.Added = res.Messages[len(kept):]
		}
		out.Text = res.Text()
		c.keepContainer(ctx, res)
	}
	switch {
	case errors.Is(err, budget.ErrRefused):
		// A wake's budget refused the next request: the turns so far are
		// kept, like a stop at max_tool_loops.
		out.Limit = fmt.Sprintf("the tool loop stopped after %d API calls, before the LLM finished its turn: %v", len(res.Calls), err)
	case err != nil:
		if apiErr, ok := llm.AsAPIError(err); ok && apiErr.Status == 400 && strings.Contains(apiErr.Message, "too long") {
			err = fmt.Errorf("%w (when the tools chosen with set_tools are what is too long, `hermitcrab tools reset` or the web page's \"reset tools\" control puts the boot tools back)", err)
		}
		return out, err
	case res.StopReason == llm.StopMaxLoops:
		out.Limit = fmt.Sprintf("the tool loop stopped after %d API calls, the tier's max_tool_loops (wake 0.9.%d), before the LLM finished its turn; the conversation is kept, and your next message lets it go on", len(res.Calls), tier+3)
	}
	if out.Limit != "" {
		out.Notes = append(out.Notes, out.Limit)
	}
	out.Notes = append(out.Notes, c.autoSave(ctx, out.Text)...)
	for _, n := range out.Notes {
		c.log.Info(n)
	}
	return out, nil
}

// TierParams reads a tier's parameters from the wake block, with
// Options.Model applied.
func (c *Caller) TierParams(ctx context.Context, tier int) (prompt.Params, error) {
	return c.tierParams(c.blocks.Source(ctx), tier)
}

func (c *Caller) tierParams(src prompt.Source, tier int) (prompt.Params, error) {
	p, err := prompt.TierParamsWith(src, tier, c.opts.TierModels[tier])
	if err == nil && c.opts.Model != "" && c.opts.Model != p.Model {
		p.Notes = append(p.Notes, fmt.Sprintf("model %s (the one this kernel was started with) instead of the wake block's %s", c.opts.Model, p.Model))
		p.Model = c.opts.Model
	}
	return p, err
}

// withFallbackBreakpoint is the window as sent: without the breakpoints
// its messages came with (a window a page sends back may hold one; the
// call places its own, within the API's four), and with one on the tail
// of the call before it, the last block before the newest assistant turn,
// returned with that message's index (-1 when there is none). The
// automatic breakpoint on the tail finds the prefix the call before wrote
// only within the 20 blocks before it, and an answer with many blocks (a
// web search's results and the cited text, a block per citation) can hold
// more: the breakpoint on that prefix itself still reads it.
func withFallbackBreakpoint(kept []llm.Message) ([]llm.Message, int) {
	sent := (&llm.Request{Messages: kept}).WithoutCache().Messages
	for i := len(sent) - 1; i > 0; i-- {
		if sent[i].Role != llm.RoleAssistant {
			continue
		}
		if sent[i-1].Role != llm.RoleUser || len(sent[i-1].Content) == 0 {
			break
		}
		sent = slices.Clone(sent)
		sent[i-1] = sent[i-1].WithCacheControl(llm.Ephemeral())
		return sent, i - 1
	}
	return sent, -1
}

// markToolsForCaching puts a cache breakpoint on the last tool, so the
// tools and system prompt are billed as cache reads on repeated calls. The
// loop appends the handlers after the server tools; the last handler is
// the last tool.
func markToolsForCaching(req *llm.Request, handlers []llm.ToolHandler) {
	switch {
	case len(handlers) > 0:
		handlers[len(handlers)-1].Tool.CacheControl = llm.Ephemeral()
	case len(req.Tools) > 0:
		req.Tools[len(req.Tools)-1].CacheControl = llm.Ephemeral()
	}
}

func (c *Caller) keepContainer(ctx context.Context, res *llm.Result) {
	for i := len(res.Calls) - 1; i >= 0; i-- {
		if ct := res.Calls[i].Response.Container; ct != nil && ct.ID != "" {
			if err := c.store.SetSetting(ctx, containerSetting, ct.ID); err != nil {
				c.log.Warn("keeping the code-execution container id", "err", err)
			}
			return
		}
	}
}

// Trim keeps at most the last max messages of a conversation (§8.5),
// dropping the oldest in chunks of half the window rather than one at a
// time: the cut sits at a multiple of the chunk from the conversation's
// start, so it moves only every few exchanges, and between moves every
// call sends the messages of the call before it unchanged, which the API
// reads from its prompt cache at a tenth of the price (a window sliding
// by one message would change the prefix on every call). It never
// separates a tool_result from the tool_use it answers: the kept part
// starts at a user turn that is not a tool result. When the window has no
// such turn (a tool loop stopped at its limit, maybe line after line, so
// every user turn since is tool results or a line joined to them), the
// kept part starts at the window's first user turn anyway, taking a
// combined user turn whole, and tool results there whose calls fall
// outside the window become one line of text saying so: the window stays
// bounded instead of growing by a tool loop per line. When anything is
// cut, a notice joins the first kept user turn so the LLM knows context
// exists in its blocks. It returns the kept messages and how many were
// cut.
func Trim(messages []llm.Message, max int) ([]llm.Message, int) {
	if max <= 0 || len(messages) <= max {
		return messages, 0
	}
	chunk := max / 2
	if chunk < 1 {
		chunk = 1
	}
	first := (len(messages) - max + chunk - 1) / chunk * chunk // the first multiple of chunk that leaves at most max
	start := first
	for start < len(messages) && !startsTurn(messages, start) {
		start++
	}
	if start == len(messages) {
		for start = first; start < len(messages) && messages[start].Role != llm.RoleUser; start++ {
		}
		for start > 0 && start < len(messages) && messages[start-1].Role == llm.RoleUser {
			start--
		}
	}
	if start == 0 || start == len(messages) {
		return messages, 0
	}
	kept := make([]llm.Message, 0, len(messages)-start+1)
	notice := llm.TextBlock(fmt.Sprintf(promptText("trim_notice.md"), start))
	for i, m := range messages[start:] {
		if m.Role != llm.RoleUser {
			kept = append(kept, messages[start+i:]...)
			break
		}
		// A leading user turn: its tool results answer calls cut off.
		var content []llm.ContentBlock
		orphans := 0
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				orphans++
				continue
			}
			content = append(content, b)
		}
		if orphans > 0 {
			content = append([]llm.ContentBlock{llm.TextBlock(fmt.Sprintf("[%d tool results, whose calls were moved out of the window with the earlier messages]", orphans))}, content...)
		}
		if i == 0 {
			content = append([]llm.ContentBlock{notice}, content...)
		}
		m.Content = content
		kept = append(kept, m)
	}
	return kept, start
}

// startsTurn reports whether messages[i] can open a conversation: a user
// message that answers no tool_use and does not continue a user turn (the
// API combines consecutive turns of one role, so a cut there would split
// one turn, and leave a line typed after a tool loop without its results).
func startsTurn(messages []llm.Message, i int) bool {
	m := messages[i]
	if m.Role != llm.RoleUser || (i > 0 && messages[i-1].Role == llm.RoleUser) {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			return false
		}
	}
	return true
}

// ErrNoShell is Boot's error when the LLM ended without calling recompile.
var ErrNoShell = errors.New("no shell was built")

// CostLine is the call's cost line (llm.CostLine), labelled when its
// client was scripted: what the page and the CLI show after a boot.
func (r *CallResult) CostLine() string {
	line := llm.CostLine(r.Result.CostUSD, r.Result.Usage)
	if r.CostNote != "" {
		line += " (" + r.CostNote + ")"
	}
	return line
}

// calledModels are the models that answered res's requests, each once.
func calledModels(res *llm.Result) []string {
	var models []string
	if res == nil {
		return nil
	}
	for _, c := range res.Calls {
		models = append(models, c.Model)
	}
	return models
}

// Boot wakes the instance (spec §2): a deep-tier call with the single user
// message "BOOT" that ends when the LLM calls recompile. It returns the
// shell that was built; ending any other way is ErrNoShell.
func (c *Caller) Boot(ctx context.Context) (*CallResult, error) {
	res, err := c.Call(ctx, []llm.Message{llm.UserText("BOOT")}, CallOptions{Tier: prompt.Deep})
	if err != nil {
		return res, err
	}
	if res.Shell == nil {
		return res, fmt.Errorf("%w: the boot call ended (%s) without calling recompile", ErrNoShell, res.Result.StopReason)
	}
	return res, nil
}

// delegate makes one call with the given tier's model: no tools.
func (c *Caller) delegate(ctx context.Context, tier int, system, text string) (*llm.Call, error) {
	params, err := c.tierParams(c.blocks.Source(ctx), tier)
	if err != nil {
		return nil, err
	}
	req := &llm.Request{Model: params.Model, MaxTokens: params.MaxTokens, Thinking: params.Thinking,
		System: []llm.SystemBlock{{Type: llm.BlockText, Text: system}}, Messages: []llm.Message{llm.UserText(text)}}
	client := c.llmClient(ctx, tier)
	if client == nil {
		return nil, ErrNoClient
	}
	llm.Normalize(req, client.Betas()...)
	if err := llm.CheckRequest(req, client.Betas()...); err != nil {
		return nil, err
	}
	return client.Send(ctx, req)
}

func (c *Caller) toolCallLLM(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		Prompt string `json:"prompt"`
		Model  string `json:"model"`
		System string `json:"system"`
	}
	if err := tool.Decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	tier := prompt.Deep
	switch args.Model {
	case "fast":
		tier = prompt.Light
	case "", "default":
	default:
		return llm.ToolOutput{}, fmt.Errorf("model %q: choose \"fast\" (light tier) or \"default\" (deep tier)", args.Model)
	}
	system := args.System
	if system == "" {
		system = promptText("delegate_system.md")
	}
	call, err := c.delegate(ctx, tier, system, args.Prompt)
	if err != nil {
		return llm.ToolOutput{}, err
	}
	return llm.TextOutput(call.Response.Text()), nil
}

// withNote returns messages with a kernel note added to the last (user)
// message, after any tool results, which must come first.
func withNote(messages []llm.Message, note string) []llm.Message {
	out := append([]llm.Message(nil), messages...)
	last := out[len(out)-1]
	last.Content = append(append([]llm.ContentBlock(nil), last.Content...), llm.TextBlock(note))
	out[len(out)-1] = last
	return out
}

// ToolLoop runs a caller's own Messages request (props.callWithToolLoop)
// with the tool loop: client tools named in req.Tools that are the
// kernel's run here, with the kernel's definitions; any others are sent as
// declared. The MCP tools among them run as in a kernel call (pageMCP). A
// request without a model gets the deep tier's, as callAPI's does.
func (c *Caller) ToolLoop(ctx context.Context, req *llm.Request) (*llm.Result, error) {
	client := c.llmClient(ctx, 0) // the page's own request, of no tier
	if client == nil {
		return nil, ErrNoClient
	}
	all := c.catalogue(&callState{})
	r := req.Clone()
	if r.Model == "" {
		m, err := c.defaultModel(ctx)
		if err != nil {
			return nil, err
		}
		r.Model = m
	}
	r.Tools = nil
	var handlers []llm.ToolHandler
	var mcpTools []llm.Tool
	for _, t := range req.Tools {
		switch h, ok := all[t.Name]; {
		case t.IsServer():
			r.Tools = append(r.Tools, t)
		case c.servesMCP(t.Name):
			mcpTools = append(mcpTools, t)
		case ok:
			handlers = append(handlers, h)
		default:
			r.Tools = append(r.Tools, t)
		}
	}
	if len(mcpTools) > 0 {
		mcpHandlers, note, err := c.pageMCP(ctx, mcpTools)
		if err != nil {
			return nil, err
		}
		handlers = append(handlers, mcpHandlers...)
		if note != "" && len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleUser {
			r.Messages = withNote(r.Messages, note)
		}
	}
	loop := &llm.Loop{Client: client, Handlers: handlers, Observe: c.opts.Observe}
	return loop.Run(ctx, r)
}

// defaultModel is the model of a page's request that names none: the
// deep tier's (the fallback model when the wake block names none), for
// callAPI and callWithToolLoop alike.
func (c *Caller) defaultModel(ctx context.Context) (string, error) {
	p, err := c.TierParams(ctx, prompt.Deep)
	if err != nil {
		return "", err
	}
	return p.Model, nil
}

// CleanAPIRequest applies §7.1 to a raw Messages API request from the
// shell (props.callAPI): fields that are null are dropped, a request
// without a model gets the deep tier's (the fallback model when the wake
// block names none), and a temperature other than 1 beside thinking
// (enabled or adaptive) is dropped, since the API refuses it. A request
// without tools (no "tools" key, or null) gets the current tool set
// (CurrentTools: what a kernel call would send now, following set_tools),
// so the answer's tool_use blocks name tools the kernel knows; an explicit
// empty array is the caller's choice of no tools and is sent as it is.
func (c *Caller) CleanAPIRequest(ctx context.Context, body []byte) (*APIRequest, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("the request is not a JSON object of Messages API fields: %w", err)
	}
	if req == nil {
		return nil, errors.New("the request is null: send a JSON object of Messages API fields")
	}
	var notes []string
	for key, v := range req {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(req, key)
			notes = append(notes, key+" was null: dropped")
		}
	}
	var model string
	if raw, ok := req["model"]; !ok || json.Unmarshal(raw, &model) != nil || model == "" {
		m, err := c.defaultModel(ctx)
		if err != nil {
			return nil, err
		}
		req["model"], _ = json.Marshal(m)
		notes = append(notes, "no model given: "+m+", the deep tier's")
	}
	var thinking llm.Thinking
	if raw, ok := req["thinking"]; ok && json.Unmarshal(raw, &thinking) == nil && thinking.On() {
		var temp float64
		if raw, ok := req["temperature"]; ok && (json.Unmarshal(raw, &temp) != nil || temp != 1) {
			delete(req, "temperature")
			notes = append(notes, "temperature dropped: with thinking on, the API takes only 1")
		}
	}
	var tools []llm.Tool
	if raw, ok := req["tools"]; ok {
		if err := json.Unmarshal(raw, &tools); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	} else {
		// No tools key (or null, dropped above): the current tools, so
		// the tool_use blocks of the answer name tools the kernel runs.
		// An explicit [] is the caller's "no tools" and stays.
		current, err := c.CurrentTools(ctx)
		if err != nil {
			return nil, err
		}
		if len(current) > 0 {
			if req["tools"], err = llm.MarshalWire(current); err != nil {
				return nil, err
			}
			tools = current
			notes = append(notes, fmt.Sprintf("no tools given: the %d current tools added (send \"tools\": [] for none)", len(current)))
		}
	}
	out, err := llm.MarshalWire(req)
	if err != nil {
		return nil, err
	}
	return &APIRequest{Body: out, Tools: tools, Notes: notes}, nil
}

// APIRequest is a raw Messages API request cleaned up for the shell's
// passthrough (CleanAPIRequest).
type APIRequest struct {
	Body  json.RawMessage `json:"body"`  // the request as JSON
	Tools []llm.Tool      `json:"tools"` // its tools, those added included
	Notes []string        `json:"notes"` // a note for each change
}

// HeaderBetas is the anthropic-beta header of the request sent to the
// Anthropic API: the configured values first, then each value its tools
// need, every value once.
func (r *APIRequest) HeaderBetas(configured []string) []string {
	return anthropic.Betas(configured, r.Tools)
}
