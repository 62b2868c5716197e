// Package httpguard is the first handler of every HTTP server in the
// project: it refuses a request whose Host header is not a name the server
// is reachable by, and caps request bodies, before any handler runs.
//
// The Host rule stops DNS rebinding: a page on an attacker's domain can
// make that domain resolve to 127.0.0.1 and then talk to a loopback server
// with the browser's blessing (same origin, Origin checks pass, a CSRF token
// fetched from the server is readable). What it cannot change is the Host
// header, which carries the attacker's name. So a request is served only
// when its Host (port ignored, case ignored, a trailing dot ignored) is one
// of:
//   - a loopback name: localhost, or a loopback IP (127.0.0.0/8, ::1);
//   - the host of the bound address (Options.Addr); when that is an
//     unspecified address (0.0.0.0, ::, or empty), any IP address of this
//     machine's interfaces, read once when the guard is made;
//   - a name in Options.AllowHosts: an exact name ("beach.example.org"), a
//     subdomain pattern ("*.example.org", which does not match the bare
//     domain), or an IP. Servers expose these as a repeatable --allow-host
//     flag, for a reverse proxy or a DNS name.
//
// Everything else, a missing Host included, gets 421 Misdirected Request
// with a JSON body {"error": "..."} that names the flag to use.
//
// Connections: LimitConns caps the connections one client (an IPv4
// address, an IPv6 /64) may hold open, which no per-request limit can do
// against a client that never finishes a request (slowloris).
//
// Bodies: a request whose Content-Length is over its limit is refused with
// 413 at once ({"error": "...", "reason": "too_large"}); with Options.MaxLarge, only that many bodies larger than
// MaxBody are read at once (503 and Retry-After for another); any other body is wrapped in http.MaxBytesReader, so a
// handler reading past the limit gets an *http.MaxBytesError (TooLarge
// recognises it) and the connection is closed after the response.
package httpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/internal/option"
)

// DefaultMaxBody is the body limit when Options leaves it 0: 1 MiB.
const DefaultMaxBody = 1 << 20

// Options configure a Guard.
type Options struct {
	// Addr is the address the server listens on (host:port or host).
	Addr string
	// AllowHosts are further names the server is reachable by.
	AllowHosts []string
	// MaxBody is the body limit in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	// BodyLimit, when set, gives a request's limit instead of MaxBody (for
	// routes that take uploads); it returns 0 to use MaxBody.
	BodyLimit func(*http.Request) int64
	// MaxLarge, when over 0, is how many requests whose body may be larger
	// than MaxBody (a larger BodyLimit, and a Content-Length over MaxBody
	// or none) are served at once; another is refused with 503 and a
	// Retry-After. Reading and decoding large bodies costs memory before a
	// handler can refuse them; this bounds how much at once.
	MaxLarge int
}

// Guard is the Host rule and the body limit. It is safe for concurrent use.
type Guard struct {
	exact    map[string]bool
	suffixes []string // ".example.org" for "*.example.org"
	maxBody  int64
	limit    func(*http.Request) int64
	large    chan struct{} // a slot per large body being served; nil: no cap
}

// New makes a guard. It fails on an allowed name that is not a host name or
// an IP, so a typo in a flag is caught at start-up: an option.Error for
// "allow_host", which a command reports as its flag.
func New(opts Options) (*Guard, error) {
	g := &Guard{exact: map[string]bool{"localhost": true}, maxBody: opts.MaxBody, limit: opts.BodyLimit}
	if g.maxBody == 0 {
		g.maxBody = DefaultMaxBody
	}
	if g.maxBody < 0 {
		return nil, fmt.Errorf("httpguard: body limit %d: want a positive number of bytes", opts.MaxBody)
	}
	if opts.MaxLarge > 0 {
		g.large = make(chan struct{}, opts.MaxLarge)
	}
	host := opts.Addr
	if h, _, err := net.SplitHostPort(opts.Addr); err == nil {
		host = h
	}
	host = normalize(host)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, fmt.Errorf("httpguard: listing this machine's addresses for %q: %w", opts.Addr, err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				g.exact[n.IP.String()] = true
			}
		}
	} else {
		g.exact[canonicalIP(host)] = true
	}
	for _, name := range opts.AllowHosts {
		n := normalize(strings.TrimSpace(name))
		if h, _, err := net.SplitHostPort(n); err == nil && !strings.Contains(n, "/") {
			n = h // a port is ignored; "http://name" is no host:port
		}
		switch {
		case strings.HasPrefix(n, "*.") && validName(n[2:]):
			g.suffixes = append(g.suffixes, n[1:])
		case net.ParseIP(n) != nil:
			g.exact[canonicalIP(n)] = true
		case validName(n):
			g.exact[n] = true
		default:
			return nil, option.Errorf("allow_host", "%q: give a host name, *.domain or an IP address, alone (no scheme or path)", name)
		}
	}
	return g, nil
}

// Allowed reports whether a Host header value names this server.
func (g *Guard) Allowed(hostHeader string) bool {
	h := hostHeader
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = normalize(h)
	if h == "" {
		return false
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || g.exact[ip.String()]
	}
	if g.exact[h] {
		return true
	}
	for _, s := range g.suffixes {
		if strings.HasSuffix(h, s) && validName(h) {
			return true
		}
	}
	return false
}

// Handler wraps next with the Host rule and the body limit.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Allowed(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, "", fmt.Sprintf("host %q is not a name this server answers to; if it is yours, start the server allowing the host name %s (its --help says how)", clip.Text(r.Host, 100), clip.Text(hostOnly(r.Host), 100)))
			return
		}
		limit := g.maxBody
		if g.limit != nil {
			if l := g.limit(r); l > 0 {
				limit = l
			}
		}
		if r.ContentLength > limit {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestEntityTooLarge, ReasonTooLarge, fmt.Sprintf("request body of %d bytes is over this route's limit of %d bytes", r.ContentLength, limit))
			return
		}
		if g.large != nil && limit > g.maxBody && (r.ContentLength > g.maxBody || r.ContentLength < 0) {
			select {
			case g.large <- struct{}{}:
				defer func() { <-g.large }()
			default:
				w.Header().Set("Retry-After", "5")
				w.Header().Set("Connection", "close")
				writeError(w, http.StatusServiceUnavailable, "", fmt.Sprintf("%d large uploads are being read already; retry in a few seconds", cap(g.large)))
				return
			}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next.ServeHTTP(w, r)
	})
}

// ClientKey names the client a remote address ("host:port") belongs to,
// for per-client limits: the IP for IPv4, the /64 network for IPv6 (one
// host is routinely given a whole /64, so keying by full address would
// give it 2^64 allowances).
func ClientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() != nil {
		return ip.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// LimitConns wraps a listener so that one client (ClientKey) holds at most
// perClient open connections; a connection over that is closed as soon as
// it is accepted. A server's rate limits see requests, and a slowloris
// client never finishes one: it opens connections, sends half a header,
// and holds a socket and a goroutine each until the header timeout, as
// many as it likes. perClient <= 0 means no limit.
func LimitConns(ln net.Listener, perClient int) net.Listener {
	if perClient <= 0 {
		return ln
	}
	return &connLimiter{Listener: ln, max: perClient, open: map[string]int{}}
}

type connLimiter struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := ClientKey(c.RemoteAddr().String())
		l.mu.Lock()
		full := l.open[key] >= l.max
		if !full {
			l.open[key]++
		}
		l.mu.Unlock()
		if full {
			_ = c.Close() // refused: the client only sees the connection end
			continue
		}
		return &limitedConn{Conn: c, release: func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[key]--; l.open[key] <= 0 {
				delete(l.open, key)
			}
		}}, nil
	}
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// TooLarge reports whether err (from reading a guarded body) is the body
// limit, and the limit.
func TooLarge(err error) (int64, bool) {
	var e *http.MaxBytesError
	if errors.As(err, &e) {
		return e.Limit, true
	}
	return 0, false
}

// ReasonTooLarge is the "reason" of the 413 the guard answers for a
// Content-Length over the limit, as the beach answers a body cut while
// read, so a client tells them apart from other refusals the same way.
const ReasonTooLarge = "too_large"

// writeError answers {"error": msg}, with "reason" when there is one.
func writeError(w http.ResponseWriter, status int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	body := map[string]string{"error": msg}
	if reason != "" {
		body["reason"] = reason
	}
	_ = json.NewEncoder(w).Encode(body)
}

func normalize(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func canonicalIP(s string) string {
	if ip := net.ParseIP(s); ip != nil {
		return ip.String()
	}
	return s
}

func hostOnly(h string) string {
	if hh, _, err := net.SplitHostPort(h); err == nil {
		return hh
	}
	return h
}

// validName: DNS labels of letters, digits and hyphens (underscores too,
// which some internal names use), 1-63 each, 253 in all.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Serve serves srv on ln until ctx ends, then shuts it down gracefully:
// requests in flight get 5 s to finish. It returns nil after a shutdown
// asked for by ctx, else the error that stopped the server.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shut)
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
