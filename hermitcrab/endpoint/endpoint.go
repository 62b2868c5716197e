// Package endpoint serves what reaches a hermitcrab instance from outside
// its page: webhook posts that wake it (POST /hooks/NAME, for a "webhook
// NAME" trigger at wake 0.5) and, when turned on, an MCP endpoint over its
// own blocks (/mcp: block_list, block_read, block_write, bsp).
//
// `hermitcrab serve` mounts both beside the web shell; `hermitcrab wake
// --daemon --addr ADDR` serves them alone (Server). Either way the Host
// rule of internal/httpguard runs first, and bodies are limited: 64 KiB
// for a webhook post, 1 MiB for an MCP request. A post must prove it knows
// the instance's webhook secret (a bearer token, or an HMAC-SHA256 of its
// body); each hook takes 30 posts a minute, stores each at once (202) and
// keeps at most 100 undelivered. The MCP endpoint needs its own bearer
// token, and its tools call the kernel's block operations, so every rule
// of a block write holds for an MCP client as for the LLM. See
// docs/hermitcrab-network.md (webhooks, the MCP endpoint over the blocks).
package endpoint

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/conversation"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/hermitcrab/wakes"
	"github.com/llmkernels/kernels/internal/httpguard"
	"github.com/llmkernels/kernels/internal/plainjson"
	"github.com/llmkernels/kernels/pscale"
)

// Body limits.
const (
	MaxHookBody = 64 << 10
	MaxMCPBody  = 1 << 20
)

// Per-hook rate: posts a minute, and the burst.
const (
	hookPerMinute = 30
	hookBurst     = 10
)

// Owns reports whether a path is this package's to serve.
func Owns(path string) bool { return strings.HasPrefix(path, "/hooks/") || path == "/mcp" }

// BodyLimit is the body limit of a path Owns, else 0.
func BodyLimit(path string) int64 {
	switch {
	case strings.HasPrefix(path, "/hooks/"):
		return MaxHookBody
	case path == "/mcp":
		return MaxMCPBody
	}
	return 0
}

// Handler serves /hooks/NAME and, when made with MCP, /mcp.
type Handler struct {
	k   *kernel.Kernel
	mcp http.Handler // nil: off
	log *slog.Logger

	mu    sync.Mutex
	hooks map[string]*rate.Limiter
}

// New makes the handler of k's endpoints; withMCP turns on /mcp (making
// its token on first use).
func New(k *kernel.Kernel, withMCP bool, log *slog.Logger) (*Handler, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{k: k, log: log, hooks: map[string]*rate.Limiter{}}
	if withMCP {
		token, err := k.Secrets().MCPToken()
		if err != nil {
			return nil, err
		}
		h.mcp = bearer(token, mcpServer(k))
	}
	// The secret is made now, so the person can read it before the first
	// post (hermitcrab wake hooks).
	if _, err := k.Secrets().WebhookSecret(); err != nil {
		return nil, err
	}
	return h, nil
}

// ServeHTTP routes a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case r.URL.Path == "/mcp" && h.mcp != nil:
		h.mcp.ServeHTTP(w, r)
	case r.URL.Path == "/mcp":
		writeError(w, http.StatusNotFound, "the MCP endpoint is off: this server was started without it")
	case strings.HasPrefix(r.URL.Path, "/hooks/"):
		h.hook(w, r)
	default:
		writeError(w, http.StatusNotFound, "not found")
	}
}

var hookName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (h *Handler) hook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "POST a webhook")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if limit, ok := httpguard.TooLarge(err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a webhook body is at most %d bytes", limit))
			return
		}
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	secret, err := h.k.Secrets().WebhookSecret()
	if err != nil {
		h.log.Warn("webhook secret", "err", err)
		writeError(w, http.StatusInternalServerError, "the webhook secret cannot be read")
		return
	}
	if !authentic(r, body, secret) {
		writeError(w, http.StatusUnauthorized, "webhooks must carry the instance's secret: Authorization: Bearer SECRET, or X-Hub-Signature-256: sha256=HMAC-SHA256(SECRET, body)")
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/hooks/")
	if !hookName.MatchString(name) {
		writeError(w, http.StatusNotFound, "a hook name is 1-64 of A-Z a-z 0-9 _ -")
		return
	}
	if ok, wait := h.allow(name); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("hook %s takes %d posts a minute", name, hookPerMinute))
		return
	}
	id, err := h.k.Wakes().Webhook(r.Context(), name, body)
	switch {
	case errors.Is(err, wakes.ErrNoHook):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		h.log.Warn("webhook", "hook", name, "err", err)
		writeError(w, http.StatusInternalServerError, "storing the post failed")
	default:
		writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "id": id})
	}
}

// authentic checks a post's bearer token or body signature.
func authentic(r *http.Request, body []byte, secret string) bool {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(secret)) == 1
	}
	for _, header := range []string{"X-Hub-Signature-256", "X-Hermitcrab-Signature"} {
		sig, ok := strings.CutPrefix(r.Header.Get(header), "sha256=")
		if !ok {
			continue
		}
		got, err := hex.DecodeString(strings.TrimSpace(sig))
		if err != nil {
			return false
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hmac.Equal(got, mac.Sum(nil))
	}
	return false
}

// allow takes a post from the hook's allowance.
func (h *Handler) allow(name string) (bool, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lim := h.hooks[name]
	if lim == nil {
		lim = rate.NewLimiter(rate.Limit(hookPerMinute/60.0), hookBurst)
		h.hooks[name] = lim
	}
	res := lim.Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return false, d
	}
	return true, 0
}

// bearer lets through only requests carrying the token.
func bearer(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hermitcrab"`)
			writeError(w, http.StatusUnauthorized, "this MCP endpoint needs its token: Authorization: Bearer TOKEN (mcp_token in the instance's data directory)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Arguments of the MCP tools.
type (
	blockArgs struct {
		Name string `json:"name" jsonschema:"the block's name"`
		Path string `json:"path,omitempty" jsonschema:"an address such as 0.12; empty for the whole block"`
	}
	writeArgs struct {
		Name    string `json:"name" jsonschema:"the block's name"`
		Path    string `json:"path" jsonschema:"an address such as 0.12"`
		Content string `json:"content" jsonschema:"the text to write there"`
	}
	bspArgs struct {
		Name    string `json:"name" jsonschema:"the block's name"`
		Spindle string `json:"spindle,omitempty" jsonschema:"an address such as 0.12"`
		Point   *int   `json:"point,omitempty" jsonschema:"a pscale: the point on the spindle, the disc, or how deep dir lists"`
		Mode    string `json:"mode,omitempty" jsonschema:"block, spindle, point, ring, dir, disc or star; without it what is given decides"`
	}
)

func mcpServer(k *kernel.Kernel) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hermitcrab-blocks", Version: "1"}, &mcp.ServerOptions{
		Instructions: "A hermitcrab instance's own pscale blocks: its memory, purpose and wake block. Read with block_list, block_read and bsp; block_write changes what the instance sees on its next call.",
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "block_list", Description: "Every block's name and pscale-0 text."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			list, err := k.Blocks().List(ctx)
			return nil, map[string]any{"blocks": list}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "block_read", Description: "A block whole, or the node at path with its children's texts."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a blockArgs) (*mcp.CallToolResult, any, error) {
			if a.Path == "" {
				b, err := k.Blocks().Raw(ctx, a.Name)
				if err != nil {
					return nil, nil, err
				}
				return text(string(b.Data)), nil, nil
			}
			addr, err := blocks.ParseAddress("path", a.Path)
			if err != nil {
				return nil, nil, err
			}
			view, err := k.Blocks().ReadNode(ctx, a.Name, addr)
			return nil, view, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "block_write", Description: "Write text at path in a block, creating nodes on the way; a branch keeps its children."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, any, error) {
			addr, err := blocks.ParseAddress("path", a.Path)
			if err != nil {
				return nil, nil, err
			}
			v, err := k.Blocks().WriteAt(ctx, a.Name, addr, a.Content)
			return nil, map[string]any{"block": a.Name, "path": a.Path, "version": v}, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "bsp", Description: conversation.BSPDescription},
		func(ctx context.Context, _ *mcp.CallToolRequest, a bspArgs) (*mcp.CallToolResult, any, error) {
			var point any
			if a.Point != nil {
				point = *a.Point
			}
			q, err := pscale.ParseQuery(a.Mode, a.Spindle, point)
			if err != nil {
				return nil, nil, err
			}
			r, err := k.Blocks().BSP(ctx, a.Name, q)
			return nil, r, err
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true,
		// The Host rule in front (httpguard) refuses foreign names and lets
		// through the --allow-host names the SDK's own check would refuse.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxMCPBody,
	})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := plainjson.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n')) // a failed write means the client has gone
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// Server serves the endpoints alone (hermitcrab wake --daemon --addr).
type Server struct {
	Addr       string
	AllowHosts []string
	Handler    *Handler
}

// ListenAndServe serves until ctx ends, behind the Host rule and the body
// limits, with the timeouts every server of the project has.
func (s *Server) ListenAndServe(ctx context.Context, ready func(url string)) error {
	guard, err := httpguard.New(httpguard.Options{Addr: s.Addr, AllowHosts: s.AllowHosts, BodyLimit: func(r *http.Request) int64 { return BodyLimit(r.URL.Path) }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.Addr, err)
	}
	ln = httpguard.LimitConns(ln, 64)
	srv := &http.Server{Handler: guard.Handler(s.Handler), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	if ready != nil {
		ready("http://" + ln.Addr().String())
	}
	return httpguard.Serve(ctx, srv, ln)
}
