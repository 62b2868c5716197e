package endpoint

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
)

// fuzzHandler is the endpoints' handler over a new instance with a
// webhook trigger "ci" and the MCP endpoint on, and its two secrets.
func fuzzHandler(f *testing.F) (h *Handler, webhook, token string) {
	k, err := kernel.Open(f.TempDir(), kernel.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { k.Close() })
	ctx := context.Background()
	if err := k.Ready(ctx); err != nil {
		f.Fatal(err)
	}
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(f, "0.5.1"), "webhook ci tier 1: check the build"); err != nil {
		f.Fatal(err)
	}
	if h, err = New(k, true, nil); err != nil {
		f.Fatal(err)
	}
	webhook, _ = k.Secrets().WebhookSecret()
	token, _ = k.Secrets().MCPToken()
	return h, webhook, token
}

// Any body a sender posts to a hook, signed or with the bearer secret, is
// stored (202) or refused with a 4xx (over the hook's rate), never a
// server error.
func FuzzWebhookPost(f *testing.F) {
	for _, b := range []string{`{"event":"deploy","ref":"main"}`, "plain text\n", "\xff\xfe not UTF-8", `{"a":"\ud800"}`, ``, `[1,2,3]`} {
		f.Add([]byte(b), true)
		f.Add([]byte(b), false)
	}
	h, secret, _ := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte, signed bool) {
		req := httptest.NewRequest(http.MethodPost, "/hooks/ci", bytes.NewReader(body))
		if signed {
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write(body)
			req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		} else {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusAccepted && w.Code != http.StatusTooManyRequests {
			t.Fatalf("a post of %q: %d %s", body, w.Code, w.Body)
		}
	})
}

// Any JSON-RPC body an MCP client with the token sends is answered
// without a server error.
func FuzzMCPRequest(f *testing.F) {
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"block_read","arguments":{"name":"purpose","path":"0.1"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"block_write","arguments":{"name":"stash","path":"0..9","content":"x"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"bsp","arguments":{"name":"wake","spindle":"0.9.6","point":-2}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"bsp","arguments":{"name":"wake","mode":"bogus"}}}`,
		`[{"jsonrpc":"2.0","id":7,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"block_read","arguments":{"name":1}}}`,
		`{"jsonrpc":"1.0"}`, `{`, ``,
	} {
		f.Add([]byte(b))
	}
	h, _, token := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%q: %d %s", body, w.Code, w.Body)
		}
	})
}
