package endpoint

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
)

// serve runs the endpoints of a new instance alone, as `hermitcrab wake
// --daemon --addr` does, and returns its kernel and base URL.
func serve(t *testing.T, withMCP bool) (*kernel.Kernel, string) {
	t.Helper()
	k, err := kernel.Open(t.TempDir(), kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	ctx := context.Background()
	if err := k.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.5.1"), "webhook ci tier 1: check the build"); err != nil {
		t.Fatal(err)
	}
	h, err := New(k, withMCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Addr: "127.0.0.1:0", Handler: h}
	sctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(sctx, func(u string) { ready <- u }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case u := <-ready:
		return k, u
	case err := <-done:
		t.Fatal(err)
	}
	return nil, ""
}

func request(t *testing.T, method, url string, body []byte, header map[string]string) (int, string) {
	t.Helper()
	status, text, err := send(http.DefaultClient, method, url, body, header)
	if err != nil {
		t.Fatal(err)
	}
	return status, text
}

func send(client *http.Client, method, url string, body []byte, header map[string]string) (int, string, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Webhooks: only a post carrying the secret (as a bearer token or as the
// body's signature) is taken; the Host rule and the body limit hold; a
// post to a hook no trigger has is 404 once authenticated; a flood is cut
// to the hook's rate and to 100 waiting posts.
func TestWebhooksAreAuthenticatedAndBounded(t *testing.T) {
	k, base := serve(t, false)
	secret, err := k.Secrets().WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(k.Secrets().WebhookSecretPath()); st.Mode().Perm() != 0o600 {
		t.Fatalf("the secret's mode is %v", st.Mode().Perm())
	}
	body := []byte(`{"build":7,"status":"failed"}`)
	url := base + "/hooks/ci"
	for _, c := range []struct {
		name   string
		header map[string]string
		body   []byte
		want   int
	}{
		{"no credentials", nil, body, 401},
		{"a wrong token", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 64)}, body, 401},
		{"the token as a query", nil, body, 401},
		{"a signature of another body", map[string]string{"X-Hub-Signature-256": sign(secret, []byte("other"))}, body, 401},
		{"a signature under another key", map[string]string{"X-Hub-Signature-256": sign("guess", body)}, body, 401},
		{"a malformed signature", map[string]string{"X-Hub-Signature-256": "sha256=zz"}, body, 401},
		{"another Host (DNS rebinding)", map[string]string{"Host": "evil.example", "Authorization": "Bearer " + secret}, body, 421},
		{"a body over 64 KiB", map[string]string{"Authorization": "Bearer " + secret}, bytes.Repeat([]byte("x"), MaxHookBody+1), 413},
		{"the token", map[string]string{"Authorization": "Bearer " + secret}, body, 202},
		{"GitHub's signature", map[string]string{"X-Hub-Signature-256": sign(secret, body)}, body, 202},
		{"hermitcrab's signature", map[string]string{"X-Hermitcrab-Signature": sign(secret, body)}, body, 202},
	} {
		u := url
		if c.name == "the token as a query" {
			u += "?token=" + secret
		}
		if status, text := request(t, http.MethodPost, u, c.body, c.header); status != c.want {
			t.Errorf("%s: %d %s; want %d", c.name, status, text, c.want)
		}
	}
	if status, _ := request(t, http.MethodPost, base+"/hooks/deploy", body, map[string]string{"Authorization": "Bearer " + secret}); status != 404 {
		t.Errorf("a hook no trigger has: %d", status)
	}
	if status, _ := request(t, http.MethodGet, url, nil, map[string]string{"Authorization": "Bearer " + secret}); status != 405 {
		t.Errorf("GET: %d", status)
	}
	if status, _ := request(t, http.MethodPost, base+"/mcp", nil, nil); status != 404 {
		t.Errorf("MCP while off: %d", status)
	}

	// A flood: 200 posts at once over 32 connections (one client may hold
	// 64). The hook's burst is taken (three posts above spent part of it),
	// the rest get 429.
	flood := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 32}}
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, err := send(flood, http.MethodPost, url, []byte(fmt.Sprint(i)), map[string]string{"Authorization": "Bearer " + secret})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			counts[status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if counts[202] > hookBurst || counts[429] < 200-hookBurst || counts[202]+counts[429] != 200 {
		t.Fatalf("a flood of 200: %v", counts)
	}
}

// A deliberate check of the secret's comparison: a token that is a prefix
// of the secret, or the secret with a character changed, is refused.
func TestAuthenticRefusesNearMisses(t *testing.T) {
	secret := strings.Repeat("ab", 32)
	body := []byte("x")
	for _, tok := range []string{"", secret[:63], secret + "0", "bb" + secret[2:]} {
		r, _ := http.NewRequest(http.MethodPost, "/hooks/x", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		if authentic(r, body, secret) {
			t.Errorf("token %q accepted", tok)
		}
	}
	r, _ := http.NewRequest(http.MethodPost, "/hooks/x", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	if !authentic(r, body, secret) {
		t.Error("the secret refused")
	}
}

// bearerTransport adds a token to every request of an MCP client.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// An MCP client (the Go SDK's) with the instance's token lists the block
// tools, reads, writes and walks the blocks through the kernel's rules;
// without the token, or with another Host, it gets nothing.
func TestAnMCPClientReadsAndWritesTheBlocks(t *testing.T) {
	k, base := serve(t, true)
	token, err := k.Secrets().MCPToken()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if status, _ := request(t, http.MethodPost, base+"/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), map[string]string{"Content-Type": "application/json"}); status != 401 {
		t.Fatalf("no token: %d", status)
	}
	if status, _ := request(t, http.MethodPost, base+"/mcp", nil, map[string]string{"Authorization": "Bearer " + token, "Host": "evil.example"}); status != 421 {
		t.Fatalf("another Host: %d", status)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{"wrong"}}}, nil); err == nil {
		t.Fatal("a client with a wrong token connected")
	}
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "block_list,block_read,block_write,bsp" {
		t.Fatalf("tools: %v", names)
	}
	call := func(name string, args any) (string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	if out, isErr := call("block_list", map[string]any{}); isErr || !strings.Contains(out, `"name":"wake"`) {
		t.Fatalf("block_list: %s", out)
	}
	if out, isErr := call("block_write", map[string]any{"name": "stash", "path": "0.1", "content": "a note <from> an MCP client & co"}); isErr {
		t.Fatalf("block_write: %s", out)
	}
	out, _ := call("block_read", map[string]any{"name": "stash", "path": "0.1"})
	var node struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &node); err != nil || node.Content != "a note <from> an MCP client & co" {
		t.Fatalf("block_read: %s", out)
	}
	if got, err := k.Blocks().ReadNode(ctx, "stash", kerneltest.At(t, "0.1")); err != nil || got.Content != "a note <from> an MCP client & co" {
		t.Fatalf("the kernel sees %+v %v", got, err)
	}
	if out, _ := call("bsp", map[string]any{"name": "wake", "spindle": "0.5.1"}); !strings.Contains(out, "webhook ci tier 1") {
		t.Fatalf("bsp: %s", out)
	}
	if out, isErr := call("bsp", map[string]any{"name": "wake", "spindle": "0.5", "mode": "ring"}); isErr || !strings.Contains(out, `"mode":"ring"`) || !strings.Contains(out, `"address":"0.4"`) {
		t.Fatalf("bsp ring: %s", out)
	}
	if out, isErr := call("bsp", map[string]any{"name": "wake", "mode": "ring"}); !isErr || !strings.Contains(out, "ring mode needs a spindle") {
		t.Fatalf("bsp ring without a spindle: %s", out)
	}
	if out, isErr := call("block_write", map[string]any{"name": "../etc", "path": "0.1", "content": "x"}); !isErr {
		t.Fatalf("a bad block name was written: %s", out)
	}
	if out, isErr := call("block_write", map[string]any{"name": "stash", "path": "0.1", "content": strings.Repeat("x", 70<<10)}); !isErr {
		t.Fatalf("a write over the block size limit: %s", out)
	}
}
