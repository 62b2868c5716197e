package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
)

// Script is a parsed list of canned answers. It is immutable: providers and
// servers built from it keep their own "used" state, so one Script can back
// any number of them.
type Script struct {
	entries []entry
}

// Len is the number of entries in the script.
func (s *Script) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// entry is one element of the script's "responses" list: a response or an
// error, answered when match holds.
type entry struct {
	match    match
	response json.RawMessage // the response object as written; nil for an error entry
	hasUsage bool            // the response gave "usage"; otherwise usage is estimated
	err      *ErrorEntry
}

// match holds the conditions of an entry; empty fields are not conditions,
// so the zero match always holds.
type match struct {
	SystemContains   string `json:"system_contains,omitempty"`
	LastUserContains string `json:"last_user_contains,omitempty"`
	ToolResultFor    string `json:"tool_result_for,omitempty"`
	Model            string `json:"model,omitempty"`
}

// ErrorEntry is an error entry: answered as an *llm.APIError by Provider
// and as the API's error response by Server.
type ErrorEntry struct {
	Status     int     `json:"status"`
	Type       string  `json:"type"`
	Message    string  `json:"message"`
	RetryAfter float64 `json:"retry_after,omitempty"` // seconds
}

func (e *ErrorEntry) RetryAfterDuration() time.Duration {
	return time.Duration(e.RetryAfter * float64(time.Second))
}

// ErrExhausted is wrapped by the error returned when no unused entry
// of the script answers a request. It is a plain error, not an
// *llm.APIError, so nothing retries it.
var ErrExhausted = errors.New("script: no entry answers the request")

// Load reads and parses a script file.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Field sets for load-time typo checks. The response's fields come from
// llm.Response's JSON tags so the check follows the type.
var (
	scriptFields   = []string{"responses"}
	entryFields    = []string{"match", "response", "error"}
	matchFields    = JSONFields(reflect.TypeFor[match]())
	errorFields    = JSONFields(reflect.TypeFor[ErrorEntry]())
	responseFields = JSONFields(reflect.TypeFor[llm.Response]())
)

var stopReasons = []string{
	llm.StopEndTurn, llm.StopToolUse, llm.StopPauseTurn, llm.StopMaxTokens,
	llm.StopSequence, llm.StopRefusal, llm.StopModelContextWindowExceeded,
}

// Parse parses a script: {"responses": [entry, …]}. See
// docs/scripts.md for the entry forms. Unknown fields anywhere the format
// is defined (the script, an entry, "match", "error", a response's top
// level) are errors naming the entry, to catch typos.
func Parse(data []byte) (*Script, error) {
	obj, err := objectFields(data)
	if err != nil {
		return nil, fmt.Errorf("script: %w (want {\"responses\": [...]})", err)
	}
	if err := unknownFields(obj, scriptFields); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	raw, ok := obj["responses"]
	if !ok {
		return nil, errors.New(`script: no "responses" list (want {"responses": [...]})`)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("script: responses: %w (want a list of entries)", err)
	}
	s := &Script{entries: make([]entry, 0, len(list))}
	for i, r := range list {
		e, err := parseEntry(r)
		if err != nil {
			return nil, fmt.Errorf("script: responses[%d]: %w", i, err)
		}
		s.entries = append(s.entries, e)
	}
	return s, nil
}

func parseEntry(data json.RawMessage) (entry, error) {
	obj, err := objectFields(data)
	if err != nil {
		return entry{}, err
	}
	_, hasMatch := obj["match"]
	_, hasResponse := obj["response"]
	_, hasError := obj["error"]
	if !hasMatch && !hasResponse && !hasError {
		// A bare response object.
		if err := unknownFields(obj, responseFields); err != nil {
			return entry{}, fmt.Errorf(`%w; an entry is a response object or {"match": {...}, "response"|"error": {...}}`, err)
		}
		return parseResponse(data, obj)
	}
	if err := unknownFields(obj, entryFields); err != nil {
		return entry{}, err
	}
	var e entry
	switch {
	case hasResponse && hasError:
		return entry{}, errors.New(`an entry has "response" or "error", not both`)
	case hasResponse:
		respObj, err := objectFields(obj["response"])
		if err != nil {
			return entry{}, fmt.Errorf("response: %w", err)
		}
		if e, err = parseResponse(obj["response"], respObj); err != nil {
			return entry{}, err
		}
	case hasError:
		se, err := parseError(obj["error"])
		if err != nil {
			return entry{}, fmt.Errorf("error: %w", err)
		}
		e.err = se
	default:
		return entry{}, errors.New(`an entry with "match" needs a "response" or an "error"`)
	}
	if raw := obj["match"]; len(raw) > 0 && string(raw) != "null" {
		m, err := objectFields(raw)
		if err != nil {
			return entry{}, fmt.Errorf("match: %w", err)
		}
		if err := unknownFields(m, matchFields); err != nil {
			return entry{}, fmt.Errorf("match: %w", err)
		}
		if err := json.Unmarshal(raw, &e.match); err != nil {
			return entry{}, fmt.Errorf("match: %w", err)
		}
	}
	return e, nil
}

func parseResponse(data json.RawMessage, obj map[string]json.RawMessage) (entry, error) {
	if err := unknownFields(obj, responseFields); err != nil {
		return entry{}, fmt.Errorf("response: %w", err)
	}
	if _, ok := obj["content"]; !ok {
		return entry{}, errors.New(`response: no "content" (want e.g. {"content": [{"type": "text", "text": "hi"}]})`)
	}
	var r llm.Response
	if err := json.Unmarshal(data, &r); err != nil {
		return entry{}, fmt.Errorf("response: %w", err)
	}
	if r.StopReason != "" && !slices.Contains(stopReasons, r.StopReason) {
		return entry{}, fmt.Errorf("response: stop_reason %q is not one of %s", r.StopReason, strings.Join(stopReasons, ", "))
	}
	for j, b := range r.Content {
		if b.Type == llm.BlockToolUse && b.Name == "" {
			return entry{}, fmt.Errorf("response: content[%d]: tool_use block has no name", j)
		}
	}
	_, hasUsage := obj["usage"]
	return entry{response: data, hasUsage: hasUsage}, nil
}

func parseError(data json.RawMessage) (*ErrorEntry, error) {
	obj, err := objectFields(data)
	if err != nil {
		return nil, err
	}
	if err := unknownFields(obj, errorFields); err != nil {
		return nil, err
	}
	var se ErrorEntry
	if err := json.Unmarshal(data, &se); err != nil {
		return nil, err
	}
	if se.Status < 400 || se.Status > 599 {
		return nil, fmt.Errorf("status %d is not an HTTP error status (want 400-599, e.g. 529)", se.Status)
	}
	if se.Type == "" {
		return nil, errors.New(`no "type" (want e.g. "overloaded_error")`)
	}
	if se.RetryAfter < 0 {
		return nil, fmt.Errorf("retry_after %g is negative (want seconds ≥ 0)", se.RetryAfter)
	}
	if se.Message == "" {
		se.Message = "scripted " + se.Type
	}
	return &se, nil
}

// objectFields decodes a JSON object into its fields.
func objectFields(data []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("not a JSON object: null")
	}
	return obj, nil
}

// unknownFields names the fields of obj not in known, sorted.
func unknownFields(obj map[string]json.RawMessage, known []string) error {
	var unknown []string
	for k := range obj {
		if !slices.Contains(known, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("unknown field %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
}

// JSONFields lists the JSON names of a struct type's fields, as
// encoding/json names them.
func JSONFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			names = append(names, JSONFields(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// Player hands a script's entries out to requests. Provider and llmtest.Server
// each own one; it is the single implementation of matching.
type Player struct {
	script *Script
	mu     sync.Mutex
	used   []bool
	nUsed  int
	echoes echoes // the thinking served, to check it comes back unchanged
	// answered maps a request's number to the entry that answered it.
	answered map[int]int
	cache    promptCache
	now      func() time.Time // the cache's clock
}

// NewPlayer returns a player of s with no entry used yet.
func NewPlayer(s *Script) *Player {
	if s == nil {
		s = &Script{}
	}
	return &Player{script: s, used: make([]bool, len(s.entries)), answered: map[int]int{}, now: time.Now}
}

// SetClock sets the clock the simulated prompt cache reads (time.Now by
// default), so that a test can let a cached prefix expire.
func (p *Player) SetClock(now func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now = now
}

// GiveBack marks the entry that answered the number-th request unused
// again: its answer never arrived whole (a stream broken off), so the
// request sent again gets it.
func (p *Player) GiveBack(number int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if idx, ok := p.answered[number]; ok && p.used[idx] {
		p.used[idx] = false
		p.nUsed--
		delete(p.answered, number)
	}
}

// Remaining is the number of entries not used yet.
func (p *Player) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.used) - p.nUsed
}

// Answer takes the first unused entry whose match holds for req, the
// number-th request its owner received, and returns its response (defaults
// filled) or its error. encoded is req's JSON, for usage estimation. A
// request that does not send back the thinking this player served as the
// API requires (see echoes) is answered with the API's 400 and uses no
// entry.
func (p *Player) Answer(req *llm.Request, number int, encoded []byte) (*llm.Response, *ErrorEntry, error) {
	v := viewOf(req)
	p.mu.Lock()
	if problems := p.echoes.check(req); len(problems) > 0 {
		p.mu.Unlock()
		return nil, &ErrorEntry{Status: 400, Type: "invalid_request_error", Message: strings.Join(problems, "; ")}, nil
	}
	idx := -1
	for i, e := range p.script.entries {
		if !p.used[i] && e.match.holds(v) {
			idx = i
			break
		}
	}
	if idx < 0 {
		total, used := len(p.used), p.nUsed
		p.mu.Unlock()
		return nil, nil, exhausted(v, number, total, used)
	}
	p.used[idx] = true
	p.nUsed++
	p.answered[number] = idx
	e := p.script.entries[idx]
	var cached llm.Usage
	if e.err == nil {
		cached = p.cache.use(req, estimateTokens(len(encoded)), p.now())
	}
	p.mu.Unlock()

	if e.err != nil {
		se := *e.err
		return nil, &se, nil
	}
	resp, err := e.build(idx, req, cached)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	p.echoes.record(resp)
	p.mu.Unlock()
	return resp, nil, nil
}

func exhausted(v requestView, number, total, used int) error {
	unmatched := ""
	if total > used {
		unmatched = fmt.Sprintf("; the %d unused do not match it", total-used)
	}
	return fmt.Errorf("%w for request %d (model %q, last user message %q): the script has %d entries, %d used%s; add an entry that answers it",
		ErrExhausted, number, v.model, clip.Line(v.lastUser, 60), total, used, unmatched)
}

// build decodes a fresh copy of the entry's response, so no two answers
// share memory, and fills the fields the script left out; input is the
// estimated input usage (with what the simulated cache read and wrote).
func (e entry) build(idx int, req *llm.Request, input llm.Usage) (*llm.Response, error) {
	var r llm.Response
	if err := json.Unmarshal(e.response, &r); err != nil {
		return nil, fmt.Errorf("script: responses[%d]: %w", idx, err) // checked at load; cannot happen
	}
	if r.ID == "" {
		r.ID = fmt.Sprintf("msg_script_%d", idx)
	}
	if r.Type == "" {
		r.Type = "message"
	}
	if r.Role == "" {
		r.Role = llm.RoleAssistant
	}
	if r.Model == "" {
		r.Model = req.Model
	}
	if r.Content == nil {
		r.Content = []llm.ContentBlock{}
	}
	hasToolUse := false
	for j := range r.Content {
		if b := &r.Content[j]; b.Type == llm.BlockToolUse {
			hasToolUse = true
			if b.ID == "" {
				b.ID = fmt.Sprintf("toolu_script_%d_%d", idx, j)
			}
		}
	}
	if r.StopReason == "" {
		r.StopReason = llm.StopEndTurn
		if hasToolUse {
			r.StopReason = llm.StopToolUse
		}
	}
	if !e.hasUsage {
		content, err := json.Marshal(r.Content)
		if err != nil {
			return nil, fmt.Errorf("script: responses[%d]: content: %w", idx, err)
		}
		r.Usage = input
		r.Usage.OutputTokens = estimateTokens(len(content))
	}
	return &r, nil
}

// estimateTokens is the usual rule of thumb: about four bytes of JSON per
// token, rounded up.
func estimateTokens(n int) int { return (n + 3) / 4 }

// requestView is what matching looks at in a request.
type requestView struct {
	model         string
	system        string
	lastUser      string
	toolsAnswered []string // names of the tools whose tool_use the last user message answers
}

func viewOf(req *llm.Request) requestView {
	v := requestView{model: req.Model}
	var sys []string
	for _, s := range req.System {
		sys = append(sys, s.Text)
	}
	v.system = strings.Join(sys, "\n")
	last := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			last = i
			break
		}
	}
	if last < 0 {
		return v
	}
	var parts []string
	for _, b := range req.Messages[last].Content {
		switch b.Type {
		case llm.BlockText:
			parts = append(parts, b.Text)
		case llm.BlockToolResult:
			parts = append(parts, b.Content.String())
		}
	}
	v.lastUser = strings.Join(parts, "\n")
	if last == 0 || req.Messages[last-1].Role != llm.RoleAssistant {
		return v
	}
	names := map[string]string{}
	for _, b := range req.Messages[last-1].Content {
		if b.Type == llm.BlockToolUse {
			names[b.ID] = b.Name
		}
	}
	for _, b := range req.Messages[last].Content {
		if name, ok := names[b.ToolUseID]; ok && b.Type == llm.BlockToolResult {
			v.toolsAnswered = append(v.toolsAnswered, name)
		}
	}
	return v
}

func (m match) holds(v requestView) bool {
	return strings.Contains(v.system, m.SystemContains) &&
		strings.Contains(v.lastUser, m.LastUserContains) &&
		(m.ToolResultFor == "" || slices.Contains(v.toolsAnswered, m.ToolResultFor)) &&
		(m.Model == "" || m.Model == v.model)
}
