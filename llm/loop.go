package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Reasons a Loop stops that are the loop's own, not the API's.
const (
	StopMaxLoops  = "max_loops"  // Loop.MaxLoops requests were made
	StopToolStop  = "tool_stop"  // a tool handler asked to stop after its turn
	StopCostLimit = "cost_limit" // Loop.MaxCostUSD was reached
	StopTimeLimit = "time_limit" // Loop.MaxDuration passed
)

// ToolFunc runs a client tool on the raw input JSON the model sent. An error
// becomes an is_error tool_result carrying its message, so the model can
// react; it never ends the loop.
type ToolFunc func(ctx context.Context, input json.RawMessage) (ToolOutput, error)

// ToolOutput is what a tool handler answers.
type ToolOutput struct {
	Content ToolResultContent
	IsError bool
	// Stop ends the loop once this turn's tool results are recorded
	// (hermitcrab's recompile: the shell is built, the turn is over).
	Stop bool
}

// TextOutput is a plain-text tool answer.
func TextOutput(text string) ToolOutput { return ToolOutput{Content: ToolResultContent{Text: text}} }

// ErrorOutput is a plain-text is_error tool answer.
func ErrorOutput(text string) ToolOutput {
	return ToolOutput{Content: ToolResultContent{Text: text}, IsError: true}
}

// ToolHandler pairs a client tool's declaration with the Go code that runs it.
type ToolHandler struct {
	Tool Tool
	Run  ToolFunc
}

// Loop runs the tool loop: send, run the client tools the model asked for,
// answer them, and send again until the model stops.
type Loop struct {
	Client   *Client
	Handlers []ToolHandler // client tools; their declarations are added to the request's tools
	// MaxLoops caps the requests one Run makes; default 25.
	MaxLoops int
	// MaxResultChars caps one tool result's text; longer results are cut
	// with a note saying how much was cut. Default 100,000.
	MaxResultChars int
	MaxCostUSD     float64       // stop before a request once this is spent; 0 means no cap
	MaxDuration    time.Duration // stop before a request once this has passed; 0 means no cap
	// Before, when set, is called before each request with the request as
	// it will be sent and what the Run did so far. It may lower the
	// request's MaxTokens (to fit what is left to spend); an error ends
	// the Run with it, nothing sent.
	Before  func(r *Request, done *Result) error
	Observe func(Event)
}

// Result is everything a Run did.
type Result struct {
	// Messages is the whole conversation: the request's messages followed
	// by every turn the loop added, ready to be sent again.
	Messages   []Message
	Calls      []*Call
	Final      *Response // the last response; nil when no request succeeded
	StopReason string    // the API's stop reason of Final, or one of the loop's own Stop* reasons
	Usage      Usage
	CostUSD    float64
	// Notes say what the loop changed in the request before sending it
	// (a raised max_tokens, a dropped temperature) or noticed on the way.
	Notes []string
}

// Text is the final response's text.
func (r *Result) Text() string {
	if r.Final == nil {
		return ""
	}
	return r.Final.Text()
}

const (
	defaultMaxLoops       = 25
	defaultMaxResultChars = 100_000
)

// Run runs the loop on req, which it does not modify. On error the Result
// holds what was done before it.
func (l *Loop) Run(ctx context.Context, req *Request) (*Result, error) {
	r := req.Clone()
	handlers := make(map[string]ToolFunc, len(l.Handlers))
	for _, h := range l.Handlers {
		r.Tools = append(r.Tools, h.Tool)
		handlers[h.Tool.Name] = h.Run
	}
	betas := l.Client.Betas()
	res := &Result{Notes: Normalize(r, betas...)}
	for _, n := range res.Notes {
		l.observe(Event{Kind: EventNote, Note: n})
	}
	maxLoops := l.MaxLoops
	if maxLoops <= 0 {
		maxLoops = defaultMaxLoops
	}
	start := time.Now()
	defer func() { res.Messages = r.Messages }()
	for {
		switch {
		case len(res.Calls) >= maxLoops:
			res.StopReason = StopMaxLoops
			return res, nil
		case l.MaxCostUSD > 0 && res.CostUSD >= l.MaxCostUSD:
			res.StopReason = StopCostLimit
			return res, nil
		case l.MaxDuration > 0 && time.Since(start) >= l.MaxDuration:
			res.StopReason = StopTimeLimit
			return res, nil
		}
		if l.Before != nil {
			if err := l.Before(r, res); err != nil {
				return res, err
			}
		}
		if err := CheckRequest(r, betas...); err != nil {
			return res, err
		}
		call, err := l.Client.Send(ctx, r)
		if err != nil {
			return res, err
		}
		resp := call.Response
		for _, n := range resp.Notes {
			res.Notes = append(res.Notes, n)
			l.observe(Event{Kind: EventNote, Note: n})
		}
		res.Calls = append(res.Calls, call)
		res.Final = resp
		res.StopReason = resp.StopReason
		res.Usage = res.Usage.Add(call.Usage)
		res.CostUSD += call.CostUSD
		if resp.Container != nil && resp.Container.ID != "" {
			r.Container = resp.Container.ID
		}
		l.appendAssistant(r, resp.Content)

		uses := resp.ToolUses()
		switch {
		case resp.StopReason == StopPauseTurn && len(uses) == 0:
			// The assistant turn, sent back unchanged as the last message,
			// lets the provider finish its server tools.
			continue
		case resp.StopReason == StopToolUse || resp.StopReason == StopPauseTurn:
			// A paused turn may also carry client tool calls that code
			// execution made (programmatic tool calling): answer them.
			if len(uses) == 0 {
				return res, nil
			}
			results, stop := l.runTools(ctx, handlers, uses)
			r.Messages = append(r.Messages, Message{Role: RoleUser, Content: results})
			if stop {
				res.StopReason = StopToolStop
				return res, nil
			}
		default:
			return res, nil
		}
	}
}

// appendAssistant adds a response's content as an assistant turn. After a
// pause_turn the last message is already the paused assistant turn, and the
// response continues it, so its blocks join that turn.
func (l *Loop) appendAssistant(r *Request, content []ContentBlock) {
	if len(content) == 0 {
		return
	}
	last := len(r.Messages) - 1
	if last >= 0 && r.Messages[last].Role == RoleAssistant {
		merged := append(append([]ContentBlock(nil), r.Messages[last].Content...), content...)
		r.Messages[last] = Message{Role: RoleAssistant, Content: merged}
		return
	}
	r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: content})
}

// runTools answers every tool_use in order and reports whether a handler
// asked to stop.
func (l *Loop) runTools(ctx context.Context, handlers map[string]ToolFunc, uses []ContentBlock) ([]ContentBlock, bool) {
	results := make([]ContentBlock, 0, len(uses))
	stop := false
	for _, use := range uses {
		l.observe(Event{Kind: EventToolCall, Tool: use.Name, ToolID: use.ID, Input: use.Input})
		out := l.runTool(ctx, handlers, use)
		out.Content = cutResult(out.Content, l.maxResultChars())
		stop = stop || out.Stop
		l.observe(Event{Kind: EventToolResult, Tool: use.Name, ToolID: use.ID, Result: out.Content.String(), IsError: out.IsError})
		results = append(results, ToolResultBlock(use.ID, out.Content, out.IsError))
	}
	return results, stop
}

func (l *Loop) runTool(ctx context.Context, handlers map[string]ToolFunc, use ContentBlock) (out ToolOutput) {
	run, ok := handlers[use.Name]
	if !ok {
		return ErrorOutput(fmt.Sprintf("no tool named %q; the tools are: %s", use.Name, strings.Join(handlerNames(handlers), ", ")))
	}
	defer func() {
		if p := recover(); p != nil {
			out = ErrorOutput(fmt.Sprintf("tool %s failed: panic: %v", use.Name, p))
			l.observe(Event{Kind: EventNote, Tool: use.Name, Note: fmt.Sprintf("tool %s panicked: %v\n%s", use.Name, p, debug.Stack())})
		}
	}()
	out, err := run(ctx, use.Input)
	if err != nil {
		return ToolOutput{Content: ToolResultContent{Text: fmt.Sprintf("tool %s failed: %v", use.Name, err)}, IsError: true, Stop: out.Stop}
	}
	return out
}

func (l *Loop) maxResultChars() int {
	if l.MaxResultChars > 0 {
		return l.MaxResultChars
	}
	return defaultMaxResultChars
}

func (l *Loop) observe(e Event) {
	if l.Observe != nil {
		l.Observe(e)
	}
}

func handlerNames(handlers map[string]ToolFunc) []string {
	return slices.Sorted(maps.Keys(handlers))
}

// cutResult keeps at most limit characters of a result's text, across its
// text blocks in order, and says how much it cut.
func cutResult(c ToolResultContent, limit int) ToolResultContent {
	if c.Blocks == nil {
		if kept, cut := cutText(c.Text, limit); cut > 0 {
			c.Text = kept + cutNote(cut, utf8.RuneCountInString(c.Text))
		}
		return c
	}
	total := 0
	for _, b := range c.Blocks {
		if b.Type == BlockText {
			total += utf8.RuneCountInString(b.Text)
		}
	}
	if total <= limit {
		return c
	}
	blocks := make([]ContentBlock, 0, len(c.Blocks))
	left := limit
	for _, b := range c.Blocks {
		if b.Type == BlockText {
			if left == 0 {
				continue
			}
			b.Text, _ = cutText(b.Text, left)
			left -= utf8.RuneCountInString(b.Text)
		}
		blocks = append(blocks, b)
	}
	blocks = append(blocks, TextBlock(cutNote(total-limit, total)))
	return ToolResultContent{Blocks: blocks}
}

// cutText keeps the first limit characters of s and returns how many it cut.
func cutText(s string, limit int) (string, int) {
	if len(s) <= limit { // fewer bytes than the limit: fewer characters too
		return s, 0
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i], utf8.RuneCountInString(s[i:])
		}
		n++
	}
	return s, 0
}

func cutNote(cut, total int) string {
	return fmt.Sprintf("\n[output cut: %d of %d characters omitted]", cut, total)
}
