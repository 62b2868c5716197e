// Package web serves the Hermitcrab web shell: the host page, the kernel's
// API for the page's props, the LLM-built shell compiled with esbuild, and a
// server-sent event stream that carries boot progress, new shells and
// browser-tool calls to the page.
//
// The kernel runs here in Go; the browser renders the shell and does what
// only a browser can (clipboard, speech, notifications, downloads, local
// folders). The API key is kept server side (environment or a 0600 file in
// the data directory) and is never sent to a browser or written to a log.
//
// Security: before any handler runs, a request whose Host is not a name
// this server is reachable by is refused (internal/httpguard: the loopback
// names, the bound address, and names given with --allow-host), which stops
// DNS rebinding, and bodies are size-limited. A request with another
// site's Origin is refused, whatever its method; every state-changing
// request needs the page's CSRF token and an Origin equal to this server's;
// off loopback every request needs the access token. No answer may be
// framed by another page (clickjacking) or sent on as a Referer. The shell the LLM
// writes runs with the page's full rights by design: it is the person's own
// agent.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/endpoint"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/secrets"
	"github.com/llmkernels/kernels/hermitcrab/shells"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
	"github.com/llmkernels/kernels/internal/httpguard"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/llm"
)

// Config configures a Server.
type Config struct {
	Addr  string // default 127.0.0.1:8420
	Token string // access token; required (generated when empty) off loopback
	// AllowHosts are further Host names the server answers to (a DNS name
	// or a reverse proxy's): names, *.domain patterns or IP addresses. The
	// loopback names and the bound address are always accepted.
	AllowHosts []string
	DataDir    string
	// Kernel is the kernel's base options; the server sets Browser,
	// CompileShell, OnShell and Observe.
	Kernel kernel.Options
	// NewClient builds the LLM client once the API key is known.
	NewClient func(apiKey string) (*llm.Client, error)
	// KeyNeeded is false for providers that need no key (scripted, local).
	KeyNeeded bool
	// Provider is the provider name: "anthropic" makes /api/claude a raw
	// passthrough to BaseURL; others answer it through the client.
	Provider string
	BaseURL  string   // Anthropic base URL for the passthrough; default https://api.anthropic.com
	Betas    []string // anthropic-beta values the passthrough adds
	// MCP turns on the MCP endpoint over the instance's blocks at /mcp
	// (package endpoint); webhooks (/hooks/NAME) are always served.
	MCP bool
	// NoWake stops this server from running the wake triggers (another
	// process runs them, e.g. hermitcrab wake --daemon).
	NoWake bool
	// Demo says the instance is a demo on a scripted model: the page
	// shows a banner saying so in the kernel's strip, above the shell.
	Demo bool
	Log  *slog.Logger
}

// browserTimeout bounds a browser tool call (listen and fs_pick_directory
// wait for a person, so they get 3 minutes).
const browserTimeout = 60 * time.Second

// Server is a running web shell.
type Server struct {
	cfg       Config
	guardHost *httpguard.Guard
	kernel    *kernel.Kernel
	hub       *hub
	relay     *relay
	outside   *endpoint.Handler // /hooks/NAME and /mcp
	csrf      string
	token     string
	log       *slog.Logger
	booting   atomic.Bool
	ctx       context.Context // ends when the server stops: boots run under it
	grace     time.Duration   // shutdownGrace unless a test sets it

	keyMu  sync.Mutex
	apiKey string // the key in use; what the /api/claude passthrough sends; never leaves the server
	// keyFrom says where apiKey came from: secrets.FromEnvironment (at
	// start), secrets.FromStored (the data directory's key file, given
	// through the page or `hermitcrab key set`), or "" for none.
	keyFrom string
}

// New opens the kernel in cfg.DataDir and prepares the server.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8420"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.anthropic.com"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := checkToken(cfg.Token, loopback(cfg.Addr)); err != nil {
		return nil, err
	}
	guard, err := httpguard.New(httpguard.Options{Addr: cfg.Addr, AllowHosts: cfg.AllowHosts,
		BodyLimit: func(r *http.Request) int64 {
			if endpoint.Owns(r.URL.Path) {
				return endpoint.BodyLimit(r.URL.Path)
			}
			return bodyLimit(r.URL.Path)
		}})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, guardHost: guard, hub: newHub(), csrf: randomToken(), token: cfg.Token, log: cfg.Log, ctx: ctx}
	if !loopback(cfg.Addr) && s.token == "" {
		s.token = randomToken()
	}
	s.relay = &relay{hub: s.hub, timeout: browserTimeout, pending: map[string]chan browserResult{}}
	opts := cfg.Kernel
	if opts.Log == nil {
		opts.Log = cfg.Log // one line per LLM call, among the server's own
	}
	opts.Browser = s.relay
	opts.CompileShell = func(_ context.Context, source string) error {
		_, err := compileShell(source)
		return err
	}
	opts.OnShell = s.pushShell
	opts.Observe = s.progress
	opts.OnWake = s.pushWake
	k, err := kernel.Open(cfg.DataDir, opts)
	if err != nil {
		return nil, err
	}
	s.kernel = k
	if err := k.Ready(ctx); err != nil {
		return nil, errors.Join(err, k.Close())
	}
	if err := s.startKey(); err != nil {
		return nil, errors.Join(err, k.Close())
	}
	if s.outside, err = endpoint.New(k, cfg.MCP, cfg.Log); err != nil {
		return nil, errors.Join(err, k.Close())
	}
	return s, nil
}

// Close closes the kernel.
func (s *Server) Close() error { return s.kernel.Close() }

// Kernel is the server's kernel.
func (s *Server) Kernel() *kernel.Kernel { return s.kernel }

// Token is the access token requests must carry, "" on loopback without one.
func (s *Server) Token() string { return s.token }

// URL is the address to open in a browser, with the token when one is needed.
func (s *Server) URL(addr string) string {
	u := "http://" + addr + "/"
	if s.token != "" {
		u += "?token=" + s.token
	}
	return u
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// minToken is the shortest access token taken off loopback: it guards a server whose
// shell is trusted and whose passthrough spends the key, so it must not
// be guessable (the generated one has 32 hex digits).
const minToken = 16

// checkToken refuses an access token given that the printed URL cannot
// carry as it is (anything but letters, digits and -._~), anywhere, and
// off loopback one that guards nothing (too short to resist guessing): on
// loopback only this machine's users reach the server, and a short token
// is the person's choice. The error never repeats it.
func checkToken(token string, onLoopback bool) error {
	if token == "" {
		return nil // one is generated off loopback
	}
	for _, c := range token {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
			return option.Errorf("token", "is to hold letters, digits and -._~ only (it travels in the printed URL), or leave it out for a generated one")
		}
	}
	if len(token) < minToken && !onLoopback {
		return option.Errorf("token", "is %d characters long, short enough to guess: give at least %d, or leave it out for a generated one", len(token), minToken)
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startKey uses the key the kernel decides on for a provider that needs
// one (Secrets().APIKey: the environment's, else the stored one).
func (s *Server) startKey() error {
	if !s.cfg.KeyNeeded {
		return s.useKey("", "")
	}
	key, from, err := s.kernel.Secrets().APIKey()
	if err != nil || key == "" {
		return err
	}
	return s.useKey(key, from)
}

// syncKey follows the stored key: unless the environment's key is in use,
// a key stored or removed since (by the page or `hermitcrab key set|clear`
// in another terminal) takes effect on the next request.
func (s *Server) syncKey() error {
	s.keyMu.Lock()
	from, current := s.keyFrom, s.apiKey
	s.keyMu.Unlock()
	if from == secrets.FromEnvironment || !s.cfg.KeyNeeded {
		return nil
	}
	stored, err := s.kernel.Secrets().StoredKey()
	if err != nil || (stored == current && (stored != "") == (from == secrets.FromStored)) {
		return err
	}
	if stored == "" {
		s.dropKey()
		return nil
	}
	return s.useKey(stored, secrets.FromStored)
}

// useKey builds the client with the key.
func (s *Server) useKey(key, from string) error {
	client, err := s.cfg.NewClient(key)
	if err != nil {
		return err
	}
	client.Observe = s.progress
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	s.kernel.Conversation().SetClient(client)
	s.apiKey, s.keyFrom = key, from
	return nil
}

// dropKey stops using any key: calls fail with "no API key" until one is given.
func (s *Server) dropKey() {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	s.kernel.Conversation().SetClient(nil)
	s.apiKey, s.keyFrom = "", ""
}

// hasKey says whether calls can be made: a key is in use, or the provider
// needs none.
func (s *Server) hasKey() bool {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	return s.kernel.Conversation().Client() != nil
}

func (s *Server) passKey() string {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	return s.apiKey
}

// progress sends an LLM or tool event to the page as a status line.
func (s *Server) progress(e llm.Event) {
	if line, level, ok := conversation.Describe(e); ok {
		s.hub.send(event{"type": "status", "text": line, "level": level})
	}
}

// pushShell compiles a new shell and sends it to the page.
func (s *Server) pushShell(sh shells.Shell) {
	code, err := compileShell(sh.Source)
	if err != nil {
		s.log.Warn("a stored shell does not compile", "shell", sh.ID, "err", err)
		return
	}
	s.hub.send(event{"type": "shell", "id": sh.ID, "code": code, "source": sh.Source})
}

// pushWake tells the page of a wake a trigger fired.
func (s *Server) pushWake(w wakes.Wake) {
	s.hub.send(event{"type": "wake", "wake": w})
}

// Handler is the server's HTTP handler. Webhooks and the MCP endpoint
// (package endpoint) carry their own credentials, not the page's: they
// pass the Host rule and the body limits, then go to their handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	page := s.guard(mux)
	return s.guardHost.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if endpoint.Owns(r.URL.Path) {
			s.outside.ServeHTTP(w, r)
			return
		}
		page.ServeHTTP(w, r)
	}))
}

// guard checks the access token (off loopback), refuses any request that
// carries a foreign Origin (a page of another site: its fetches, forms,
// beacons and event streams), and for every request that is not a GET the
// Origin and the CSRF token. The Host rule and the body limits come before
// it (httpguard). Every answer forbids framing (so no other site can lay
// the page under its own and steer a person's clicks) and sending the URL,
// which may carry the access token, as a Referer.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		if s.token != "" && !s.tokenOK(w, r) {
			writeError(w, http.StatusUnauthorized, errors.New("this server needs its access token: open the URL it printed (…/?token=…)"))
			return
		}
		origin := r.Header.Get("Origin")
		if origin != "" && !sameOrigin(origin, r.Host) {
			writeError(w, http.StatusForbidden, fmt.Errorf("origin %q is not this server's (http://%s)", origin, r.Host))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if origin == "" {
				writeError(w, http.StatusForbidden, fmt.Errorf("a request without an Origin header changes nothing here: send Origin: http://%s", r.Host))
				return
			}
			if !equal(r.Header.Get("X-CSRF-Token"), s.csrf) {
				writeError(w, http.StatusForbidden, errors.New("missing or wrong X-CSRF-Token: reload the page"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin says whether a browser's Origin is this server's: its Host
// (already checked by the Host rule) over http, or over https when a TLS
// reverse proxy given with --allow-host stands in front.
func sameOrigin(origin, host string) bool {
	return strings.EqualFold(origin, "http://"+host) || strings.EqualFold(origin, "https://"+host)
}

// tokenOK accepts the token from the cookie, a header or the query; the
// query form sets the cookie so the page's own requests carry it.
func (s *Server) tokenOK(w http.ResponseWriter, r *http.Request) bool {
	if c, err := r.Cookie("hc_token"); err == nil && equal(c.Value, s.token) {
		return true
	}
	if equal(r.Header.Get("X-HC-Token"), s.token) {
		return true
	}
	if equal(r.URL.Query().Get("token"), s.token) {
		http.SetCookie(w, &http.Cookie{Name: "hc_token", Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// bodyLimit: calls to the LLM take what the Messages API itself takes
// (32 MB: images and PDFs), so the shell is never refused a request the API
// would accept; imports and saved conversations (which keep a long chat
// whole) get 16 MiB; everything else 1 MiB.
func bodyLimit(path string) int64 {
	switch {
	case path == "/api/claude", path == "/api/toolloop", path == "/api/call":
		return 32 << 20
	case path == "/api/import", strings.HasPrefix(path, "/api/conversation/"):
		return 16 << 20
	}
	return 1 << 20
}

// writeJSON answers with v as JSON (blocks hold JSX: <, > and & unescaped).
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := plainjson.Marshal(v)
	if err != nil { // a value the server built would not encode: say so, not a half body
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A failed write means the client has gone; there is no one left to tell.
	_, _ = w.Write(append(data, '\n'))
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// readJSON decodes a request body; a body over the limit says so.
func readJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("request body over %d bytes", tooBig.Limit)
		}
		return fmt.Errorf("request body is not the expected JSON: %w", err)
	}
	return nil
}

// shutdownGrace is how long requests in flight get to finish when the
// server stops; requests still running then (an LLM call can take
// minutes) are cancelled, answer with their error and end.
const shutdownGrace = 5 * time.Second

// connsPerClient caps the connections one client (an IP, an IPv6 /64) may
// hold open off loopback, where anyone on the network can connect before
// the access token is checked: a browser needs a handful.
const connsPerClient = 32

// ListenAndServe serves until ctx ends, printing the URL to open. A
// connection idle for two minutes is closed, and off loopback one client
// holds at most connsPerClient connections, so clients that open
// connections and leave them (slowloris) cost little.
func (s *Server) ListenAndServe(ctx context.Context, ready func(url string)) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.cfg.Addr, err)
	}
	if !loopback(s.cfg.Addr) {
		ln = httpguard.LimitConns(ln, connsPerClient)
	}
	requests, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return requests }}
	if ready != nil {
		ready(s.URL(ln.Addr().String()))
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	running := make(chan struct{})
	wctx, stopWakes := context.WithCancel(ctx)
	defer func() { stopWakes(); <-running }() // the store stays open until the runner is done
	go func() {
		defer close(running)
		if s.cfg.NoWake {
			return
		}
		s.kernel.Wakes().Run(wctx, 0, func(r *wakes.Report, err error) {
			if err != nil {
				s.log.Warn("wake triggers", "err", err)
				return
			}
			for _, e := range r.Errors {
				s.log.Warn("wake trigger", "err", e)
			}
		})
	}()
	select {
	case <-ctx.Done():
		s.hub.close()
		grace := s.grace
		if grace <= 0 {
			grace = shutdownGrace
		}
		shut, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := srv.Shutdown(shut); !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		s.log.Warn("requests still running when the server stopped were cancelled", "after", grace)
		cancelRequests()
		done, cancelDone := context.WithTimeout(context.Background(), grace)
		defer cancelDone()
		if err := srv.Shutdown(done); err != nil {
			// Connections that never sent a request, or a handler that
			// ignores its cancellation: the server stops all the same.
			s.log.Warn("connections still open when the server stopped were closed", "err", err)
			return srv.Close()
		}
		return nil
	case err := <-errc:
		return err
	}
}
