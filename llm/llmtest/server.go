package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/script"
)

// Server is a strict fake of the Anthropic Messages API over HTTP, for
// tests that drive a real client (the SDK adapter, a binary) against URL.
// It serves the script on POST /v1/messages and checks each request the
// way the API does, answering violations with the API's status and error
// body. It is safe for concurrent use.
type Server struct {
	URL string // base URL, e.g. http://127.0.0.1:41234; the API is at URL + "/v1/messages"

	ts     *httptest.Server
	player *script.Player

	mu         sync.Mutex
	received   []Received
	eventDelay time.Duration
	faults     []StreamFault
}

// StreamFault breaks a streamed answer the way the API's streams break.
// After events have been written (message_start is the first), the
// server sends an error event of type Error (overloaded_error, api_error,
// …), or drops the connection (Drop), or waits Stall before going on (a
// stream that stalls; a client that gives up on it hangs up).
type StreamFault struct {
	After int
	Error string
	Drop  bool
	Stall time.Duration
}

// Received is one HTTP request the server got, valid or not.
type Received struct {
	Method  string
	Path    string
	Header  http.Header
	Body    []byte
	Request *llm.Request // the body decoded; nil when it is not a Messages request
	// Status and Response are the server's answer: its HTTP status and the
	// body exactly as written, or for a stream (Stream holds the events
	// as written) the message its events assemble into; nil when the
	// stream did not reach its end.
	Status   int
	Response []byte
	Stream   []byte
}

// requestFields are the top-level fields the server accepts: the JSON
// fields of llm.Request, so the two cannot drift apart, and "stream",
// which the adapters set.
var requestFields = script.JSONFields(reflect.TypeFor[llm.Request]())

const streamField = "stream"

// NewServer starts a server playing s from its first entry. Close it when
// done.
func NewServer(s *script.Script) *Server {
	srv := &Server{player: script.NewPlayer(s)}
	srv.ts = httptest.NewServer(http.HandlerFunc(srv.serve))
	srv.URL = srv.ts.URL
	return srv
}

// Close shuts the server down, waiting for requests in flight.
func (s *Server) Close() { s.ts.Close() }

// SetClock sets the clock of the simulated prompt cache (time.Now by
// default), so that a test can let a cached prefix expire.
func (s *Server) SetClock(now func() time.Time) { s.player.SetClock(now) }

// SetEventDelay makes the server wait d after each event of a stream it
// writes, as a model generating tokens does: for measuring how soon the
// first words arrive.
func (s *Server) SetEventDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventDelay = d
}

// BreakStream breaks the next streamed answer with f (each call adds one
// fault, used in order). The script entry of an answer that did not reach
// its end is given back, so that the request sent again gets it; a stall
// gives it back as it begins (a client that waits it out still gets the
// answer, and the entry stays unused).
func (s *Server) BreakStream(f StreamFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// Received returns a copy of every request received, in order. Each
// Request is decoded afresh from the stored body, so callers share no memory
// with the server or with each other.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.received))
	for i, r := range s.received {
		out[i] = Received{Method: r.Method, Path: r.Path, Header: r.Header.Clone(), Body: slices.Clone(r.Body), Request: decodeRequest(r.Body),
			Status: r.Status, Response: slices.Clone(r.Response), Stream: slices.Clone(r.Stream)}
	}
	return out
}

// MaxRequestBytes is the most a Messages request's body may hold: the
// API answers a larger one 413 request_too_large. A conversation that
// gathers images (5 MB each at most) reaches it after a few.
const MaxRequestBytes = 32 << 20

// decodeRequest is body as a Messages request, or nil when it is not one.
func decodeRequest(body []byte) *llm.Request {
	var req llm.Request
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	return &req
}

// Remaining is the number of script entries not used yet.
func (s *Server) Remaining() int { return s.player.Remaining() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(r.Body)
	s.mu.Lock()
	s.received = append(s.received, Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	number := len(s.received)
	s.mu.Unlock()
	reply := responder{w: w, requestID: fmt.Sprintf("req_llmtest_%d", number), keep: func(status int, body, stream []byte) {
		s.mu.Lock()
		s.received[number-1].Status, s.received[number-1].Response, s.received[number-1].Stream = status, body, stream
		s.mu.Unlock()
	}}

	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		reply.error(http.StatusNotFound, "not_found_error", fmt.Sprintf("%s %s: not found (this fake serves POST /v1/messages)", r.Method, r.URL.Path), 0)
		return
	case r.Header.Get("x-api-key") == "":
		reply.error(http.StatusUnauthorized, "authentication_error", "x-api-key header is required", 0)
		return
	case r.Header.Get("anthropic-version") == "":
		reply.error(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required", 0)
		return
	case readErr != nil:
		reply.error(http.StatusBadRequest, "invalid_request_error", "reading the request body: "+readErr.Error(), 0)
		return
	case len(body) > MaxRequestBytes:
		reply.error(http.StatusRequestEntityTooLarge, "request_too_large", "Request exceeds the maximum allowed number of bytes.", 0)
		return
	}
	if msg := checkBody(body); msg != "" {
		reply.error(http.StatusBadRequest, "invalid_request_error", msg, 0)
		return
	}
	req := decodeRequest(body) // checkBody has made sure it decodes
	if err := llm.CheckRequest(req, r.Header.Values("anthropic-beta")...); err != nil {
		reply.error(http.StatusBadRequest, "invalid_request_error", script.InvalidRequest(err).Message, 0)
		return
	}
	if msg := missingBetas(r.Header, req.Tools); msg != "" {
		reply.error(http.StatusBadRequest, "invalid_request_error", msg, 0)
		return
	}
	encoded, err := json.Marshal(req)
	if err != nil {
		reply.error(http.StatusBadRequest, "invalid_request_error", "request does not re-encode: "+err.Error(), 0)
		return
	}
	resp, se, err := s.player.Answer(req, number, encoded)
	switch {
	case err != nil:
		// Not retryable (400), so a client gives up at once and shows why.
		reply.error(http.StatusBadRequest, "invalid_request_error", err.Error(), 0)
	case se != nil:
		reply.error(se.Status, se.Type, se.Message, se.RetryAfter)
	case wantsStream(body):
		s.stream(r, reply, resp, func() { s.player.GiveBack(number) })
	default:
		reply.json(http.StatusOK, resp)
	}
}

// wantsStream reports whether the body asks for a stream ("stream": true).
func wantsStream(body []byte) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &b) == nil && b.Stream
}

// stream writes resp as the API streams it (llm.StreamEvents), breaking it
// with the next fault if one was set. The answer is kept as the message
// its events assemble into, before its last event is written. An answer
// that does not reach its end gives its entry back (giveBack) before the
// client can see it break, so that the request sent again gets it; a
// stall gives it back as it begins.
func (s *Server) stream(r *http.Request, reply responder, resp *llm.Response, giveBack func()) {
	evs, err := llm.StreamEvents(resp)
	var assembled []byte
	if err == nil {
		assembled, err = assemble(evs)
	}
	if err != nil {
		giveBack()
		reply.error(http.StatusInternalServerError, "api_error", "llmtest: streaming the answer: "+err.Error(), 0)
		return
	}
	s.mu.Lock()
	delay := s.eventDelay
	var fault *StreamFault
	if len(s.faults) > 0 {
		fault = &s.faults[0]
		s.faults = s.faults[1:]
	}
	s.mu.Unlock()

	w := reply.w
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", reply.requestID)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var written []byte
	// keep records what was written, with the assembled answer once the
	// stream is whole.
	keep := func(whole bool) {
		var answer []byte
		if whole {
			answer = assembled
		} else {
			giveBack()
		}
		reply.keep(http.StatusOK, answer, slices.Clone(written))
	}
	send := func(typ string, data []byte, last bool) bool {
		frame := fmt.Appendf(nil, "event: %s\ndata: %s\n\n", typ, data)
		written = append(written, frame...)
		if last {
			// Kept before it is written: a client that has the whole
			// answer finds it recorded.
			keep(true)
		}
		_, err := w.Write(frame)
		return err == nil && rc.Flush() == nil
	}
	for i, e := range evs {
		if fault != nil && i == fault.After {
			switch {
			case fault.Error != "":
				data, _ := json.Marshal(errorBody(reply.requestID, fault.Error, "llmtest: a scripted "+fault.Error+" in the stream"))
				keep(false)
				send("error", data, false)
				return
			case fault.Drop:
				keep(false)
				// The connection closes without the body's end: the
				// client reads a body cut short.
				panic(http.ErrAbortHandler)
			case fault.Stall > 0:
				keep(false)
				if !wait(r, fault.Stall) {
					return
				}
			}
		}
		last := i == len(evs)-1
		if !send(e.Type, e.Data, last) || (!last && delay > 0 && !wait(r, delay)) {
			keep(false)
			return
		}
	}
}

// wait waits d, or until the client hangs up (false).
func wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// assemble is the message a stream's events assemble into, as a client
// assembles it.
func assemble(evs []llm.StreamEvent) ([]byte, error) {
	a := llm.NewStreamAssembler(nil)
	for _, e := range evs {
		if err := a.Add(e); err != nil {
			return nil, err
		}
	}
	resp, err := a.Response()
	if err != nil {
		return nil, err
	}
	return llm.MarshalWire(resp)
}

// checkBody returns the API's message for a body that is not a JSON object
// of known fields, or "".
func checkBody(body []byte) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return fmt.Sprintf("request body is not a JSON object: %v", err)
	}
	var extra []string
	for k, v := range obj {
		switch {
		case k == streamField:
			var b bool
			if json.Unmarshal(v, &b) != nil {
				extra = append(extra, k+": Input should be a valid boolean")
			}
		case !slices.Contains(requestFields, k):
			extra = append(extra, k+": Extra inputs are not permitted")
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return strings.Join(extra, "; ")
	}
	var req llm.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return "request body does not decode as a Messages request: " + err.Error()
	}
	return ""
}

// missingBetas names the tools whose type the API accepts only with an
// anthropic-beta value the request did not send, or "". Server tools that
// are generally available need none, so none is insisted on for them.
func missingBetas(h http.Header, tools []llm.Tool) string {
	var sent []string
	for _, v := range h.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			sent = append(sent, strings.TrimSpace(b))
		}
	}
	var missing []string
	for i, t := range tools {
		if beta := anthropic.RequiredBeta(t.Type); beta != "" && !slices.Contains(sent, beta) {
			missing = append(missing, fmt.Sprintf("tools.%d: tool type %q requires the anthropic-beta header %q", i, t.Type, beta))
		}
	}
	return strings.Join(missing, "; ")
}

type responder struct {
	w         http.ResponseWriter
	requestID string
	keep      func(status int, body, stream []byte) // records the answer
}

func (r responder) json(status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(errorBody(r.requestID, "api_error", "llmtest: encoding the response: "+err.Error()))
	}
	r.w.Header().Set("Content-Type", "application/json")
	r.w.Header().Set("request-id", r.requestID)
	// Kept before it is written: a client that has the answer (and a test
	// that then compares its own records with this server's) must find
	// it recorded, with no window between the two.
	r.keep(status, data, nil)
	r.w.WriteHeader(status)
	_, _ = r.w.Write(data) // the client under test hung up: it sees that on its side
}

func (r responder) error(status int, typ, message string, retryAfter float64) {
	if retryAfter > 0 {
		r.w.Header().Set("retry-after", strconv.FormatFloat(retryAfter, 'f', -1, 64))
	}
	r.json(status, errorBody(r.requestID, typ, message))
}

func errorBody(requestID, typ, message string) any {
	type detail struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	return struct {
		Type      string `json:"type"`
		Error     detail `json:"error"`
		RequestID string `json:"request_id"`
	}{"error", detail{typ, message}, requestID}
}
