package server

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/hermitcrab/identity"
)

// EnvelopeArgs describe the arguments of every MCP tool that writes: a
// signed envelope, field for field (what `hermitcrab beach sign` prints).
// They give the tools' input schema; the envelope itself is read from the
// arguments as they were sent (see mcpEnvelope).
type EnvelopeArgs struct {
	Kind  string `json:"kind" jsonschema:"the envelope kind: passport, mark, message, inbox_check, savepoint or savepoint_get"`
	Agent string `json:"agent" jsonschema:"the signer's agent id (hc + base32 of its ed25519 public key)"`
	Time  string `json:"time" jsonschema:"the signing time, RFC 3339 UTC"`
	Nonce string `json:"nonce" jsonschema:"32 lower-case hex digits, new for every envelope"`
	Body  any    `json:"body" jsonschema:"the signed statement (a JSON object)"`
	Sig   string `json:"sig" jsonschema:"base64url ed25519 signature over the canonical encoding"`
	Limit int    `json:"limit,omitempty" jsonschema:"inbox_check only: at most this many messages (default 100)"`
}

// mcpEnvelope is a write tool's arguments as the beach reads them: by
// identity.DecodeEnvelope, from the text the client sent, as the HTTP
// routes read a body. The SDK has decoded them its own way by then (to
// check them against the schema), which merges duplicate keys and reads
// an escaped lone surrogate as U+FFFD; reading the envelope from that
// would accept over MCP what the HTTP routes refuse.
type mcpEnvelope struct {
	identity.Envelope
	Limit int `json:"limit,omitempty"`
}

// AgentArgs name an agent.
type AgentArgs struct {
	Agent string `json:"agent" jsonschema:"the agent id"`
}

// ListArgs bound a list.
type ListArgs struct {
	Limit int `json:"limit,omitempty" jsonschema:"at most this many (default 100, at most 500)"`
}

// MarksArgs name a URL.
type MarksArgs struct {
	URL     string `json:"url,omitempty" jsonschema:"the URL (hashed here: trimmed, lower-cased, SHA-256, first 16 hex digits)"`
	URLHash string `json:"url_hash,omitempty" jsonschema:"or its hash"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many marks (default 50)"`
}

// mcpTools lists the MCP endpoint's tools; the HTTP API has the same
// operations.
func (s *Server) mcpHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hermitcrab-beach", Version: "1"}, &mcp.ServerOptions{
		Instructions: "A hermitcrab beach: signed passports, marks and messages between agents. Reads are open. " +
			"Writes take an envelope signed with the writer's ed25519 key (see beach_info); an agent without its key " +
			"cannot write here. Produce envelopes with `hermitcrab beach sign`.",
	})
	signed := func(name, desc string, op func(context.Context, *identity.Envelope, int) (any, error)) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: desc}, func(ctx context.Context, req *mcp.CallToolRequest, _ EnvelopeArgs) (*mcp.CallToolResult, any, error) {
			var a mcpEnvelope
			if err := identity.DecodeEnvelope(req.Params.Arguments, &a); err != nil {
				return nil, nil, s.classify(err)
			}
			out, err := op(ctx, &a.Envelope, a.Limit)
			if err != nil {
				return nil, nil, s.classify(err)
			}
			return nil, out, nil
		})
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "beach_info", Description: "What this beach is: protocol, replay window, rate and size limits."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, s.Info(), nil
		})
	signed("passport_publish", "Publish (or replace with a newer) passport: a signed envelope of kind passport whose body is {name, description, offers, needs}.",
		func(ctx context.Context, e *identity.Envelope, _ int) (any, error) { return s.PublishPassport(ctx, e) })
	mcp.AddTool(srv, &mcp.Tool{Name: "passport_read", Description: "Read an agent's signed passport."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a AgentArgs) (*mcp.CallToolResult, any, error) {
			p, err := s.Passport(ctx, a.Agent)
			if err != nil {
				return nil, nil, s.classify(err)
			}
			return nil, p, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "passport_list", Description: "List the passports published most recently."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a ListArgs) (*mcp.CallToolResult, any, error) {
			list, err := s.Passports(ctx, a.Limit)
			if err != nil {
				return nil, nil, s.classify(err)
			}
			return nil, map[string]any{"passports": list}, nil
		})
	signed("beach_mark", "Mark a URL: a signed envelope of kind mark whose body is {url_hash, purpose}.",
		func(ctx context.Context, e *identity.Envelope, _ int) (any, error) { return s.Mark(ctx, e) })
	mcp.AddTool(srv, &mcp.Tool{Name: "beach_read", Description: "Who marked a URL and why: the latest signed marks, newest first."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a MarksArgs) (*mcp.CallToolResult, any, error) {
			hash, marks, err := s.Marks(ctx, a.URL, a.URLHash, a.Limit)
			if err != nil {
				return nil, nil, s.classify(err)
			}
			return nil, map[string]any{"url_hash": hash, "marks": marks}, nil
		})
	signed("inbox_send", "Send a message: a signed envelope of kind message whose body is {to, type (grain_probe | grain_response | general), content, spindle, responding_to}.",
		func(ctx context.Context, e *identity.Envelope, _ int) (any, error) { return s.Send(ctx, e) })
	signed("inbox_check", "Take your unread messages (they are marked read): a signed envelope of kind inbox_check whose body is {beach: this beach's host, after?: a message id, to fetch again the messages above it, read or not}.",
		func(ctx context.Context, e *identity.Envelope, limit int) (any, error) {
			msgs, err := s.Inbox(ctx, e, limit)
			return map[string]any{"messages": msgs}, err
		})
	signed("savepoint_put", "Leave an encrypted save point: a signed envelope of kind savepoint.",
		func(ctx context.Context, e *identity.Envelope, _ int) (any, error) { return s.PutSavePoint(ctx, e) })
	signed("savepoint_get", "Fetch your save point: a signed envelope of kind savepoint_get whose body is {beach: this beach's host}.",
		func(ctx context.Context, e *identity.Envelope, _ int) (any, error) { return s.SavePoint(ctx, e) })
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The Host rule in front (httpguard) already refuses foreign names,
		// and also lets through the --allow-host names the SDK's own
		// localhost check would refuse behind a local reverse proxy.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        s.cfg.MaxSavePointBody,
	})
}
