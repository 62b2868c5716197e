package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/httpguard"
	"github.com/llmkernels/kernels/internal/plainjson"
)

// Routes of the HTTP API (docs/hermitcrab-network.md has the table).
var routes = []string{
	"GET /v1/info",
	"POST /v1/passports", "GET /v1/passports", "GET /v1/passports/{agent}",
	"POST /v1/marks", "GET /v1/marks?url=|url_hash=",
	"POST /v1/messages", "POST /v1/inbox",
	"POST /v1/savepoints", "POST /v1/savepoints/get",
	"POST /mcp (MCP, streamable HTTP)",
}

// Handler is the beach's HTTP handler: the Host rule and body limits, the
// per-address rate limit, then the API and /mcp. ListenAndServe also prunes
// old nonces every minute; a program serving Handler itself calls
// PruneNonces now and then.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.Info()) })
	mux.HandleFunc("POST /v1/passports", s.submit(func(ctx context.Context, e *identity.Envelope, _ *http.Request) (any, error) {
		return s.PublishPassport(ctx, e)
	}))
	mux.HandleFunc("GET /v1/passports", func(w http.ResponseWriter, r *http.Request) {
		list, err := s.Passports(r.Context(), intParam(r, "limit"))
		s.reply(w, map[string]any{"passports": list}, err)
	})
	mux.HandleFunc("GET /v1/passports/{agent}", func(w http.ResponseWriter, r *http.Request) {
		p, err := s.Passport(r.Context(), r.PathValue("agent"))
		s.reply(w, p, err)
	})
	mux.HandleFunc("POST /v1/marks", s.submit(func(ctx context.Context, e *identity.Envelope, _ *http.Request) (any, error) {
		return s.Mark(ctx, e)
	}))
	mux.HandleFunc("GET /v1/marks", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		hash, marks, err := s.Marks(r.Context(), q.Get("url"), q.Get("url_hash"), intParam(r, "limit"))
		s.reply(w, map[string]any{"url_hash": hash, "marks": marks}, err)
	})
	mux.HandleFunc("POST /v1/messages", s.submit(func(ctx context.Context, e *identity.Envelope, _ *http.Request) (any, error) {
		return s.Send(ctx, e)
	}))
	mux.HandleFunc("POST /v1/inbox", s.submit(func(ctx context.Context, e *identity.Envelope, r *http.Request) (any, error) {
		msgs, err := s.Inbox(ctx, e, intParam(r, "limit"))
		return map[string]any{"messages": msgs}, err
	}))
	mux.HandleFunc("POST /v1/savepoints", s.submit(func(ctx context.Context, e *identity.Envelope, _ *http.Request) (any, error) {
		return s.PutSavePoint(ctx, e)
	}))
	mux.HandleFunc("POST /v1/savepoints/get", s.submit(func(ctx context.Context, e *identity.Envelope, _ *http.Request) (any, error) {
		return s.SavePoint(ctx, e)
	}))
	mux.Handle("/mcp", s.chargeBatches(s.mcpHandler()))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), "reason": "not_found", "routes": routes})
	})
	return s.guard.Handler(s.limitAddrs(mux))
}

// limitAddrs applies the per-address rate limit to every request.
func (s *Server) limitAddrs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := remoteHost(r)
		if ok, wait := s.addrs.allow(host, s.now()); !ok {
			s.writeError(w, &apiError{http.StatusTooManyRequests, "rate_limited",
				fmt.Sprintf("%s is over %g requests a minute; retry in %s", host, s.cfg.AddrPerMinute, wait.Round(time.Millisecond)), wait})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// maxBatch is the most calls one JSON-RPC batch may hold, whatever the
// rate limits. MCP clients do not batch (the protocol dropped batches in
// 2025-06-18); the SDK still serves them to requests of older versions.
const maxBatch = 100

// chargeBatches charges each call of a JSON-RPC batch to the per-address
// limit (limitAddrs charged the request as one), so one HTTP request cannot
// carry a thousand tool calls, each a database read or write, past it.
func (s *Server) chargeBatches(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			s.writeError(w, readError(err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var batch []json.RawMessage
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '[' || json.Unmarshal(body, &batch) != nil {
			next.ServeHTTP(w, r) // one message, or not JSON: the SDK answers
			return
		}
		if len(batch) > maxBatch {
			s.writeError(w, &apiError{http.StatusRequestEntityTooLarge, httpguard.ReasonTooLarge, fmt.Sprintf("a JSON-RPC batch of %d messages: at most %d", len(batch), maxBatch), 0})
			return
		}
		if ok, wait := s.addrs.allowN(remoteHost(r), s.now(), len(batch)-1); !ok {
			msg := fmt.Sprintf("a batch of %d calls is over this address's limit of %g requests a minute", len(batch), s.cfg.AddrPerMinute)
			if wait == rate.InfDuration {
				wait = 0
				msg = fmt.Sprintf("a batch of %d calls is over this address's burst of %d requests", len(batch), s.cfg.AddrBurst)
			}
			s.writeError(w, &apiError{http.StatusTooManyRequests, "rate_limited", msg, wait})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readError is the refusal of a request whose body could not be read: too
// large (cut while reading, when it came without a length), or cut off.
func readError(err error) *apiError {
	if limit, ok := httpguard.TooLarge(err); ok {
		return &apiError{http.StatusRequestEntityTooLarge, httpguard.ReasonTooLarge, fmt.Sprintf("request body over %d bytes", limit), 0}
	}
	return &apiError{http.StatusBadRequest, identity.ReasonMalformed, "reading the request body: " + err.Error(), 0}
}

// remoteHost is the client a request came from (httpguard.ClientKey).
func remoteHost(r *http.Request) string { return httpguard.ClientKey(r.RemoteAddr) }

// submit decodes a signed envelope from the body and runs op on it.
func (s *Server) submit(op func(context.Context, *identity.Envelope, *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			s.writeError(w, readError(err))
			return
		}
		var e identity.Envelope
		if err := identity.DecodeEnvelope(body, &e); err != nil {
			s.writeError(w, s.classify(err))
			return
		}
		out, err := op(r.Context(), &e, r)
		s.reply(w, out, err)
	}
}

func (s *Server) reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		s.writeError(w, s.classify(err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(e.retryAfter.Seconds())+1))
	}
	writeJSON(w, e.status, map[string]string{"error": e.msg, "reason": e.reason})
}

// writeJSON answers with v as JSON, <, > and & unescaped (plainjson).
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := plainjson.Marshal(v)
	if err != nil { // a value the server built would not encode: say so, not a half body
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n')) // a failed write means the client has gone; no one is left to tell
}

func intParam(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.URL.Query().Get(name))
	return n
}

// ListenAndServe serves on cfg.Addr until ctx ends, pruning old nonces
// every minute. ready gets the base URL once the port is bound.
func (s *Server) ListenAndServe(ctx context.Context, ready func(url string)) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.cfg.Addr, err)
	}
	if s.addrs != nil {
		// One address holds at most its burst of connections (slowloris).
		ln = httpguard.LimitConns(ln, s.cfg.AddrBurst)
	}
	// WriteTimeout (counted from the end of the header, so it spans the
	// body's ReadTimeout too) frees a request whose client stops reading
	// its answer; without it the goroutine and the answer wait forever.
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute,
		WriteTimeout: 3 * time.Minute, IdleTimeout: 2 * time.Minute}
	if ready != nil {
		ready("http://" + ln.Addr().String())
	}
	pctx, stopPruning := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
				if n, err := s.PruneNonces(pctx); err != nil {
					s.log.Warn("pruning nonces", "err", err)
				} else if n > 0 {
					s.log.Debug("pruned nonces", "count", n)
				}
			}
		}
	}()
	err = httpguard.Serve(ctx, srv, ln)
	stopPruning()
	<-pruned // the store stays open until pruning has stopped
	return err
}
