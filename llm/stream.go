package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
)

// Kinds of Delta.
const (
	DeltaBlockStart = "block_start" // a content block begins: Block, and Name and ID for a tool call
	DeltaText       = "text"        // a piece of a text block
	DeltaThinking   = "thinking"    // a piece of a thinking block's text
	DeltaToolInput  = "tool_input"  // a piece of a tool call's input JSON (tool_use, server_tool_use)
	DeltaBlockStop  = "block_stop"  // the block is complete
	// DeltaRestart says that what was delivered since the request began
	// is void: the answer broke off and the request is sent again (a retry,
	// or the next model of the fallback chain). The Client sends it.
	DeltaRestart = "restart"
)

// Delta is one piece of an answer as it arrives, handed to
// Request.OnDelta. The pieces of a block, joined, are the block's text,
// thinking or input JSON; the response the call returns holds the whole
// blocks, assembled exactly as the API sent them.
type Delta struct {
	Kind  string // one of the Delta* kinds
	Index int    // the block's position in the answer's content
	Block string // the block's type: text, thinking, redacted_thinking, tool_use, server_tool_use, web_search_tool_result, …
	Name  string // the tool's name, for tool_use and server_tool_use blocks
	ID    string // the block's id, for tool_use and server_tool_use blocks
	Text  string // the piece (DeltaText, DeltaThinking, DeltaToolInput)
}

// StreamEvent is one server-sent event of a Messages API stream: its
// event name and its JSON data.
type StreamEvent struct {
	Type string // message_start, content_block_start, content_block_delta, content_block_stop, message_delta, message_stop, ping, error
	Data json.RawMessage
}

// ErrStreamCut is the cause of the connection error a stream that ends
// before its message_stop event gives: the answer is incomplete, and the
// request is sent again like any failed call.
var ErrStreamCut = errors.New("the answer stream ended before it was complete (no message_stop)")

// StreamAssembler builds a Response from the events of a Messages API
// stream, handing each piece to onDelta as it arrives. A block is
// assembled from the JSON its content_block_start carried, with the
// members the deltas build (text, thinking, signature, input, citations)
// set in place: a block that had no deltas (redacted_thinking, a server
// tool's result) keeps its bytes, and every block keeps the API's member
// order. The zero value is not usable; call NewStreamAssembler.
type StreamAssembler struct {
	onDelta func(Delta)
	head    *Response
	usage   map[string]json.RawMessage
	delta   messageDelta
	blocks  []*streamBlock
	stopped bool
}

// NewStreamAssembler returns an assembler handing deltas to onDelta (nil
// for none).
func NewStreamAssembler(onDelta func(Delta)) *StreamAssembler {
	return &StreamAssembler{onDelta: onDelta}
}

type messageDelta struct {
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Container    json.RawMessage `json:"container"`
}

type streamBlock struct {
	start     json.RawMessage // the block as content_block_start gave it
	typ       string
	name, id  string
	text      strings.Builder
	thinking  strings.Builder
	signature strings.Builder
	input     strings.Builder
	citations []json.RawMessage
	// seen names the members deltas built.
	seen map[string]bool
}

// Add takes the next event. An error event becomes the *APIError it
// reports (StreamError); an event out of order or of a kind of delta the
// runtime cannot assemble is an error too, and the stream is not to be
// used further.
func (a *StreamAssembler) Add(e StreamEvent) error {
	switch e.Type {
	case "ping":
		return nil
	case "error":
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(e.Data, &body); err != nil || body.Error.Type == "" {
			return StreamError("api_error", "an error event that does not read: "+clip.Line(string(e.Data), 300))
		}
		return StreamError(body.Error.Type, body.Error.Message)
	case "message_start":
		var ev struct {
			Message json.RawMessage `json:"message"`
		}
		var head Response
		if err := json.Unmarshal(e.Data, &ev); err != nil || len(ev.Message) == 0 {
			return fmt.Errorf("llm: stream: message_start without a message: %s", clip.Line(string(e.Data), 200))
		}
		var usage struct {
			Usage map[string]json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal(ev.Message, &head); err != nil {
			return fmt.Errorf("llm: stream: message_start: %w", err)
		}
		if err := json.Unmarshal(ev.Message, &usage); err != nil {
			return fmt.Errorf("llm: stream: message_start: %w", err)
		}
		head.Content = nil
		a.head, a.usage = &head, usage.Usage
		if a.usage == nil {
			a.usage = map[string]json.RawMessage{}
		}
		return nil
	case "message_delta":
		var ev struct {
			Delta messageDelta               `json:"delta"`
			Usage map[string]json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			return fmt.Errorf("llm: stream: message_delta: %w", err)
		}
		if err := a.started(e.Type); err != nil {
			return err
		}
		if ev.Delta.StopReason != nil {
			a.delta.StopReason = ev.Delta.StopReason
		}
		if ev.Delta.StopSequence != nil {
			a.delta.StopSequence = ev.Delta.StopSequence
		}
		if len(ev.Delta.Container) > 0 && string(ev.Delta.Container) != "null" {
			a.delta.Container = ev.Delta.Container
		}
		// Its counts are cumulative totals: they replace, never add.
		for k, v := range ev.Usage {
			if string(v) != "null" {
				a.usage[k] = v
			}
		}
		return nil
	case "message_stop":
		if err := a.started(e.Type); err != nil {
			return err
		}
		a.stopped = true
		return nil
	case "content_block_start":
		return a.blockStart(e.Data)
	case "content_block_delta":
		return a.blockDelta(e.Data)
	case "content_block_stop":
		var ev struct {
			Index int `json:"index"`
		}
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			return fmt.Errorf("llm: stream: content_block_stop: %w", err)
		}
		b, err := a.block(e.Type, ev.Index)
		if err != nil {
			return err
		}
		a.emit(Delta{Kind: DeltaBlockStop, Index: ev.Index, Block: b.typ, Name: b.name, ID: b.id})
		return nil
	}
	return nil // an event this runtime does not know changes no block
}

func (a *StreamAssembler) started(event string) error {
	if a.head == nil {
		return fmt.Errorf("llm: stream: %s before message_start", event)
	}
	return nil
}

func (a *StreamAssembler) block(event string, index int) (*streamBlock, error) {
	if err := a.started(event); err != nil {
		return nil, err
	}
	if index < 0 || index >= len(a.blocks) {
		return nil, fmt.Errorf("llm: stream: %s for block %d, but %d blocks have started", event, index, len(a.blocks))
	}
	return a.blocks[index], nil
}

func (a *StreamAssembler) emit(d Delta) {
	if a.onDelta != nil {
		a.onDelta(d)
	}
}

func (a *StreamAssembler) blockStart(data []byte) error {
	var ev struct {
		Index        int             `json:"index"`
		ContentBlock json.RawMessage `json:"content_block"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("llm: stream: content_block_start: %w", err)
	}
	if err := a.started("content_block_start"); err != nil {
		return err
	}
	if ev.Index != len(a.blocks) {
		return fmt.Errorf("llm: stream: content_block_start for block %d after %d blocks", ev.Index, len(a.blocks))
	}
	var head struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		ID       string `json:"id"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	}
	if err := json.Unmarshal(ev.ContentBlock, &head); err != nil || head.Type == "" {
		return fmt.Errorf("llm: stream: content_block_start without a typed block: %s", clip.Line(string(data), 200))
	}
	b := &streamBlock{start: ev.ContentBlock, typ: head.Type, name: head.Name, id: head.ID, seen: map[string]bool{}}
	b.text.WriteString(head.Text)
	b.thinking.WriteString(head.Thinking)
	a.blocks = append(a.blocks, b)
	a.emit(Delta{Kind: DeltaBlockStart, Index: ev.Index, Block: b.typ, Name: b.name, ID: b.id})
	// A start that already carries text hands it on, so the pieces joined
	// are the whole text.
	if head.Text != "" {
		a.emit(Delta{Kind: DeltaText, Index: ev.Index, Block: b.typ, Text: head.Text})
	}
	if head.Thinking != "" {
		a.emit(Delta{Kind: DeltaThinking, Index: ev.Index, Block: b.typ, Text: head.Thinking})
	}
	return nil
}

func (a *StreamAssembler) blockDelta(data []byte) error {
	var ev struct {
		Index int `json:"index"`
		Delta struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			Thinking    string          `json:"thinking"`
			Signature   string          `json:"signature"`
			PartialJSON string          `json:"partial_json"`
			Citation    json.RawMessage `json:"citation"`
		} `json:"delta"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("llm: stream: content_block_delta: %w", err)
	}
	b, err := a.block("content_block_delta", ev.Index)
	if err != nil {
		return err
	}
	d := ev.Delta
	piece := Delta{Index: ev.Index, Block: b.typ, Name: b.name, ID: b.id}
	switch d.Type {
	case "text_delta":
		b.text.WriteString(d.Text)
		b.seen["text"] = true
		piece.Kind, piece.Text = DeltaText, d.Text
	case "thinking_delta":
		b.thinking.WriteString(d.Thinking)
		b.seen["thinking"] = true
		piece.Kind, piece.Text = DeltaThinking, d.Thinking
	case "signature_delta":
		b.signature.WriteString(d.Signature)
		b.seen["signature"] = true
		return nil
	case "input_json_delta":
		b.input.WriteString(d.PartialJSON)
		b.seen["input"] = true
		if d.PartialJSON == "" {
			return nil
		}
		piece.Kind, piece.Text = DeltaToolInput, d.PartialJSON
	case "citations_delta":
		b.citations = append(b.citations, d.Citation)
		b.seen["citations"] = true
		return nil
	default:
		// Dropping what it carries would save a changed block as the
		// API's: refuse the answer instead.
		return fmt.Errorf("llm: stream: a %q delta for a %s block, which this runtime cannot assemble", d.Type, b.typ)
	}
	a.emit(piece)
	return nil
}

// Response is the assembled answer. A stream that did not reach
// message_stop gives a connection error (ErrStreamCut), which the Client
// retries: a partial answer is never returned.
func (a *StreamAssembler) Response() (*Response, error) {
	if !a.stopped {
		return nil, ConnectionError(ErrStreamCut)
	}
	resp := *a.head
	resp.Content = make([]ContentBlock, len(a.blocks))
	for i, b := range a.blocks {
		raw, err := b.wire()
		if err != nil {
			return nil, fmt.Errorf("llm: stream: block %d (%s): %w", i, b.typ, err)
		}
		if err := json.Unmarshal(raw, &resp.Content[i]); err != nil {
			return nil, fmt.Errorf("llm: stream: block %d (%s): %w", i, b.typ, err)
		}
	}
	if a.delta.StopReason != nil {
		resp.StopReason = *a.delta.StopReason
	}
	if a.delta.StopSequence != nil {
		resp.StopSequence = a.delta.StopSequence
	}
	if len(a.delta.Container) > 0 {
		var c Container
		if err := json.Unmarshal(a.delta.Container, &c); err != nil {
			return nil, fmt.Errorf("llm: stream: container: %w", err)
		}
		resp.Container = &c
	}
	usage, err := json.Marshal(a.usage)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(usage, &resp.Usage); err != nil {
		return nil, fmt.Errorf("llm: stream: usage: %w", err)
	}
	return &resp, nil
}

// wire is the block's JSON: its start with the members the deltas built.
func (b *streamBlock) wire() (json.RawMessage, error) {
	var set []member
	str := func(name, value string) error {
		v, err := MarshalWire(value)
		set = append(set, member{name, v})
		return err
	}
	if b.seen["text"] {
		if err := str("text", b.text.String()); err != nil {
			return nil, err
		}
	}
	if b.seen["thinking"] {
		if err := str("thinking", b.thinking.String()); err != nil {
			return nil, err
		}
	}
	if b.seen["signature"] {
		if err := str("signature", b.signature.String()); err != nil {
			return nil, err
		}
	}
	// Input that is not JSON (a tool call cut off by max_tokens) is left
	// as the start gave it.
	if in := bytes.TrimSpace([]byte(b.input.String())); b.seen["input"] && len(in) > 0 && json.Valid(in) {
		set = append(set, member{"input", in})
	}
	if b.seen["citations"] {
		var prior []json.RawMessage
		_ = json.Unmarshal(memberOf(b.start, "citations"), &prior) // absent or null: none
		list, err := json.Marshal(append(prior, b.citations...))
		if err != nil {
			return nil, err
		}
		set = append(set, member{"citations", list})
	}
	if len(set) == 0 {
		return b.start, nil
	}
	return setMembers(b.start, set)
}

type member struct {
	name  string
	value json.RawMessage
}

// memberOf is the raw value of obj's member name, or nil.
func memberOf(obj []byte, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[name]
}

// setMembers writes the JSON object obj with the given members' values
// replaced where obj has them, in obj's order, and added at its end where
// it has not.
func setMembers(obj []byte, set []member) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %s", clip.Line(string(obj), 100))
	}
	var out bytes.Buffer
	out.WriteByte('{')
	done := make([]bool, len(set))
	write := func(name string, value []byte) error {
		key, err := MarshalWire(name)
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(key)
		out.WriteByte(':')
		out.Write(value)
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		for i, m := range set {
			if m.name == name {
				value, done[i] = m.value, true
			}
		}
		if err := write(name, value); err != nil {
			return nil, err
		}
	}
	for i, m := range set {
		if !done[i] {
			if err := write(m.name, m.value); err != nil {
				return nil, err
			}
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// streamStatus is the HTTP status the API gives, outside a stream, to an
// error of each type: an error event in a stream carries only its type.
var streamStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

// StreamError is the *APIError for an error event that broke off an
// answer's stream: the status the API gives the type outside a stream (500
// for a type it does not list), so that it is retried, or moves along the
// fallback chain, as the same error would be; and InStream, since the
// attempt may have been billed.
func StreamError(errType, message string) *APIError {
	status, ok := streamStatus[errType]
	if !ok {
		status = 500
	}
	return &APIError{Status: status, Type: errType, Message: message, InStream: true}
}

// streamPiece is the most characters one delta of a generated stream
// carries: a few tokens, as the API sends them.
const streamPiece = 16

// StreamEvents is the stream the Messages API would send for resp, the
// inverse of StreamAssembler: message_start with the usage known before
// the answer (output_tokens at most 1), each block started with the
// members its deltas build emptied (text, thinking and signature "",
// citations [], a tool call's input {}), then text and thinking in pieces
// of a few characters, the signature whole, a tool call's input JSON in
// pieces; a ping after the first block starts; message_delta with the
// stop reason, the container and the usage; message_stop. Blocks of other
// types (redacted_thinking, a server tool's result) come whole in their
// start. The fakes (llm/script, llm/llmtest) serve it.
func StreamEvents(resp *Response) ([]StreamEvent, error) {
	var evs []StreamEvent
	add := func(typ string, v any) error {
		data, err := MarshalWire(v)
		evs = append(evs, StreamEvent{Type: typ, Data: data})
		return err
	}
	startUsage := resp.Usage
	startUsage.OutputTokens = min(resp.Usage.OutputTokens, 1)
	type head struct {
		ID           string         `json:"id"`
		Type         string         `json:"type"`
		Role         string         `json:"role"`
		Model        string         `json:"model"`
		Content      []ContentBlock `json:"content"`
		StopReason   *string        `json:"stop_reason"`
		StopSequence *string        `json:"stop_sequence"`
		Usage        Usage          `json:"usage"`
	}
	if err := add("message_start", struct {
		Type    string `json:"type"`
		Message head   `json:"message"`
	}{"message_start", head{resp.ID, resp.Type, resp.Role, resp.Model, []ContentBlock{}, nil, nil, startUsage}}); err != nil {
		return nil, err
	}
	for i, b := range resp.Content {
		block, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("llm: content %d: %w", i, err)
		}
		start, deltas, err := blockEvents(block)
		if err != nil {
			return nil, fmt.Errorf("llm: content %d (%s): %w", i, b.Type, err)
		}
		if err := add("content_block_start", struct {
			indexed
			ContentBlock json.RawMessage `json:"content_block"`
		}{indexed{"content_block_start", i}, start}); err != nil {
			return nil, err
		}
		if i == 0 {
			if err := add("ping", typed{"ping"}); err != nil {
				return nil, err
			}
		}
		for _, d := range deltas {
			if err := add("content_block_delta", struct {
				indexed
				Delta json.RawMessage `json:"delta"`
			}{indexed{"content_block_delta", i}, d}); err != nil {
				return nil, err
			}
		}
		if err := add("content_block_stop", indexed{"content_block_stop", i}); err != nil {
			return nil, err
		}
	}
	u := resp.Usage
	type deltaUsage struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		OutputTokens             int `json:"output_tokens"`
	}
	type messageDelta struct {
		StopReason   string     `json:"stop_reason"`
		StopSequence *string    `json:"stop_sequence"`
		Container    *Container `json:"container,omitempty"`
	}
	if err := add("message_delta", struct {
		Type  string       `json:"type"`
		Delta messageDelta `json:"delta"`
		Usage deltaUsage   `json:"usage"`
	}{"message_delta", messageDelta{resp.StopReason, resp.StopSequence, resp.Container},
		deltaUsage{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens}}); err != nil {
		return nil, err
	}
	if err := add("message_stop", typed{"message_stop"}); err != nil {
		return nil, err
	}
	return evs, nil
}

type typed struct {
	Type string `json:"type"`
}

type indexed struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// EmitDeltas hands onDelta (when not nil) the pieces a stream of resp
// would carry (StreamEvents): for an answer that arrived whole (a server
// that does not stream, a scripted answer), so that a caller showing
// pieces as they arrive shows it too.
func EmitDeltas(resp *Response, onDelta func(Delta)) error {
	if onDelta == nil {
		return nil
	}
	evs, err := StreamEvents(resp)
	if err != nil {
		return err
	}
	a := NewStreamAssembler(onDelta)
	for _, e := range evs {
		if err := a.Add(e); err != nil {
			return err
		}
	}
	return nil
}

// blockEvents splits a block's JSON into its content_block_start block and
// its deltas.
func blockEvents(block json.RawMessage) (json.RawMessage, []json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(block, &m); err != nil {
		return nil, nil, err
	}
	var head typed
	_ = json.Unmarshal(block, &head) // it decoded as an object above
	var deltas []json.RawMessage
	var set []member
	var err error
	delta := func(typ, name string, value any) {
		v, e := MarshalWire(value)
		err = errors.Join(err, e)
		deltas = append(deltas, fmt.Appendf(nil, `{"type":%q,%q:%s}`, typ, name, v))
	}
	text := func(name, deltaType string) {
		var s string
		if json.Unmarshal(m[name], &s) != nil {
			return
		}
		for _, p := range pieces(s) {
			delta(deltaType, name, p)
		}
		set = append(set, rawMember(name, `""`))
	}
	switch head.Type {
	case BlockText:
		var citations []json.RawMessage
		if json.Unmarshal(m["citations"], &citations) == nil && len(citations) > 0 {
			for _, c := range citations {
				delta("citations_delta", "citation", c)
			}
			set = append(set, rawMember("citations", `[]`))
		}
		text("text", "text_delta")
	case BlockThinking:
		text("thinking", "thinking_delta")
		var sig string
		if json.Unmarshal(m["signature"], &sig) == nil {
			delta("signature_delta", "signature", sig)
			set = append(set, rawMember("signature", `""`))
		}
	case BlockToolUse, "server_tool_use", "mcp_tool_use":
		if in, ok := m["input"]; ok {
			delta("input_json_delta", "partial_json", "")
			for _, p := range pieces(string(in)) {
				delta("input_json_delta", "partial_json", p)
			}
			set = append(set, rawMember("input", `{}`))
		}
	}
	if err != nil || len(set) == 0 {
		return block, nil, err
	}
	start, err := setMembers(block, set)
	return start, deltas, err
}

func rawMember(name, value string) member { return member{name, json.RawMessage(value)} }

// pieces cuts s into pieces of at most streamPiece characters.
func pieces(s string) []string {
	var out []string
	n, from := 0, 0
	for i := range s {
		if n == streamPiece {
			out = append(out, s[from:i])
			n, from = 0, i
		}
		n++
	}
	if from < len(s) {
		out = append(out, s[from:])
	}
	return out
}
