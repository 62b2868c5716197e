// Package server is the beach: an HTTP API and an MCP endpoint (streamable
// HTTP, the official Go SDK) over one set of operations on a beach store.
//
// Every write, and the two private reads (inbox, save point), is a signed
// identity.Envelope, accepted only when, in this order: it verifies
// (beach.Open); its signed time is within Config.Window of the beach's
// clock; a private read names this beach as its audience; its nonce is new
// for its agent (asked before the rate limit, so a stranger replaying an
// agent's envelopes cannot spend its allowance); the agent is within its
// rate limit; and the store records the nonce in the write's transaction,
// refusing one used meanwhile or signed before the horizon of pruned
// nonces. Reads of passports and marks are open to anyone.
//
// In front of everything: httpguard's Host rule and body limits, then a
// per-address rate limit on every request (each call of an MCP batch
// counted). Refusals are JSON {"error", "reason"} with the status the
// reason implies. See docs/hermitcrab-network.md (the beach, its refusals
// and limits).
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/beach"
	"github.com/llmkernels/kernels/hermitcrab/beach/store"
	"github.com/llmkernels/kernels/hermitcrab/identity"
	"github.com/llmkernels/kernels/internal/httpguard"
)

// Defaults for Config's zero values.
const (
	DefaultWindow        = 5 * time.Minute
	DefaultAgentPerMin   = 120
	DefaultAgentBurst    = 60
	DefaultAddrPerMin    = 1200
	DefaultAddrBurst     = 300
	DefaultMaxBody       = 256 << 10
	DefaultSavePointBody = 12 << 20
	DefaultInboxLimit    = 100
	maxListLimit         = 500
	// MaxLargeBodies is how many requests with a body over MaxBody (save
	// point uploads, large MCP calls) are read at once; reading and
	// checking a 12 MiB one costs ~80 MB before its signature can be
	// refused. Another gets 503 with Retry-After.
	MaxLargeBodies = 4
)

// Config configures a beach server.
type Config struct {
	Store *store.Store
	// Addr is the address the server listens on; with AllowHosts it makes
	// the Host rule (httpguard) and the accepted audiences.
	Addr       string
	AllowHosts []string
	// Window is how far a signed time may be from the beach's clock.
	Window time.Duration
	// AgentPerMinute and AgentBurst limit each agent's signed requests;
	// AddrPerMinute and AddrBurst every request per remote address (an IPv4
	// address or an IPv6 /64; behind a reverse proxy that is the proxy:
	// raise or disable it there), and ListenAndServe lets one address hold
	// at most AddrBurst connections open. A negative rate disables the
	// limit.
	AgentPerMinute float64
	AgentBurst     int
	AddrPerMinute  float64
	AddrBurst      int
	// MaxBody limits request bodies; save point uploads and the MCP
	// endpoint get MaxSavePointBody.
	MaxBody          int64
	MaxSavePointBody int64
	Log              *slog.Logger
}

// Server is a beach.
type Server struct {
	cfg    Config
	store  *store.Store
	guard  *httpguard.Guard
	agents *limiter
	addrs  *limiter
	now    func() time.Time
	log    *slog.Logger
}

// New makes a beach server on a store.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("beach server: no store")
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.AgentPerMinute, DefaultAgentPerMin)
	def(&cfg.AddrPerMinute, DefaultAddrPerMin)
	if cfg.AgentBurst == 0 {
		cfg.AgentBurst = DefaultAgentBurst
	}
	if cfg.AddrBurst == 0 {
		cfg.AddrBurst = DefaultAddrBurst
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxSavePointBody == 0 {
		cfg.MaxSavePointBody = DefaultSavePointBody
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	big := cfg.MaxSavePointBody
	guard, err := httpguard.New(httpguard.Options{Addr: cfg.Addr, AllowHosts: cfg.AllowHosts, MaxBody: cfg.MaxBody, MaxLarge: MaxLargeBodies,
		BodyLimit: func(r *http.Request) int64 {
			if r.URL.Path == "/v1/savepoints" || r.URL.Path == "/mcp" {
				return big
			}
			return 0
		}})
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, store: cfg.Store, guard: guard, now: time.Now, log: cfg.Log,
		agents: newLimiter(cfg.AgentPerMinute, cfg.AgentBurst), addrs: newLimiter(cfg.AddrPerMinute, cfg.AddrBurst)}, nil
}

// Info describes the beach to clients.
type Info struct {
	Service    string         `json:"service"`
	Protocol   string         `json:"protocol"`
	Database   string         `json:"database"`
	Window     string         `json:"replay_window"`
	AgentLimit string         `json:"agent_rate_limit"`
	Limits     map[string]int `json:"limits"`
}

// Info is the beach's description.
func (s *Server) Info() Info {
	limit := "none"
	if s.agents != nil {
		limit = fmt.Sprintf("%g per minute, bursts of %d", s.cfg.AgentPerMinute, s.cfg.AgentBurst)
	}
	return Info{Service: "hermitcrab beach", Protocol: identity.Domain, Database: s.store.Dialect(), Window: s.cfg.Window.String(), AgentLimit: limit,
		Limits: map[string]int{"name": beach.MaxName, "description": beach.MaxDescription, "coordinates": beach.MaxCoordinates,
			"purpose": beach.MaxPurpose, "content": beach.MaxContent, "spindle": beach.MaxSpindle, "savepoint_bytes": beach.MaxSavePoint,
			"body_bytes": int(s.cfg.MaxBody)}}
}

// Ack answers an accepted write.
type Ack struct {
	Agent string `json:"agent"`
	Time  string `json:"time"`
	Nonce string `json:"nonce"`
	ID    int64  `json:"id,omitempty"` // messages
}

// accept runs steps 1-5 of the package doc on an envelope and returns its
// decoded body and the statement to store (whose nonce the store checks).
func accept[T beach.Body](ctx context.Context, s *Server, e *identity.Envelope, kind string) (*T, store.Statement, error) {
	body, t, err := beach.Open[T](e, kind)
	if err != nil {
		return nil, store.Statement{}, err
	}
	now := s.now()
	if err := identity.CheckTime(t, now, s.cfg.Window); err != nil {
		return nil, store.Statement{}, err
	}
	if a, ok := any(body).(interface{ Audience() string }); ok && !s.guard.Allowed(a.Audience()) {
		return nil, store.Statement{}, &apiError{http.StatusForbidden, "wrong_beach",
			fmt.Sprintf("this %s is addressed to the beach at %q, not to this one", kind, a.Audience()), 0}
	}
	// A replay is refused before it can spend the agent's allowance:
	// anyone can read an agent's passport and marks and post them again.
	if used, err := s.store.NonceUsed(ctx, e.Agent, e.Nonce); err != nil {
		return nil, store.Statement{}, err
	} else if used {
		return nil, store.Statement{}, store.ErrReplay
	}
	if ok, wait := s.agents.allow(e.Agent, now); !ok {
		return nil, store.Statement{}, &apiError{http.StatusTooManyRequests, "rate_limited",
			fmt.Sprintf("agent %s is over %g signed requests a minute; retry in %s", e.Agent, s.cfg.AgentPerMinute, wait.Round(time.Millisecond)), wait}
	}
	// Keep the envelope as signed: its body in canonical form (the bytes
	// the signature covers), written without HTML escapes.
	signed := *e
	if signed.Body, err = identity.Canonical(e.Body); err != nil {
		return nil, store.Statement{}, err
	}
	var canon bytes.Buffer
	enc := json.NewEncoder(&canon)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&signed); err != nil {
		return nil, store.Statement{}, err
	}
	return body, store.Statement{Agent: e.Agent, Time: t, Nonce: e.Nonce, Envelope: bytes.TrimSuffix(canon.Bytes(), []byte("\n"))}, nil
}

// PublishPassport stores a signed passport.
func (s *Server) PublishPassport(ctx context.Context, e *identity.Envelope) (*Ack, error) {
	p, st, err := accept[beach.Passport](ctx, s, e, beach.KindPassport)
	if err != nil {
		return nil, err
	}
	if err := s.store.PutPassport(ctx, st, p.Name); err != nil {
		return nil, err
	}
	return ack(e, 0), nil
}

// Passport reads an agent's passport.
func (s *Server) Passport(ctx context.Context, agent string) (*store.Stored, error) {
	if _, err := identity.ParseAgent(agent); err != nil {
		return nil, &apiError{http.StatusBadRequest, identity.ReasonBadAgent, err.Error(), 0}
	}
	return s.store.Passport(ctx, agent)
}

// Passports lists the passports published most recently.
func (s *Server) Passports(ctx context.Context, limit int) ([]store.Stored, error) {
	return s.store.Passports(ctx, clampLimit(limit, 100))
}

// Mark stores a signed mark.
func (s *Server) Mark(ctx context.Context, e *identity.Envelope) (*Ack, error) {
	m, st, err := accept[beach.Mark](ctx, s, e, beach.KindMark)
	if err != nil {
		return nil, err
	}
	if err := s.store.PutMark(ctx, st, m.URLHash); err != nil {
		return nil, err
	}
	return ack(e, 0), nil
}

// Marks lists the latest marks on a URL; give the URL or its hash.
func (s *Server) Marks(ctx context.Context, url, urlHash string, limit int) (string, []store.Stored, error) {
	if urlHash == "" {
		if url == "" {
			return "", nil, &apiError{http.StatusBadRequest, identity.ReasonMalformed, "give url or url_hash", 0}
		}
		urlHash = beach.URLHash(url)
	}
	if !beach.ValidURLHash(urlHash) {
		return "", nil, &apiError{http.StatusBadRequest, identity.ReasonMalformed, fmt.Sprintf("url_hash %q: want 16 lower-case hex digits", urlHash), 0}
	}
	marks, err := s.store.Marks(ctx, urlHash, clampLimit(limit, 50))
	return urlHash, marks, err
}

// Send stores a signed message for its recipient.
func (s *Server) Send(ctx context.Context, e *identity.Envelope) (*Ack, error) {
	m, st, err := accept[beach.Message](ctx, s, e, beach.KindMessage)
	if err != nil {
		return nil, err
	}
	id, err := s.store.PutMessage(ctx, st, m.To, m.Type)
	if err != nil {
		return nil, err
	}
	return ack(e, id), nil
}

// Inbox returns the signer's unread messages (oldest first, at most limit)
// and marks them read; with the check's After, its messages above that id,
// read or not.
func (s *Server) Inbox(ctx context.Context, e *identity.Envelope, limit int) ([]store.Stored, error) {
	check, st, err := accept[beach.InboxCheck](ctx, s, e, beach.KindInboxCheck)
	if err != nil {
		return nil, err
	}
	after := store.Unread
	if check.After != nil {
		after = *check.After
	}
	return s.store.TakeInbox(ctx, st, after, clampLimit(limit, DefaultInboxLimit))
}

// PutSavePoint stores a signed, encrypted save point.
func (s *Server) PutSavePoint(ctx context.Context, e *identity.Envelope) (*Ack, error) {
	_, st, err := accept[beach.SavePoint](ctx, s, e, beach.KindSavePoint)
	if err != nil {
		return nil, err
	}
	if err := s.store.PutSavePoint(ctx, st); err != nil {
		return nil, err
	}
	return ack(e, 0), nil
}

// SavePoint returns the signer's save point.
func (s *Server) SavePoint(ctx context.Context, e *identity.Envelope) (*store.Stored, error) {
	_, st, err := accept[beach.Audience](ctx, s, e, beach.KindSavePointGet)
	if err != nil {
		return nil, err
	}
	sp, err := s.store.TakeSavePoint(ctx, st)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("this beach holds no save point of %s (save one with hermitcrab beach save)", e.Agent), 0}
	}
	return sp, err
}

// PruneNonces forgets nonces too old to be replayed (signed more than a
// window ago, plus a minute of margin).
func (s *Server) PruneNonces(ctx context.Context) (int64, error) {
	return s.store.PruneNonces(ctx, s.now().Add(-s.cfg.Window-time.Minute))
}

func ack(e *identity.Envelope, id int64) *Ack {
	return &Ack{Agent: e.Agent, Time: e.Time, Nonce: e.Nonce, ID: id}
}

func clampLimit(n, def int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxListLimit)
}

// apiError is a refusal with its HTTP status.
type apiError struct {
	status     int
	reason     string
	msg        string
	retryAfter time.Duration
}

func (e *apiError) Error() string { return "refused (" + e.reason + "): " + e.msg }

// classify turns any error from an operation into status, reason and a
// message fit to send back (internal errors are logged, not sent).
func (s *Server) classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if r, ok := identity.AsRefusal(err); ok {
		status := http.StatusBadRequest
		switch r.Reason {
		case identity.ReasonSignature, identity.ReasonStale:
			status = http.StatusUnauthorized
		}
		return &apiError{status, r.Reason, r.Detail, 0}
	}
	switch {
	case errors.Is(err, store.ErrReplay):
		return &apiError{http.StatusConflict, identity.ReasonReplay, "this envelope's nonce was already used by its agent: a replay (sign a new envelope to say it again)", 0}
	case errors.Is(err, store.ErrForgotten):
		return &apiError{http.StatusUnauthorized, identity.ReasonStale, "signed before this beach's replay memory begins (nonces signed that early are forgotten, so it cannot tell a replay): sign it again", 0}
	case errors.Is(err, store.ErrStale):
		return &apiError{http.StatusConflict, "superseded", "the beach holds one signed at the same time or later", 0}
	case errors.Is(err, store.ErrNotFound):
		return &apiError{http.StatusNotFound, "not_found", err.Error(), 0}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{http.StatusServiceUnavailable, "canceled", "the request was canceled", 0}
	}
	s.log.Error("beach operation failed", "err", err)
	return &apiError{http.StatusInternalServerError, "internal", "the beach failed to do this; its log says why", 0}
}
