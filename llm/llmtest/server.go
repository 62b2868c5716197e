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

	mu       sync.Mutex
	received []Received
}

// Received is one HTTP request the server got, valid or not.
type Received struct {
	Method  string
	Path    string
	Header  http.Header
	Body    []byte
	Request *llm.Request // the body decoded; nil when it is not a Messages request
	// Status and Response are the server's answer: its HTTP status and the
	// body exactly as written.
	Status   int
	Response []byte
}

// requestFields are the top-level fields the server accepts: the JSON
// fields of llm.Request, so the two cannot drift apart.
var requestFields = script.JSONFields(reflect.TypeFor[llm.Request]())

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

// Received returns a copy of every request received, in order. Each
// Request is decoded afresh from the stored body, so callers share no memory
// with the server or with each other.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.received))
	for i, r := range s.received {
		out[i] = Received{Method: r.Method, Path: r.Path, Header: r.Header.Clone(), Body: slices.Clone(r.Body), Request: decodeRequest(r.Body),
			Status: r.Status, Response: slices.Clone(r.Response)}
	}
	return out
}

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
	reply := responder{w: w, requestID: fmt.Sprintf("req_llmtest_%d", number), keep: func(status int, body []byte) {
		s.mu.Lock()
		s.received[number-1].Status, s.received[number-1].Response = status, body
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
	default:
		reply.json(http.StatusOK, resp)
	}
}

// checkBody returns the API's message for a body that is not a JSON object
// of known fields, or "".
func checkBody(body []byte) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return fmt.Sprintf("request body is not a JSON object: %v", err)
	}
	var extra []string
	for k := range obj {
		if !slices.Contains(requestFields, k) {
			msg := k + ": Extra inputs are not permitted"
			if k == "stream" {
				msg += " (llmtest.Server does not stream)"
			}
			extra = append(extra, msg)
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
	keep      func(status int, body []byte) // records the answer
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
	r.keep(status, data)
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
