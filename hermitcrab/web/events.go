package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/llmkernels/kernels/llm"
)

// event is one message on the page's event stream.
type event map[string]any

// hub fans events out to every open event stream (every attached page).
type hub struct {
	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	closed bool
}

func newHub() *hub { return &hub{subs: map[chan []byte]struct{}{}} }

// send delivers an event to every page. A page too slow to keep up loses
// the event rather than stalling the kernel.
func (h *hub) send(e event) {
	data, err := llm.MarshalWire(e)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- data:
		default:
		}
	}
}

func (h *hub) subscribe() (chan []byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	ch := make(chan []byte, 256)
	h.subs[ch] = struct{}{}
	return ch, true
}

func (h *hub) unsubscribe(ch chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

// pages is how many pages have an event stream open.
func (h *hub) pages() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// close ends every stream, so the server can shut down.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}

// serveEvents is GET /api/events: a server-sent event stream.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, errors.New("streaming is not supported here"))
		return
	}
	ch, ok := s.hub.subscribe()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, errors.New("the server is shutting down"))
		return
	}
	defer s.hub.unsubscribe(ch)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// A failed write means the page has gone: stop streaming to it.
	if _, err := fmt.Fprint(w, ": attached\n\n"); err != nil {
		return
	}
	flusher.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			_, err = fmt.Fprint(w, ": ping\n\n")
		case data, ok := <-ch:
			if !ok {
				return
			}
			_, err = fmt.Fprintf(w, "data: %s\n\n", data)
		}
		if err != nil {
			return
		}
		flusher.Flush()
	}
}

// relay runs browser tools in the attached page: it sends a "browser"
// event and waits for the page to post the result.
type relay struct {
	hub     *hub
	timeout time.Duration
	mu      sync.Mutex
	pending map[string]chan browserResult
}

type browserResult struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

// slowTools wait for a person to act.
var slowTools = map[string]bool{"listen": true, "fs_pick_directory": true}

// Call implements conversation.Browser.
func (r *relay) Call(ctx context.Context, tool string, input json.RawMessage) (llm.ToolOutput, error) {
	if r.hub.pages() == 0 {
		return llm.ErrorOutput(fmt.Sprintf("%s needs the web shell page open in a browser, and none is attached now", tool)), nil
	}
	id := randomToken()
	ch := make(chan browserResult, 1)
	r.mu.Lock()
	r.pending[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}()
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	r.hub.send(event{"type": "browser", "id": id, "tool": tool, "input": input})
	timeout := r.timeout
	if slowTools[tool] {
		timeout = 3 * time.Minute
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case res := <-ch:
		return llm.ToolOutput{Content: llm.ToolResultContent{Text: res.Content}, IsError: res.IsError}, nil
	case <-timer.C:
		return llm.ErrorOutput(fmt.Sprintf("%s: the page did not answer within %s", tool, timeout)), nil
	case <-ctx.Done():
		return llm.ToolOutput{}, ctx.Err()
	}
}

// answer delivers a page's result; an unknown id (timed out, or never
// asked) is an error.
func (r *relay) answer(res browserResult) error {
	r.mu.Lock()
	ch, ok := r.pending[res.ID]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("no browser tool call %q is waiting (it may have timed out)", res.ID)
	}
	select {
	case ch <- res:
	default: // answered already
	}
	return nil
}

// streamTo sends the page the pieces of a call's answers as events named
// by the call's stream id: "delta" with each piece of text ("reset" when a
// new answer begins, or a broken one is asked for again, so that the text
// a page gathers is the answer callLLM will return), and "progress" with
// what the model is doing: thinking, or the tool it calls. The page shows
// the progress in its strip and hands the text to callLLM's onText.
func (s *Server) streamTo(id string) func(llm.Delta) {
	thinking := false
	return func(d llm.Delta) {
		switch d.Kind {
		case llm.DeltaRestart:
			s.hub.send(event{"type": "delta", "call": id, "reset": true})
		case llm.DeltaBlockStart:
			if d.Index == 0 {
				s.hub.send(event{"type": "delta", "call": id, "reset": true})
			}
			if d.Block == llm.BlockToolUse || d.Block == "server_tool_use" {
				s.hub.send(event{"type": "progress", "call": id, "text": "running " + d.Name})
			}
		case llm.DeltaThinking:
			if !thinking {
				s.hub.send(event{"type": "progress", "call": id, "text": "thinking…"})
			}
		case llm.DeltaText:
			s.hub.send(event{"type": "delta", "call": id, "text": d.Text})
		}
		thinking = d.Kind == llm.DeltaThinking
	}
}
