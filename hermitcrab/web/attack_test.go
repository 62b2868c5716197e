package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"

	"github.com/chromedp/chromedp"
)

// hostilePage is what a page of another site tries against the server at
// {{H}}: read the state (with its CSRF token), write a block, store its own
// key, import blocks, attach to the event stream (which carries browser
// tool calls), and lay the page in a frame under its own, to steer a
// person's clicks. Each attempt records what it could see.
const hostilePage = `<!doctype html><html><body>
<iframe id="frame" src="{{H}}/" width="600" height="400" onload="window.frameLoaded = true"></iframe>
<form id="f" method="POST" action="{{H}}/api/key" enctype="text/plain" target="sink"><input name='{"key":"sk-ant-attacker","x":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
window.results = {};
const H = '{{H}}';
const note = (k, v) => { window.results[k] = String(v); };
(async () => {
  try { const r = await fetch(H + '/api/state'); note('cors-get', r.status + ' ' + (await r.text()).slice(0, 80)); } catch (e) { note('cors-get', 'blocked'); }
  try { const r = await fetch(H + '/api/state', {mode: 'no-cors'}); note('no-cors-get', r.type + ' ' + r.status); } catch (e) { note('no-cors-get', 'blocked'); }
  try { const r = await fetch(H + '/api/blocks/purpose', {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: JSON.stringify({path: '0', content: 'pwned'})}); note('text-plain-post', r.type); } catch (e) { note('text-plain-post', 'blocked'); }
  try { const r = await fetch(H + '/api/key', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': 'guess'}, body: JSON.stringify({key: 'sk-ant-attacker'})}); note('preflighted-post', r.status); } catch (e) { note('preflighted-post', 'blocked'); }
  note('beacon', navigator.sendBeacon(H + '/api/import', JSON.stringify({entries: {'hc:purpose': '{"place":1,"tree":{"0":"pwned"}}'}})));
  const es = new EventSource(H + '/api/events');
  es.onerror = () => note('events', 'error ' + es.readyState);
  es.onmessage = m => note('events', 'read ' + m.data);
  document.getElementById('f').submit();
})();
</script></body></html>`

// TestAPageOfAnotherSiteInChromiumGetsNothing opens a hostile page (on
// 127.0.0.2, another origin) in Chromium, which tries every cross-origin way
// in. It reads nothing, changes nothing, stays attached to no event stream,
// and the server's page does not render in its frame.
func TestAPageOfAnotherSiteInChromiumGetsNothing(t *testing.T) {
	b := newBrowserSession(t, nil)
	var scripts, events atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/assets/host.js": // only a page that renders fetches it
			scripts.Add(1)
		case "/api/events":
			events.Add(1)
		}
		b.srv.Handler().ServeHTTP(w, r)
	}))
	defer ts.Close()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address for the hostile origin: %v", err)
	}
	hostile := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(strings.ReplaceAll(hostilePage, "{{H}}", ts.URL)))
	})}}
	hostile.Start()
	defer hostile.Close()
	before, _ := b.srv.Kernel().Blocks().Raw(b.ctx, "purpose")

	b.do(t, "open the hostile page", chromedp.Navigate(hostile.URL+"/"))
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`!!window.frameLoaded && !!window.results.events && Object.keys(window.results).length === 6`)); err != nil {
		t.Fatalf("the hostile page did not finish: %v", err)
	}
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[map[string]string](`window.results`))
	if err != nil {
		t.Fatal(err)
	}
	for attempt, want := range map[string]string{"cors-get": "blocked", "no-cors-get": "opaque 0", "preflighted-post": "blocked", "events": "error 2"} {
		if got[attempt] != want {
			t.Errorf("%s: the page saw %q, want %q", attempt, got[attempt], want)
		}
	}
	after, _ := b.srv.Kernel().Blocks().Raw(b.ctx, "purpose")
	if string(after.Data) != string(before.Data) || b.srv.passKey() != "" {
		t.Fatalf("the hostile page changed the server: purpose %s, key %q", after.Data, b.srv.passKey())
	}
	if n := scripts.Load(); n != 0 {
		t.Errorf("the page rendered in the hostile page's frame (%d loads of host.js)", n)
	}
	if n := b.srv.hub.pages(); n != 0 || events.Load() != 1 {
		t.Errorf("%d event streams attached after %d requests, want none of the hostile page's one", n, events.Load())
	}
}

// TestARebindingPageInChromiumIsRefused resolves evil.test to 127.0.0.1 in
// Chromium, as a DNS rebinding attack makes the browser do, and opens the
// server under that name: the page itself is refused, and so is every
// request the rebound page makes, same-origin as it now is.
func TestARebindingPageInChromiumIsRefused(t *testing.T) {
	b := newBrowserSession(t, nil, chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1"))
	rebound := strings.Replace(b.url, "127.0.0.1", "evil.test", 1)
	b.do(t, "open the server under the attacker's name", chromedp.Navigate(rebound))
	body, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.textContent`))
	if err != nil || !strings.Contains(body, "not a name this server answers to") {
		t.Fatalf("the page under a foreign name: %q %v", body, err)
	}
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`Promise.all([
		fetch('/api/state').then(r => r.status),
		fetch('/assets/host.js').then(r => r.status),
		fetch('/api/key', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"key":"sk-ant-attacker"}'}).then(r => r.status),
	]).then(s => s.join(' '))`, chromedp.EvalAwaitPromise))
	if err != nil || got != "421 421 421" {
		t.Fatalf("the rebound page's requests: %q %v", got, err)
	}
	if b.srv.passKey() != "" {
		t.Fatal("the rebound page stored a key")
	}
}

// waiting is an LLM that answers nothing until its call is cancelled, as a
// long call does; started receives each request.
type waiting struct{ started chan struct{} }

func (p *waiting) Messages(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	p.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestStoppingTheServerCancelsACallStillRunningAfterTheGrace: a SIGTERM
// (the context ending) while an LLM call is running lets it finish for the
// grace period, then cancels it: the page gets an answer, not a cut
// connection, and the server stops cleanly.
func TestStoppingTheServerCancelsACallStillRunningAfterTheGrace(t *testing.T) {
	p := &waiting{started: make(chan struct{}, 1)}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := New(ctx, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Provider: "script",
		NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: p}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.grace = 200 * time.Millisecond
	urls, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- srv.ListenAndServe(ctx, func(u string) { urls <- u }) }()
	base := strings.TrimSuffix(<-urls, "/")
	answered := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/call", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Origin", base)
		req.Header.Set("X-CSRF-Token", srv.csrf)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
		}
		answered <- err
	}()
	<-p.started
	stop()
	if err := <-served; err != nil {
		t.Fatalf("the server did not stop cleanly: %v", err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("the call in flight got no answer: %v", err)
	}
}

// TestOffLoopbackOneClientHoldsABoundedNumberOfConnections: listening on
// every interface, a client that opens connections and leaves them (before
// any token is checked) gets no more than connsPerClient.
func TestOffLoopbackOneClientHoldsABoundedNumberOfConnections(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv, err := New(ctx, Config{Addr: "0.0.0.0:0", DataDir: t.TempDir(), Provider: "script",
		NewClient: func(string) (*llm.Client, error) { return &llm.Client{Provider: &waiting{}}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.grace = 100 * time.Millisecond // the connections held never send a request
	urls, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- srv.ListenAndServe(ctx, func(u string) { urls <- u }) }()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.SplitN(<-urls, "/?", 2)[0], "http://"))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range connsPerClient {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Each held connection is served: a request on it is answered.
	if _, err := conns[0].Write([]byte("GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	conns[0].SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := conns[0].Read(make([]byte, 64)); n == 0 || err != nil {
		t.Fatalf("a connection within the cap: %v", err)
	}
	extra, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection %d from one client was kept open: %v", connsPerClient+1, err)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
