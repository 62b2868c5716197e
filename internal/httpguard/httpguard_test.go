package httpguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serve runs a guarded server on loopback; the handler counts the requests
// that reached it and echoes the body length it could read.
func serve(t *testing.T, opts Options) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var reached atomic.Int64
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		n, err := io.Copy(io.Discard, r.Body)
		if limit, ok := TooLarge(err); ok {
			http.Error(w, fmt.Sprintf("too large: %d", limit), http.StatusRequestEntityTooLarge)
			return
		}
		fmt.Fprintf(w, "read %d", n)
	})
	srv := httptest.NewUnstartedServer(nil)
	if opts.Addr == "" {
		opts.Addr = srv.Listener.Addr().String()
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = g.Handler(inner)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &reached
}

func do(t *testing.T, srv *httptest.Server, host string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/any/route", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHostRule(t *testing.T) {
	srv, reached := serve(t, Options{AllowHosts: []string{"beach.example.org", "*.hermit.test", "192.0.2.7"}})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ok := []string{"localhost", fmt.Sprintf("localhost:%d", port), "LOCALHOST.", "127.0.0.1", "127.0.0.2:9", "[::1]:80", "[::1]",
		"beach.example.org", "Beach.Example.Org:443", "a.hermit.test", "x.y.hermit.test", "192.0.2.7"}
	for _, h := range ok {
		if resp := do(t, srv, h, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("Host %q: status %d, want 200", h, resp.StatusCode)
		}
	}
	before := reached.Load()
	refused := []string{"evil.example", "evil.example:" + fmt.Sprint(port), "localhost.evil.example", "hermit.test", "xhermit.test",
		"beach.example.org.evil.example", "192.0.2.8", "10.0.0.1", "0.0.0.0", "bad host", "example.org@localhost"}
	for _, h := range refused {
		resp := do(t, srv, h, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(body), "start the server allowing the host name") {
			t.Errorf("Host %q: status %d %s, want 421 saying how to allow it", h, resp.StatusCode, body)
		}
	}
	if reached.Load() != before {
		t.Fatalf("%d refused requests reached the handler", reached.Load()-before)
	}
}

func TestARequestWithoutHostIsRefused(t *testing.T) {
	srv, reached := serve(t, Options{})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMisdirectedRequest || reached.Load() != 0 {
		t.Fatalf("HTTP/1.0 without Host: status %d, reached %d", resp.StatusCode, reached.Load())
	}
}

func TestTheBoundNameIsAllowed(t *testing.T) {
	g, err := New(Options{Addr: "beach.internal:8421"})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Allowed("beach.internal:8421") || g.Allowed("other.internal") {
		t.Fatal("the bound host name should be allowed, and only it")
	}
	if _, err := New(Options{AllowHosts: []string{"not a host"}}); err == nil {
		t.Fatal("a malformed --allow-host was accepted")
	}
}

func TestBodyLimits(t *testing.T) {
	srv, reached := serve(t, Options{MaxBody: 100, BodyLimit: func(r *http.Request) int64 {
		if r.URL.Query().Get("big") != "" {
			return 1000
		}
		return 0
	}})
	// Content-Length over the limit: refused before the handler.
	if resp := do(t, srv, "localhost", strings.NewReader(strings.Repeat("x", 101))); resp.StatusCode != http.StatusRequestEntityTooLarge || reached.Load() != 0 {
		t.Fatalf("101 bytes: status %d, reached %d", resp.StatusCode, reached.Load())
	} else if body, _ := io.ReadAll(resp.Body); !strings.Contains(string(body), `"reason":"too_large"`) {
		t.Fatalf("101 bytes: the 413 does not say too_large: %s", body)
	}
	// A chunked body (no length) is cut at the limit while the handler reads.
	resp := do(t, srv, "localhost", io.MultiReader(strings.NewReader(strings.Repeat("x", 150))))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "too large: 100") {
		t.Fatalf("chunked 150 bytes: %d %s", resp.StatusCode, body)
	}
	if resp := do(t, srv, "localhost", strings.NewReader(strings.Repeat("x", 100))); resp.StatusCode != http.StatusOK {
		t.Fatalf("100 bytes: status %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/?big=1", strings.NewReader(strings.Repeat("x", 900)))
	r2, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusOK {
		t.Fatalf("a route with a larger limit: status %d", r2.StatusCode)
	}
}

func TestClientKeyGroupsAnIPv6NetworkAndKeepsIPv4Addresses(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:80":               "127.0.0.1",
		"[2001:db8:1:2:aaaa::1]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::9]:1":   "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:1":        "2001:db8:1:3::/64",
		"[::ffff:192.0.2.1]:1":       "192.0.2.1",
		"not an address":             "not an address",
	} {
		if got := ClientKey(addr); got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", addr, got, want)
		}
	}
}

// A client at its cap gets its extra connections closed at once; closing
// one of its connections (twice, even) frees exactly one place.
func TestLimitConnsCapsOpenConnectionsPerClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitConns(ln, 2)
	defer l.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	// closedByServer reads until the server closes c (a generous deadline
	// keeps a broken cap from hanging the test).
	closedByServer := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first, _ := dial(), dial()
	a1, a2 := <-accepted, <-accepted
	third := dial()
	if !closedByServer(third) {
		t.Fatal("a third connection from one client was kept open")
	}
	a1.Close()
	a1.Close()
	_ = first
	dial()
	a3 := <-accepted
	fifth := dial()
	if !closedByServer(fifth) {
		t.Fatal("a connection over the cap was kept open after one was freed")
	}
	a2.Close()
	a3.Close()
}

// MaxLarge bounds the bodies over MaxBody served at once; bodies within
// MaxBody, on the same route, never wait for a slot.
func TestMaxLargeBoundsLargeBodiesAtOnce(t *testing.T) {
	entered, release := make(chan struct{}, 8), make(chan struct{})
	g, err := New(Options{Addr: "127.0.0.1:0", MaxBody: 10, MaxLarge: 1, BodyLimit: func(*http.Request) int64 { return 1000 }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 10 {
			entered <- struct{}{}
			<-release
		}
		fmt.Fprint(w, "ok")
	})))
	defer srv.Close()
	post := func(n int) *http.Response {
		resp, err := http.Post(srv.URL, "text/plain", strings.NewReader(strings.Repeat("x", n)))
		if err != nil {
			t.Error(err)
			return nil
		}
		resp.Body.Close()
		return resp
	}
	done := make(chan *http.Response)
	go func() { done <- post(500) }()
	<-entered // the first large body holds the one slot
	if resp := post(500); resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a second large body: %+v, want 503 with Retry-After", resp)
	}
	if resp := post(5); resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a small body: %+v", resp)
	}
	close(release)
	if resp := <-done; resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the first large body: %+v", resp)
	}
	if resp := post(500); resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a large body once the slot is free: %+v", resp)
	}
}

// A URL given as an allowed host (--allow-host http://proxy.example) is
// refused at start-up: split as host:port it would allow the name
// "http" and not the proxy's.
func TestAnAllowedHostWithASchemeOrPathIsRefused(t *testing.T) {
	for _, name := range []string{"http://proxy.example", "https://proxy.example:8443", "proxy.example/app", "//proxy.example"} {
		if g, err := New(Options{Addr: "127.0.0.1:8420", AllowHosts: []string{name}}); err == nil {
			t.Errorf("%q was taken (the name \"http\" allowed: %v)", name, g.Allowed("http"))
		}
	}
	if _, err := New(Options{Addr: "127.0.0.1:8420", AllowHosts: []string{"proxy.example:8443", "*.example.org"}}); err != nil {
		t.Errorf("a name with a port: %v", err)
	}
}
