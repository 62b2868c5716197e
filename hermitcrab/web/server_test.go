package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
)

func TestStateChangingRequestsNeedTheCSRFTokenAndOrigin(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[]}`)
	body := `{"path":"0.1","content":"x"}`
	cases := []struct {
		name, origin, csrf string
		want               int
	}{
		{"no token", ts.URL, "", http.StatusForbidden},
		{"wrong token", ts.URL, "guess", http.StatusForbidden},
		{"other origin", "http://evil.example", srv.csrf, http.StatusForbidden},
		{"no origin", "", srv.csrf, http.StatusForbidden},
		{"the page", ts.URL, srv.csrf, http.StatusOK},
		// A TLS reverse proxy given with --allow-host keeps the Host: the
		// page's origin is https.
		{"the page behind https", strings.Replace(ts.URL, "http://", "https://", 1), srv.csrf, http.StatusOK},
		{"the same name on another port", "http://127.0.0.1:1", srv.csrf, http.StatusForbidden},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/blocks/stash", strings.NewReader(body))
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.csrf != "" {
			req.Header.Set("X-CSRF-Token", c.csrf)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}

// TestAForeignOriginIsRefusedOnReadsTooAndThePageCannotBeFramed: a read
// carrying another site's Origin (a cross-origin fetch or event stream) is
// refused before any handler runs, so no foreign page attaches to the
// event stream; and every answer forbids framing and Referers.
func TestAForeignOriginIsRefusedOnReadsTooAndThePageCannotBeFramed(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[]}`)
	for _, path := range []string{"/api/events", "/api/state", "/api/blocks/wake"} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Header.Set("Origin", "http://evil.example")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s from another origin: HTTP %d", path, resp.StatusCode)
		}
	}
	if n := srv.hub.pages(); n != 0 {
		t.Fatalf("%d foreign event streams attached", n)
	}
	for _, path := range []string{"/", "/assets/host.js", "/api/state", "/api/no-such-route"} {
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Content-Security-Policy") != "frame-ancestors 'none'" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: framing and referrer headers %v", path, h)
		}
	}
}

func TestOffLoopbackEveryRequestNeedsTheAccessToken(t *testing.T) {
	p := script.New(mustScript(t, `{"responses":[]}`))
	srv, err := New(context.Background(), Config{Addr: "0.0.0.0:0", DataDir: t.TempDir(), Provider: "script",
		NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: p}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Token() == "" || !strings.Contains(srv.URL("192.0.2.1:8420"), "?token="+srv.Token()) {
		t.Fatalf("no token generated off loopback: %q", srv.URL("192.0.2.1:8420"))
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	if code := get(t, ts, "/api/state", nil); code != http.StatusUnauthorized {
		t.Fatalf("without the token: HTTP %d", code)
	}
	resp, err := ts.Client().Get(ts.URL + "/?token=" + srv.Token())
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %v %v", resp, err)
	}
	cookie := resp.Cookies()
	resp.Body.Close()
	if len(cookie) != 1 || !cookie[0].HttpOnly || cookie[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("the token cookie: %+v", cookie)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/state", nil)
	req.AddCookie(cookie[0])
	if resp, _ := ts.Client().Do(req); resp.StatusCode != http.StatusOK {
		t.Fatalf("with the cookie: HTTP %d", resp.StatusCode)
	}
}

func mustScript(t *testing.T, s string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestTheKeyIsStoredPrivatelyAndNeverSentBack(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	dir := t.TempDir()
	p := script.New(mustScript(t, `{"responses":[]}`))
	var gotKey string
	srv, err := New(context.Background(), Config{DataDir: dir, Provider: "anthropic", KeyNeeded: true,
		NewClient: func(key string) (*llm.Client, error) { gotKey = key; return &llm.Client{Provider: p}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	var before map[string]any
	get(t, ts, "/api/state", &before)
	if before["has_key"] != false {
		t.Fatalf("has_key before: %v", before["has_key"])
	}
	const key = "sk-ant-secret-123"
	if code := post(t, ts, srv, "/api/key", map[string]string{"key": key}, nil); code != 200 {
		t.Fatalf("posting the key: HTTP %d", code)
	}
	info, err := os.Stat(filepath.Join(dir, "api_key"))
	if err != nil || info.Mode().Perm() != 0o600 || gotKey != key {
		t.Fatalf("key file %v %v; client got %q", info, err, gotKey)
	}
	for _, path := range []string{"/api/state", "/", "/assets/host.js", "/api/blocks"} {
		resp, _ := ts.Client().Get(ts.URL + path)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(data, []byte(key)) {
			t.Fatalf("%s sends the key back", path)
		}
	}
	var after map[string]any
	get(t, ts, "/api/state", &after)
	if after["has_key"] != true {
		t.Fatal("has_key after posting the key")
	}
}

func TestRequestBodiesAreLimited(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[]}`)
	var out map[string]string
	code := post(t, ts, srv, "/api/blocks/stash", map[string]string{"path": "0.1", "content": strings.Repeat("x", 2<<20)}, &out)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(out["error"], "over this route's limit of 1048576 bytes") {
		t.Fatalf("HTTP %d %v", code, out)
	}
	// A body sent without its length is cut at the limit while it is read.
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/blocks/stash", io.MultiReader(strings.NewReader(`{"path":"0.1","content":"`), strings.NewReader(strings.Repeat("x", 2<<20))))
	req.ContentLength = -1
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("X-CSRF-Token", srv.csrf)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(out["error"], "over 1048576 bytes") {
		t.Fatalf("a chunked body: HTTP %d %v", resp.StatusCode, out)
	}
	// A conversation a long chat saved whole is taken, as the kernel's own
	// chat keeps one of any length; the API's limit is 32 MB, not 16 MiB.
	long := []map[string]string{{"role": "user", "content": strings.Repeat("a long chat ", 200_000)}}
	if code := post(t, ts, srv, "/api/conversation/long", map[string]any{"messages": long}, nil); code != http.StatusOK {
		t.Fatalf("saving a 2 MiB conversation: HTTP %d", code)
	}
	for path, limit := range map[string]int64{"/api/claude": 32 << 20, "/api/call": 32 << 20, "/api/import": 16 << 20, "/api/conversation/x": 16 << 20, "/api/blocks": 1 << 20} {
		if got := bodyLimit(path); got != limit {
			t.Errorf("%s: limit %d, want %d", path, got, limit)
		}
	}
}

// concrete fills a route pattern's wildcards with real values.
func concrete(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	path = strings.NewReplacer("{$}", "", "{file}", "host.js", "{name}", "stash", "{id}", "shell").Replace(path)
	return method, path
}

func TestAForeignHostIsRefusedOnEveryRouteBeforeAnyHandler(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[]}`)
	before, err := srv.Kernel().Blocks().Raw(context.Background(), "stash")
	if err != nil {
		t.Fatal(err)
	}
	routes := srv.routeTable()
	if len(routes) < 20 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		method, path := concrete(rt.pattern)
		for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.nip.io", "localhost.evil.example", "LOCALHOST.evil.example."} {
			// The rebinding page's own origin and a CSRF token it read
			// would pass every later check: only the Host rule stops it.
			req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(`{"path":"0.1","content":"pwned","key":"sk-ant-attacker","messages":[{"role":"user","content":"hi"}]}`))
			req.Host = host
			req.Header.Set("Origin", "http://"+host)
			req.Header.Set("X-CSRF-Token", srv.csrf)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMisdirectedRequest || bytes.Contains(data, []byte(srv.csrf)) {
				t.Errorf("%s with Host %q: HTTP %d %s", rt.pattern, host, resp.StatusCode, data)
			}
		}
	}
	after, _ := srv.Kernel().Blocks().Raw(context.Background(), "stash")
	if after.Version != before.Version {
		t.Fatal("a refused request wrote a block")
	}
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	for _, host := range []string{"localhost:" + port, "LOCALHOST:" + port, "127.0.0.1:" + port, "127.0.0.2:" + port, "[::1]:" + port, "localhost."} {
		if code := stateWithHost(t, ts, host); code != http.StatusOK {
			t.Errorf("loopback Host %q: HTTP %d", host, code)
		}
	}
}

// stateWithHost asks for /api/state with this Host header and returns the status.
func stateWithHost(t *testing.T, ts *httptest.Server, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/state", nil)
	req.Host = host
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestANameGivenWithAllowHostIsServed(t *testing.T) {
	p := script.New(mustScript(t, `{"responses":[]}`))
	srv, err := New(context.Background(), Config{DataDir: t.TempDir(), Provider: "script", AllowHosts: []string{"crab.example.org"},
		NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: p}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for host, want := range map[string]int{"crab.example.org": http.StatusOK, "crab.example.org:8420": http.StatusOK, "other.example.org": http.StatusMisdirectedRequest} {
		if code := stateWithHost(t, ts, host); code != want {
			t.Errorf("Host %q: HTTP %d, want %d", host, code, want)
		}
	}
	if _, err := New(context.Background(), Config{DataDir: t.TempDir(), Provider: "script", AllowHosts: []string{"not a host"},
		NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: p}, nil }}); err == nil {
		t.Fatal("a bad --allow-host was accepted")
	}
}

func TestABrowserToolWithNoPageAttachedSaysSo(t *testing.T) {
	srv, _ := testServer(t, `{"responses":[]}`)
	out, err := srv.relay.Call(context.Background(), "download", json.RawMessage(`{"filename":"a.txt","content":"x"}`))
	if err != nil || !out.IsError || !strings.Contains(out.Content.Text, "no") {
		t.Fatalf("%+v %v", out, err)
	}
	if err := srv.relay.answer(browserResult{ID: "nobody-asked"}); err == nil {
		t.Fatal("an answer nobody waits for must be refused")
	}
}

func TestRecompileThroughTheAPIReturnsCompileErrorsWithLineAndColumn(t *testing.T) {
	srv, ts := testServer(t, `{"responses":[]}`)
	var out map[string]any
	post(t, ts, srv, "/api/recompile", map[string]string{"jsx": "function App(props) {\n  return <div>;\n}"}, &out)
	if out["ok"] != false || !strings.Contains(out["error"].(string), "line 2, column") {
		t.Fatalf("%v", out)
	}
	post(t, ts, srv, "/api/recompile", map[string]string{"jsx": "function App(props) { return <div>ok</div>; }"}, &out)
	if out["ok"] != true {
		t.Fatalf("%v", out)
	}
	var state struct{ Shell struct{ Code string } }
	get(t, ts, "/api/state", &state)
	if !strings.Contains(state.Shell.Code, "React.createElement") {
		t.Fatalf("state does not carry the compiled shell: %q", state.Shell.Code)
	}
}

// The React bundle is committed and embedded, so any build of the binary
// (go build, go install) serves a page that can run.
func TestTheReactBundleIsEmbedded(t *testing.T) {
	_, ts := testServer(t, `{"responses":[]}`)
	resp, err := ts.Client().Get(ts.URL + "/assets/react.js")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") ||
		!bytes.Contains(body, []byte("createRoot")) || len(body) < 100<<10 {
		t.Fatalf("GET /assets/react.js: HTTP %d, %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}

// Webhooks and the MCP endpoint carry their own credentials: a post with
// the webhook secret needs no CSRF token or Origin (nor, off loopback, the
// page's access token), one without it is refused, the Host rule holds for
// them as for the page, and /mcp answers only when turned on.
func TestWebhooksOnTheWebServerUseTheirOwnSecret(t *testing.T) {
	p := script.New(mustScript(t, `{"responses":[]}`))
	srv, err := New(context.Background(), Config{Addr: "0.0.0.0:0", DataDir: t.TempDir(), Provider: "script", NoWake: true,
		NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: p}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ctx := context.Background()
	if _, err := srv.Kernel().Blocks().WriteAt(ctx, "wake", kerneltest.At(t, "0.5.1"), "webhook ci tier 1"); err != nil {
		t.Fatal(err)
	}
	secret, err := srv.Kernel().Secrets().WebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	hook := func(host, auth string) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/hooks/ci", strings.NewReader(`{"ok":true}`))
		if host != "" {
			req.Host = host
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := hook("", secret); code != http.StatusAccepted {
		t.Fatalf("with the secret: HTTP %d", code)
	}
	if code := hook("", srv.Token()); code != http.StatusUnauthorized {
		t.Fatalf("with the page's access token instead: HTTP %d", code)
	}
	if code := hook("evil.example", secret); code != http.StatusMisdirectedRequest {
		t.Fatalf("another Host: HTTP %d", code)
	}
	if code := get(t, ts, "/mcp", nil); code != http.StatusNotFound {
		t.Fatalf("/mcp while off: HTTP %d", code)
	}
}

// The access token guards a server off loopback, whose shell is trusted
// and whose passthrough spends the key: one short enough to guess, or one
// the printed URL cannot carry (a space, a control character), is refused
// before anything opens; the generated one and a long one are taken.
func TestAnAccessTokenThatGuardsNothingIsRefused(t *testing.T) {
	openAt := func(addr, token string) error {
		p := script.New(&script.Script{})
		srv, err := New(context.Background(), Config{DataDir: t.TempDir(), Provider: "script", Addr: addr, Token: token,
			NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: p}, nil }})
		if err == nil {
			srv.Close()
		}
		return err
	}
	open := func(token string) error { return openAt("0.0.0.0:0", token) }
	for _, token := range []string{"x", "secret", "a b c d e f g h i j k", "token\x1b[2J-long-enough-0123", strings.Repeat("é", 20)} {
		if err := open(token); err == nil {
			t.Errorf("token %q was taken", token)
		} else if !strings.Contains(err.Error(), "token") || len(token) > 3 && strings.Contains(err.Error(), token) {
			t.Errorf("token %q: the error %q", token, err)
		}
	}
	for _, token := range []string{"", "b467a62e7f6192d9df203779b9ab3b2f", "my-long_access.token~0123"} {
		if err := open(token); err != nil {
			t.Errorf("token %q: %v", token, err)
		}
	}
	// On loopback a short token is the person's choice; one the URL
	// cannot carry is still refused.
	onLoopback := func(token string) error { return openAt("127.0.0.1:0", token) }
	if err := onLoopback("x"); err != nil {
		t.Errorf("a short token on loopback: %v", err)
	}
	if err := onLoopback("a b"); err == nil || !strings.Contains(err.Error(), "letters, digits and -._~ only") {
		t.Errorf("a token with a space on loopback: %v", err)
	}
}
